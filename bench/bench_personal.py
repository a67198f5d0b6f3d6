"""What a personal store (docs/personal.md) adds to a warm wake and recall of a project.

A project repository with ``--project`` memories and a personal store with ``--personal``
memories (both filled through ``import_legacy``: one commit each) are built in a temporary
directory, with its own XDG_DATA_HOME. In one process, warm ``Gitmem.wake`` (default budget)
and ``Gitmem.recall`` (five queries, default top-k) are timed with the personal store moved
aside (the project alone) and in place (joined), after one untimed call of each to warm
both read caches. Prints the median wall and CPU milliseconds of each and the difference.

    python bench/bench_personal.py                              # 10,000 project + 1,000 personal
    python bench/bench_personal.py --project 2000 --personal 200
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

QUERIES = ("retries with jitter", "editor configuration", "queue storage", "pytest fixtures",
           "commit messages")
WORDS = ("queue", "retry", "cache", "index", "editor", "fixture", "commit", "deploy", "schema",
         "token", "branch", "review", "logging", "timeout", "config", "worker")


def _records(directory: Path, count: int, kind: str) -> Path:
    directory.mkdir()
    for i in range(count):
        a, b, c = (WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7))
        (directory / f"{i}.yaml").write_text(
            f'id: "{kind}-{i}"\ntype: {"preference" if kind == "mine" else "fact"}\n'
            f"content: The {a} uses the {b} with {c} rule number {i} ({kind})\n")
    return directory


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _timed(call, runs: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        call()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls) * 1000, statistics.median(cpus) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=int, default=10_000)
    parser.add_argument("--personal", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["XDG_DATA_HOME"] = str(root / "data")
        repo = root / "project"
        repo.mkdir()
        _git(repo, "init", "-q", "-b", "main")
        (repo / "app.py").write_text("x = 1\n")
        _git(repo, "add", ".")
        _git(repo, "-c", "user.name=Bench", "-c", "user.email=bench@example.com", "commit", "-qm", "init")
        from gitmem.api import Gitmem

        project = Gitmem.open(repo)
        project.import_legacy([_records(root / "theirs", args.project, "fact")])
        project.make_personal().import_legacy([_records(root / "mine", args.personal, "mine")])
        store = Path(os.environ["XDG_DATA_HOME"]) / "gitmem" / "personal.git"
        aside = store.with_name("aside.git")

        def wake() -> None:
            Gitmem.open(repo).wake()

        def recall() -> None:
            gm = Gitmem.open(repo)
            for query in QUERIES:
                gm.recall(query, full_records=False)

        figures = {}
        for label, there in (("project alone", False), ("with the personal store", True)):
            if not there:
                store.rename(aside)
            elif aside.exists():
                aside.rename(store)
            wake(), recall()  # warm both read caches (and the plans) at this state
            figures[label] = (_timed(wake, args.runs), _timed(recall, args.runs))
        shown = Gitmem.open(repo).wake()[0]
        personal = sum(1 for line in shown.text.splitlines() if line.startswith("- [personal]"))
        print(f"{args.project:,} project + {args.personal:,} personal memories; "
              f"median of {args.runs}; recall = {len(QUERIES)} queries")
        print("| | warm wake wall (ms) | wake CPU (ms) | warm recall wall (ms) | recall CPU (ms) |")
        print("|---|---:|---:|---:|---:|")
        for label, ((ww, wc), (rw, rc)) in figures.items():
            print(f"| {label} | {ww:.1f} | {wc:.1f} | {rw:.1f} | {rc:.1f} |")
        (aw, ac), (ar, arc) = figures["project alone"]
        (bw, bc), (br, brc) = figures["with the personal store"]
        print(f"| added | {bw - aw:+.1f} | {bc - ac:+.1f} | {br - ar:+.1f} | {brc - arc:+.1f} |")
        print(f"personal entries in the joined wake: {personal} of {len(shown.shown)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
