"""The memory tree: its format marker, the fan-out layout of records, and its blobs.

:class:`Trees` is the part of :class:`~gitmem.store.Store` that reads and writes the objects
of the memory ref's commits (never the ref itself: see :mod:`gitmem.store.refs`). The tree of
every commit is::

    .gitmem                  format marker ("format: 1")
    memories/<2 hex>/<id>.yaml
    persona.yaml             optional
    continuity/<name>.md     optional spark notes
    runs/verify.yaml         optional: the last whole verify runs (gitmem.record.runs)

A write rewrites only the trees on the paths it touches (O(1) trees for one record,
whatever the number of records). Lookups of what a commit holds at a path are remembered
across processes (:class:`~gitmem.store.lookups.Lookups`): their keys name immutable ids.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from gitmem.errors import FormatVersion, disk_full
from gitmem.record.ids import shard_of
from gitmem.store.names import tree_name
from gitmem.store.repo import pg
from gitmem.vocabulary import ID_PATTERN

if TYPE_CHECKING:
    from pathlib import Path

    import pygit2

    from gitmem.store.lookups import Lookups
    from gitmem.store.repo import Repository

__all__ = ["FORMAT_PATH", "FORMAT_VERSION", "LayoutProblem", "StoredBlob", "Trees"]

FORMAT_PATH = ".gitmem"
FORMAT_VERSION = 1
_FORMAT_BLOB = f"format: {FORMAT_VERSION}\n".encode()


@dataclass(frozen=True, slots=True)
class StoredBlob:
    """A blob already in the object database (written by :meth:`Store.write_blob`), by its id.

    A :class:`Mutation` may map a path to one instead of bytes: a write of many records
    then holds their ids, not their bytes, until the tree is built (and built again on a
    retry).
    """

    oid: str



_REGULAR = (0o100644, 0o100755)  # file modes of regular files (not links, trees or submodules)


@dataclass(frozen=True, order=True)
class LayoutProblem:
    """An entry of a memory tree that is not where, or not what, gitmem reads.

    Attributes:
        path: the entry's path in the tree (``memories/zz/fact-8f2a1b9c.yaml``).
        object_id: the id of the blob, tree or commit it points at.
        reason: what is wrong, one phrase (``is not where its id says: …``).
        misplaced: a regular record file in another directory than its id names, whose id
            has no record where it belongs.
    """

    path: str
    object_id: str
    reason: str
    misplaced: bool = False
    """A regular file named for an id whose record is missing: it can move to where its id says."""


def _kind(entry: Any) -> str:
    """What a tree entry is, in words: directory, symbolic link, submodule, executable file, file."""
    mode = entry.filemode
    if mode == 0o040000:
        return "directory"
    if mode == 0o120000:
        return "symbolic link"
    if mode == 0o160000:
        return "submodule"
    return "file"


_MEMO_CHANGES = 512
"""Records that differ between two trees up to which :meth:`Trees.record_changes` is remembered
(the memo is read whole by every warm read: a bulk rewrite's changes stay out of it)."""


def _encode_changes(changes: dict[str, str | None] | None) -> str | None:
    # The object memo holds strings: one "<id> <blob>" a line, "<id> " for a record removed.
    if changes is None:
        return None
    return "\n".join(f"{i} {b or ''}" for i, b in sorted(changes.items()))


def _decode_changes(text: Any) -> dict[str, str | None] | None:
    if not isinstance(text, str):
        return None
    pairs = (line.partition(" ") for line in text.split("\n") if line)
    return {i: b or None for i, _, b in pairs}


def _encode_problems(problems: list[LayoutProblem]) -> str | None:
    # The object memo holds strings; NUL and newline never occur in a tree path or a reason.
    return "\n".join(f"{p.path}\0{p.object_id}\0{p.reason}" for p in problems) or None


def _decode_problems(text: Any) -> list[LayoutProblem]:
    if not isinstance(text, str) or not text:
        return []
    found = []
    for line in text.split("\n"):
        parts = line.split("\0")
        if len(parts) == 3:
            found.append(LayoutProblem(parts[0], parts[1], parts[2]))
    return found



def _nest(changes: Mapping[str, bytes | StoredBlob | None]) -> dict:
    nested: dict = {}
    for path, data in changes.items():
        parts = path.strip("/").split("/")
        node = nested
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = data
    return nested


def _loose_head(objects: Path, oid: str, limit: int) -> bytes | None:
    r"""The first ``limit`` bytes of the loose blob ``oid``, inflating no more than that; else ``None``.

    A loose object is zlib over ``blob <size>\0<content>`` (``git help gitformat-loose``
    in git 2.40+, "Object storage" in the Git book); ``None`` when it is packed, not a blob,
    or damaged, and the caller asks git.
    """
    import zlib

    try:
        handle = open(objects / oid[:2] / oid[2:], "rb")  # noqa: SIM115 - closed below
    except OSError:
        return None
    inflate = zlib.decompressobj()
    out = b""
    try:
        with handle:
            while len(out) < limit + 64 and not inflate.eof:
                chunk = handle.read(65536)
                if not chunk:
                    break
                out += inflate.decompress(chunk, limit + 64 - len(out))
                while inflate.unconsumed_tail and len(out) < limit + 64:
                    out += inflate.decompress(inflate.unconsumed_tail, limit + 64 - len(out))
    except (OSError, zlib.error):
        return None
    header, sep, body = out.partition(b"\0")
    if not sep or not header.startswith(b"blob "):
        return None
    return body[:limit]


def _names(tree: pygit2.Tree) -> set[str]:
    """Names of a tree's entries (objects read from a tree always have one)."""
    return {entry.name for entry in tree if entry.name is not None}


class Trees:
    """The objects of the memory ref's commits: trees, records, notes, and new trees written.

    Args:
        repository: where the objects are.
        lookups: the store's memo of lookups of immutable objects.
        tip: the store's reader of a ref's tip (``tip()`` for the memory ref, ``tip(ref)``),
            its guard included.
    """

    def __init__(self, repository: Repository, lookups: Lookups,
                 tip: Callable[..., str | None]) -> None:
        self._repository = repository
        self._lookups = lookups
        self._tip = tip
        self._prefetched = False

    def _root(self, commit_sha: str | None) -> pygit2.Tree | None:
        return None if commit_sha is None else self.commit_tree(commit_sha)

    def commit_tree(self, commit_sha: str) -> pygit2.Tree:
        """The root tree of commit ``commit_sha``.

        Raises:
            FormatVersion: ``commit_sha`` is not a commit.
        """
        commit = self._repository.access.get(commit_sha)
        if not isinstance(commit, pg().Commit):
            raise FormatVersion(f"{commit_sha[:12]} on the memory ref is not a commit")
        return self._repository.access.tree_of(commit)

    def _tree(self, tree_id: str | pygit2.Oid) -> pygit2.Tree:
        """The tree ``tree_id``: an id git records as a tree (an entry of type tree, a written tree)."""
        return cast("pygit2.Tree", self._repository.access.get(str(tree_id)))

    def _blob_data(self, blob_id: str) -> bytes:
        """The content of ``blob_id``: an id git records as a blob (an entry of type blob).

        In a partial clone, the first blob found missing brings every missing blob of the
        memory trees with it, in one fetch.
        """
        return self._repository.access.blob(blob_id, also=self._memory_blobs)

    def _memory_blobs(self) -> set[str]:
        """Ids of every blob in the trees of ``refs/tur/memories`` and its remote-tracking refs.

        Only once per store: after the first miss, a further one is a single blob.
        """
        if self._prefetched:
            return set()
        self._prefetched = True
        tips = {self._tip()} | {
            self._tip(name) for name in self._repository.repo.references
            if name.startswith("refs/tur/remotes/") and name.endswith("/memories")
        }
        found: set[str] = set()
        for tip in tips - {None}:
            assert tip is not None
            pending = [self.commit_tree(tip)]
            while pending:
                for entry in pending.pop():
                    if entry.type_str == "tree":
                        pending.append(self._tree(entry.id))
                    elif entry.type_str == "blob":
                        found.add(str(entry.id))
        return found

    def _id_at(self, commit_sha: str | None, path: str, kind: str) -> str | None:
        """Id of the ``kind`` ("blob" or "tree") object at ``path`` in the commit's tree, or ``None``."""
        if commit_sha is None:
            return None
        return self._lookups.memoized(f"{kind}:{commit_sha}:{path}",
                              lambda: self._lookup(commit_sha, path, kind))

    def _lookup(self, commit_sha: str, path: str, kind: str) -> str | None:
        root = self._root(commit_sha)
        if root is None:
            return None
        try:
            obj = root[tree_name(path)]
        except KeyError:
            return None
        return str(obj.id) if obj.type_str == kind else None

    def check_format(self, commit_sha: str | None) -> None:
        """See :meth:`gitmem.store.Store.check_format`."""
        if commit_sha is None:
            return
        if self.check_marker(commit_sha):
            return
        root = self.commit_tree(commit_sha)
        names = _names(root)
        if FORMAT_PATH in names:
            marker = root[FORMAT_PATH]
            if marker.type_str != "blob":
                raise FormatVersion(
                    f"commit {commit_sha[:12]} is not a gitmem memory history "
                    f"(its {FORMAT_PATH} is not a file)",
                    "check which ref you are reading",
                )
            text = self._blob_data(str(marker.id)).decode("utf-8", "replace")
            version = text.strip().removeprefix("format:").strip()
            if version != str(FORMAT_VERSION):
                raise FormatVersion(
                    f"memory ref {commit_sha[:12]} has format {version!r}, this gitmem reads "
                    f"{FORMAT_VERSION}",
                    "upgrade gitmem (pip install -U gitmem)",
                )
        elif names - {"memories", "persona.yaml", "continuity", "runs"}:
            raise FormatVersion(
                f"commit {commit_sha[:12]} is not a gitmem memory history "
                f"(its tree holds {', '.join(sorted(names)[:4])})",
                "check which ref you are reading",
            )

    def check_marker(self, commit_sha: str | None) -> bool:
        """See :meth:`gitmem.store.Store.check_marker`."""
        if commit_sha is None:
            return False
        # Two memoised lookups (the marker's blob id, carried from commit to commit, and its
        # version), so that a warm read checks the format without opening libgit2.
        marker_id = self._id_at(commit_sha, FORMAT_PATH, "blob")
        if marker_id is None:
            return False
        version = self._lookups.memoized(f"format:{marker_id}", lambda: self._version(marker_id))
        if version != str(FORMAT_VERSION):
            raise FormatVersion(
                f"memory ref {commit_sha[:12]} has format {version!r}, this gitmem reads "
                f"{FORMAT_VERSION}",
                "upgrade gitmem (pip install -U gitmem)",
            )
        return True

    def _version(self, marker_id: str) -> str:
        """The version a ``.gitmem`` marker blob names (``format: 1`` -> ``"1"``)."""
        return self._blob_data(marker_id).decode("utf-8", "replace").strip().removeprefix("format:").strip()

    def entry_kind(self, commit_sha: str | None, path: str) -> str | None:
        """``"blob"``, ``"tree"`` or ``"commit"`` (a submodule): what is at ``path``, or ``None``."""
        root = self._root(commit_sha)
        if root is None:
            return None
        try:
            return str(root[tree_name(path)].type_str)
        except KeyError:
            return None

    def subtree_id(self, commit_sha: str | None, path: str) -> str | None:
        """Id of the tree at ``path`` in the commit's tree (``memories`` → the record tree)."""
        return self._id_at(commit_sha, path, "tree")

    def id_in_tree(self, tree_id: str, path: str) -> str | None:
        """See :meth:`gitmem.store.Store.id_in_tree`."""
        try:
            return str(self._tree(tree_id)[tree_name(path)].id)
        except KeyError:
            return None

    def entries(self, commit_sha: str | None) -> dict[str, str]:
        """See :meth:`gitmem.store.Store.entries`."""
        return self.record_layout(commit_sha)[0]

    def record_layout(self, commit_sha: str | None) -> tuple[dict[str, str], list[LayoutProblem]]:
        """See :meth:`gitmem.store.Store.record_layout`."""
        root = self._root(commit_sha)
        if root is None or "memories" not in _names(root):
            return {}, []
        top = root["memories"]
        if top.type_str != "tree":
            return {}, [LayoutProblem("memories", str(top.id),
                                      f"is a {_kind(top)}, not the records directory: no record is read")]
        out: dict[str, str] = {}
        problems: list[LayoutProblem] = []
        misplaced: list[tuple[str, str, str]] = []
        for shard in self._tree(top.id):
            shard_path = f"memories/{shard.name}"
            if shard.type_str != "tree":  # a directory of another name is walked: its records are named
                problems.append(LayoutProblem(shard_path, str(shard.id),
                                              "is not a shard directory (memories/<2 hex>/)"))
                continue
            for entry in self._tree(shard.id):
                name = entry.name or ""
                path, oid = f"{shard_path}/{name}", str(entry.id)
                memory_id = name[: -len(".yaml")] if name.endswith(".yaml") else ""
                if entry.type_str != "blob" or entry.filemode not in _REGULAR:
                    problems.append(LayoutProblem(path, oid, f"is a {_kind(entry)}, not a record file"))
                elif not ID_PATTERN.match(memory_id):
                    problems.append(LayoutProblem(path, oid, "is not named <type>-<hex>.yaml"))
                elif shard_of(memory_id) != shard.name:
                    misplaced.append((path, oid, memory_id))
                else:
                    out[memory_id] = oid
        for path, oid, memory_id in misplaced:
            right = f"memories/{shard_of(memory_id)}/{memory_id}.yaml"
            reason = (f"is a second record for {memory_id}, whose record is {right}" if memory_id in out
                      else f"is not where its id says: {memory_id} belongs at {right}")
            problems.append(LayoutProblem(path, oid, reason, misplaced=memory_id not in out))
        return out, sorted(problems)

    def record_changes(self, old_tree: str, new_tree: str) -> dict[str, str | None] | None:
        """See :meth:`gitmem.store.Store.record_changes`."""
        key = f"changes:{old_tree}:{new_tree}"
        if not self._lookups.lacks(key):
            return _decode_changes(self._lookups.memo().get(key))
        pairs = self._differing(old_tree, new_tree, strict=True)
        changes = None if pairs is None else {i: after for i, (_, after) in pairs.items()}
        if changes is None or len(changes) <= _MEMO_CHANGES:
            self._lookups.memo().put(key, _encode_changes(changes))
        return changes

    def changed_records(self, old_tree: str | None,
                        new_tree: str | None) -> dict[str, tuple[str | None, str | None]]:
        """See :meth:`gitmem.store.Store.changed_records`."""
        if old_tree == new_tree:
            return {}
        found = self._differing(old_tree, new_tree, strict=False)
        assert found is not None  # only a strict walk gives up
        return found

    def _differing(self, old_tree: str | None, new_tree: str | None,
                   strict: bool) -> dict[str, tuple[str | None, str | None]] | None:
        """Id -> (blob in ``old_tree``, blob in ``new_tree``; ``None``: absent) of each record that differs.

        Shards whose tree ids are equal are not read (the fan-out's gain). ``strict``: ``None``
        as soon as a differing shard holds anything that is not a record in its place (the
        caller then reads the whole layout); otherwise such entries are passed over.
        """
        old, new = ({e.name: e for e in self._tree(t)} if t is not None else {} for t in (old_tree, new_tree))
        out: dict[str, tuple[str | None, str | None]] = {}
        for name in old.keys() | new.keys():
            before, after = old.get(name), new.get(name)
            if before is not None and after is not None and before.id == after.id:
                continue
            records = [self._shard_records(name, entry, strict) for entry in (before, after)]
            if records[0] is None or records[1] is None:
                return None
            for memory_id in records[0].keys() | records[1].keys():
                then, now = records[0].get(memory_id), records[1].get(memory_id)
                if then != now:
                    out[memory_id] = (then, now)
        return out

    def _shard_records(self, name: str | None, entry: Any, strict: bool = True) -> dict[str, str] | None:
        """Id -> blob id of the records of one shard entry (``None``: absent).

        ``None`` if any entry is not a record in its place and ``strict``; else those are skipped.
        """
        if entry is None:
            return {}
        if entry.type_str != "tree":
            return None if strict else {}
        out = {}
        for item in self._tree(entry.id):
            file = item.name or ""
            memory_id = file[: -len(".yaml")] if file.endswith(".yaml") else ""
            if item.type_str != "blob" or item.filemode not in _REGULAR \
                    or not ID_PATTERN.match(memory_id) or shard_of(memory_id) != name:
                if strict:
                    return None
                continue
            out[memory_id] = str(item.id)
        return out

    def root_problems(self, commit_sha: str | None) -> list[LayoutProblem]:
        """See :meth:`gitmem.store.Store.root_problems`."""
        if commit_sha is None:
            return []
        found = self._lookups.memoized(f"root:{commit_sha}",
                               lambda: _encode_problems(self._root_problems(commit_sha)))
        return _decode_problems(found)

    def _root_problems(self, commit_sha: str) -> list[LayoutProblem]:
        root = self.commit_tree(commit_sha)
        problems = []
        for entry in root:
            name, oid = entry.name or "", str(entry.id)
            if name in (FORMAT_PATH, "memories"):
                continue
            if name == "runs":
                if entry.type_str != "tree":
                    problems.append(LayoutProblem(name, oid, f"is a {_kind(entry)}, not the runs directory"))
                continue
            if name == "persona.yaml":
                if entry.type_str != "blob" or entry.filemode not in _REGULAR:
                    problems.append(LayoutProblem(name, oid, f"is a {_kind(entry)}, not a persona file"))
            elif name == "continuity":
                if entry.type_str != "tree":
                    problems.append(LayoutProblem(name, oid, f"is a {_kind(entry)}, not the notes directory"))
                    continue
                for note in self._tree(entry.id):
                    if note.type_str != "blob" or note.filemode not in _REGULAR:
                        problems.append(LayoutProblem(f"continuity/{note.name}", str(note.id),
                                                      f"is a {_kind(note)}, not a note"))
            else:
                problems.append(LayoutProblem(name, oid, "is not part of a memory tree"))
        return sorted(problems)

    def list_dir(self, commit_sha: str | None, directory: str) -> dict[str, str]:
        """Map the names of regular files directly under ``directory`` to their blob ids."""
        tree_id = self.subtree_id(commit_sha, directory)
        if tree_id is None:
            return {}
        key = f"ls:{tree_id}"
        if not self._lookups.lacks(key):
            return self._lookups.memoized(key, dict)
        listing = {
            e.name: str(e.id) for e in self._tree(tree_id)
            if e.type_str == "blob" and e.filemode in _REGULAR and e.name is not None
        }
        if len(listing) <= 64:  # small directories (continuity notes) only: the memo stays small
            self._lookups.memo().put(key, listing)
        return listing

    def read_note(self, blob_id: str, limit: int = 8192) -> str:
        """See :meth:`gitmem.store.Store.read_note`."""
        key = f"note:{blob_id}"
        if not self._lookups.lacks(key):
            return cast(str, self._lookups.memo().get(key))
        data = self.read_blob(blob_id)
        text = data.decode("utf-8", "replace")
        if len(data) <= limit:  # larger notes are not remembered
            self._lookups.memo().put(key, text)
        return text

    def blob_size(self, blob_id: str, remember: bool = False) -> int:
        """See :meth:`gitmem.store.Store.blob_size`."""
        key = f"size:{blob_id}"
        if remember:
            found = self._lookups.memo().get(key)
            if isinstance(found, str) and found.isdigit():
                return int(found)
        try:
            size = int(self._repository.repo.odb.read_header(blob_id)[1])
        except (KeyError, ValueError):
            # Not here (a partial clone): read it as every blob is read, which fetches it.
            size = len(self._blob_data(blob_id))
        if remember:
            self._lookups.memo().put(key, str(size))
        return size

    def read_blob(self, blob_id: str) -> bytes:
        """See :meth:`gitmem.store.Store.read_blob`."""
        return self._blob_data(blob_id)

    def read_blob_head(self, blob_id: str, limit: int) -> bytes:
        """See :meth:`gitmem.store.Store.read_blob_head`."""
        loose = _loose_head(self._repository.common_dir / "objects", blob_id, limit)
        if loose is not None:
            return loose
        access = self._repository.access
        data = access.git.blob_head(blob_id, limit)
        if data is None:  # a partial clone's missing blob: fetched (whole) as every blob is
            return self._blob_data(blob_id)[:limit]
        return data

    def read_path(self, commit_sha: str | None, path: str) -> bytes | None:
        """Bytes of the blob at ``path`` in the commit's tree, or ``None`` when absent."""
        blob_id = self._id_at(commit_sha, path, "blob")
        return None if blob_id is None else self._blob_data(blob_id)

    def blob_id_at(self, commit_sha: str | None, path: str) -> str | None:
        """Blob id at ``path`` in the commit's tree, or ``None``."""
        return self._id_at(commit_sha, path, "blob")


    def write_blob(self, data: bytes) -> StoredBlob:
        """See :meth:`gitmem.store.Store.write_blob`."""
        try:
            return StoredBlob(str(self._repository.repo.create_blob(data)))
        except (OSError, pg().GitError) as exc:
            raise self.write_error(exc) from None

    def write_tree(self, base_commit: str | None, changes: Mapping[str, bytes | StoredBlob | None],
                   written: dict[str, str] | None = None) -> str:
        """See :meth:`gitmem.store.Store.write_tree`."""
        root = self._root(base_commit)
        all_changes = dict(changes)
        if root is None or FORMAT_PATH not in _names(root):
            all_changes.setdefault(FORMAT_PATH, _FORMAT_BLOB)
        return str(self._apply(root, _nest(all_changes), written, ""))

    def _apply(self, tree: pygit2.Tree | None, nested: dict, written: dict[str, str] | None = None,
               prefix: str = "") -> pygit2.Oid:
        repo = self._repository.repo
        builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
        for given, change in nested.items():
            name = tree_name(given)
            if isinstance(change, dict):
                sub = None
                if tree is not None and name in tree and tree[name].type_str == "tree":
                    sub = self._tree(tree[name].id)
                oid = self._apply(sub, change, written, f"{prefix}{name}/")
                if len(self._tree(oid)) == 0:
                    if builder.get(name) is not None:
                        builder.remove(name)
                else:
                    builder.insert(name, oid, pg().enums.FileMode.TREE)
            elif change is None:
                if builder.get(name) is not None:
                    builder.remove(name)
            else:
                blob = (pg().Oid(hex=change.oid) if isinstance(change, StoredBlob)
                        else self._repository.repo.create_blob(change))
                builder.insert(name, blob, pg().enums.FileMode.BLOB)
                if written is not None:
                    written[prefix + name] = str(blob)
        return builder.write()


    def carry_lookups(self, parent: str, new: str,
                       changes: Mapping[str, bytes | StoredBlob | None]) -> None:
        """Remember for ``new`` the lookups known for ``parent`` at paths its changes did not touch.

        ``new`` is ``parent``'s tree with ``changes``: what is at any other path (the persona,
        the notes directory, the root's problems when only ``memories/`` changed) is the
        same object, so the first read of ``new`` (a wake after a learn) needs no libgit2.
        """
        memo = self._lookups.memo()
        data = memo.snapshot()
        changed = [path.strip("/") for path in changes]

        def untouched(path: str) -> bool:
            return not any(c == path or c.startswith(path + "/") or path.startswith(c + "/")
                           for c in changed)

        carried = {}
        for key, value in data.items():
            kind, _, rest = key.partition(":")
            if kind in ("blob", "tree") and rest.startswith(parent + ":"):
                path = rest[len(parent) + 1:]
                if path and untouched(path):
                    carried[f"{kind}:{new}:{path}"] = value
        if f"root:{parent}" in data and all(c.startswith("memories/") for c in changed):
            carried[f"root:{new}"] = data[f"root:{parent}"]
        if carried:
            memo.put_many(carried)


    def write_error(self, exc: Exception) -> Exception:
        """``exc`` as the error a user should see: denied, out of space, or itself.

        :class:`~gitmem.errors.ReadOnlyRepository` when writing was denied,
        :class:`~gitmem.errors.DiskFull` when it found no room, else ``exc``.
        """
        from gitmem.store.fallback import write_error

        return write_error(exc, self._repository.common_dir) or disk_full(exc) or exc

