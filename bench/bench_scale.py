"""Scale benchmark: whole-process timings of ``tur`` on repositories of 1,000 to 100,000 memories.

For each size it builds (once, then reuses) a repository with a small code history and a
memory ref holding that many synthetic records, then runs every command as a fresh process
several times and prints the median wall time, the median CPU time (user + system, which a
busy machine disturbs less) and the peak resident memory of the slowest-memory run.

Rows: ``python -c pass``, ``import gitmem`` and ``import gitmem.api`` (the interpreter, the
package, and the facade every repository command loads), ``import secret scanner`` (what the
first credential scan of a process loads), ``tur --help``; ``wake``, ``recall``, ``status``
and ``verify`` cold (cache deleted before every run; ``verify cold`` also on the memory ref
as built, so that it rewrites many records) and warm (cache kept, ``verify unchanged``: a
verify with nothing to record); ``list``; the writes ``learn`` (one more memory; ``learn
--allow-secret`` beside it, to show what the credential scan costs), ``refute``, ``verify ID``
and ``import`` (ten legacy records); the first read after a write or a commit: ``recall after
learn`` and ``wake after learn`` (a ``learn``, untimed, before each run), ``wake after
commit`` and ``verify after commit`` (an empty code commit, untimed, before each run: a
commit touching none of the anchored files); and the harness hooks warm:
``hook pre-turn`` (a prompt on stdin) and ``hook pre-tool`` (a Claude Code Read of an
anchored file), each run with a new ``session_id`` so that nothing is left out as already
sent.

With ``--before DIR`` (a checkout of the code to compare with, e.g. ``git worktree add
/tmp/before <commit>``) every row is measured for that code and for this one in the same
run, alternately, each on its own copy of the repository, and the table gives both.

Run from the repository root::

    python bench/bench_scale.py                      # 1,000, 3,000, 10,000 and 100,000 memories
    python bench/bench_scale.py --sizes 1000,10000   # faster
    python bench/bench_scale.py --sizes 10000 --only "recall after learn,wake after learn"
    python bench/bench_scale.py --sizes 10000,100000 --before /tmp/before
    python bench/bench_scale.py --runs 7 --cold-runs 3 --work /tmp/tur-bench
    python bench/bench_scale.py --sizes 1000000 --only "wake warm,hook pre-tool warm"  # opt-in

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
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {  # (size, row) -> seconds, wall median; GitHub issues 5, 14 and 16
    (10_000, "recall warm"): 0.3,
    (10_000, "tur --help"): 0.15,
    (3_000, "hook pre-turn warm"): 0.15,
    (3_000, "hook pre-tool warm"): 0.15,
    (10_000, "wake cold"): 5.0,
    (100_000, "recall warm"): 1.5,
    (10_000, "recall after learn"): 0.3,
    (100_000, "recall after learn"): 1.5,
    (10_000, "wake after learn"): 0.3,
    (100_000, "wake after learn"): 1.0,
    (10_000, "wake after commit"): 0.3,
    (10_000, "status"): 0.5,
    (100_000, "status"): 3.0,
    (10_000, "verify unchanged"): 0.5,
    (100_000, "verify unchanged"): 3.0,
    (10_000, "wake warm"): 0.10,
    (100_000, "wake warm"): 0.4,
    (10_000, "learn"): 0.25,
    (100_000, "learn"): 0.3,
}
PEAK_TARGET_MB = {  # (size, row) -> MB, highest peak RSS; every 100,000 row at most 600
    (100_000, "status"): 300,
    (100_000, "verify unchanged"): 300,
}
PEAK_ALL_MB = {100_000: 600}
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
    from gitmem.record.ids import memory_id

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
    from gitmem.record.ids import shard_of

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


def repository(work: Path, size: int, rebuild: bool, copy: str = "") -> Path:
    """The repository of ``size`` memories under ``work``, built on first use.

    ``copy`` names a second copy of it (``repo-<size>-<copy>``), for other code measured in
    the same run: the same objects and refs, its own read cache. Both are reset to the state
    they were built in (memory ref and ``main``), and their caches deleted.
    """
    path = work / f"repo-{size}"
    marker = path / ".bench-size"
    if rebuild or not marker.exists() or marker.read_text().split()[0] != str(size):
        started = time.perf_counter()
        print(f"building {size:,} memories in {path} ...", file=sys.stderr, flush=True)
        # In a child process, so that this one stays small (see run_once).
        subprocess.run([sys.executable, __file__, "--build-into", str(path), str(size)],
                       check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        _git(path, "update-ref", "refs/tur/memories-bench-base", "refs/tur/memories")
        _git(path, "update-ref", "refs/bench-main-base", "refs/heads/main")
        print(f"  built in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    if copy:
        source, path = path, work / f"repo-{size}-{copy}"
        if rebuild or not (path / ".bench-size").exists() \
                or (path / ".bench-size").read_text() != marker.read_text():
            shutil.rmtree(path, ignore_errors=True)
            shutil.copytree(source, path, symlinks=True,  # not the read cache, .git/tur
                            ignore=lambda d, names: ["tur"] if Path(d).name == ".git" else [])
    # Undo what earlier benchmark runs wrote (learned and refuted records, empty commits).
    for ref, base in (("refs/tur/memories", "refs/tur/memories-bench-base"),
                      ("refs/heads/main", "refs/bench-main-base")):
        if _git(path, "for-each-ref", "--format=%(refname)", base).strip():
            _git(path, "update-ref", ref, base)
        else:
            _git(path, "update-ref", base, ref)
    shutil.rmtree(path / ".git" / "tur", ignore_errors=True)
    return path


# -- measuring ----------------------------------------------------------------------------------

@dataclass
class Sample:
    """One process: wall seconds, CPU seconds (user + system), peak RSS in MB."""

    wall: float
    cpu: float
    peak_mb: float


def run_once(argv: list[str], stdin: Path | None = None, root: Path = ROOT) -> Sample:
    """Run one process to completion; measure it with ``os.wait4`` (its own rusage only).

    ``root`` is the checkout whose ``gitmem`` runs (on ``PYTHONPATH``). ``posix_spawn``
    rather than fork, and the harness keeps no large data: Linux carries a process's peak
    RSS across ``exec``, so a child's peak is at least its parent's at spawn time (about
    20 MB here, the floor of the small rows).

    Raises:
        SystemExit: the command failed.
    """
    # PYTHONSAFEPATH: `python -m` would put the current directory (a checkout) first on sys.path.
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONSAFEPATH="1",
               PYTHONDONTWRITEBYTECODE="1")  # see compile_sources
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
    """Medians of one command at one size, for this code (and for ``--before``'s, if given)."""

    name: str
    size: int
    wall: float
    cpu: float
    peak_mb: float
    runs: int
    before: Row | None = None


@dataclass
class Spec:
    """One row: the command of run ``i``, and what to do untimed before it (or once, first)."""

    name: str
    runs: int
    argv: Callable[[int], list[str]]
    before: Callable[[int], None] | None = None
    stdin: Callable[[int], Path] | None = None
    prime: Callable[[], None] | None = None


@dataclass
class Code:
    """One checkout measured, on its own copy of the repository."""

    label: str
    root: Path
    repo: Path

    @property
    def tur(self) -> list[str]:
        return [sys.executable, "-m", "gitmem", "-C", str(self.repo)]

    def run(self, argv: list[str], stdin: Path | None = None) -> Sample:
        return run_once(argv, stdin, self.root)


def measure(size: int, specs: dict[str, list[Spec]], codes: list[Code]) -> Row:
    """Run every code's spec alternately (``before`` untimed first); medians and max peak."""
    first = specs[codes[0].label][0]
    samples: dict[str, list[Sample]] = {code.label: [] for code in codes}
    for code in codes:
        spec = specs[code.label][0]
        if spec.prime is not None:
            spec.prime()
    for i in range(first.runs):
        for code in codes:
            spec = specs[code.label][0]
            if spec.before is not None:
                spec.before(i)
            samples[code.label].append(code.run(spec.argv(i), spec.stdin(i) if spec.stdin else None))
    rows = {label: Row(first.name, size, statistics.median(s.wall for s in got),
                       statistics.median(s.cpu for s in got), max(s.peak_mb for s in got), first.runs)
            for label, got in samples.items()}
    row = rows[codes[-1].label]
    if len(codes) > 1:
        row.before = rows[codes[0].label]
    shown = "".join(f"  {label}: {r.wall:7.3f} s  cpu {r.cpu:7.3f} s  {r.peak_mb:6.0f} MB"
                    for label, r in rows.items())
    print(f"  {first.name:<22}{shown}", file=sys.stderr, flush=True)
    return row


def legacy_files(directory: Path, i: int, count: int = 10) -> None:
    """``count`` legacy records, new ones for every ``i`` (so that each import writes them)."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    for k in range(count):
        (directory / f"legacy-{k}.yaml").write_text(
            f'id: "concept-{k}"\ntype: preference\n'
            f"content: Bench legacy preference {k} of import {i} {time.time_ns()}\n")


def specs_for(code: Code, size: int, runs: int, cold_runs: int) -> list[Spec]:
    """Every row of the table for one checkout, in the order they run (later rows use earlier state)."""
    repo, tur, py = code.repo, code.tur, sys.executable
    cache_dir = repo / ".git" / "tur" / "cache"
    # Victims for refute / verify ID from a few shards only: listing every id would grow this
    # process, and a child's peak RSS includes its parent's (see run_once).
    ids = []
    for shard in ("0a", "5c", "b7", "f3"):
        listing = _git(repo, "ls-tree", "--name-only", f"refs/tur/memories:memories/{shard}")
        ids += sorted(Path(line).stem for line in listing.split())
    victims = random.Random(size).sample(ids, 2 * runs)
    legacy = repo / ".git" / "bench-legacy"

    def clear(_: int = 0) -> None:
        shutil.rmtree(cache_dir, ignore_errors=True)

    def to_base(_: int = 0) -> None:
        clear()
        _git(repo, "update-ref", "refs/tur/memories", "refs/tur/memories-bench-base")
        # As if gitmem had written the base: else the lost-tip guard merges the tip back in.
        (repo / ".git" / "tur" / "tip").unlink(missing_ok=True)

    def note(i: int) -> str:
        return f"Bench note {time.time_ns()} about the queue retry policy {i}"

    def learn(i: int) -> None:
        code.run([*tur, "learn", f"Learned before a read: {note(i)}"])

    def commit(i: int) -> None:
        _git(repo, "-c", "user.name=Bench", "-c", "user.email=bench@example.com",
             "commit", "-q", "--allow-empty", "-m", f"bench commit {time.time_ns()} {i}")

    def prime(*commands: list[str]) -> Callable[[], None]:
        def run() -> None:
            for command in commands:
                code.run(command)
        return run

    return [
        Spec("python -c pass", runs, lambda i: [py, "-c", "pass"]),
        Spec("import gitmem", runs, lambda i: [py, "-c", "import gitmem"]),
        Spec("import gitmem.api", runs, lambda i: [py, "-c", "import gitmem.api"]),
        Spec("import secret scanner", runs, lambda i: [
            py, "-c", "from gitmem.sharing import secret_scan; secret_scan.find_secrets('x = 1')"]),
        Spec("tur --help", runs, lambda i: [*tur, "--help"]),
        Spec("wake cold", cold_runs, lambda i: [*tur, "wake"], before=clear),
        # As right after a clone or an import: nothing of this clone's own state (.git/tur).
        Spec("first read", cold_runs, lambda i: [*tur, "wake"],
             before=lambda i: shutil.rmtree(repo / ".git" / "tur", ignore_errors=True)),
        Spec("wake warm", runs, lambda i: [*tur, "wake"], prime=prime([*tur, "wake"])),
        Spec("recall cold", cold_runs, lambda i: [*tur, "recall", QUERY], before=clear),
        Spec("recall warm", runs, lambda i: [*tur, "recall", QUERY],
             prime=prime([*tur, "wake"], [*tur, "recall", QUERY])),
        Spec("list", runs, lambda i: [*tur, "list"], prime=prime([*tur, "list"])),
        # A write compares the new memory with the latest cached table: keep one cached.
        Spec("learn", runs, lambda i: [*tur, "learn", note(i)], prime=prime([*tur, "wake"])),
        Spec("learn --allow-secret", runs, lambda i: [*tur, "learn", "--allow-secret", note(i)]),
        Spec("refute", runs, lambda i: [*tur, "refute", victims[i], "--reason", "bench"]),
        Spec("verify ID", runs, lambda i: [*tur, "verify", victims[runs + i]]),
        Spec("import", runs, lambda i: [*tur, "import", str(legacy)],
             before=lambda i: legacy_files(legacy, i)),
        Spec("recall after learn", runs, lambda i: [*tur, "recall", QUERY], before=learn,
             prime=prime([*tur, "wake"], [*tur, "recall", QUERY])),
        Spec("wake after learn", runs, lambda i: [*tur, "wake"], before=learn,
             prime=prime([*tur, "wake"])),
        Spec("wake after commit", runs, lambda i: [*tur, "wake"], before=commit,
             prime=prime([*tur, "wake"])),
        Spec("status", runs, lambda i: [*tur, "status"], prime=prime([*tur, "verify"])),
        Spec("verify unchanged", runs, lambda i: [*tur, "verify"], prime=prime([*tur, "verify"])),
        # The watcher's case: a code commit touching no anchored file, then a whole verify.
        Spec("verify after commit", runs, lambda i: [*tur, "verify"], before=commit,
             prime=prime([*tur, "verify"])),
        Spec("status cold", cold_runs, lambda i: [*tur, "status"], before=clear),
        Spec("verify cold", cold_runs, lambda i: [*tur, "verify"], before=to_base),
        *hook_specs(code, runs),
    ]


def hook_specs(code: Code, runs: int) -> list[Spec]:
    """``tur hook pre-turn`` and ``pre-tool``, warm, whole process, a new session each run."""
    repo, tur = code.repo, code.tur
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

    def prime() -> None:  # prime the cache and the counts
        code.run([*tur, "hook", "pre-turn"], payload("turn", -1))
        code.run([*tur, "hook", "pre-tool"], payload("tool", -1))

    return [
        Spec("hook pre-turn warm", runs, lambda i: [*tur, "hook", "pre-turn"],
             stdin=lambda i: payload("turn", i), prime=prime),
        Spec("hook pre-tool warm", runs, lambda i: [*tur, "hook", "pre-tool"],
             stdin=lambda i: payload("tool", i)),
    ]


def storage(code: Code, size: int) -> str:
    """One line: the read cache's size on disk against the packed objects of the repository.

    What a first read costs on disk (after the rows, the cache holds the tables, plans and
    indexes of the states measured); ``size-pack`` of ``git count-objects -v`` counts the
    memory ref's objects and the small code history, packed as ``git fast-import`` left them.
    """
    cache = code.repo / ".git" / "tur" / "cache"
    cached = sum(p.stat().st_size for p in cache.iterdir() if p.is_file()) if cache.is_dir() else 0
    counts = dict(line.split(": ", 1) for line in _git(code.repo, "count-objects", "-v").splitlines())
    pack = int(counts.get("size-pack", "0")) * 1024
    return (f"{size:,} memories, {code.label}: read cache {cached / 1e6:.0f} MB on disk; packed objects "
            f"{pack / 1e6:.0f} MB (git count-objects -v, size-pack)")


def bench_size(size: int, work: Path, runs: int, cold_runs: int, rebuild: bool,
               before: Path | None = None, only: set[str] | None = None) -> list[Row]:
    """Every row of the table for one repository size (``only``: just these rows)."""
    codes = [Code("after", ROOT, repository(work, size, rebuild))]
    if before is not None:
        codes.insert(0, Code("before", before, repository(work, size, rebuild, copy="before")))
    print(f"{size:,} memories", file=sys.stderr, flush=True)
    specs = {code.label: specs_for(code, size, runs, cold_runs) for code in codes}
    rows = []
    for k, spec in enumerate(specs[codes[-1].label]):
        if only is None or spec.name in only:
            rows.append(measure(size, {label: [got[k]] for label, got in specs.items()}, codes))
    for code in codes:
        STORAGE.append(storage(code, size))
    return rows


STORAGE: list[str] = []
"""The :func:`storage` line of every repository measured, printed after the table."""


def _verdict(row: Row) -> str:
    target = TARGETS.get((row.size, row.name))
    marks = []
    if target is not None:
        marks.append(f"{'ok' if row.wall <= target else 'MISSED'} (<= {target:g} s)")
    peak = PEAK_TARGET_MB.get((row.size, row.name), PEAK_ALL_MB.get(row.size))
    if peak is not None and (row.peak_mb > peak or (row.size, row.name) in PEAK_TARGET_MB):
        marks.append(f"peak {'ok' if row.peak_mb <= peak else 'MISSED'} (<= {peak} MB)")
    return ", ".join(marks)


def rerun(row: Row) -> str:
    """The command that measures ``row`` alone."""
    return f'python bench/bench_scale.py --sizes {row.size} --only "{row.name}"'


def table(rows: list[Row]) -> str:
    """The result as a Markdown table: one line per (command, size), with the command to rerun it."""
    if any(row.before is not None for row in rows):
        lines = ["| memories | command | wall before (s) | wall after (s) | CPU before (s) | "
                 "CPU after (s) | peak before (MB) | peak after (MB) | runs | target (after) | rerun |",
                 "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
        for row in rows:
            b = row.before or row
            lines.append(f"| {row.size:,} | `{row.name}` | {b.wall:.3f} | {row.wall:.3f} | "
                         f"{b.cpu:.3f} | {row.cpu:.3f} | {b.peak_mb:.0f} | {row.peak_mb:.0f} | "
                         f"{row.runs} | {_verdict(row)} | `{rerun(row)} --before DIR` |")
        return "\n".join(lines)
    lines = ["| memories | command | wall median (s) | CPU median (s) | peak RSS (MB) | runs | target "
             "| rerun |", "|---:|---|---:|---:|---:|---:|---|---|"]
    for row in rows:
        lines.append(f"| {row.size:,} | `{row.name}` | {row.wall:.3f} | {row.cpu:.3f} | "
                     f"{row.peak_mb:.0f} | {row.runs} | {_verdict(row)} | `{rerun(row)}` |")
    return "\n".join(lines)


def compile_sources(root: Path) -> None:
    """Byte-compile gitmem and tui of ``root`` once, as ``pip install`` does for an installed package.

    The children run with PYTHONDONTWRITEBYTECODE=1 so that no run writes bytecode the
    next one profits from; without this step every run would compile ~30 modules
    (about 80 ms) that a real installation never compiles again.
    """
    import compileall

    for package in ("gitmem", "tui"):
        compileall.compile_dir(root / package, quiet=1)


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
    parser.add_argument("--before", type=Path, metavar="DIR",
                        help="a checkout of the code to compare with, measured in the same run")
    parser.add_argument("--only", metavar="ROWS",
                        help="comma-separated row names to measure (default: every row)")
    parser.add_argument("--build-into", nargs=2, metavar=("PATH", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if args.build_into:
        build_repository(Path(args.build_into[0]), int(args.build_into[1]))
        return 0
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    compile_sources(ROOT)
    if args.before is not None:
        compile_sources(args.before.resolve())
    only = {name.strip() for name in args.only.split(",")} if args.only else None
    rows: list[Row] = []
    for size in sizes:
        rows += bench_size(size, args.work, args.runs, args.cold_runs, args.rebuild,
                           args.before.resolve() if args.before else None, only)
    print(f"\ngitmem scale benchmark, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
          f"load average {os.getloadavg()[0]:.2f}\n")
    print(table(rows))
    print("\n" + "\n".join(STORAGE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
