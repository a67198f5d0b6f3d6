"""Benchmark of the hooks a harness runs on every turn: how long until they exit.

Each figure is the median over fresh interpreters (``python -m gitmem``) in a temporary
repository with one commit and three memories, of the wall time from the payload's last
byte to the process's exit:

* ``pre-turn, complete payload, stdin open``: the harness writes the JSON object and keeps
  the pipe open (before issue 29 the hook waited for end of file, i.e. until the harness
  killed it);
* ``pre-turn, incomplete payload, stdin open``: the object never ends; the hook gives up
  after its 2 s deadline;
* ``session-start`` and ``stop`` (a new session each run: ``stop`` records its start).

A run still going after ``--kill-after`` seconds is killed and counted as that long.

Run: ``python bench/bench_hook_stdin.py [--runs 7] [--kill-after 10]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def make_repo(where: Path) -> Path:
    """A repository with one commit of ``src/app.py`` and three memories."""
    repo = where / "repo"
    (repo / "src").mkdir(parents=True)
    _git(repo, "init", "-q")
    _git(repo, "config", "user.name", "Bench")
    _git(repo, "config", "user.email", "bench@example.com")
    (repo / "src/app.py").write_text("def parse(flags):\n    return flags\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "init")
    for number in range(3):
        subprocess.run([sys.executable, "-m", "gitmem", "-C", str(repo), "learn",
                        f"parse() fact {number}: flags are returned as given"],
                       check=True, capture_output=True, env=_env())
    return repo


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT))


def exit_time(repo: Path, hook: list[str], payload: bytes, close: bool, kill_after: float) -> float:
    """Seconds from the payload's last byte to the hook's exit (``kill_after`` if it was killed)."""
    proc = subprocess.Popen([sys.executable, "-m", "gitmem", "-C", str(repo), "hook", *hook],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=_env())
    assert proc.stdin is not None
    proc.stdin.write(payload)
    proc.stdin.flush()
    started = time.monotonic()
    if close:
        proc.stdin.close()
    try:
        proc.wait(timeout=kill_after)
        elapsed = time.monotonic() - started
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        elapsed = kill_after
    if not close:
        proc.stdin.close()
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh interpreters per case (default 7)")
    parser.add_argument("--kill-after", type=float, default=10.0,
                        help="seconds after which a hook still running is killed (default 10)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = make_repo(Path(tmp))
        prompt = json.dumps({"session_id": "bench", "hook_event_name": "UserPromptSubmit",
                             "prompt": "how are flags parsed"}).encode()

        def fresh(event: str) -> bytes:
            return json.dumps({"session_id": f"bench-{time.time_ns()}", "hook_event_name": event,
                               "source": "startup", "stop_hook_active": False}).encode()

        cases = {
            "pre-turn, complete payload, stdin open": (["pre-turn"], lambda: prompt, False),
            "pre-turn, incomplete payload, stdin open": (["pre-turn"], lambda: prompt[:-1], False),
            "session-start, stdin closed": (["session-start"], lambda: fresh("SessionStart"), True),
            "stop, stdin closed": (["stop"], lambda: fresh("Stop"), True),
        }
        print(f"gitmem hooks, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
              f"load average {os.getloadavg()[0]:.2f}, median of {args.runs}\n")
        print("| hook | median (s) | max (s) |")
        print("|---|---:|---:|")
        for name, (hook, payload, close) in cases.items():
            times = [exit_time(repo, hook, payload(), close, args.kill_after) for _ in range(args.runs)]
            print(f"| {name} | {statistics.median(times):.2f} | {max(times):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
