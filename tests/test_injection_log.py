"""The injection log (docs/log.md): every hook, MCP read, wake and recall on record, per session.

Real repositories and real processes: hooks run as their own processes with a session id,
`tur log --follow` as a subprocess stopped by SIGINT, concurrent hooks writing at once.
"""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

from gitmem.api import Gitmem, Injection, Via
from tests.conftest import commit_file, learn, tur
from tests.test_cli import assert_one_line_error

ROOT = Path(__file__).resolve().parent.parent
WAIT_S = 60.0
"""How long a test waits for a state before it fails (never a pause: it waits for the state)."""


def log_dir(repo: Path) -> Path:
    return repo / ".git" / "tur" / "log"


def hook(repo: Path, name: str, payload: dict, *args: str) -> subprocess.CompletedProcess:
    """``tur hook NAME`` as its own process, the payload on stdin."""
    done = subprocess.run([sys.executable, "-m", "gitmem", "-C", str(repo), "hook", name, *args],
                          input=json.dumps(payload), capture_output=True, text=True, cwd=ROOT,
                          timeout=WAIT_S)
    assert done.returncode == 0, done.stderr
    return done


def records(repo: Path, *args: str) -> list[dict]:
    out = tur(repo, "log", "--format", "json", *args)
    assert out.code == 0, out.err
    return [json.loads(line) for line in out.out.splitlines()]


OTHER_TOPICS = ("Logs rotate every night at midnight", "The cache lives in redis",
                "Tests run with pytest", "The API is versioned under /v2", "Metrics go to prometheus")
"""Memories on other topics: with a handful of memories only, every word is in most of them
and no prompt passes recall's relevance floor."""


def session_repo(repo: Path) -> dict[str, str]:
    commit_file(repo, "src/server.py", "PORT = 8080\n\ndef serve():\n    return PORT\n")
    ids = {
        "port": learn(repo, "The service listens on port 8080", "--file", "src/server.py#L1-L1"),
        "deploy": learn(repo, "Deploys go through the staging cluster first"),
        "db": learn(repo, "The database migrations live in db/migrate"),
    }
    ids.update((f"other{n}", learn(repo, text)) for n, text in enumerate(OTHER_TOPICS))
    return ids


def test_a_session_of_hook_calls_is_listed_by_tur_log_session_with_each_injection_and_its_ids(repo):
    ids = session_repo(repo)
    hook(repo, "session-start", {"session_id": "s-A", "hook_event_name": "SessionStart",
                                 "source": "startup"}, "--harness", "claude")
    learn(repo, "Staging deploys need the release tag")  # after the start: new to the session
    hook(repo, "pre-turn", {"session_id": "s-A", "hook_event_name": "UserPromptSubmit",
                            "prompt": "how do staging deploys work"}, "--harness", "claude")
    hook(repo, "pre-tool", {"session_id": "s-A", "hook_event_name": "PreToolUse", "tool_name": "Read",
                            "tool_input": {"file_path": str(repo / "src/server.py")}})
    hook(repo, "session-start", {"session_id": "s-B", "hook_event_name": "SessionStart"})

    start, turn, tool = records(repo, "--session", "s-A")
    assert [r["surface"] for r in (start, turn, tool)] == ["hook:session-start", "hook:pre-turn",
                                                            "hook:pre-tool"]
    assert {r["session"] for r in (start, turn, tool)} == {"s-A"}
    assert start["harness"] == turn["harness"] == "claude"
    # The wake: every memory with its tokens and tier, its total within the budget.
    assert {i["id"] for i in start["included"]} == set(ids.values())
    assert all(i["tokens"] > 0 and i["tier"] == 2 for i in start["included"])
    assert start["tokens"] <= start["budget"]
    # The prompt's recall: the new memory goes in; the deploy memory, sent at the start, is a
    # duplicate of this session, named as left out.
    assert [i["rank"] for i in turn["included"]] == list(range(1, len(turn["included"]) + 1))
    assert "Staging deploys" not in json.dumps(turn)  # ids, not texts
    assert {"id": ids["deploy"], "reason": "duplicate"} in turn["left_out"]
    assert turn["counts"]["duplicate"] >= 1 and turn["query"] == "how do staging deploys work"
    assert turn["floor"] == 0.2 and "floor" not in tool
    # The tool call: the file's memory was sent at the start too.
    assert tool["included"] == [] and {"id": ids["port"], "reason": "duplicate"} in tool["left_out"]
    assert tool["query"] == "src/server.py"

    text = tur(repo, "log", "--session", "s-A").out
    assert text.count("session s-A") == 3 and "s-B" not in text
    for memory_id in ids.values():
        assert f"+ {memory_id}" in text
    assert f"- {ids['deploy']}" in text and "duplicate" in text
    assert len(records(repo)) == 3 + 1  # the other session's start, in the whole log


