"""Per-memory history on a long memory ref, with and without git's commit-graph (issue 26, item 4).

The history (``Store.log(path)``, ``Gitmem.history``, ``Gitmem.anchor_trail``) is checked
against an oracle computed from plain git (every commit and its parents, every blob at the
record's path) on a memory ref of ~150 commits with sync merges of every kind; then again
with the commit-graph gitmem wrote missing, stale and damaged. The graph itself: written
after gitmem's own commits once enough are new, only for the memory ref's commits, where
git writes it, never with a hook.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import clone, git, tur

START = 1_767_600_000  # 2026-01-05, fixed
IDS = ["fact-0a000001", "fact-0b000002", "fact-0c000003", "fact-0d000004", "fact-0e000005"]


def _path(memory_id: str) -> str:
    return f"memories/{memory_id[5:7]}/{memory_id}.yaml"


def _record(memory_id: str, version: int, line: int = 1) -> bytes:
    from gitmem import codec
    from gitmem.record.models import Memory

    return codec.dump_new(Memory.model_validate({
        "id": memory_id, "type": "fact", "content": f"Statement {memory_id} holds",
        "confidence": round(0.5 + (version % 5) / 10, 2),
        "provenance": {"observed_at": "2026-01-05T10:00:00Z",
                       "context_ref": f"src/app.py#L{line}-L{line + 2}"},
    }))


class _Stream:
    """A fast-import stream of memory-ref commits with fixed dates (one minute apart)."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.mark = 0

    def commit(self, ref: str, changes: dict[str, bytes | None], parent: int = 0, merge: int = 0,
               minute: int | None = None) -> int:
        self.mark += 1
        when = START + 60 * (self.mark if minute is None else minute)
        message = f"change {self.mark}".encode()
        self.out += f"commit {ref}\nmark :{self.mark}\n".encode()
        self.out += f"committer Ada <ada@example.com> {when} +0000\n".encode()
        self.out += b"data %d\n%s\n" % (len(message), message)
        if parent:
            self.out += f"from :{parent}\n".encode()
        if merge:
            self.out += f"merge :{merge}\n".encode()
        for path, data in changes.items():
            if data is None:
                self.out += f"D {path}\n".encode()
            else:
                self.out += b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data)
        return self.mark


def _build_history(repo: Path) -> None:
    """~150 memory-ref commits: edits, re-anchors, a forget and re-learn, and sync merges.

    Merges: one carrying each side's change to different records; one where both sides
    changed a record and the merge kept one side's version; one where it wrote a third
    version; a side branch whose commits are dated before the main line's (clock skew).
    """
    s = _Stream()
    version = {i: 0 for i in IDS}

    def bump(memory_id: str, line: int | None = None) -> dict[str, bytes | None]:
        version[memory_id] += 1
        return {_path(memory_id): _record(memory_id, version[memory_id], line or 1 + version[memory_id] % 3)}

    tip = s.commit("refs/tur/memories", {".gitmem": b"format: 1\n", **bump(IDS[0]), **bump(IDS[1])})
    for n in range(2, 140):
        memory_id = IDS[n % len(IDS)] if n > 10 else IDS[n % 2]
        if n == 40:  # each side changes its own record
            side = s.commit("refs/tur/side", bump(IDS[1]), tip)
            tip = s.commit("refs/tur/memories", bump(IDS[0]), tip)
            tip = s.commit("refs/tur/memories", {_path(IDS[1]): _record(IDS[1], version[IDS[1]])}, tip, side)
        elif n == 60:  # both change IDS[2]; the merge keeps the side's version
            side = s.commit("refs/tur/side", {_path(IDS[2]): _record(IDS[2], 90)}, tip)
            tip = s.commit("refs/tur/memories", {_path(IDS[2]): _record(IDS[2], 91)}, tip)
            tip = s.commit("refs/tur/memories", {_path(IDS[2]): _record(IDS[2], 90)}, tip, side)
        elif n == 80:  # both change IDS[3]; the merge writes a third version
            side = s.commit("refs/tur/side", {_path(IDS[3]): _record(IDS[3], 92)}, tip)
            tip = s.commit("refs/tur/memories", {_path(IDS[3]): _record(IDS[3], 93)}, tip)
            tip = s.commit("refs/tur/memories", {_path(IDS[3]): _record(IDS[3], 94, line=7)}, tip, side)
        elif n == 95:  # a side branch dated an hour before the main line's last commit
            side = s.commit("refs/tur/side", bump(IDS[4]), tip, minute=s.mark - 60)
            side = s.commit("refs/tur/side", bump(IDS[0]), side, minute=s.mark - 59)
            tip = s.commit("refs/tur/memories", bump(IDS[1]), tip)
            tip = s.commit("refs/tur/memories", {}, tip, side)
        elif n == 100:
            tip = s.commit("refs/tur/memories", {_path(IDS[4]): None}, tip)  # forgotten
        elif n == 110:
            tip = s.commit("refs/tur/memories", bump(IDS[4], line=5), tip)  # learned again
        elif 100 < n < 110 and memory_id == IDS[4]:
            tip = s.commit("refs/tur/memories", bump(IDS[0]), tip)
        else:
            tip = s.commit("refs/tur/memories", bump(memory_id), tip)
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=bytes(s.out), check=True)
    git(repo, "update-ref", "-d", "refs/tur/side")


