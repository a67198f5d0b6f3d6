"""What learn's near-duplicate and anchor checks cost as the store grows: the statement rows alone.

For each size, statement rows (``gitmem/cache/statements.py``) are built in a fresh cache
database from the statements and anchors ``bench_scale.py`` generates (same words, same
files and line ranges, same share of anchored and refuted records), then, each in a fresh
process (so that its peak RSS is its own): the lookups one ``learn`` makes (the bench's
note, which holds a rare number; a statement of common words only; an anchor) and the
write that moves the rows by one record. A whole ``learn`` also pays for its imports, the
secret scan and the commit, which do not grow with the store (``bench_scale.py``).

    python bench/bench_statements.py --sizes 10000,100000,1000000

Prints a table: build seconds, database MB, and per lookup the median of ``--runs`` in
milliseconds, with each process's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

NOTE = "Bench note 1764650000000000000 about the queue retry policy 3"
COMMON = "The cache layer logs SQL queries in WAL mode"
ANCHOR = "src/mod_03.py#L40-L52"


def entries(size: int, seed: int = 5):
    """(id, (statement, context_ref)) of ``size`` live records, as bench_scale.py makes them."""
    import bench_scale as b

    rng = random.Random(seed)
    for n in range(size):
        content = (f"{rng.choice(b._SUBJECTS).capitalize()} {rng.choice(b._VERBS)} "
                   f"{rng.choice(b._OBJECTS)} {rng.choice(b._QUALIFIERS)} (ticket {n})")
        ref = None
        if rng.random() < 0.5:
            start = rng.randrange(1, 150)
            ref = f"{rng.choice(b._FILES)}#L{start}-L{start + rng.randrange(0, 20)}"
        if rng.random() > 0.98:
            continue  # refuted: no row
        yield f"fact-{n:08x}", (content, ref)


def build(directory: Path, size: int) -> dict:
    from gitmem.cache.db import CacheDB
    from gitmem.cache.statements import StatementRows

    shutil.rmtree(directory, ignore_errors=True)
    rows = StatementRows(CacheDB(directory))
    started = time.perf_counter()
    rows.build("tree-0", entries(size))
    seconds = time.perf_counter() - started
    rows.db.run("PRAGMA wal_checkpoint(TRUNCATE)")
    megabytes = sum(p.stat().st_size for p in directory.iterdir()) / 1e6
    return {"build_s": round(seconds, 2), "db_mb": round(megabytes, 1)}


def lookup(directory: Path, what: str, runs: int) -> dict:
    """Median milliseconds of ``what`` over ``runs``, the first one included (a cold page cache)."""
    from gitmem.cache.db import CacheDB
    from gitmem.cache.statements import StatementRows

    rows = StatementRows(CacheDB(directory))
    times, found = [], None
    for n in range(runs):
        started = time.perf_counter()
        if what == "note":
            found = rows.similar(NOTE, (), 3)
        elif what == "common":
            found = rows.similar(COMMON, (), 3)
        elif what == "anchor":
            found = rows.anchored(ANCHOR)[:3]
        else:  # one learn's write: the rows move by one new record
            tree = rows.tree()
            rows.after_write(tree, f"{tree}+{n}", {f"fact-new{n:04x}": (f"{NOTE} {n}", ANCHOR)})
        times.append((time.perf_counter() - started) * 1000)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"ms": round(statistics.median(times), 2), "peak_mb": round(peak), "found": found}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "tur-bench-statements")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)  # DIR WHAT NUMBER (size, or runs)
    args = parser.parse_args()
    if args.child:
        directory, what, number = args.child
        out = build(Path(directory), int(number)) if what == "build" else \
            lookup(Path(directory), what, int(number))
        print(json.dumps(out))
        return
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    print("| memories | build s | database MB | note ms | common ms | anchor ms | write ms | peak MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        directory = args.work / f"rows-{size}"

        def child(what: str, runs: int, where: Path = directory) -> dict:
            proc = subprocess.run([sys.executable, __file__, "--child", str(where), what, str(runs)],
                                  env=env, capture_output=True, text=True, check=True)
            return json.loads(proc.stdout.splitlines()[-1])

        made = child("build", size)
        got = {what: child(what, args.runs) for what in ("note", "common", "anchor", "write")}
        cells = [f"{size:,}", made["build_s"], made["db_mb"], *(got[w]["ms"] for w in got),
                 max(g["peak_mb"] for g in got.values())]
        print("| " + " | ".join(map(str, cells)) + " |", flush=True)


if __name__ == "__main__":
    main()
