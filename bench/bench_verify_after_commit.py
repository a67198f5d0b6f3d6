"""Verify after a code commit touching none of the anchored files: objects written and time vs ``tur status``.

Issue 26's Must-show: at 20,000 memories, such a verify adds at most 50 objects to the memory
ref and costs at most 3x a warm ``tur status``. The store is one an agent fills over a few
weeks: every memory fresh and anchored to a file at HEAD (``fixtures/repos/filler.py``), then
verified once. Each run commits a change to ``README.md`` (no memory is anchored to it),
untimed, then times a whole ``tur verify`` process and counts the objects reachable from the
memory ref's new tip and not from the old one (``git rev-list --objects``); warm ``tur
status`` is timed in between.

Run from the repository root::

    nice -n 10 python bench/bench_verify_after_commit.py              # 20,000 memories, 5 runs
    nice -n 10 python bench/bench_verify_after_commit.py --size 2000 --runs 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _git(repo: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="Bench", GIT_AUTHOR_EMAIL="bench@example.com",
               GIT_COMMITTER_NAME="Bench", GIT_COMMITTER_EMAIL="bench@example.com")
    done = subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True)
    return done.stdout


CODE = ROOT
"""The checkout whose ``gitmem`` runs (``--code``): ``python -m gitmem`` imports it from the cwd."""


def _tur(repo: Path, *args: str) -> float:
    """CPU seconds (user + system) of one ``tur`` process."""
    before = os.times()
    subprocess.run([sys.executable, "-m", "gitmem", "-C", str(repo), *args], check=True,
                   capture_output=True, cwd=CODE)
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system)


def build(work: Path, size: int) -> Path:
    """A repository with ``size`` fresh memories anchored to 40 files, verified once (nothing rewritten)."""
    from fixtures.repos.filler import filler_records
    from gitmem.store import Mutation, Store

    repo = work / f"repo-{size}"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    for number in range(40):
        path = repo / "lib" / f"m{number:02d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"def f{i}(): return {number * 100 + i}\n" for i in range(30)))
    (repo / "README.md").write_text("bench\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "code")
    head = _git(repo, "rev-parse", "HEAD").strip()
    from gitmem.record.anchors import fingerprint, split_lines

    # With the fingerprint a verify computes, so that the first verify rewrites nothing either.
    prints = {f"lib/m{n:02d}.py": fingerprint(split_lines((repo / "lib" / f"m{n:02d}.py").read_bytes()))
              for n in range(40)}
    changes: dict[str, bytes | None] = {}
    for path, data in filler_records(size, 40, head).items():
        text = data.decode()
        anchored = text.split("context_ref: ", 1)[1].split("\n", 1)[0]
        changes[path] = text.replace(f"context_ref: {anchored}\n",
                                     f"context_ref: {anchored}\n  fingerprint: {prints[anchored]}\n").encode()
    Store.discover(repo).transact(lambda tip: Mutation(changes, f"add {size} memories"))
    _git(repo, "commit", "-q", "--allow-empty", "-m", "before the first verify")
    _tur(repo, "verify")
    _tur(repo, "status")
    return repo


def main() -> None:
    global CODE
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--code", type=Path, default=ROOT,
                        help="a checkout to measure instead of this one (e.g. a worktree of main)")
    args = parser.parse_args()
    CODE = args.code
    with tempfile.TemporaryDirectory(prefix="tur-verify-after-commit-") as tmp:
        t0 = time.monotonic()
        repo = build(Path(tmp), args.size)
        print(f"built {args.size:,} memories in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        verify_cpu, status_cpu, objects = [], [], []
        for i in range(args.runs):
            (repo / "README.md").write_text(f"bench {i}\n")
            _git(repo, "commit", "-q", "-am", f"docs {i}")
            old = _git(repo, "rev-parse", "refs/tur/memories").strip()
            verify_cpu.append(_tur(repo, "verify"))
            new = _git(repo, "rev-parse", "refs/tur/memories").strip()
            objects.append(len(_git(repo, "rev-list", "--objects", new, f"^{old}").split("\n")) - 1)
            status_cpu.append(_tur(repo, "status"))
        v, s = statistics.median(verify_cpu), statistics.median(status_cpu)
        print(f"code: {CODE}")
        print("| memories | verify after commit CPU (s) | warm status CPU (s) | ratio | new objects (max) |")
        print("|---:|---:|---:|---:|---:|")
        print(f"| {args.size:,} | {v:.3f} | {s:.3f} | {v / s:.2f}x | {max(objects)} |")
        print(f"rerun: nice -n 10 python bench/bench_verify_after_commit.py --size {args.size} "
              f"--runs {args.runs}" + (f" --code {CODE}" if CODE != ROOT else ""))


if __name__ == "__main__":
    main()
