"""Benchmark of reads in the repository states of docs/repositories.md: time and git processes.

Builds one repository (200 files of 60 lines in 10 directories, one commit; 1,000 memories
anchored at HEAD on line ranges, one in ten on a ``*.kw`` file with a clean/smudge filter
driver; one anchored line of one file edited), then copies it into each state and runs
``tur status`` cold (read cache deleted) and warm, and ``tur list`` warm, as processes. A
``git`` shim first on PATH counts the git processes gitmem starts (git's own children, such
as a lazy fetch, are not counted).

States: ordinary; split index; sparse checkout (cone: half the directories); sparse index;
a ``--filter=blob:none`` partial clone (with the memory ref fetched, so its 1,000 record
blobs are missing until the first read); a repository whose filter driver files were touched
(libgit2 sees their changed stat data and calls them modified: each goes through git's clean
filter once).

Run: ``python bench/bench_repositories.py`` (``--memories N`` for another size).
"""

from __future__ import annotations

import argparse
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitmem.record.anchors import Anchor, fingerprint
from gitmem.record.models import Decay, Memory, Provenance

OBSERVED = datetime(2026, 1, 1, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[1]
FILES = 200
LINES = 60


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def build(root: Path, memories: int) -> Path:
    """The source repository: files, one commit, memories written in one ref update."""
    from gitmem import codec
    from gitmem.cache.reader import record_path
    from gitmem.store import Mutation, Store

    repo = root / "source"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "filter.kw.clean", r"sed 's/\$Rev: [^$]*\$/$Rev$/'")
    git(repo, "config", "filter.kw.smudge", r"sed 's/\$Rev\$/$Rev: 42 $/'")
    (repo / ".gitattributes").write_text("*.kw filter=kw\n")
    paths = []
    for i in range(FILES):
        path = f"dir{i % 10}/mod{i}." + ("kw" if i % 10 == 0 else "py")
        (repo / path).parent.mkdir(exist_ok=True)
        lines = [f"mod{i} line {j}" + (" $Rev$" if j == 0 and path.endswith(".kw") else "")
                 for j in range(LINES)]
        (repo / path).write_text("\n".join(lines) + "\n")
        paths.append((path, lines))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "initial")
    for path in repo.glob("dir*/*.kw"):  # checked out again: smudged, "$Rev: 42 $"
        path.unlink()
    git(repo, "checkout", "--", ".")
    head = git(repo, "rev-parse", "HEAD").strip()
    records = {}
    for n in range(memories):
        path, lines = paths[n % FILES]
        start = 2 + (n * 7) % (LINES - 10)
        anchor = Anchor(path, start, start + 3)
        memory = Memory(
            id=f"fact-{n:08x}", type="fact", content=f"memory {n} about {path}",
            provenance=Provenance(observed_at=OBSERVED, git_sha=head, context_ref=anchor.ref(),
                                  fingerprint=fingerprint(lines[start - 1 : start + 3])),
            decay=Decay(half_life_days=14, last_verified_at=OBSERVED),
        )
        records[record_path(memory.id)] = codec.dump_new(memory)
    Store.discover(repo).transact(lambda tip: Mutation(records, f"bench: {len(records)} memories"))
    return repo


def shim(root: Path) -> tuple[Path, Path]:
    """A directory holding a ``git`` that logs each call and runs the real one; and the log."""
    real = shutil.which("git")
    assert real is not None
    bindir, log = root / "shim", root / "git-calls.log"
    bindir.mkdir()
    script = bindir / "git"
    script.write_text(f'#!/bin/sh\necho "$1 $2 $3 $4 $5" >> "{log}"\nexec "{real}" "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return bindir, log


def states(root: Path, source: Path) -> dict[str, Path]:
    """Each repository state, built from ``source``."""
    out: dict[str, Path] = {}

    def copy(name: str) -> Path:
        dest = root / name
        shutil.copytree(source, dest, symlinks=True)
        git(dest, "update-index", "-q", "--refresh")  # a copy changes every file's inode and ctime
        return dest

    out["ordinary"] = copy("ordinary")
    split = copy("split-index")
    git(split, "update-index", "--split-index")
    out["split index"] = split
    sparse = copy("sparse-checkout")
    git(sparse, "sparse-checkout", "set", *[f"dir{i}" for i in range(5)])
    out["sparse checkout"] = sparse
    sparse_index = copy("sparse-index")
    git(sparse_index, "sparse-checkout", "init", "--cone", "--sparse-index")
    git(sparse_index, "sparse-checkout", "set", *[f"dir{i}" for i in range(5)])
    out["sparse index"] = sparse_index
    origin = root / "origin.git"
    git(root, "clone", "-q", "--bare", str(source), str(origin))
    git(origin, "config", "uploadpack.allowFilter", "true")
    git(origin, "config", "uploadpack.allowAnySHA1InWant", "true")
    git(source, "push", "-q", str(origin), "refs/tur/memories")
    partial = root / "partial"
    git(root, "clone", "-q", "--filter=blob:none", origin.as_uri(), str(partial))
    git(partial, "config", "filter.kw.clean", r"sed 's/\$Rev: [^$]*\$/$Rev$/'")
    git(partial, "fetch", "-q", "origin", "refs/tur/memories:refs/tur/memories")
    out["partial clone (first read fetches)"] = partial
    touched = copy("filtered-touched")
    later = time.time() + 5
    for path in touched.glob("dir*/*.kw"):
        os.utime(path, (later, later))
    out["filter driver files touched"] = touched
    for repo in out.values():  # one edited line in one anchored file, in every state
        target = repo / "dir1/mod1.py"
        target.write_text(target.read_text().replace("mod1 line 9\n", "mod1 line nine\n"))
    return out


def run(repo: Path, command: str, env: dict[str, str], log: Path) -> tuple[float, int, str]:
    log.write_text("")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "gitmem", "-C", str(repo), command],
                          cwd=ROOT, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"tur {command} failed in {repo}: {proc.stderr.strip()}")
    calls = len(log.read_text().splitlines())
    return elapsed, calls, proc.stdout.splitlines()[0] if proc.stdout else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-repos-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        source = build(root, args.memories)
        repos = states(root, source)
        print(f"built {args.memories} memories over {FILES} files and {len(repos)} repository states "
              f"in {time.perf_counter() - t0:.1f} s")
        bindir, log = shim(root)
        env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
        print(f"{'state':<38} {'status cold':>16} {'status warm':>16} {'list warm':>16}   status says")
        for name, repo in repos.items():
            shutil.rmtree(repo / ".git/tur/cache", ignore_errors=True)
            cells = []
            summary = ""
            for command in ("status", "status", "list"):
                elapsed, calls, first = run(repo, command, env, log)
                cells.append(f"{elapsed:6.2f} s {calls:2d} git")
                summary = summary or first
            print(f"{name:<38} {cells[0]:>16} {cells[1]:>16} {cells[2]:>16}   {summary}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
