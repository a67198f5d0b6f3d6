"""A warm wake's packing from a plan of N showable memories: the lazy merge against the full sort.

For each size a plan of that many showable memories (every one fresh and above the
threshold, five decay classes, ties and relations as in ``tests/test_wake_plan.py``) is
saved in a fresh cache database; then, in one process, a wake at the default budget is
compiled from the plan's streams (:func:`gitmem.context.wake.compile_ranked`, what a warm
``tur wake`` does) and from all its rows sorted (:func:`gitmem.context.wake.compile_rows`,
what the plan of ec2a922 did), and both texts are compared. Prints the median seconds of
each, the rows the merge read and the growth of the process's peak RSS while it ran.

    python bench/bench_wake_plan.py                       # 10,000 and 100,000
    python bench/bench_wake_plan.py --sizes 10000,100000,1000000
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    from gitmem.context.wake import compile_ranked, compile_rows
    from gitmem.defaults import WAKE_TOKEN_BUDGET
    from gitmem.record.decay import DecayPolicy, microseconds
    from tests.test_wake_plan import BASE, counter, full_rows, saved_plan, synthetic_columns

    print("| showable memories | lazy merge (s) | full sort (s) | rows read by the merge | "
          "peak RSS growth, merge (MB) | same text |")
    print("|---:|---:|---:|---:|---:|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        cols = synthetic_columns(size, 7)
        cols["statuses"] = ["fresh"] * size  # every memory showable, as a store filled in a few weeks
        # ... and verified before the first wake (the plan's build), as real ones are.
        limit = microseconds(BASE)
        cols["verified"] = [v if v is None or v <= limit else limit for v in cols["verified"]]
        with tempfile.TemporaryDirectory() as tmp:
            db, plan = saved_plan(Path(tmp), cols)
            now = BASE + timedelta(hours=1)
            lazy_times, full_times = [], []
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            for _ in range(args.runs):
                started = time.perf_counter()
                tiers = plan.tiers(db, now, DecayPolicy())
                lazy = compile_ranked(tiers, budget=WAKE_TOKEN_BUDGET, counter=counter,
                                      stale=0)
                lazy_times.append(time.perf_counter() - started)
            grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
            read = sum(s.next for tier in tiers for s in tier.streams)
            for _ in range(max(1, args.runs // 2)):
                started = time.perf_counter()
                rows = full_rows(cols, now)  # what the old plan loaded, weighed and sorted
                full = compile_rows(rows, budget=WAKE_TOKEN_BUDGET, counter=counter)
                full_times.append(time.perf_counter() - started)
            print(f"| {size:,} | {statistics.median(lazy_times):.4f} | {statistics.median(full_times):.3f} | "
                  f"{read:,} | {grown:.0f} | {lazy.text == full.text and lazy.shown == full.shown} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
