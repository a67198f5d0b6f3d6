"""Benchmark of the command-line layer: what parsing costs before a command does any work.

Each figure is the median over fresh interpreters (imports are never warm) of the time
from ``from gitmem.cli import build_parser`` to a parsed command line, for:

* ``every parser``: the parser with every command's sub-parser, as each run built it
  before issue 16 (and as completion still does);
* ``one command's parser``: what ``tur wake`` (or any command) builds now;
* ``names only``: what ``tur --help`` and an unknown command build now (every command's
  name and help line from the static table, no command module imported).

Run: ``python bench/bench_cli.py [--runs 21]``. Whole-process times of ``tur --help`` and a
warm ``tur wake`` are rows of ``bench/bench_scale.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import json, sys, time
started = time.perf_counter()
from gitmem.cli import build_parser
imported = time.perf_counter()
command, names_only, argv = json.loads(sys.argv[1])
build_parser(command, names_only=names_only).parse_args(argv)
done = time.perf_counter()
print(json.dumps([imported - started, done - imported]))
"""

CASES = {
    "every parser (before)": (None, False, ["wake"]),
    "one command's parser (tur wake)": ("wake", False, ["wake"]),
    "one command's parser (tur learn)": ("learn", False, ["learn", "x"]),
    "names only (tur --help)": (None, True, []),
}


def measure(case: tuple, runs: int) -> tuple[float, float]:
    """Median import and build+parse times (seconds) over ``runs`` fresh interpreters."""
    imports, builds = [], []
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(case)], env=env,
                             capture_output=True, text=True, check=True).stdout
        imported, built = json.loads(out)
        imports.append(imported)
        builds.append(built)
    return statistics.median(imports), statistics.median(builds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21, help="fresh interpreters per case (default 21)")
    args = parser.parse_args()
    print(f"gitmem CLI layer, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
          f"load average {os.getloadavg()[0]:.2f}, median of {args.runs}\n")
    print("| parser built | import gitmem.cli (ms) | build + parse (ms) | total (ms) |")
    print("|---|---:|---:|---:|")
    for name, case in CASES.items():
        imported, built = measure(case, args.runs)
        print(f"| {name} | {imported * 1e3:.1f} | {built * 1e3:.1f} | {(imported + built) * 1e3:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
