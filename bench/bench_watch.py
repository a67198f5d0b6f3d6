"""Benchmark of the watcher at scale: how long a change takes to show, with thousands of memories.

Builds (in a temporary directory) a repository with 40 code files under ``lib/`` holding
``--memories`` memories anchored to them, plus one memory anchored to lines 4-6 of
``src/app.py``, runs a :class:`gitmem.watch.Watcher` in a thread (debounce 200 ms, as
``tur watch``), and times, from the git command or file write to the event reporting the
change:

* edit: a line of ``src/app.py`` rewritten in the working tree (fresh -> stale);
* revert: ``git checkout -- src/app.py`` (stale -> fresh; the working tree and the index);
* stage: the edit again, then ``git add`` (the index only: the reason becomes "staged");
* index revert: ``git checkout HEAD -- src/app.py`` (stale -> fresh).

It also times what an index change cost before (issue 18): a verify of every anchored
memory, each record read first, as the watcher did on every ``git add``.

Run: ``python bench/bench_watch.py [--memories 3000]``. Target (issue 18): an index-only
revert shows in <= 2 s at 2,900 memories.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fixtures.repos.filler import filler_repo, git
from gitmem.api import Gitmem, Status
from gitmem.watch import Watcher

DEADLINE_S = 60.0


def build(root: Path, count: int, files: int = 40) -> tuple[Path, str]:
    """The repository and the id of the memory on ``src/app.py#L4-L6``."""
    repo = root / "repo"
    filler_repo(repo, count, files, {"src/app.py": "".join(f"line {i}\n" for i in range(1, 21))})
    gm = Gitmem.open(repo)
    mid = gm.learn("lines four to six matter", file="src/app.py#L4-L6").memory.id
    gm.verify()  # settle every anchor at HEAD
    return repo, mid


def timed(watcher_events: list, action, predicate) -> float:
    """Seconds from ``action()`` to the first new event satisfying ``predicate``."""
    seen = len(watcher_events)
    started = time.perf_counter()
    action()
    deadline = started + DEADLINE_S
    while time.perf_counter() < deadline:
        for event in watcher_events[seen:]:
            if predicate(event):
                return time.perf_counter() - started
        time.sleep(0.005)
    raise SystemExit(f"bench: no event within {DEADLINE_S} s")


def before_cost(repo: Path) -> float:
    """What one index change cost before: read every anchored record, verify them all."""
    gm = Gitmem.open(repo)
    ids = sorted({i for ids in gm.anchored_paths().values() for i in ids})
    started = time.perf_counter()
    for memory_id_ in ids:
        gm.get(memory_id_)
    gm.verify(ids, explicit=False)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=3000, help="memories in the store (default 3000)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"building {args.memories:,} memories ...", file=sys.stderr, flush=True)
        repo, mid = build(Path(tmp), args.memories)
        app = repo / "src/app.py"
        original = app.read_text()
        edited = original.replace("line 5\n", "line five\n")
        watcher = Watcher(Gitmem.open(repo), debounce_ms=200, initial=False)
        events: list = []
        thread = threading.Thread(target=lambda: [events.append(e) for e in watcher.events()],
                                  daemon=True)
        thread.start()
        watcher.ready.wait(DEADLINE_S)
        while not events:
            time.sleep(0.01)

        def status_is(status):
            return lambda e: any(c.memory_id == mid and c.new is status for c in e.changes)

        def staged(e):
            return any(c.memory_id == mid and c.reason and "staged" in c.reason for c in e.changes)

        rows = [
            ("edit (working tree)", timed(events, lambda: app.write_text(edited), status_is(Status.STALE))),
            ("revert: git checkout -- FILE", timed(events, lambda: git(repo, "checkout", "--", "src/app.py"),
                                                   status_is(Status.FRESH))),
        ]
        app.write_text(edited)
        timed(events, lambda: None, status_is(Status.STALE))
        rows.append(("stage: git add FILE", timed(events, lambda: git(repo, "add", "src/app.py"), staged)))
        rows.append(("index revert: git checkout HEAD -- FILE",
                     timed(events, lambda: git(repo, "checkout", "HEAD", "--", "src/app.py"),
                           status_is(Status.FRESH))))
        checked = [len(e.ids) for e in events if e.trigger in ("files", "index")]
        watcher.stop_event.set()
        thread.join(10)
        old = before_cost(repo)
    print(f"\ngitmem watcher, {args.memories + 1:,} memories ({args.memories:,} on 40 files), "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, debounce 200 ms\n")
    print("| change | seen after (s) |")
    print("|---|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} |")
    print(f"\nmemories re-checked per batch: {sorted(set(checked))}")
    print(f"before (every anchored memory re-read and verified on an index change): {old:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
