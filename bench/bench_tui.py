"""Benchmark of ``tur tui`` start-up: from creating the app to a usable table, with thousands of memories.

Builds (in a temporary directory) a repository with 40 code files under ``lib/`` and
``--memories`` memories anchored to them (the records ``fixtures/repos/filler.py`` makes,
as ``tests/conftest.py``'s ``add_filler_memories`` does), then times, with Textual's Pilot in
a headless terminal of 160 x 50, from ``make_app`` to the first moment the browse table
shows rows, one under the cursor, and the detail pane shows it (usable: the table adds the
remaining rows in chunks after that), and to the moment it holds every row. Each run opens a new
:class:`gitmem.api.Gitmem`. The first run finds the read cache cold (just after the records
were written, as after a big ``tur import``); the others find it warm (as after any ``tur``
command).

Run: ``python bench/bench_tui.py [--memories 3000] [--runs 3]``. Target (issue 18):
<= 1.5 s at 3,000 memories.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fixtures.repos.filler import filler_repo
from gitmem.api import Gitmem
from tui import make_app
from tui.widgets.memory_table import MemoryTable

TARGET_S = 1.5
DEADLINE_S = 120.0


def build(root: Path, count: int, files: int = 40) -> Path:
    """A repository with ``files`` code files and ``count`` memories anchored to them."""
    repo = root / "repo"
    filler_repo(repo, count, files)
    return repo


async def time_start(repo: Path, expected: int) -> tuple[float, float]:
    """Seconds from ``make_app`` to a usable table (rows, cursor, detail), and to all ``expected`` rows."""
    started = time.perf_counter()
    app = make_app(Gitmem.open(repo), poll_interval=3600)
    usable: float | None = None
    async with app.run_test(size=(160, 50)) as pilot:
        deadline = started + DEADLINE_S
        while time.perf_counter() < deadline:
            screen = app.screen
            tables = screen.query(MemoryTable)
            if tables:
                table = tables.first()
                if usable is None and table.selected_id is not None and \
                        str(screen.query_one("#summary").render()).startswith(table.selected_id):
                    usable = time.perf_counter() - started
                if usable is not None and table.row_count >= expected:
                    return usable, time.perf_counter() - started
            await pilot.pause(0.005)
    raise SystemExit(f"the table did not fill within {DEADLINE_S:.0f} s")


def main() -> None:
    """Build the repository, warm the cache, time ``--runs`` start-ups and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = build(Path(tmp), args.memories)
        cold, cold_all = asyncio.run(time_start(repo, args.memories))
        runs = [asyncio.run(time_start(repo, args.memories)) for _ in range(args.runs)]
    usable = [u for u, _ in runs]
    full = [f for _, f in runs]
    verdict = "met" if max(cold, *usable) <= TARGET_S else "NOT met"
    print(f"tur tui start-up with {args.memories} memories, to a usable table: cold read cache "
          f"{cold:.2f} s; warm: best {min(usable):.2f} s, worst {max(usable):.2f} s over "
          f"{args.runs} runs (target <= {TARGET_S} s: {verdict})")
    print(f"  every row in the table: cold {cold_all:.2f} s; warm best {min(full):.2f} s, "
          f"worst {max(full):.2f} s")
    print(f"rerun: python bench/bench_tui.py --memories {args.memories} --runs {args.runs}")


if __name__ == "__main__":
    main()
