"""Benchmark of staleness verification: 2,000 commits, 10,000 anchored memories.

Builds a repository with ``git fast-import`` (100 files of ~300 lines; every commit
inserts, deletes or rewrites a few lines of one file), learns memories at random
commits on random line ranges (10 % whole-file anchors), then times:

* cold: a fresh ``CodeHistory`` checks every memory (as a new ``tur verify`` process);
* unchanged: the verdicts are applied (fresh memories corroborated to HEAD) and a
  fresh ``CodeHistory`` checks them again with nothing changed, reading the
  ``VerifyCache`` the cold run wrote (timed including its JSON load); also without
  the cache, and in the same process with a warm ``CodeHistory`` (watcher, TUI).

Then it writes the memories to the ref and times two whole `tur verify` processes (cold,
then with nothing changed), which read the ref, check, and commit the changes.

Run: ``make bench-verify`` or ``python bench/bench_verify.py`` (``--help`` for sizes).
Targets on 2 cores, for both the check and the whole process: cold <= 20 s, unchanged <= 2 s.
"""

from __future__ import annotations

import argparse
import marshal
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pygit2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitmem.record.anchors import Anchor, fingerprint
from gitmem.record.decay import DecayPolicy
from gitmem.record.models import Decay, Memory, Provenance
from gitmem.staleness.verdicts import VerifyCache, apply_verdict, check
from gitmem.store.code import CodeHistory

OBSERVED = datetime(2026, 1, 1, tzinfo=UTC)


def _data(text: str) -> bytes:
    raw = text.encode()
    return b"data %d\n%s\n" % (len(raw), raw)


def _mutate(lines: list[str], rng: random.Random, n: int) -> None:
    pos = rng.randrange(len(lines))
    kind = rng.random()
    if kind < 0.4:
        for k in range(rng.randint(1, 3)):
            lines.insert(pos, f"inserted at commit {n} #{k} {rng.random():.6f}")
    elif kind < 0.6 and len(lines) > 50:
        del lines[pos : pos + rng.randint(1, 2)]
    else:
        lines[pos] = f"rewritten at commit {n} {rng.random():.6f}"


def _learn(rng, n, path, lines, pending) -> None:
    if rng.random() < 0.1:
        anchor = Anchor(path)
        fp = fingerprint(lines)
    else:
        start = rng.randint(1, len(lines) - 8)
        anchor = Anchor(path, start, start + rng.randint(0, 7))
        fp = fingerprint(lines[anchor.start - 1 : anchor.end])
    pending.append((n, anchor.ref(), fp))


def build(root: Path, commits: int, files: int, memories: int, seed: int):
    """Create the repository; return (path, [(commit mark, context_ref, fingerprint)])."""
    rng = random.Random(seed)
    repo = root / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    contents = {
        f"pkg{i % 10}/mod{i}.py": [f"mod{i} line {j} = {rng.random():.6f}" for j in range(300)]
        for i in range(files)
    }
    per_commit = max(1, memories // commits)
    pending: list[tuple[int, str, str]] = []
    chunks: list[bytes] = []
    for n in range(1, commits + 1):
        if n == 1:
            touched = list(contents)
        else:
            touched = [rng.choice(list(contents))]
            _mutate(contents[touched[0]], rng, n)
        chunks.append(b"commit refs/heads/main\nmark :%d\n" % n)
        chunks.append(b"committer Bench <bench@example.com> %d +0000\n" % (1_700_000_000 + n))
        chunks.append(_data(f"commit {n}"))
        if n > 1:
            chunks.append(b"from :%d\n" % (n - 1))
        for path in touched:
            chunks.append(b"M 100644 inline %s\n" % path.encode())
            chunks.append(_data("\n".join(contents[path]) + "\n"))
        for _ in range(per_commit):
            path = rng.choice(list(contents))
            _learn(rng, n, path, contents[path], pending)
    marks = root / "marks"
    subprocess.run(
        ["git", "fast-import", "--quiet", f"--export-marks={marks}"],
        cwd=repo, input=b"".join(chunks), check=True,
    )
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=repo, check=True)
    shas = dict(line.split() for line in marks.read_text().splitlines())
    out = []
    for i, (n, ref, fp) in enumerate(pending[:memories]):
        out.append(Memory(
            id=f"fact-{i:08x}",
            type="fact",
            content=f"memory {i}",
            provenance=Provenance(observed_at=OBSERVED, git_sha=shas[f":{n}"],
                                  context_ref=ref, fingerprint=fp),
            decay=Decay(half_life_days=14, last_verified_at=OBSERVED),
        ))
    return repo, out