def _oracle(repo: Path, path: str) -> set[str]:
    """Every commit of the memory ref whose blob at ``path`` differs from all its parents' (plain git)."""
    rows = [line.split() for line in git(repo, "rev-list", "--parents", "refs/tur/memories").splitlines()]
    queries = "".join(f"{sha}:{path}\n" for sha in {s for row in rows for s in row})
    out = subprocess.run(["git", "cat-file", "--batch-check=%(objectname)"], cwd=repo, input=queries,
                         capture_output=True, text=True, check=True).stdout.splitlines()
    blob: dict[str | None, str | None] = {None: None}
    for query, answer in zip(queries.splitlines(), out, strict=True):
        blob[query.split(":", 1)[0]] = None if answer.endswith("missing") else answer
    return {row[0] for row in rows if all(blob[row[0]] != blob[p] for p in row[1:] or [None])}


def _parents(repo: Path) -> dict[str, list[str]]:
    return {row[0]: row[1:] for row in (line.split() for line in
            git(repo, "rev-list", "--parents", "refs/tur/memories").splitlines())}


def _topological(order: list[str], parents: dict[str, list[str]]) -> bool:
    """No commit of ``order`` comes after one of its ancestors."""
    seen: set[str] = set()
    for sha in order:
        stack, ancestors = list(parents[sha]), set()
        while stack:
            p = stack.pop()
            if p not in ancestors:
                ancestors.add(p)
                stack.extend(parents[p])
        if ancestors & seen:
            return False
        seen.add(sha)
    return True


def _histories(repo: Path) -> dict[str, list[str]]:
    from gitmem.api import Gitmem

    gm = Gitmem.open(repo)
    return {i: [c.sha for c in gm.store.log(_path(i), limit=1000)] for i in IDS}


def _trails(repo: Path) -> dict[str, list[tuple[str, str | None]]]:
    from gitmem.api import Gitmem

    gm = Gitmem.open(repo)
    return {i: [(s.commit, s.to_ref) for s in gm.anchor_trail(i)] for i in IDS}


def _graph_files(repo: Path) -> list[Path]:
    info = repo / ".git" / "objects" / "info"
    chain = info / "commit-graphs" / "commit-graph-chain"
    files = [info / "commit-graphs" / f"graph-{h}.graph" for h in chain.read_text().split()] \
        if chain.exists() else []
    return files + ([info / "commit-graph"] if (info / "commit-graph").exists() else [])


def _chunks(data: bytes) -> dict[bytes, tuple[int, int]]:
    """``{chunk id: (start, end)}`` of a commit-graph file (git's format: an 8-byte header, 12-byte rows)."""
    count = data[6]
    rows = [(data[8 + 12 * i : 12 + 12 * i], int.from_bytes(data[12 + 12 * i : 20 + 12 * i], "big"))
            for i in range(count + 1)]
    return {rows[i][0]: (rows[i][1], rows[i + 1][1]) for i in range(count)}


def graph_commits(repo: Path) -> set[str]:
    """The commit ids every commit-graph file of ``repo`` holds (its OID lookup chunks)."""
    found: set[str] = set()
    for path in _graph_files(repo):
        data = path.read_bytes()
        start, end = _chunks(data)[b"OIDL"]
        found |= {data[i : i + 20].hex() for i in range(start, end, 20)}
    return found


@pytest.fixture
def long_history(repo) -> Path:
    """``repo`` with the ~150-commit memory ref, then one ``tur learn`` (which writes the graph)."""
    _build_history(repo)
    assert tur(repo, "learn", "The deploy script tags every release").code == 0
    return repo


def _drop_graph(repo: Path) -> None:
    info = repo / ".git" / "objects" / "info"
    for path in _graph_files(repo):
        path.unlink()
    (info / "commit-graphs" / "commit-graph-chain").unlink(missing_ok=True)


