"""Benchmark of trust from git's identity: what naming each record's writer from git costs a wake.

Builds a store of ``--records`` legacy records (one import commit) and ``--learns`` more
commits (``learn`` through the facade, so a history of that many commits), then times,
each in a fresh ``tur`` process (median of ``--runs``):

* ``cold wake``: the read cache deleted first (the attribution walk runs over the history);
* ``warm wake``: the same state again (the plan and the attribution memo are read);
* ``wake after a learn``: one more ``learn`` first (the walk covers the one new commit).

Run: ``nice -n 10 python bench/bench_trust.py [--records 10000] [--learns 300] [--runs 5]
[--against /work/main]``. ``--root`` runs another checkout's gitmem; ``--against`` times a
second checkout on a copy of the same store, interleaved (the figures before the change).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(root: Path, repo: Path, *args: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gitmem", "-C", str(repo), *args], check=True,
                   capture_output=True, env=dict(os.environ, PYTHONPATH=str(root), PYTHONSAFEPATH="1"))
    return time.perf_counter() - started


def build(root: Path, where: Path, records: int, learns: int) -> Path:
    """A repository with ``records`` imported records and ``learns`` learn commits after them."""
    repo = where / "repo"
    env = dict(os.environ, GIT_AUTHOR_NAME="Bench", GIT_AUTHOR_EMAIL="bench@example.com",
               GIT_COMMITTER_NAME="Bench", GIT_COMMITTER_EMAIL="bench@example.com")
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    (repo / "a.txt").write_text("a\n")
    subprocess.run(["git", "-C", str(repo), "add", "a.txt"], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "initial"], check=True, env=env)
    for key, value in (("user.name", "Bench"), ("user.email", "bench@example.com")):
        subprocess.run(["git", "-C", str(repo), "config", key, value], check=True)
    legacy = where / "legacy"
    legacy.mkdir()
    for i in range(records):
        (legacy / f"{i}.yaml").write_text(f'id: "concept-{i}"\ntype: fact\ncontent: retries use jitter {i}\n')
    sys.path.insert(0, str(root))
    from gitmem.api import Gitmem

    gm = Gitmem.open(repo)
    gm.import_legacy([legacy])
    for i in range(learns):
        gm.learn(f"learned statement number {i} about the queue")
    return repo


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--learns", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose gitmem runs")
    parser.add_argument("--against", type=Path, default=None,
                        help="another checkout (e.g. /work/main), timed on a copy of the same store, "
                        "its runs interleaved with --root's so that the machine's load hits both alike")
    args = parser.parse_args()
    roots = {"this": args.root.resolve()}
    if args.against is not None:
        roots["against"] = args.against.resolve()
    where = Path(tempfile.mkdtemp(prefix="bench-trust-"))
    try:
        built = build(roots["this"], where, args.records, args.learns)
        repos = {"this": built}
        if "against" in roots:
            repos["against"] = where / "repo-against"
            shutil.copytree(built, repos["against"], symlinks=True)
        figures: dict[str, dict[str, list[float]]] = {k: {"cold wake": [], "warm wake": [],
                                                          "wake after a learn": []} for k in roots}
        for i in range(args.runs):
            for key, root in roots.items():
                repo = repos[key]
                shutil.rmtree(repo / ".git" / "tur" / "cache", ignore_errors=True)
                figures[key]["cold wake"].append(_run(root, repo, "wake"))
                figures[key]["warm wake"].append(_run(root, repo, "wake"))
                _run(root, repo, "learn", f"one more statement {i}")
                figures[key]["wake after a learn"].append(_run(root, repo, "wake"))
        for key, root in roots.items():
            for name, values in figures[key].items():
                print(f"{root.name:<10} {name:<20} {statistics.median(values) * 1000:8.0f} ms  (median of "
                      f"{args.runs}; {args.records:,} records, {args.learns + 2:,} commits)")
    finally:
        shutil.rmtree(where, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
