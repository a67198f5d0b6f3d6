"""The user's ``git`` executable, for what libgit2 cannot do; :mod:`gitmem.store.fallback` decides when.

Each function here is one git command whose output is parsed into plain data
(strings, bytes, sets); nothing here imports pygit2. Commands that only read run with
``--no-optional-locks``, so that a read never rewrites the index (``git status`` would
refresh it otherwise) and works in a repository the user cannot write.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import weakref
import zlib
from dataclasses import dataclass
from pathlib import Path

from gitmem.errors import GitmemError

__all__ = ["IDENTITY_VARIABLES", "CatFile", "Git", "PathChange", "PathStatus", "first_line",
           "environment_with", "identity_environment"]

IDENTITY_VARIABLES = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME",
                      "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "EMAIL", "GIT_CONFIG_GLOBAL")
"""The environment git reads the identity of a commit from (``git help commit``; ``git help config``)."""


def identity_environment() -> dict[str, str]:
    """The :data:`IDENTITY_VARIABLES` that are set, as git would read them now."""
    return {name: os.environ[name] for name in IDENTITY_VARIABLES if name in os.environ}


def environment_with(overrides: dict[str, str]) -> dict[str, str]:
    """The process's environment with ``overrides`` set: for a git run that must see them."""
    return {**os.environ, **overrides}

#: Seconds a read-only git command may take before gitmem gives up on it.
TIMEOUT_S = 60.0
#: Seconds a fetch of missing objects from a promisor remote may take.
FETCH_TIMEOUT_S = 300.0
#: Seconds a commit-graph write may take: killed, git would leave its lock file behind, and
#: the first write of a long history (every commit's Bloom filter) takes about 1 s a 20,000 commits.
GRAPH_TIMEOUT_S = 3600.0
#: Pathspecs passed to one ``git ls-files`` (the rest go in further calls).
_PATHS_PER_CALL = 500


def first_line(stderr: bytes | str) -> str:
    """The most telling line of git's stderr: the first ``fatal:``/``error:`` line, else the last."""
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("hint:")]
    for line in lines:
        if line.startswith(("fatal:", "error:")):
            return line
    return lines[-1] if lines else "git gave no reason"


def _no_git(exc: OSError) -> GitmemError:
    return GitmemError(
        f"this repository needs the git executable, which could not be run: {exc}",
        "install git, or put it on PATH",
    )


@dataclass(frozen=True)
class PathStatus:
    """One tracked path as ``git status --porcelain=v2`` reports it.

    Attributes:
        staged: the ``X`` letter (index against HEAD): ``.`` unchanged, ``M``, ``T``, ``A``, ``D``.
        unstaged: the ``Y`` letter (working tree against the index), same letters.
        conflicted: an unmerged path.
        index_id: the blob id the index holds for the path (``None``: none, or unmerged).
    """

    staged: str
    unstaged: str
    conflicted: bool = False
    index_id: str | None = None


@dataclass(frozen=True)
class PathChange:
    """One commit of :meth:`Git.path_log` (``git log -- PATH``): what git says it did to the path.

    Attributes:
        sha: the commit.
        parents: its parents, in order (two or more: a merge).
        old: the path's blob id in the (only) parent, ``None`` when absent there; ``None``
            for a merge, whose blobs git does not list.
        new: the path's blob id in the commit, ``None`` when absent (a deletion); ``None``
            for a merge.
        listed: whether git gave the blob ids (``--raw``); false for a merge.
    """

    sha: str
    parents: tuple[str, ...]
    old: str | None = None
    new: str | None = None
    listed: bool = False


class CatFile:
    """A persistent ``git cat-file --batch`` process, started on the first read.

    git reads what libgit2 cannot: in a partial clone it fetches a missing object from
    the promisor remote itself. One process serves every read of the repository; it
    ends with this object (or at interpreter exit).
    """

    def __init__(self, git: Git) -> None:
        self._git = git
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            try:
                self._proc = subprocess.Popen(
                    [*self._git.base, "cat-file", "--batch"], cwd=self._git.cwd,
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                )
            except OSError as exc:
                raise _no_git(exc) from exc
            weakref.finalize(self, _end, self._proc)
        return self._proc

    def read(self, oid: str) -> tuple[str, bytes] | None:
        """``(type, content)`` of the object ``oid`` (40 hex digits), or ``None`` when git has none."""
        with self._lock:
            proc = self._start()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(oid.encode() + b"\n")
                proc.stdin.flush()
                header = proc.stdout.readline().split()
            except OSError:
                header = []
            if len(header) != 3:  # "<oid> missing", or git went away
                return None
            size = int(header[2])
            data = proc.stdout.read(size + 1)[:size]
            return header[1].decode(), data

    def close(self) -> None:
        """End the process (it is started again by the next read)."""
        if self._proc is not None:
            _end(self._proc)
            self._proc = None


