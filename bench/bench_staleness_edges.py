"""Cost of the staleness edges: a deleted whole file that lives on, a block in many copies.

Builds a repository of ``--files`` Python files (~40 lines each), learns ``--memories``
memories at its first commit, then one commit that (a) splits one anchored file in two,
(b) deletes another anchored file whose content is found nowhere, (c) moves a block into
``--copies`` files, and rewrites ``--changed`` other files (the files searched first).
Times one :func:`gitmem.staleness.verdicts.check` of all memories (a fresh
``CodeHistory``, as a new ``tur verify`` process), best of ``--repeat``.

Run: ``python bench/bench_staleness_edges.py`` (``--help`` for sizes).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pygit2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitmem.record.anchors import anchor_fingerprint, parse_anchor
from gitmem.record.models import Decay, Memory, Provenance
from gitmem.staleness.verdicts import check
from gitmem.store.code import CodeHistory

OBSERVED = datetime(2026, 1, 1, tzinfo=UTC)


def _module(i: int) -> str:
    return "".join(f"def function_{i}_{j}(value):\n    return value * {j} + {i}\n\n\n"
                   for j in range(10))


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def build(repo: Path, files: int, changed: int, copies: int) -> dict[str, str]:
    """The repository; returns ``{name: anchor}`` of the memories of interest."""
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.name", "bench")
    _git(repo, "config", "user.email", "bench@example.com")
    for i in range(files):
        (repo / f"pkg/m{i:05d}.py").parent.mkdir(exist_ok=True)
        (repo / f"pkg/m{i:05d}.py").write_text(_module(i))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "initial")
    split, gone, block = (repo / "pkg/m00000.py"), (repo / "pkg/m00001.py"), repo / "pkg/m00002.py"
    text = split.read_text().split("\n\n\n")
    split.unlink()
    (repo / "pkg/split_a.py").write_text("\n\n\n".join(text[:5]) + "\n")
    (repo / "pkg/split_b.py").write_text("\n\n\n".join(text[5:]))
    gone.unlink()
    lines = block.read_text().splitlines(keepends=True)
    block.write_text("".join(lines[:8] + lines[12:]))
    for k in range(copies):
        (repo / f"pkg/copy{k:03d}.py").write_text("x = 1\n" * k + "".join(lines[8:12]))
    for i in range(3, 3 + changed):
        path = repo / f"pkg/m{i:05d}.py"
        path.write_text(path.read_text().replace("* 3 +", "* 33 +"))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "split, delete, copy, edit")
    return {"split": "pkg/m00000.py", "deleted": "pkg/m00001.py", "copies": "pkg/m00002.py#L9-L10"}


def memories(repo: Path, observed: str, anchors: list[str]) -> list[Memory]:
    """One memory per anchor, observed at ``observed``, fingerprinted as ``tur learn`` does."""
    out = []
    for n, ref in enumerate(anchors):
        anchor = parse_anchor(ref)
        data = subprocess.run(["git", "-C", str(repo), "show", f"{observed}:{anchor.path}"],
                              check=True, capture_output=True).stdout
        out.append(Memory(
            id=f"fact-{n:08x}", type="fact", content=f"memory {n}", confidence=0.9,
            provenance=Provenance(observed_at=OBSERVED, git_sha=observed, context_ref=ref,
                                  fingerprint=anchor_fingerprint(anchor, data)),
            decay=Decay(half_life_days=14, last_verified_at=OBSERVED),
        ))
    return out


def main(argv: list[str] | None = None) -> int:
    """Build, check, print the verdicts of interest and the best time."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--changed", type=int, default=200)
    parser.add_argument("--copies", type=int, default=50)
    parser.add_argument("--memories", type=int, default=1000, help="whole-file anchors, unchanged")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        t0 = time.perf_counter()
        named = build(repo, args.files, args.changed, args.copies)
        observed = _git(repo, "rev-parse", "HEAD~1").strip()
        rest = [f"pkg/m{i:05d}.py" for i in range(3, 3 + args.memories)]
        mems = memories(repo, observed, [*named.values(), *rest])
        print(f"built {args.files} files, {len(mems)} memories in {time.perf_counter() - t0:.1f} s")
        best = float("inf")
        report = None
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            report = check(mems, CodeHistory(pygit2.Repository(str(repo))))
            best = min(best, time.perf_counter() - t0)
        assert report is not None
        for name, v in zip(named, report.verdicts, strict=False):
            print(f"{name:8s} {v.status.value:6s} {v.new_context_ref or '-'}  {v.reason}")
        print(f"check: {best:.2f} s (best of {args.repeat}), {report.counts()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
