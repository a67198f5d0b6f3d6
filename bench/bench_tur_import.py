"""Benchmark of ``tur import --from-tur``: a store of 1,200 memories written by the real Tur package.

In a temporary HOME and project (a git repository of 40 files), the Tur package installed by
the ``test`` extra (``pip install tur==0.15.1``) creates a persona with its own wizard and
learns the memories with its own CLI (``tur learn --json``, one call): every Tur type and
scope, a third anchored to line ranges, tags and confidences. Then ``tur learn --supersedes``
supersedes 5 of them, its ``MemoryManager`` archives 100 and subsumes 60, and ``tur note
write`` leaves a session note. Two more commits change some anchored files, so verify finds
stale memories.

Timed, each as a whole ``tur`` process (gitmem's CLI, Python start-up included):

* the dry run; the import (one commit); a second import (nothing to do);
* ``tur verify`` right after the import (staleness from the imported provenance);
* ``tur show <Tur hash prefix>`` with a warm cache (a legacy id resolved from the cache).

The import's report is printed as it came. Run: ``python bench/bench_tur_import.py``
(``--memories N`` for another size). Target on 2 cores: the import of 1,000+ memories in
under 10 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.tur_package import RealTur, git_env, hash_of  # noqa: E402 - after the path set-up

TUR = str(Path(sys.executable).with_name("tur"))
WORDS = ("queue", "cache", "token", "retry", "schema", "worker", "index", "lock", "batch", "socket",
         "parser", "config", "session", "ledger", "migration", "router", "buffer", "journal")
TYPES = (("fact", "incarnation"), ("fact", "incarnation"), ("insight", "incarnation"),
         ("event", "incarnation"), ("preference", "user"), ("axiom", "universal"),
         ("core", "persona"), ("insight", "universal"))


def _git(cwd: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def _project(project: Path, env: dict[str, str], rng: random.Random) -> list[str]:
    files = []
    for i in range(40):
        path = f"src/mod{i:02d}.py"
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        body = "".join(f"def f{i}_{n}(): return {rng.random():.6f}\n" for n in range(80))
        (project / path).write_text(body)
        files.append(path)
    _git(project, env, "init", "-q", "-b", "main")
    _git(project, env, "add", ".")
    _git(project, env, "commit", "-q", "-m", "code")
    return files


def _memories(n: int, files: list[str], rng: random.Random) -> list[dict]:
    out = []
    for i in range(n):
        type_, scope = TYPES[i % len(TYPES)]
        a, b, c = rng.sample(WORDS, 3)
        memory = {"type": type_, "scope": scope, "tags": [a, "bench"],
                  "content": f"The {a} {b} uses a {c} for step {i} of the pipeline",
                  "confidence": round(rng.uniform(0.5, 1.0), 2)}
        if scope == "incarnation" and i % 3 == 0:
            start = rng.randint(1, 70)
            memory["context_ref"] = f"{rng.choice(files)}#L{start}-L{start + rng.randint(0, 8)}"
        out.append(memory)
    return out


def _timed(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {proc.stderr}")
    return seconds, proc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1200)
    args = parser.parse_args()
    rng = random.Random(17)
    with tempfile.TemporaryDirectory(prefix="bench-tur-") as tmp:
        project, home = Path(tmp) / "project", Path(tmp) / "home"
        project.mkdir()
        home.mkdir()
        (home / ".gitconfig").write_text("[user]\n\tname = Bench\n\temail = bench@example.com\n")
        env = git_env(home)
        files = _project(project, env, rng)
        real = RealTur(project, home)
        started = time.perf_counter()
        real.init_persona("Ariel", "To safeguard reality")
        hashes = real.learn_many(_memories(args.memories, files, rng))
        for old in (hashes[i] for i in (8, 9, 16, 17, 24)):  # facts: Tur supersedes no axiom or core
            content = real.content(real.file_of(old)) + " (revised)"
            real.learn(content, "--type", "fact", "--supersedes", old, "--allow-conflict")
        real.archive(*hashes[100:200])
        real.subsume(*hashes[200:260])
        real.run("wake")  # opens a session, which a note needs
        real.run("note", "write", "Stopped halfway through the pipeline refactor")
        built = time.perf_counter() - started
        for round_ in range(2):
            for path in rng.sample(files, 8):
                lines = (project / path).read_text().splitlines(keepends=True)
                lines[rng.randrange(len(lines))] = f"# changed in round {round_}\n"
                (project / path).write_text("".join(lines))
            _git(project, env, "commit", "-qam", f"change round {round_}")
        store = str(home / ".tur")
        cmd = [TUR, "import", "--from-tur", "--home", store]
        dry, _ = _timed([*cmd, "--dry-run"], project, env)
        first, proc = _timed(cmd, project, env)
        again, _ = _timed(cmd, project, env)
        verify, verified = _timed([TUR, "verify"], project, env)
        show, _ = _timed([TUR, "show", hash_of(real.memory_files()[0])[:10]], project, env)
        count = len(real.memory_files())
        print(f"Tur store built by tur {real.version()}: {count} memory files in {built:.1f} s; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print("--- tur import --from-tur --home (report) ---")
        print(proc.stdout.rstrip())
        not_imported = proc.stderr.strip().splitlines()
        print(f"--- stderr: {len(not_imported)} line(s) ---")
        print("\n".join(not_imported[:10]))
        print("--- timings (whole processes) ---")
        print(f"dry run         {dry:6.2f} s")
        print(f"import          {first:6.2f} s  ({count / first:.0f} memories/s)")
        print(f"second import   {again:6.2f} s  (nothing to do)")
        print(f"verify after    {verify:6.2f} s  ({verified.stdout.splitlines()[0]})")
        print(f"show <hash>     {show:6.2f} s  (legacy id from the warm cache)")
        print(json.dumps({"memories": count, "import_s": round(first, 2), "second_s": round(again, 2),
                          "dry_run_s": round(dry, 2), "verify_s": round(verify, 2)}))


if __name__ == "__main__":
    main()