def test_history_is_every_commit_that_changed_the_record_and_the_same_without_the_graph(long_history):
    repo = long_history
    assert graph_commits(repo) == set(_parents(repo))  # the learn wrote it: every memory-ref commit
    with_graph, trails = _histories(repo), _trails(repo)
    parents = _parents(repo)
    for memory_id, shas in with_graph.items():
        assert set(shas) == _oracle(repo, _path(memory_id)), memory_id
        assert len(shas) == len(set(shas)) and _topological(shas, parents)
    merges = {sha for sha, ps in parents.items() if len(ps) > 1}
    assert merges & set(with_graph[IDS[3]])  # the merge that wrote a third version counts
    assert not merges & set(with_graph[IDS[1]] + with_graph[IDS[2]])  # carrying a side's version does not
    assert [h for _, h in trails[IDS[4]]] != []  # forgotten and learned again: still a trail
    _drop_graph(repo)
    assert _histories(repo) == with_graph
    assert _trails(repo) == trails


def test_a_stale_graph_gives_the_same_history(long_history):
    repo = long_history
    before = set(graph_commits(repo))
    for n in range(3):  # fewer than maintenance.commit-graph.auto: no new layer
        assert tur(repo, "learn", f"Release {n} is signed by the CI key").code == 0
    assert graph_commits(repo) == before
    shown = _histories(repo)
    _drop_graph(repo)
    assert _histories(repo) == shown


@pytest.mark.parametrize("damage", ["bloom filters zeroed", "second half zeroed", "truncated",
                                    "layer missing"])
def test_a_damaged_graph_gives_the_same_history_and_no_error(long_history, damage):
    repo = long_history
    shown, trails = _histories(repo), _trails(repo)
    layer = _graph_files(repo)[0]
    layer.chmod(0o644)
    data = bytearray(layer.read_bytes())
    if damage == "bloom filters zeroed":  # git reads them without a check: "not changed" everywhere
        start, end = _chunks(bytes(data))[b"BDAT"]
        data[start + 12 : end] = bytes(end - start - 12)
    elif damage == "second half zeroed":
        data[len(data) // 2 : -20] = bytes(len(data) - 20 - len(data) // 2)
    elif damage == "truncated":
        data = data[:100]
    if damage == "layer missing":
        layer.unlink()
    else:
        layer.write_bytes(bytes(data))
    assert _histories(repo) == shown
    assert _trails(repo) == trails
    result = tur(repo, "show", IDS[0])
    assert result.code == 0 and result.err == ""
    assert all(sha[:12] in result.out for sha in shown[IDS[0]][:5])


def test_the_graph_holds_only_the_memory_refs_commits_in_the_repositorys_objects_info(long_history):
    repo = long_history
    code = set(git(repo, "rev-list", "main").split())
    assert graph_commits(repo).isdisjoint(code)
    assert _graph_files(repo) and all(p.is_relative_to(repo / ".git" / "objects" / "info")
                                      for p in _graph_files(repo))
    assert sorted(p.name for p in (repo / ".git" / "hooks").iterdir() if not p.name.endswith(".sample")) == []
    assert git(repo, "commit-graph", "verify").strip() == ""


def test_a_users_graph_of_code_commits_is_kept_and_extended(repo):
    git(repo, "commit-graph", "write", "--reachable")  # the user's (git gc's) graph: main only
    code = set(git(repo, "rev-list", "main").split())
    assert graph_commits(repo) == code
    _build_history(repo)
    assert tur(repo, "learn", "The deploy script tags every release").code == 0
    assert graph_commits(repo) == code | set(_parents(repo))
    git(repo, "commit-graph", "verify")


def test_no_graph_for_a_short_history_or_when_git_is_told_not_to(repo):
    for n in range(3):
        assert tur(repo, "learn", f"Fact {n} about the parser").code == 0
    assert _graph_files(repo) == []  # 3 commits: fewer than maintenance.commit-graph.auto (100)
    git(repo, "config", "maintenance.commit-graph.auto", "1")
    git(repo, "config", "gc.writeCommitGraph", "false")
    assert tur(repo, "learn", "Fact 4 about the parser").code == 0
    assert _graph_files(repo) == []
    git(repo, "config", "--unset", "gc.writeCommitGraph")
    assert tur(repo, "learn", "Fact 5 about the parser").code == 0
    assert graph_commits(repo) == set(_parents(repo))


def test_a_linked_worktree_writes_the_graph_into_the_common_objects(repo, tmp_path):
    git(repo, "config", "maintenance.commit-graph.auto", "1")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked))
    assert tur(linked, "learn", "The linked worktree shares the store").code == 0
    assert graph_commits(repo) == set(_parents(repo))
    assert not list((repo / ".git" / "worktrees").rglob("commit-graph*"))


def test_a_clone_that_adopts_a_long_history_by_sync_gets_its_graph(origin):
    a = clone(origin, "a", "Ana")
    _build_history(a)
    assert tur(a, "remote", "setup").code == 0 and tur(a, "sync", "--publish").code == 0
    b = clone(origin, "b", "Ben")
    assert tur(b, "remote", "setup").code == 0 and tur(b, "sync").code == 0
    assert graph_commits(b) == set(_parents(b))
    assert _histories(b) == _histories(a)