def test_wake_and_recall_on_the_command_line_and_over_mcp_are_logged_with_their_surface(repo):
    from gitmem.mcp.tools import GitmemTools

    ids = session_repo(repo)
    tur(repo, "wake")
    tur(repo, "recall", "which port does the service listen on")
    tools = GitmemTools(Gitmem.open(repo))
    tools.wake(None, None)
    tools.recall("staging deploys", None, False, None)
    tools.wake_text()
    tools.recall_text("migrations")
    logged = records(repo)
    assert logged[0]["kind"] == "wake" and logged[1]["kind"] == "recall"
    assert [r["surface"] for r in logged] == ["cli:wake", "cli:recall", "mcp:wake", "mcp:recall",
                                              "mcp:resource", "mcp:resource"]
    assert logged[1]["included"][0] == {"id": ids["port"], "rank": 1}
    assert logged[3]["included"][0]["id"] == ids["deploy"]
    assert logged[5]["included"][0]["id"] == ids["db"]
    # A preview is no injection: the facade logs only what names a surface.
    Gitmem.open(repo).wake()
    assert len(records(repo)) == len(logged)


def test_a_wake_over_budget_names_the_best_memories_it_left_out_and_counts_them(repo):
    for n in range(12):
        learn(repo, f"Fact number {n} about the retry queue and its many backoff settings")
    gm = Gitmem.open(repo)
    result, _ = gm.wake(token_budget=120, via=Via("test:wake", "codex", "s-9"))
    (record,) = gm.injections.read("s-9")
    assert [i.id for i in record.included] == list(result.shown)
    named = [x.id for x in record.left_out]
    assert named and all(x.reason == "over_budget" for x in record.left_out)
    assert record.counts["over_budget"] == result.omitted == 12 - len(result.shown)
    assert not set(named) & set(result.shown)
    # The full assembly record agrees: each one named is over budget there too.
    reasons = {e.memory_id: e.reason for e in result.assembly}
    assert {reasons[x] for x in named} == {"over_budget"}
    assert record.via == Via("test:wake", "codex", "s-9") and record.tokens == result.tokens


def test_a_stale_memory_is_counted_as_left_out_of_the_wake(repo):
    ids = session_repo(repo)
    commit_file(repo, "src/server.py", "PORT = 9090\n\ndef serve():\n    return PORT\n")
    tur(repo, "verify")
    tur(repo, "wake")
    (record,) = records(repo)
    assert record["counts"].get("stale") == 1
    assert ids["port"] not in {i["id"] for i in record["included"]}


def test_a_record_survives_its_json_line_unchanged(repo):
    learn(repo, "The queue retries three times")
    gm = Gitmem.open(repo)
    gm.recall("queue retries", via=Via("cli:recall"))
    gm.wake(via=Via("cli:wake", "gemini", "s-1"))
    for record in gm.injections.read():
        assert Injection.from_json(json.loads(json.dumps(record.to_json()))) == record


def test_since_keeps_the_later_records_and_a_bad_since_is_one_line_and_exit_2(repo):
    learn(repo, "The queue retries three times")
    tur(repo, "wake")
    later = datetime.now(UTC) + timedelta(days=1)
    assert len(records(repo, "--since", "1h")) == 1
    assert len(records(repo, "--since", "2000-01-01")) == 1
    assert records(repo, "--since", later.isoformat()) == []
    before = sorted(p.name for p in log_dir(repo).iterdir())
    bad = tur(repo, "log", "--since", "last tuesday")
    assert_one_line_error(bad, "tur: error: --since 'last tuesday'")
    assert bad.code == 2
    assert sorted(p.name for p in log_dir(repo).iterdir()) == before


