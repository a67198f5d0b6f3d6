"""Shared fixtures: isolated git config, real temporary repositories, fixed identities."""

from __future__ import annotations

import difflib
import io
import os
import subprocess
import time
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

import pytest

FIXED_DATE = "2026-01-05T10:00:00+00:00"


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory, monkeypatch):
    """Keep the developer's git config, HOME and caches out of every test."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    # Each test has its own personal store (docs/personal.md), never the developer's.
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "TUR_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    # libgit2 reads its config search path once per process, not from GIT_CONFIG_*.
    import pygit2
    from pygit2.enums import ConfigLevel

    empty = home / ".empty"
    empty.mkdir()
    paths = pygit2.settings.search_path
    saved = {level: paths[level] for level in (ConfigLevel.SYSTEM, ConfigLevel.XDG, ConfigLevel.GLOBAL)}
    paths[ConfigLevel.SYSTEM] = str(empty)
    paths[ConfigLevel.XDG] = str(empty)
    paths[ConfigLevel.GLOBAL] = str(home)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test User\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n"
    )
    yield home
    for level, value in saved.items():
        paths[level] = value


def git(cwd: Path, *args: str, date: str = FIXED_DATE, check: bool = True) -> str:
    """Run real git in ``cwd`` with fixed author/committer dates; return stdout."""
    env = dict(os.environ)
    env.update(
        GIT_AUTHOR_DATE=date,
        GIT_COMMITTER_DATE=date,
        GIT_AUTHOR_NAME="Ada Author",
        GIT_AUTHOR_EMAIL="ada@example.com",
        GIT_COMMITTER_NAME="Ada Author",
        GIT_COMMITTER_EMAIL="ada@example.com",
    )
    out = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    if check and out.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {out.stderr}")
    return out.stdout


class Result(NamedTuple):
    """What an in-process ``tur`` run left: exit code, stdout, stderr (unpacks as a tuple)."""

    code: int
    out: str
    err: str


def tur(repo: Path, *args: str, stdin: str | None = None) -> Result:
    """Run ``tur -C repo ARGS`` in process with ``stdin`` as input; return its ``Result``."""
    from gitmem.cli import Env, main

    out, err = io.StringIO(), io.StringIO()
    code = main(["-C", str(repo), *args], Env(inp=io.StringIO(stdin or ""), out=out, err=err))
    return Result(code, out.getvalue(), err.getvalue())


def tur_ok(repo: Path, *args: str, stdin: str | None = None) -> str:
    """Run ``tur -C repo ARGS`` in process; assert it succeeded; return its stdout."""
    code, out, err = tur(repo, *args, stdin=stdin)
    assert code == 0, f"tur {' '.join(args)} failed ({code}): {err}"
    assert "internal error" not in err, err
    return out


def learn(repo: Path, text: str, *args: str) -> str:
    """``tur learn TEXT ARGS`` in ``repo`` (asserted to succeed); return the new memory's id."""
    return tur_ok(repo, "learn", text, *args).strip()


@pytest.fixture
def run_tur():
    """The in-process ``tur`` runner as a fixture: ``run_tur(repo, *args, stdin=None)``."""
    return tur


def clock_reaches(moment: datetime) -> None:
    """Return once the wall clock (UTC) reads ``moment`` or later: for two stamps that must differ."""
    while datetime.now(UTC) < moment:  # at most the gap asked for: the clock always gets there
        time.sleep(0.001)


def memory_ref(repo: Path) -> str:
    """The commit ``refs/tur/memories`` points at in ``repo``, or ``""`` when there is none."""
    return git(repo, "rev-parse", "-q", "--verify", "refs/tur/memories", check=False).strip()


def commit_file(repo: Path, path: str, text: str, message: str | None = None,
                date: str = FIXED_DATE) -> str:
    """Write ``text`` to ``path`` in ``repo``, commit it, return the new HEAD SHA."""
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    git(repo, "add", path)
    git(repo, "commit", "-q", "-m", message or f"edit {path}", date=date)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def empty_repo(tmp_path) -> Path:
    """A fresh non-bare repository with no commits (unborn HEAD)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    return repo


@pytest.fixture
def repo(empty_repo) -> Path:
    """A repository with one commit holding ``src/app.py`` (20 numbered lines)."""
    body = "".join(f"line {i}\n" for i in range(1, 21))
    commit_file(empty_repo, "src/app.py", body, "initial")
    return empty_repo


def changed_lines(before: bytes, after: bytes) -> list[str]:
    """The ``+``/``-`` lines of a zero-context diff of two YAML texts (what an edit changed)."""
    diff = difflib.unified_diff(
        before.decode().splitlines(), after.decode().splitlines(), lineterm="", n=0
    )
    return [line for line in diff if line[:1] in "+-" and line[:3] not in ("---", "+++")]


def add_filler_memories(repo: Path, count: int, files: int = 40) -> list[str]:
    """Commit ``files`` code files under ``lib/`` and ``count`` memories anchored to them, fast.

    Records are written in one commit straight through the store (a ``learn`` per record
    would take minutes): a store of thousands of memories, each anchored to a whole file at
    HEAD, as many ``tur learn --file`` calls would leave it. Returns the ids.
    """
    from fixtures.repos.filler import filler_records
    from gitmem.store import Mutation, Store

    for number in range(files):
        path = repo / "lib" / f"m{number:02d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"def f{i}(): return {number * 100 + i}\n" for i in range(30)))
    git(repo, "add", "lib")
    git(repo, "commit", "-q", "-m", "lib")
    head = git(repo, "rev-parse", "HEAD").strip()
    changes: dict[str, bytes | None] = dict(filler_records(count, files, head))
    Store.discover(repo).transact(lambda tip: Mutation(changes, f"add {count} memories"))
    return sorted(Path(p).stem for p in changes)


@pytest.fixture
def origin(tmp_path) -> Path:
    """A bare remote whose main branch holds one commit (``src/app.py``, 20 numbered lines)."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    seed = tmp_path / "seed"
    seed.mkdir()
    git(seed, "init", "-q", "-b", "main")
    commit_file(seed, "src/app.py", "".join(f"line {i}\n" for i in range(1, 21)), "initial")
    git(seed, "push", "-q", str(remote), "main")
    return remote