def _end(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


#: git's variables that move the git directory or the work tree away from where ``.git`` is.
LAYOUT_VARIABLES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR")


def layout_variables_set() -> bool:
    """Whether one of :data:`LAYOUT_VARIABLES` is set (git then ignores the ``.git`` walk)."""
    return any(os.environ.get(name) for name in LAYOUT_VARIABLES)


def layout(start: Path) -> tuple[Path, Path, Path | None] | None:
    """``(git dir, common dir, work tree or None)`` as git itself, run in ``start``, finds them.

    For the layouts a walk up to ``.git`` does not see: ``GIT_DIR`` with ``GIT_WORK_TREE``
    (the dotfiles set-up), ``core.worktree``, ``GIT_COMMON_DIR``. git's answer is the
    definition (``git help rev-parse``: ``--absolute-git-dir``, ``--git-common-dir``,
    ``--is-bare-repository``, ``--show-toplevel``). ``None`` when git finds no repository
    (or cannot be run).
    """
    try:
        # One process: in a bare repository --show-toplevel fails after the first three answers.
        proc = subprocess.run(["git", "rev-parse", "--absolute-git-dir", "--git-common-dir",
                               "--is-bare-repository", "--show-toplevel"], cwd=start, capture_output=True,
                              stdin=subprocess.DEVNULL, check=False, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    if len(found) < 3 or (proc.returncode != 0 and found[2] != "true"):
        return None
    workdir = Path(found[3]) if found[2] != "true" and len(found) > 3 else None
    return Path(found[0]), (start / found[1]).resolve(), workdir


class Git:
    """The ``git`` executable pointed at one repository (``--git-dir`` and, if any, ``--work-tree``)."""

    def __init__(self, git_dir: Path, workdir: Path | None) -> None:
        self.git_dir = git_dir
        self.workdir = workdir
        self.base = ["git", "--no-optional-locks", "--git-dir", str(git_dir)]
        if workdir is not None:
            self.base += ["--work-tree", str(workdir)]
        self.cwd = workdir or git_dir
        self.cat = CatFile(self)

    def run(self, *args: str, data: bytes | None = None, env: dict[str, str] | None = None,
            timeout: float = TIMEOUT_S, spool: bool = False) -> subprocess.CompletedProcess[bytes]:
        """Run ``git <args>`` and return the finished process (stdout and stderr as bytes).

        ``spool``: git writes its stdout to a temporary file, read back at the end; for
        megabytes of output, which a pipe would hand over in a few thousand reads.

        Raises:
            GitmemError: git cannot be run at all, or took more than ``timeout`` seconds.
        """
        try:
            if spool:
                with tempfile.TemporaryFile() as out:
                    proc = subprocess.run(
                        [*self.base, *args], cwd=self.cwd, input=data, stdout=out, stderr=subprocess.PIPE,
                        check=False, env=env, timeout=timeout,
                        stdin=subprocess.DEVNULL if data is None else None,
                    )
                    out.seek(0)
                    proc.stdout = out.read()
                    return proc
            return subprocess.run(
                [*self.base, *args], cwd=self.cwd, input=data, capture_output=True, check=False,
                env=env, timeout=timeout,
                # stdin from /dev/null: a credential prompt must not wait for input that never comes.
                stdin=subprocess.DEVNULL if data is None else None,
            )
        except subprocess.TimeoutExpired as exc:
            name = _command(args)
            raise GitmemError(f"git {name} took more than {timeout:.0f} s",
                              f"run `git {name}` yourself to see why") from exc
        except OSError as exc:
            raise _no_git(exc) from exc

    def blob_head(self, oid: str, limit: int) -> bytes | None:
        """The first ``limit`` bytes of the blob ``oid``, or ``None`` when git has no such blob.

        ``git cat-file blob`` streams a blob to its output (``stream_blob_to_fd``), so this
        process reads ``limit`` bytes and closes the pipe: neither side holds the whole blob.

        Raises:
            GitmemError: git cannot be run.
        """
        try:
            proc = subprocess.Popen([*self.base, "cat-file", "blob", oid], cwd=self.cwd,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL)
        except OSError as exc:
            raise _no_git(exc) from exc
        assert proc.stdout is not None
        try:
            data = proc.stdout.read(limit)
        finally:
            proc.stdout.close()  # git stops at its next write (SIGPIPE)
            code = proc.wait()
        if code != 0 and len(data) < limit:
            return None
        return data

    def output(self, *args: str) -> bytes:
        """Stdout of ``git <args>``.

        Raises:
            GitmemError: git failed; the message quotes git's reason.
        """
        proc = self.run(*args)
        if proc.returncode != 0:
            raise GitmemError(f"git {_command(args)} failed: {first_line(proc.stderr)}")
        return proc.stdout

    # -- history ------------------------------------------------------------------------------

    def path_log(self, tip: str, path: str, *, commit_graph: bool = True) -> list[PathChange]:
        """Commits reachable from ``tip`` whose version of ``path`` differs from every parent's, newest first.

        git's walk in its default mode (``git log -- PATH``): a commit with one parent is
        listed when the path differs from its parent's, with both blob ids; a merge when
        it differs from every parent's; a root commit when it has the path. That mode
        follows only the parent a merge kept the path from; so that no commit is left
        out (a change that lost a merge), the walk also starts from every parent of every
        merge (from ``git rev-list --date-order --parents``), which costs git no tree reads, where
        ``--full-history`` would compare each merge with every parent. The walk is git's
        own, so it reads the commit-graph and its changed-path Bloom filters where the
        repository has them (``git help commit-graph``): a commit whose filter says the
        path did not change is passed without reading its tree. Order: that of
        ``git rev-list --date-order`` (no commit before all of its children; otherwise
        newest commit time first), which that same walk of the whole history gives.

        Args:
            tip: the commit the walk starts from (full hex).
            path: one file's path from the top of the tree, matched literally.
            commit_graph: ``False`` makes git ignore any commit-graph
                (``core.commitGraph=false``): the walk reads every commit object.

        Raises:
            GitmemError: git failed (its reason quoted), or cannot be run.
        """
        # -c: what the user's log.* settings would change (following renames, signatures,
        # colour) is pinned; the pathspec is literal and replace refs are ignored, as
        # libgit2 reads the objects.
        common = ["--no-replace-objects", "--literal-pathspecs"]
        if not commit_graph:
            common += ["-c", "core.commitGraph=false"]
        walk = self.run(*common, "rev-list", "--date-order", "--parents", tip, spool=True)
        if walk.returncode != 0:
            raise GitmemError(f"git rev-list failed: {first_line(walk.stderr)}")
        lines = walk.stdout.split(b"\n")
        order = {line[:40]: n for n, line in enumerate(lines)}
        # a merge's line holds three ids or more (122 characters and up)
        tips = {tip.encode(), *(p for line in lines if len(line) > 100 for p in line.split()[1:])}
        proc = self.run(*common, "-c", "log.follow=false", "-c", "log.showSignature=false",
                        "-c", "color.ui=false", "log", "--stdin", "--raw", "--no-abbrev",
                        "--root", "--no-renames", "--format=%x01%H %P", "--", path,
                        data=b"".join(sha + b"\n" for sha in sorted(tips)))
        if proc.returncode != 0:
            raise GitmemError(f"git log failed: {first_line(proc.stderr)}")
        # git orders each start's line apart; the order of the whole history puts them together
        return sorted(_path_changes(proc.stdout), key=lambda c: order.get(c.sha.encode(), len(order)))

    def write_commit_graph(self, tips: list[str]) -> str | None:
        """Add the commits reachable from ``tips`` to the repository's commit-graph, with Bloom filters.

        ``git commit-graph write --stdin-commits --changed-paths --split``: git writes a new
        layer holding only the commits no layer holds yet, into the repository's own
        ``objects/info/commit-graphs/``, and merges small layers as it does for ``git
        maintenance`` (its default ``--split`` strategy). Commits of other refs are not
        added.

        Returns:
            ``None`` when written, else git's reason.
        """
        data = "".join(f"{tip}\n" for tip in tips).encode()
        try:
            proc = self.run("commit-graph", "write", "--stdin-commits", "--changed-paths", "--split",
                            "--no-progress", data=data, timeout=GRAPH_TIMEOUT_S)
        except GitmemError as exc:
            return exc.message
        return None if proc.returncode == 0 else first_line(proc.stderr)

    # -- the index and the working tree -------------------------------------------------------

    def status(self) -> dict[str, PathStatus]:
        """Tracked paths whose index or working tree differs from HEAD (``git status``).

        git applies everything the index records (split index, sparse index, skip-worktree
        bits, untracked cache) and compares file contents through their clean filters.
        """
        out = self.output("status", "--porcelain=v2", "-z", "--untracked-files=no", "--no-renames",
                          "--ignore-submodules=dirty")
        found: dict[str, PathStatus] = {}
        for record in out.split(b"\0"):
            kind = record[:2]
            if kind == b"1 ":
                # 1 XY sub mH mI mW hH hI path
                parts = record.split(b" ", 8)
                xy, index_id, path = parts[1].decode(), parts[7].decode(), parts[8]
                found[_path(path)] = PathStatus(xy[0], xy[1], False,
                                                None if set(index_id) == {"0"} else index_id)
            elif kind == b"u ":
                # u XY sub m1 m2 m3 mW h1 h2 h3 path
                parts = record.split(b" ", 10)
                xy = parts[1].decode()
                found[_path(parts[10])] = PathStatus(xy[0], xy[1], True, None)
        return found

    def index_id(self, path: str) -> str | None:
        """The blob id the index holds (stage 0) for ``path``, or ``None``."""
        out = self.output("ls-files", "-s", "-z", "--", _literal(path))
        for record in out.split(b"\0"):
            meta, _, name = record.partition(b"\t")
            fields = meta.split()
            if len(fields) == 3 and fields[2] == b"0" and _path(name) == path:
                return fields[1].decode()
        return None

    def skip_worktree(self, paths: list[str]) -> set[str]:
        """Which of ``paths`` have the skip-worktree bit (outside a sparse checkout's cone)."""
        found: set[str] = set()
        for start in range(0, len(paths), _PATHS_PER_CALL):
            chunk = [_literal(p) for p in paths[start : start + _PATHS_PER_CALL]]
            out = self.output("ls-files", "-t", "-z", "--", *chunk)
            for record in out.split(b"\0"):
                if record[:2] == b"S ":
                    found.add(_path(record[2:]))
        return found

    def attributes(self, paths: list[str], names: tuple[str, ...]) -> dict[str, dict[str, str]]:
        """The values of the attributes ``names`` of each of ``paths`` (one ``git check-attr``).

        Returns:
            ``{path: {name: value}}`` for the attributes that are set: a driver's name,
            ``"set"`` or ``"unset"``; unspecified ones are left out.
        """
        data = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
        proc = self.run("check-attr", "-z", "--stdin", *names, data=data)
        if proc.returncode != 0:
            raise GitmemError(f"git check-attr failed: {first_line(proc.stderr)}")
        fields = proc.stdout.split(b"\0")
        found: dict[str, dict[str, str]] = {path: {} for path in paths}
        for i in range(0, len(fields) - 2, 3):
            value = fields[i + 2].decode("utf-8", "replace")
            if value != "unspecified":
                found.setdefault(_path(fields[i]), {})[fields[i + 1].decode()] = value
        return found

    def clean(self, paths: list[str]) -> dict[str, bytes]:
        """The working-tree files ``paths`` as git would store them: through their clean filters.

        ``git hash-object -w --stdin-paths`` runs each file through its filter (a driver of
        ``.gitattributes``, Git LFS, ``ident``, end-of-line conversion) and writes the blobs
        into a temporary object directory, so that nothing in the repository is written;
        they are read back from there. One git process for all of ``paths``.

        Raises:
            GitmemError: a filter failed.
        """
        if any("\n" in p for p in paths):  # one path a line: such names go one at a time
            out: dict[str, bytes] = {}
            for path in paths:
                out.update(self._clean_one(path) if "\n" in path else self.clean([path]))
            return out
        with tempfile.TemporaryDirectory(prefix="tur-clean-") as tmp:
            env = dict(os.environ, GIT_OBJECT_DIRECTORY=tmp)
            data = "".join(f"{p}\n" for p in paths).encode("utf-8", "surrogateescape")
            proc = self.run("hash-object", "-w", "--stdin-paths", data=data, env=env)
            if proc.returncode != 0:
                raise self._clean_failed(paths, proc.stderr)
            oids = proc.stdout.decode().split()
            return {path: _loose_blob(Path(tmp), oid) for path, oid in zip(paths, oids, strict=True)}

    def _clean_one(self, path: str) -> dict[str, bytes]:
        assert self.workdir is not None
        from gitmem.store.paths import worktree_path

        data = worktree_path(self.workdir, path).read_bytes()
        with tempfile.TemporaryDirectory(prefix="tur-clean-") as tmp:
            env = dict(os.environ, GIT_OBJECT_DIRECTORY=tmp)
            proc = self.run("hash-object", "-w", "--stdin", f"--path={path}", data=data, env=env)
            if proc.returncode != 0:
                raise self._clean_failed([path], proc.stderr)
            return {path: _loose_blob(Path(tmp), proc.stdout.decode().strip())}

    @staticmethod
    def _clean_failed(paths: list[str], stderr: bytes) -> GitmemError:
        return GitmemError(
            f"git could not run {paths[0]}" + (f" (or {len(paths) - 1} more)" if len(paths) > 1 else "")
            + f" through its clean filter: {first_line(stderr)}",
            f"check the filter driver named in .gitattributes (`git check-attr filter -- {paths[0]}`)",
        )

    # -- objects ------------------------------------------------------------------------------

    def fetch_missing(self, remote: str, oids: list[str]) -> str | None:
        """Fetch ``oids`` from the promisor ``remote`` in one request, as git's lazy fetch does.

        The command is the one git runs when it finds an object missing in a partial clone
        (``promisor-remote.c``): no negotiation, no refs or tags updated, the objects named
        on stdin.

        Returns:
            ``None`` on success, else git's reason.
        """
        proc = self.run(
            "-c", "fetch.negotiationAlgorithm=noop", "fetch", remote, "--no-tags",
            "--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none", "--stdin",
            data="".join(f"{oid}\n" for oid in oids).encode(), timeout=FETCH_TIMEOUT_S,
            env=dict(os.environ, GIT_TERMINAL_PROMPT="0"),
        )
        return None if proc.returncode == 0 else first_line(proc.stderr)


_ABSENT = "0" * 40


def _path_changes(out: bytes) -> list[PathChange]:
    """Parse :meth:`Git.path_log`'s output: a 0x01 byte, ``SHA PARENTS``, then the commit's raw diff."""
    found: list[PathChange] = []
    for chunk in out.split(b"\x01")[1:]:
        lines = chunk.decode("ascii", "replace").splitlines()
        shas = lines[0].split()
        parents = tuple(shas[1:])
        raw = next((line for line in lines[1:] if line.startswith(":")), None)
        if raw is None or len(parents) > 1:
            found.append(PathChange(shas[0], parents))
            continue
        # :old_mode new_mode old_blob new_blob status<TAB>path
        fields = raw.split("\t", 1)[0].split()
        old, new = fields[2], fields[3]
        found.append(PathChange(shas[0], parents, None if old == _ABSENT else old,
                                None if new == _ABSENT else new, listed=True))
    return found


def _command(args: tuple[str, ...]) -> str:
    """The git command in ``args`` (``log`` of ``-c x=y log ...``), for messages."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "-c":
            skip = True
        elif not arg.startswith("-"):
            return arg
    return args[0] if args else "git"


def _loose_blob(objects: Path, oid: str) -> bytes:
    """The content of the loose blob ``oid`` in the object directory ``objects``."""
    raw = zlib.decompress((objects / oid[:2] / oid[2:]).read_bytes())
    return raw[raw.index(b"\0") + 1 :]


def _literal(path: str) -> str:
    """A pathspec matching exactly ``path`` from the top of the working tree."""
    return f":(top,literal){path}"


def _path(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")
