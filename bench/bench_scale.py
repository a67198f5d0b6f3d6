"""Scale benchmark: whole-process timings of ``tur`` on repositories of 1,000 to 100,000 memories.

For each size it builds (once, then reuses) a repository with a small code history and a
memory ref holding that many synthetic records, then runs every command as a fresh process
several times and prints the median wall time, the median CPU time (user + system, which a
busy machine disturbs less) and the peak resident memory of the slowest-memory run.

Rows: ``python -c pass``, ``import gitmem`` and ``import gitmem.api`` (the interpreter, the
package, and the facade every repository command loads: pydantic models and pygit2; what
every command pays before it reads anything), ``tur --help``, ``learn`` (one more memory;
``learn --allow-secret`` beside it, to show what the credential scan costs), ``refute`` and
``verify ID`` (one-record writes),
``wake`` and ``recall`` cold (cache deleted before every run) and warm (cache kept),
``list``, and the harness hooks warm: ``hook pre-turn`` (a prompt on stdin) and ``hook
pre-tool`` (a Claude Code Read of an anchored file), each run with a new ``session_id`` so that
nothing is left out as already sent.

Run from the repository root::

    python bench/bench_scale.py                      # 1,000, 3,000, 10,000 and 100,000 memories
    python bench/bench_scale.py --sizes 1000,10000   # faster
    python bench/bench_scale.py --runs 7 --cold-runs 3 --work /tmp/tur-bench

Records are written by a template that reproduces ``gitmem.codec.dump_new`` byte for byte
(checked on a sample of every repository: ruamel needs ~2 ms a record, too slow for 100,000),
and committed in one ``git fast-import`` commit, so the memory ref is one packfile, as after
``git gc`` in a real repository.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {  # (size, row) -> seconds or MB, from GitHub issue 5
    (10_000, "wake warm"): 0.3,
    (10_000, "recall warm"): 0.3,
    (10_000, "learn"): 0.2,
    (10_000, "tur --help"): 0.15,
    (3_000, "hook pre-turn warm"): 0.15,  # GitHub issue 14
    (3_000, "hook pre-tool warm"): 0.15,
    (10_000, "wake cold"): 5.0,
    (100_000, "wake warm"): 1.5,
    (100_000, "recall warm"): 1.5,
}
PEAK_TARGET_MB = {100_000: 600}
QUERY = "how does the queue retry failed jobs after a timeout"
SEED = 5

# -- synthetic records ------------------------------------------------------------------------

_SUBJECTS = [
    "the queue service", "the billing worker", "the auth middleware", "the search indexer",
    "the payment gateway client", "the session store", "the rate limiter", "the job scheduler",
    "the migration runner", "the config loader", "the metrics exporter", "the webhook handler",
    "the cache layer", "the upload pipeline", "the notification sender", "the audit log writer",
    "the feature flag client", "the retry policy", "the connection pool", "the CLI entry point",
]
_VERBS = [
    "retries", "batches", "serialises", "validates", "caches", "streams", "locks", "rejects",
    "compresses", "signs", "buffers", "deduplicates", "times out", "logs", "shards", "replays",
    "throttles", "encrypts", "flushes", "rotates",
]
_OBJECTS = [
    "failed jobs", "outgoing requests", "user sessions", "database writes", "API tokens",
    "search results", "webhook payloads", "upload chunks", "audit events", "billing records",
    "config values", "metric samples", "email notifications", "feature flags", "SQL queries",
    "cache entries", "background tasks", "HTTP responses", "JSON documents", "lock files",
]
_QUALIFIERS = [
    "with exponential backoff", "before committing the transaction", "in WAL mode",
    "every 30 seconds", "behind a per-tenant mutex", "after a timeout", "using msgpack",
    "only in production", "through the outbox table", "with a 5 minute TTL",
    "when the circuit breaker is open", "in batches of 500", "on the read replica",
    "before emitting metrics", "per request id", "in a background thread",
]
_AGENTS = ["claude", "codex", "aider", None]
_HARNESSES = ["claude-code", "codex-cli", None]
_TYPES = ["fact"] * 12 + ["insight"] * 3 + ["preference"] * 2 + ["core", "axiom"]
_HALF_LIFE = {"fact": "14.0", "insight": "90.0", "preference": "180.0", "core": None, "axiom": None}
_FILES = [f"src/mod_{k:02d}.py" for k in range(12)]
_NOW = datetime(2026, 3, 1, tzinfo=UTC)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _memory_id(kind: str, content: str) -> str:
    from gitmem.ids import memory_id

    return memory_id(kind, content)


@dataclass
class _Record:
    id: str
    text: bytes
    fields: dict


def _record(rng: random.Random, n: int, shas: list[str], earlier: list[str]) -> _Record:
    kind = rng.choice(_TYPES)
    content = (f"{rng.choice(_SUBJECTS).capitalize()} {rng.choice(_VERBS)} "
               f"{rng.choice(_OBJECTS)} {rng.choice(_QUALIFIERS)} (ticket {n})")
    mid = _memory_id(kind, content)
    confidence = rng.choice(["1.0", "0.9", "0.85", "0.8", "0.75", "0.6"])
    observed = _NOW - timedelta(seconds=rng.randrange(0, 120 * 86400))
    verified = observed + timedelta(seconds=rng.randrange(0, int((_NOW - observed).total_seconds()) + 1))
    agent, harness = rng.choice(_AGENTS), rng.choice(_HARNESSES)
    lines = [f"id: {mid}", f"type: {kind}", "scope: universal", f"content: {content}",
             f"confidence: {confidence}", "provenance:", f'  observed_at: "{_iso(observed)}"',
             f'  git_sha: "{rng.choice(shas)}"']
    if agent:
        lines.append(f"  source_agent: {agent}")
    if harness:
        lines.append(f"  source_harness: {harness}")
    if rng.random() < 0.5:
        start = rng.randrange(1, 150)
        lines.append(f"  context_ref: {rng.choice(_FILES)}#L{start}-L{start + rng.randrange(0, 20)}")
        lines.append(f"  fingerprint: sha256:{hashlib.sha256(content.encode()).hexdigest()}")
    lines.append("decay:")
    if _HALF_LIFE[kind]:
        lines.append(f"  half_life_days: {_HALF_LIFE[kind]}")
    lines.append(f'  last_verified_at: "{_iso(verified)}"')
    roll = rng.random()
    status = "stale" if roll < 0.08 else "fresh"
    lines.append(f"  staleness_status: {'refuted' if roll > 0.98 else status}")
    if status == "stale":
        lines.append(f"  reason: lines {rng.randrange(1, 90)}-{rng.randrange(90, 200)} changed")
    if earlier and rng.random() < 0.04:
        lines += ["relations:", f"  - type: {rng.choice(['supports', 'supersedes', 'refines'])}",
                  f"    target: {rng.choice(earlier)}"]
    if roll > 0.98:
        lines += ["refutation:", "  reason: contradicted by the load test",
                  "  by: Bench <bench@example.com>", f'  at: "{_iso(verified)}"']
    return _Record(mid, ("\n".join(lines) + "\n").encode(), {"kind": kind, "content": content})


def synthetic_records(size: int, shas: list[str], seed: int = SEED) -> list[_Record]:
    """``size`` records with distinct ids, as YAML bytes in ``dump_new``'s canonical form."""
    rng = random.Random(seed)
    out: dict[str, _Record] = {}
    n = 0
    while len(out) < size:
        n += 1
        record = _record(rng, n, shas, list(out)[-50:] if out else [])
        out.setdefault(record.id, record)
    return list(out.values())