def legacy_records(directory: Path, count: int) -> Path:
    """Write ``count`` pre-gitmem YAML records (``concept-<i>``) into ``directory``; return it."""
    directory.mkdir()
    for i in range(count):
        (directory / f"{i}.yaml").write_text(
            f'id: "concept-{i}"\ntype: preference\ncontent: Prefer retries with jitter {i}\n')
    return directory


def clone(origin: Path, name: str, who: str | None = None) -> Path:
    """A clone of ``origin``; ``who`` sets its own git identity (``Name``, email name@example.com)."""
    dest = origin.parent / name
    git(origin.parent, "clone", "-q", str(origin), str(dest))
    if who is not None:
        git(dest, "config", "user.name", who)
        git(dest, "config", "user.email", f"{who.lower()}@example.com")
    return dest


def remote_tip(origin: Path) -> str | None:
    """The memory ref's commit on ``origin``, or ``None`` when it has none."""
    out = git(origin, "rev-parse", "--verify", "--quiet", "refs/tur/memories", check=False).strip()
    return out or None


class CacheEntry:
    """One memo of the read cache's database (``kind``, ``key``), for tests to read or damage.

    ``read_bytes``/``write_bytes`` read and overwrite the stored payload itself (to damage it).
    """

    def __init__(self, root: Path, kind: str, key: str) -> None:
        self.root = root
        self.kind = kind
        self.key = key

    def _conn(self):
        import sqlite3

        return sqlite3.connect(self.root / "cache.sqlite", isolation_level=None)

    def _one(self, sql: str, *args):
        with closing(self._conn()) as conn:
            return conn.execute(sql, (*args, self.kind, self.key)).fetchone()

    def exists(self) -> bool:
        if not (self.root / "cache.sqlite").exists():
            return False
        return self._one("SELECT 1 FROM memo WHERE kind = ? AND key = ?") is not None

    def read_bytes(self) -> bytes:
        return self._one("SELECT value FROM memo WHERE kind = ? AND key = ?")[0]

    def write_bytes(self, data: bytes) -> None:
        self._one("UPDATE memo SET value = ? WHERE kind = ? AND key = ?", data)

    def read_payload(self):
        import marshal

        return marshal.loads(self.read_bytes())

    def write_payload(self, payload) -> None:
        import marshal

        self.write_bytes(marshal.dumps(payload))

    def stat(self):
        """``st_size`` (payload bytes) and ``st_mtime`` (when written, in seconds)."""
        from types import SimpleNamespace

        size, used = self._one("SELECT length(value), used_at FROM memo WHERE kind = ? AND key = ?")
        return SimpleNamespace(st_size=size, st_mtime=used / 1e9)

    def rename(self, key: str) -> CacheEntry:
        self._one("UPDATE memo SET key = ? WHERE kind = ? AND key = ?", key)
        return CacheEntry(self.root, self.kind, key)

    def copy_to(self, key: str) -> CacheEntry:
        self._one("INSERT OR REPLACE INTO memo SELECT kind, ?, value, used_at FROM memo"
                  " WHERE kind = ? AND key = ?", key)
        return CacheEntry(self.root, self.kind, key)

    def unlink(self) -> None:
        self._one("DELETE FROM memo WHERE kind = ? AND key = ?")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CacheEntry) \
            and (self.root, self.kind, self.key) == (other.root, other.kind, other.key)

    def __hash__(self) -> int:
        return hash((self.kind, self.key))

    def __lt__(self, other: CacheEntry) -> bool:
        return (self.kind, self.key) < (other.kind, other.key)


def cache_glob(root: Path, kind: str, key: str = "*") -> list[CacheEntry]:
    """The memos of ``kind`` in the cache database in ``root`` whose keys match the glob ``key``.

    Newest first.
    """
    if not (root / "cache.sqlite").exists():
        return []
    import sqlite3

    with closing(sqlite3.connect(root / "cache.sqlite")) as conn:
        rows = conn.execute("SELECT key FROM memo WHERE kind = ? AND key GLOB ? ORDER BY used_at DESC",
                            (kind, key)).fetchall()
    return [CacheEntry(root, kind, r[0]) for r in rows]


def cache_entry(root: Path, kind: str, key: str) -> CacheEntry:
    """The memo ``key`` of ``kind`` in the cache database in ``root`` (it may not exist)."""
    return CacheEntry(root, kind, key)


def cache_rows(root: Path) -> dict[str, str]:
    """Blob id -> memory id of every record row in the cache database in ``root``."""
    if not (root / "cache.sqlite").exists():
        return {}
    import sqlite3

    with closing(sqlite3.connect(root / "cache.sqlite")) as conn:
        return dict(conn.execute("SELECT blob, id FROM record").fetchall())