def timed(label: str, memories, history, policy, cache=None):
    t0 = time.perf_counter()
    if isinstance(cache, bytes):  # a new process reads the cache file first
        cache = VerifyCache.from_plain(marshal.loads(cache))
    report = check(memories, history, policy, cache)
    elapsed = time.perf_counter() - t0
    counts = {s.value: c for s, c in sorted(report.counts().items())}
    print(f"{label:<34} {elapsed:6.2f} s  {counts}  changed={len(report.changed())}")
    return report, elapsed


def fresh_history(repo: Path) -> CodeHistory:
    return CodeHistory(pygit2.Repository(str(repo)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=2000)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--seed", type=int, default=131)
    parser.add_argument("--check-only", action="store_true",
                        help="time the staleness check only, not whole `tur verify` processes")
    args = parser.parse_args(argv)
    policy = DecayPolicy.default()
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        t0 = time.perf_counter()
        repo, memories = build(Path(tmp), args.commits, args.files, args.memories, args.seed)
        print(f"built {args.commits} commits, {len(memories)} memories "
              f"in {time.perf_counter() - t0:.1f} s")
        cache = VerifyCache()
        report, cold = timed("cold (new process, empty cache)", memories,
                             fresh_history(repo), policy, cache)
        now = datetime.now(UTC)
        updated = [apply_verdict(m, v, now, policy)
                   for m, v in zip(memories, report.verdicts, strict=True)]
        saved = marshal.dumps(cache.to_plain(report.head_sha))
        print(f"cache file: {len(saved) / 1e6:.1f} MB, {len(cache)} entries")
        second, unchanged = timed("unchanged (new process, cache file)", updated,
                                  fresh_history(repo), policy, saved)
        timed("unchanged (new process, no cache)", updated, fresh_history(repo), policy)
        history = fresh_history(repo)
        check(updated, history, policy)
        timed("unchanged (same process, warm)", updated, history, policy, cache)
        assert not second.changed(), "second run must change nothing"
        print(f"targets: cold <= 20 s ({'ok' if cold <= 20 else 'MISSED'}), "
              f"unchanged <= 2 s ({'ok' if unchanged <= 2 else 'MISSED'})")
        if not args.check_only:
            full_verify(repo, memories)
    return 0


def full_verify(repo: Path, memories) -> None:
    """Whole ``tur verify`` processes: read the ref, check, commit the changes; then again."""
    from gitmem import codec
    from gitmem.cache.reader import record_path
    from gitmem.store import Mutation, Store

    t0 = time.perf_counter()
    changes = {record_path(m.id): codec.dump_new(m) for m in memories}
    Store.discover(repo).transact(lambda tip: Mutation(changes, f"bench: {len(changes)} memories"))
    print(f"wrote {len(changes)} records to refs/tur/memories in {time.perf_counter() - t0:.1f} s")
    root = Path(__file__).resolve().parents[1]
    cmd = [sys.executable, "-m", "gitmem", "-C", str(repo), "verify"]
    results = []
    for label in ("cold `tur verify` (process, commits changes)",
                  "unchanged `tur verify` (process)"):
        t0 = time.perf_counter()
        out = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=True).stdout
        elapsed = time.perf_counter() - t0
        results.append(elapsed)
        print(f"{label:<48} {elapsed:6.2f} s  {out.splitlines()[0]}; {out.splitlines()[-1]}")
    print(f"targets (whole process): cold <= 20 s ({'ok' if results[0] <= 20 else 'MISSED'}), "
          f"unchanged <= 2 s ({'ok' if results[1] <= 2 else 'MISSED'})")


if __name__ == "__main__":
    raise SystemExit(main())