def check_template(records: list[_Record], sample: int = 60) -> None:
    """Re-serialise a sample with ``codec.dump_new`` and require identical bytes.

    Raises:
        SystemExit: the template drifted from the codec's canonical form.
    """
    from gitmem import codec

    step = max(1, len(records) // sample)
    for record in records[::step]:
        memory = codec.load(record.text, record.id)
        again = codec.dump_new(memory)
        if again != record.text:
            sys.exit(f"bench: synthetic record {record.id} differs from codec.dump_new:\n"
                     f"{record.text.decode()}\n---\n{again.decode()}")


# -- repositories -------------------------------------------------------------------------------

def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"bench: git {' '.join(args[:2])} failed: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode()


def _code_history(commits: int = 40) -> bytes:
    rng = random.Random(SEED)
    stream = bytearray()
    files = {path: [f"def f{i}(): return {i}\n" for i in range(200)] for path in _FILES}
    when = int((_NOW - timedelta(days=130)).timestamp())
    for number in range(1, commits + 1):
        path = rng.choice(_FILES)
        line = rng.randrange(200)
        files[path][line] = f"def f{line}(): return {number * 1000 + line}  # edit {number}\n"
        message = f"edit {path} ({number})".encode()
        stream += b"commit refs/heads/main\n"
        stream += f"committer Bench <bench@example.com> {when + number * 3 * 86400} +0000\n".encode()
        stream += b"data %d\n%s\n" % (len(message), message)
        touched = _FILES if number == 1 else [path]
        for name in touched:
            data = "".join(files[name]).encode()
            stream += b"M 100644 inline %s\ndata %d\n%s\n" % (name.encode(), len(data), data)
    return bytes(stream)


def _memory_commit(records: list[_Record]) -> bytes:
    from gitmem.ids import shard_of

    stream = bytearray(b"commit refs/tur/memories\n")
    stream += f"committer Bench <bench@example.com> {int(_NOW.timestamp())} +0000\n".encode()
    message = f"import {len(records)} synthetic memories".encode()
    stream += b"data %d\n%s\n" % (len(message), message)
    stream += b"M 100644 inline .gitmem\ndata 10\nformat: 1\n\n"
    for record in records:
        path = f"memories/{shard_of(record.id)}/{record.id}.yaml".encode()
        stream += b"M 100644 inline %s\ndata %d\n%s\n" % (path, len(record.text), record.text)
    return bytes(stream)


def build_repository(path: Path, size: int) -> list[_Record]:
    """Create ``path``: a 40-commit code history and ``size`` memories on refs/tur/memories."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    _git(path, "init", "-q", "-b", "main")
    _git(path, "config", "user.name", "Bench")
    _git(path, "config", "user.email", "bench@example.com")
    _git(path, "fast-import", "--quiet", stdin=_code_history())
    _git(path, "checkout", "-q", "-f", "main")
    shas = _git(path, "rev-list", "main").split()
    records = synthetic_records(size, shas)
    check_template(records)
    _git(path, "fast-import", "--quiet", stdin=_memory_commit(records))
    (path / ".bench-size").write_text(f"{size} {SEED}\n")
    _git(path, "update-index", "--refresh")
    return records


def repository(work: Path, size: int, rebuild: bool) -> Path:
    """The repository of ``size`` memories under ``work``, built on first use."""
    path = work / f"repo-{size}"
    marker = path / ".bench-size"
    if rebuild or not marker.exists() or marker.read_text().split()[0] != str(size):
        started = time.perf_counter()
        print(f"building {size:,} memories in {path} ...", file=sys.stderr, flush=True)
        # In a child process, so that this one stays small (see run_once).
        subprocess.run([sys.executable, __file__, "--build-into", str(path), str(size)],
                       check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        print(f"  built in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    else:  # undo what earlier benchmark runs wrote (learned and refuted records)
        _git(path, "update-ref", "refs/tur/memories", "refs/tur/memories-bench-base")
    _git(path, "update-ref", "refs/tur/memories-bench-base", "refs/tur/memories")
    return path


# -- measuring ----------------------------------------------------------------------------------

@dataclass
class Sample:
    """One process: wall seconds, CPU seconds (user + system), peak RSS in MB."""

    wall: float
    cpu: float
    peak_mb: float


def run_once(argv: list[str], stdin: Path | None = None) -> Sample:
    """Run one process to completion; measure it with ``os.wait4`` (its own rusage only).

    ``posix_spawn`` rather than fork, and the harness keeps no large data: Linux carries a
    process's peak RSS across ``exec``, so a child's peak is at least its parent's at spawn
    time (about 20 MB here, the floor of the small rows).

    Raises:
        SystemExit: the command failed.
    """
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")  # see compile_sources
    with tempfile.TemporaryFile() as err:
        actions = [(os.POSIX_SPAWN_OPEN, 0, str(stdin or os.devnull), os.O_RDONLY, 0),
                   (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                   (os.POSIX_SPAWN_DUP2, err.fileno(), 2)]
        started = time.perf_counter()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            err.seek(0)
            sys.exit(f"bench: {' '.join(argv)} exited {code}: "
                     f"{err.read().decode(errors='replace')[-2000:]}")
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


@dataclass
class Row:
    """Medians of one command at one size."""

    name: str
    size: int
    wall: float
    cpu: float
    peak_mb: float
    runs: int


def measure(name: str, size: int, runs: int, make_argv, before=None, stdin=None) -> Row:
    """Run ``make_argv(i)`` ``runs`` times (``before(i)`` first, untimed); medians and max peak.

    ``stdin(i)``, when given, is the file run ``i`` reads on its standard input.
    """
    samples = []
    for i in range(runs):
        if before is not None:
            before(i)
        samples.append(run_once(make_argv(i), stdin(i) if stdin is not None else None))
    row = Row(name, size, statistics.median(s.wall for s in samples),
              statistics.median(s.cpu for s in samples), max(s.peak_mb for s in samples), runs)
    print(f"  {name:<22} {row.wall:7.3f} s  cpu {row.cpu:7.3f} s  {row.peak_mb:6.0f} MB",
          file=sys.stderr, flush=True)
    return row


def bench_size(size: int, work: Path, runs: int, cold_runs: int, rebuild: bool) -> list[Row]:
    """Every row of the table for one repository size."""
    repo = repository(work, size, rebuild)
    py = sys.executable
    tur = [py, "-m", "gitmem", "-C", str(repo)]
    cache_dir = repo / ".git" / "tur" / "cache"
    # Victims for refute / verify ID from a few shards only: listing every id would grow this
    # process, and a child's peak RSS includes its parent's (see run_once).
    ids = []
    for shard in ("0a", "5c", "b7", "f3"):
        listing = _git(repo, "ls-tree", "--name-only", f"refs/tur/memories:memories/{shard}")
        ids += sorted(Path(line).stem for line in listing.split())
    victims = random.Random(size).sample(ids, 2 * runs)

    def clear(_: int) -> None:
        shutil.rmtree(cache_dir, ignore_errors=True)

    def note(i: int) -> str:
        return f"Bench note {time.time_ns()} about the queue retry policy {i}"

    print(f"{size:,} memories", file=sys.stderr, flush=True)
    rows = [
        measure("python -c pass", size, runs, lambda i: [py, "-c", "pass"]),
        measure("import gitmem", size, runs, lambda i: [py, "-c", "import gitmem"]),
        measure("import gitmem.api", size, runs, lambda i: [py, "-c", "import gitmem.api"]),
        measure("tur --help", size, runs, lambda i: [*tur, "--help"]),
        measure("learn", size, runs, lambda i: [*tur, "learn", note(i)]),
        measure("learn --allow-secret", size, runs,
                lambda i: [*tur, "learn", "--allow-secret", note(i)]),
        measure("refute", size, runs, lambda i: [*tur, "refute", victims[i], "--reason", "bench"]),
        measure("verify ID", size, runs, lambda i: [*tur, "verify", victims[runs + i]]),
        measure("wake cold", size, cold_runs, lambda i: [*tur, "wake"], before=clear),
    ]
    run_once([*tur, "wake"])  # prime the cache
    rows.append(measure("wake warm", size, runs, lambda i: [*tur, "wake"]))
    rows.append(measure("recall cold", size, cold_runs, lambda i: [*tur, "recall", QUERY],
                        before=clear))
    run_once([*tur, "recall", QUERY])
    rows.append(measure("recall warm", size, runs, lambda i: [*tur, "recall", QUERY]))
    rows.append(measure("list", size, runs, lambda i: [*tur, "list"]))
    rows += bench_hooks(repo, size, runs, tur)
    return rows


def bench_hooks(repo: Path, size: int, runs: int, tur: list[str]) -> list[Row]:
    """``tur hook pre-turn`` and ``pre-tool``, warm, whole process, a new session each run."""
    payloads = repo / ".git" / "bench-payloads"
    payloads.mkdir(exist_ok=True)

    def payload(kind: str, i: int) -> Path:
        session = f"bench-{kind}-{time.time_ns()}-{i}"
        if kind == "turn":
            body = {"session_id": session, "hook_event_name": "UserPromptSubmit", "prompt": QUERY}
        else:
            body = {"session_id": session, "hook_event_name": "PreToolUse", "tool_name": "Read",
                    "tool_input": {"file_path": str(repo / _FILES[3])}, "cwd": str(repo)}
        path = payloads / f"{kind}-{i}.json"
        path.write_text(json.dumps(body))
        return path

    run_once([*tur, "hook", "pre-turn"], payload("turn", -1))  # prime the cache and the counts
    run_once([*tur, "hook", "pre-tool"], payload("tool", -1))
    return [
        measure("hook pre-turn warm", size, runs, lambda i: [*tur, "hook", "pre-turn"],
                stdin=lambda i: payload("turn", i)),
        measure("hook pre-tool warm", size, runs, lambda i: [*tur, "hook", "pre-tool"],
                stdin=lambda i: payload("tool", i)),
    ]


def _verdict(row: Row) -> str:
    target = TARGETS.get((row.size, row.name))
    marks = []
    if target is not None:
        marks.append(f"{'ok' if row.wall <= target else 'MISSED'} (<= {target:g} s)")
    peak = PEAK_TARGET_MB.get(row.size)
    if peak is not None and row.peak_mb > peak:
        marks.append(f"peak MISSED (<= {peak} MB)")
    return ", ".join(marks)


def table(rows: list[Row]) -> str:
    """The result as a Markdown table: one line per (command, size)."""
    lines = ["| memories | command | wall median (s) | CPU median (s) | peak RSS (MB) | runs | target |",
             "|---:|---|---:|---:|---:|---:|---|"]
    for row in rows:
        lines.append(f"| {row.size:,} | `{row.name}` | {row.wall:.3f} | {row.cpu:.3f} | "
                     f"{row.peak_mb:.0f} | {row.runs} | {_verdict(row)} |")
    return "\n".join(lines)


def compile_sources() -> None:
    """Byte-compile gitmem and tui once, as ``pip install`` does for an installed package.

    The children run with PYTHONDONTWRITEBYTECODE=1 so that no run writes bytecode the
    next one profits from; without this step every run would compile ~30 modules
    (about 80 ms) that a real installation never compiles again.
    """
    import compileall

    for package in ("gitmem", "tui"):
        compileall.compile_dir(ROOT / package, quiet=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,3000,10000,100000",
                        help="comma-separated numbers of memories (default 1000,3000,10000,100000)")
    parser.add_argument("--runs", type=int, default=5, help="runs per warm command (default 5)")
    parser.add_argument("--cold-runs", type=int, default=3,
                        help="runs per cold command, cache deleted each time (default 3)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "tur-bench",
                        help="where the repositories are built and kept between runs")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the repositories")
    parser.add_argument("--build-into", nargs=2, metavar=("PATH", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if args.build_into:
        build_repository(Path(args.build_into[0]), int(args.build_into[1]))
        return 0
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    compile_sources()
    rows: list[Row] = []
    for size in sizes:
        rows += bench_size(size, args.work, args.runs, args.cold_runs, args.rebuild)
    print(f"\ngitmem scale benchmark, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
          f"load average {os.getloadavg()[0]:.2f}\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
