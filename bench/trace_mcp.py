"""Where ``tur mcp``'s memory goes per write call: a ``tracemalloc`` diff, in process (GitHub issue 29).

Makes ``learn`` + ``forget`` pairs through the MCP server's own tool functions
(:class:`gitmem.mcp.tools.GitmemTools`, what each ``tools/call`` runs, without the SDK's
transport) on a new small repository, takes a ``tracemalloc`` snapshot after pair ``A``
and after pair ``B`` (each after a full collection), and prints the resident set size at
both, the total traced growth per pair, and the allocation sites that grew most. Growth
the diff does not show (RSS minus traced) is native: libgit2, SQLite, the allocator.

Run from the repository root (nice it on a shared machine)::

    python bench/trace_mcp.py                 # pairs 200 -> 500, sites by line
    python bench/trace_mcp.py --pairs 600,1600 --frames 25 --by traceback
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", default="200,500", help="A,B: snapshots after pair A and pair B")
    parser.add_argument("--frames", type=int, default=1, help="traceback depth kept (default 1)")
    parser.add_argument("--by", choices=["lineno", "traceback", "filename"], default="lineno")
    parser.add_argument("--top", type=int, default=25, help="sites printed (default 25)")
    args = parser.parse_args()
    first, last = (int(x) for x in args.pairs.split(","))
    work = Path(tempfile.mkdtemp(prefix="tur-trace-mcp-"))
    os.environ.update(GIT_AUTHOR_NAME="Bench", GIT_AUTHOR_EMAIL="bench@example.com",
                      GIT_COMMITTER_NAME="Bench", GIT_COMMITTER_EMAIL="bench@example.com")
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "app.py").write_text("".join(f"line {i}\n" for i in range(1, 41)))
    subprocess.run(["git", "-C", str(work), "add", "."], check=True)
    subprocess.run(["git", "-C", str(work), "commit", "-qm", "init"], check=True)

    from gitmem.api import Gitmem
    from gitmem.mcp.tools import GitmemTools

    tools = GitmemTools(Gitmem.open(work))
    tracemalloc.start(args.frames)
    before = None
    rss_first = 0.0
    for n in range(1, last + 1):
        result = tools.call(lambda n=n: tools.learn(
            f"Bench note {n}: the queue retries with backoff {n % 97}", None, None, None, None))
        assert result.structured_content is not None, result
        memory_id = result.structured_content["memory"]["id"]
        tools.call(lambda m=memory_id: tools.forget(m))
        if n == first:
            gc.collect()
            before, rss_first = tracemalloc.take_snapshot(), _rss_mib()
    gc.collect()
    after, rss_last = tracemalloc.take_snapshot(), _rss_mib()
    assert before is not None
    stats = after.compare_to(before, args.by)
    traced = sum(s.size_diff for s in stats)
    pairs = last - first
    print(f"RSS {rss_first:.1f} -> {rss_last:.1f} MiB over pairs {first}..{last} "
          f"({(rss_last - rss_first) * 1024 / (2 * pairs):.2f} KiB per call, tracing included)")
    print(f"traced growth: {traced / 1024:.1f} KiB, {traced / (2 * pairs):.0f} bytes per call")
    for stat in stats[: args.top]:
        print(f"{stat.size_diff:+10d} B {stat.count_diff:+7d} blocks")
        for line in stat.traceback.format()[-2 * args.frames:]:
            print("    " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
