"""Benchmark of the integrity checks: oversized notes in wake, and sync with every incoming string scanned.

* A continuity note of 5 MB and of 50 MB planted on the memory ref (as a tool without the
  64 KiB limit would leave it): a cold ``tur wake`` process, seconds and peak memory
  (``/usr/bin/time``). Wake reads the first 64 KiB of such a note.
* ``tur sync`` in a new clone adopting N records (every record's strings go through the
  credential scan and the size and layout checks), and a fast-forward of N/10 new ones.

Run: ``python bench/bench_integrity.py [--records N]`` (default 2,000).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitmem import codec
from gitmem.cache.reader import record_path
from gitmem.record.ids import memory_id
from gitmem.record.models import Decay, Memory, Provenance
from gitmem.store import MEMORY_REF, Mutation, Store

TUR = [sys.executable, "-m", "gitmem"]
OBSERVED = datetime(2026, 1, 1, tzinfo=UTC)


def git(cwd: Path, *args: str, data: bytes | None = None, env: dict | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, input=data, capture_output=True, check=True,
                          env=env).stdout.decode().strip()


def timed(cwd: Path, *args: str) -> tuple[float, float]:
    """Seconds and peak resident memory (MB) of one ``tur`` process."""
    proc = subprocess.run(["/usr/bin/time", "-f", "%e %M", *TUR, "-C", str(cwd), *args],
                          capture_output=True, text=True, check=True)
    seconds, kb = proc.stderr.strip().splitlines()[-1].split()
    return float(seconds), int(kb) / 1024


def new_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "app.py").write_text("print('hi')\n")
    git(path, "add", "app.py")
    git(path, "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-q", "-m", "init")
    return path


def plant_note(repo: Path, size: int) -> None:
    """Commit a continuity note of ``size`` bytes with git's plumbing (no limit applies)."""
    env = dict(os.environ, GIT_INDEX_FILE=str(repo / ".git" / "bench-index"))
    tip = git(repo, "rev-parse", MEMORY_REF)
    git(repo, "read-tree", tip, env=env)
    line = b"a line of a very long continuity note, written by some other tool\n"
    blob = git(repo, "hash-object", "-w", "--stdin", data=line * (size // len(line)), env=env)
    path = "continuity/20260101T000000.000000Z-000000.md"
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
    tree = git(repo, "write-tree", env=env)
    commit = git(repo, "-c", "user.name=b", "-c", "user.email=b@x", "commit-tree", tree, "-p", tip,
                 "-m", "note", env=env)
    git(repo, "update-ref", MEMORY_REF, commit, tip)


def records(store: Store, n: int, start: int = 0) -> None:
    """Write ``n`` records in one commit, each with content, agent, harness, anchor and reason."""
    changes: dict[str, bytes | None] = {}
    for i in range(start, start + n):
        content = f"Worker pool {i} retries a failed job {i % 7 + 1} times before parking it"
        line = i % 90 + 1
        memory = Memory(
            id=memory_id("fact", content), type="fact", content=content,
            provenance=Provenance(observed_at=OBSERVED, git_sha="0" * 40, source_agent=f"agent-{i % 5}",
                                  source_harness="bench", context_ref=f"src/pool_{i}.py#L{line}-L{line + 8}"),
            decay=Decay(half_life_days=14.0, last_verified_at=OBSERVED, reason=f"lines {line}-9 unchanged"),
        )
        changes[record_path(memory.id)] = codec.dump_new(memory)
    store.transact(lambda tip: Mutation(changes, f"bench: {n} records"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = new_repo(root / "notes")
        subprocess.run([*TUR, "-C", str(repo), "learn", "a memory"], check=True, capture_output=True)
        for size in (5 << 20, 50 << 20):
            plant_note(repo, size)
            subprocess.run([*TUR, "-C", str(repo), "cache", "clear"], check=True, capture_output=True)
            seconds, mb = timed(repo, "wake")
            print(f"cold wake with a {size >> 20} MB continuity note: {seconds:.2f} s, {mb:.0f} MB peak")

        remote = root / "remote.git"
        git(root, "init", "-q", "--bare", "-b", "main", str(remote))
        a = new_repo(root / "a")
        git(a, "remote", "add", "origin", str(remote))
        git(a, "push", "-q", "origin", "main")
        records(Store.discover(a), args.records)
        subprocess.run([*TUR, "-C", str(a), "sync"], check=True, capture_output=True)
        b = root / "b"
        git(root, "clone", "-q", str(remote), str(b))
        seconds, mb = timed(b, "sync")
        print(f"tur sync adopting {args.records} records (each scanned): {seconds:.2f} s, {mb:.0f} MB peak")
        records(Store.discover(a), args.records // 10, start=args.records)
        subprocess.run([*TUR, "-C", str(a), "sync"], check=True, capture_output=True)
        seconds, mb = timed(b, "sync")
        print(f"tur sync fast-forwarding {args.records // 10} new records: {seconds:.2f} s, {mb:.0f} MB peak")


if __name__ == "__main__":
    main()