def test_the_log_is_rotated_by_size_and_stays_bounded(repo):
    (repo / ".tur").mkdir()
    (repo / ".tur" / "config.yaml").write_text("log:\n  max_bytes: 2048\n  files: 3\n")
    learn(repo, "The queue retries three times")
    gm = Gitmem.open(repo)
    for n in range(60):
        gm.wake(via=Via("test:rotate", session=f"s-{n}"))
    files = sorted(p.name for p in log_dir(repo).glob("injections.jsonl*"))
    assert files == ["injections.jsonl", "injections.jsonl.1", "injections.jsonl.2"]
    line = len(json.dumps(gm.injections.read()[-1].to_json(), separators=(",", ":"))) + 1
    for name in files:
        assert (log_dir(repo) / name).stat().st_size <= 2048
    kept = gm.injections.read()
    assert kept[-1].via.session == "s-59" and len(kept) <= 3 * (2048 // line)
    sessions = [r.via.session for r in kept]
    assert sessions == [f"s-{n}" for n in range(60 - len(kept), 60)]  # the newest, in order


def test_concurrent_hooks_append_whole_lines(repo):
    session_repo(repo)
    (repo / ".tur").mkdir()
    (repo / ".tur" / "config.yaml").write_text("log:\n  max_bytes: 4096\n  files: 4\n")
    procs = [subprocess.Popen([sys.executable, "-m", "gitmem", "-C", str(repo), "hook", "pre-turn"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=ROOT)
             for _ in range(8)]
    for n, proc in enumerate(procs):
        proc.stdin.write(json.dumps({"session_id": f"c-{n}", "prompt": "which port does it listen on"}))
        proc.stdin.close()
    for proc in procs:
        assert proc.wait(timeout=WAIT_S) == 0
    lines = [line for p in log_dir(repo).glob("injections.jsonl*") for line in p.read_text().splitlines()]
    assert sorted(json.loads(line)["session"] for line in lines) == [f"c-{n}" for n in range(8)]


def test_a_log_that_cannot_be_written_never_breaks_the_hook(repo):
    ids = session_repo(repo)
    log_dir(repo).parent.mkdir(parents=True, exist_ok=True)
    log_dir(repo).write_text("not a directory")
    done = hook(repo, "session-start", {"session_id": "s-1"})
    assert all(memory_id in done.stdout for memory_id in ids.values())
    warnings = [line for line in done.stderr.splitlines() if "injection log" in line]
    assert len(warnings) == 1, done.stderr


class _Follow:
    """``tur log --follow --format json`` as a subprocess, its lines read as they come."""

    def __init__(self, repo: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gitmem", "-C", str(repo), "log", "--follow", "--format", "json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in iter(self.proc.stdout.readline, ""):
            self.lines.put(line)

    def next(self) -> dict:
        try:
            return json.loads(self.lines.get(timeout=WAIT_S))
        except queue.Empty:
            raise AssertionError(f"no record from tur log --follow; stderr: {self._stderr()}") from None

    def _stderr(self) -> str:
        return self.proc.stderr.read() if self.proc.poll() is not None else "(still running)"

    def stop(self) -> tuple[int, str]:
        self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(timeout=WAIT_S)
        return code, self.proc.stderr.read()


def test_follow_prints_the_log_then_each_new_record_and_stops_cleanly_on_sigint(repo):
    learn(repo, "The queue retries three times")
    tur(repo, "wake")
    follow = _Follow(repo)
    try:
        assert follow.next()["surface"] == "cli:wake"  # what was there: it is running now
        tur(repo, "recall", "queue retries")
        new = follow.next()
        assert new["surface"] == "cli:recall" and new["query"] == "queue retries"
    finally:
        code, err = follow.stop()
    assert code == 0 and "Traceback" not in err, err


def test_follow_goes_on_across_a_rotation(repo):
    (repo / ".tur").mkdir()
    (repo / ".tur" / "config.yaml").write_text("log:\n  max_bytes: 1024\n  files: 2\n")
    learn(repo, "The queue retries three times")
    gm = Gitmem.open(repo)
    gm.wake(via=Via("test:first"))
    follow = _Follow(repo)
    try:
        assert follow.next()["surface"] == "test:first"
        for n in range(12):  # several rotations of a 1 KiB file, each record seen as it comes
            gm.wake(via=Via("test:more", session=f"r-{n}"))
            assert follow.next()["session"] == f"r-{n}"
        # Rotated at least twice while followed: the first records have left the log.
        assert "r-0" not in {r.via.session for r in gm.injections.read()}
        # Two records between two looks: both are read, in order (the first from the old file,
        # the second from the new one, when a rotation falls between them).
        gm.wake(via=Via("test:more", session="r-12"))
        gm.wake(via=Via("test:more", session="r-13"))
        assert [follow.next()["session"] for _ in range(2)] == ["r-12", "r-13"]
    finally:
        code, err = follow.stop()
    assert code == 0, err


def test_a_log_line_is_what_json_dumps_gives_and_reads_back_the_same():
    import math

    import pytest

    from gitmem.store.jsonlog import json_line

    values = [{"at": "2026-12-02T06:23:23Z", "n": [0, -7, 2**70, 0.2, 1e-9, 12.5], "none": None,
               "flags": [True, False], "text": 'quote " backslash \\ tab \t nl \n é ✓ \u2028 \x00 \udcff',
               "nested": {"empty": {}, "list": [], "tuple": (1, "x")}}, "", [], 3]
    for value in values:
        line = json_line(value)
        assert line == json.dumps(value, separators=(",", ":")) and line.isascii() and "\n" not in line
        assert json.loads(line) == json.loads(json.dumps(value))
    for bad, error in (({1: "x"}, TypeError), ({"s": {1, 2}}, TypeError), ([math.nan], ValueError)):
        with pytest.raises(error):
            json_line(bad)


def test_a_server_of_its_own_logs_the_facade_and_the_mcp_tools_under_its_surface(repo):
    from gitmem.api import current_via, injecting
    from gitmem.mcp.tools import GitmemTools

    ids = session_repo(repo)
    gm = Gitmem.open(repo)
    tools = GitmemTools(gm)
    with injecting(Via("http:retrieval", session="client-7")):
        gm.recall("which port does the service listen on", top_k=2)
        with injecting(Via("http:wake")):
            tools.wake(None, None)
        assert current_via() == Via("http:retrieval", session="client-7")
    assert current_via() is None
    tools.wake(None, None)
    gm.wake()  # outside any block and given no via: a preview, not logged
    logged = records(repo)
    assert [(r["surface"], r["session"]) for r in logged] == [
        ("http:retrieval", "client-7"), ("http:wake", ""), ("mcp:wake", "")]
    assert logged[0]["included"][0] == {"id": ids["port"], "rank": 1}


def test_an_unbounded_wake_of_a_large_store_names_at_most_listed_max_memories(repo):
    from gitmem.context.injection import LISTED_MAX
    from tests.conftest import add_filler_memories

    add_filler_memories(repo, LISTED_MAX + 100)
    gm = Gitmem.open(repo)
    observed = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)  # the fillers' time: none has decayed
    result, _ = gm.wake(token_budget=0, now=observed, via=Via("cli:wake"))
    (record,) = gm.injections.read()
    assert len(result.shown) > LISTED_MAX
    assert [i.id for i in record.included] == list(result.shown[:LISTED_MAX])
    assert record.unlisted == len(result.shown) - LISTED_MAX
    assert (log_dir(repo) / "injections.jsonl").stat().st_size < 64 * 1024
    assert f"… and {record.unlisted} more included" in tur(repo, "log").out


def test_the_log_marks_personal_memories_and_whom_a_bound_memory_is_for(repo):
    mine = learn(repo, "I prefer pytest fixtures over unittest setUp", "--personal", "--type", "preference")
    for_claude = learn(repo, "The staging database is read-only for claude", "--for", "claude")
    for_codex = learn(repo, "Codex runs make lint before it commits", "--for", "codex")
    everyone = learn(repo, "The queue retries three times")
    # Twice: the first wake builds the plan, the second is served from it (its bindings too).
    tur(repo, "wake")
    tur(repo, "wake")
    tur(repo, "wake", "--for", "claude")
    tur(repo, "recall", "staging database read-only")
    logged = records(repo)
    for plain in logged[:2]:
        marks = {i["id"]: (i.get("store"), i.get("visibility")) for i in plain["included"]}
        assert marks[mine] == ("personal", None)
        assert marks[for_claude] == (None, ["claude"]) and marks[for_codex] == (None, ["codex"])
        assert marks[everyone] == (None, None)
    claude = logged[2]
    assert claude["agent"] == "claude"
    assert {i["id"]: i.get("visibility") for i in claude["included"]}[for_claude] == ["claude"]
    assert {"id": for_codex, "reason": "visibility", "visibility": ["codex"]} in claude["left_out"]
    assert logged[3]["included"][0] == {"id": for_claude, "rank": 1, "visibility": ["claude"]}

    text = tur(repo, "log").out
    lines = text.splitlines()
    assert any(line.startswith(f"  + [personal] {mine}") for line in lines)
    assert any(line.startswith(f"  + {for_claude}") and line.endswith("for claude") for line in lines)
    assert any(line.startswith(f"  - {for_codex}") and line.endswith("visibility, for codex")
               for line in lines)
    assert "agent claude  wake" in text
    for record in Gitmem.open(repo).injections.read():
        assert Injection.from_json(json.loads(json.dumps(record.to_json()))) == record
