"""``tur hook session-start --harness NAME`` on a store of N memories: unbound, and with bound ones.

A store with no bound memory serves a named harness from the wake plan, as before; a store
where some memory is bound to another agent compiles that harness's wake from the records
table (a plan is everyone's, docs/performance.md). Prints the median seconds of a warm hook
(its own process, the plan or table already cached by an earlier run) in each case.

    python bench/bench_bound.py                 # 10,000 memories, 7 runs
    python bench/bench_bound.py --count 2000 --runs 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def hook_seconds(repo: Path, harness: str, runs: int) -> float:
    """Median wall seconds of ``tur hook session-start --harness HARNESS`` after one warm-up."""
    payload = json.dumps({"session_id": "bench", "source": "startup"})
    command = [sys.executable, "-m", "gitmem", "-C", str(repo), "hook", "session-start", "--harness", harness]
    times = []
    for n in range(runs + 1):
        started = time.perf_counter()
        subprocess.run(command, input=payload, capture_output=True, text=True, check=True, cwd=ROOT)
        if n:  # the first run builds the cache
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    from fixtures.repos.filler import filler_repo
    from gitmem.api import Gitmem

    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        filler_repo(repo, args.count)
        print(f"| {args.count:,} memories | session-start --harness codex (s) |")
        print("|---|---|")
        print(f"| none bound | {hook_seconds(repo, 'codex', args.runs):.3f} |")
        Gitmem.open(repo).learn("Only claude takes the fast path", visibility=["claude"])
        print(f"| one bound to claude | {hook_seconds(repo, 'codex', args.runs):.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
