"""The harness hooks and what they inject, on real repositories: context that fits, sent once
per session, memories by file, and what an agent needs to check a memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from gitmem.api import Gitmem
from gitmem.harness.hooks import SESSION_TTL_SECONDS, SessionLog, parse_payload, patch_files
from tests.conftest import commit_file, git
from tests.test_cli import assert_one_line_error, tur


def prompt(text: str, session: str = "s-1", **more) -> str:
    return json.dumps({"session_id": session, "hook_event_name": "UserPromptSubmit",
                       "prompt": text, **more})


def claude_read(path: Path | str, session: str = "s-1", tool: str = "Read") -> str:
    return json.dumps({"session_id": session, "hook_event_name": "PreToolUse", "tool_name": tool,
                       "tool_input": {"file_path": str(path)}, "cwd": "/"})


def context_of(out: str) -> str:
    """The additionalContext of a hook's JSON answer ("" for ``{}``)."""
    body = json.loads(out)
    return body.get("hookSpecificOutput", {}).get("additionalContext", "")


# -- sent once per session ----------------------------------------------------------------------

def test_pre_turn_does_not_resend_a_memory_within_a_session_unless_it_changed(repo):
    mid = tur(repo, "learn", "The sqlite queue retries failed jobs three times").out.strip()
    first = tur(repo, "hook", "pre-turn", stdin=prompt("how does the sqlite queue retry?"))
    assert mid in first.out
    again = tur(repo, "hook", "pre-turn", stdin=prompt("and the sqlite queue retries?"))
    assert again.code == 0 and again.out == ""
    other = tur(repo, "hook", "pre-turn", stdin=prompt("sqlite queue retry", session="s-2"))
    assert mid in other.out  # another session is told
    tur(repo, "confidence", mid, "0.7")  # the memory changed: it is sent again
    changed = tur(repo, "hook", "pre-turn", stdin=prompt("sqlite queue retry"))
    assert mid in changed.out and "Conf: 0.7" in changed.out
    logs = list((repo / ".git" / "tur" / "sessions").iterdir())
    assert len(logs) == 2  # one small file per session, in the clone's .git/tur/


def test_a_payload_without_session_id_is_answered_every_time(repo):
    mid = tur(repo, "learn", "The parser handles quoting").out.strip()
    for _ in range(2):
        assert mid in tur(repo, "hook", "pre-turn", stdin=json.dumps({"prompt": "parser quoting"})).out


def test_a_compacted_session_is_sent_its_memories_again(repo):
    mid = tur(repo, "learn", "The cache lives under .git/tur/cache").out.strip()
    assert mid in tur(repo, "hook", "pre-turn", stdin=prompt("where is the cache?")).out
    assert tur(repo, "hook", "pre-turn", stdin=prompt("where is the cache?")).out == ""
    start = json.dumps({"session_id": "s-1", "source": "compact"})
    # A wake too small for any memory: nothing in it is remembered as sent.
    assert tur(repo, "hook", "session-start", "--max-chars", "1", stdin=start).code == 0
    assert mid in tur(repo, "hook", "pre-turn", stdin=prompt("where is the cache?")).out


def test_what_the_session_start_wake_showed_is_not_sent_again_by_pre_turn(repo):
    mid = tur(repo, "learn", "Deploys go through the staging branch first").out.strip()
    start = tur(repo, "hook", "session-start", stdin=json.dumps({"session_id": "s-9",
                                                                 "source": "startup"}))
    assert mid in start.out
    assert tur(repo, "hook", "pre-turn", stdin=prompt("how do deploys work", "s-9")).out == ""


def test_session_logs_are_deleted_after_a_day(tmp_path):
    root = tmp_path / "sessions"
    log = SessionLog(root)
    log.add("old", {"fact-00000001": "a" * 40})
    old = next(root.iterdir())
    stale = time.time() - SESSION_TTL_SECONDS - 60
    os.utime(old, (stale, stale))
    assert log.sent("old") == {}  # a day-old log counts as none
    log.add("new", {"fact-00000002": "b" * 40})  # any write prunes
    assert [p.name for p in root.iterdir()] != [old.name] and not old.exists()
    assert log.sent("new") == {"fact-00000002": "b" * 40}


# -- memories by file ---------------------------------------------------------------------------

def test_pre_tool_shows_the_memories_of_the_file_claude_is_about_to_read(repo):
    on_app = tur(repo, "learn", "app.py lines 3-5 parse the flags", "--file", "src/app.py#L3-L5",
                 "--agent", "claude").out.strip()
    commit_file(repo, "src/other.py", "x = 1\n", "other")
    elsewhere = tur(repo, "learn", "other.py holds x", "--file", "src/other.py").out.strip()
    r = tur(repo, "hook", "pre-tool", stdin=claude_read(repo / "src" / "app.py"))
    assert r.code == 0 and r.err == ""
    body = json.loads(r.out)
    assert body["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    text = body["hookSpecificOutput"]["additionalContext"]
    assert on_app in text and elsewhere not in text
    assert "Anchor: src/app.py#L3-L5" in text
    # Deduplicated per session: the next Edit of the same file adds nothing.
    assert tur(repo, "hook", "pre-tool", stdin=claude_read(repo / "src/app.py", tool="Edit")).out == "{}\n"
    text_form = tur(repo, "hook", "pre-tool", "--format", "text",
                    stdin=claude_read(repo / "src/app.py", session="s-2"))
    assert text_form.out.startswith("> [!NOTE]") and on_app in text_form.out


def test_pre_tool_reads_the_files_of_a_codex_apply_patch(repo):
    mid = tur(repo, "learn", "The app entry point parses flags", "--file", "src/app.py").out.strip()
    patch = ("*** Begin Patch\n*** Update File: src/app.py\n@@\n-line 1\n+line one\n"
             "*** Add File: src/new.py\n+print(1)\n*** End Patch\n")
    payload = json.dumps({"session_id": "c-1", "hook_event_name": "PreToolUse",
                          "tool_name": "apply_patch", "tool_input": {"command": patch},
                          "cwd": str(repo)})
    assert mid in context_of(tur(repo, "hook", "pre-tool", stdin=payload).out)
    assert patch_files(patch) == ["src/app.py", "src/new.py"]


def test_pre_tool_ignores_files_outside_the_repository_and_payloads_without_a_file(repo, tmp_path):
    tur(repo, "learn", "app flags", "--file", "src/app.py")
    for stdin in (claude_read(tmp_path / "elsewhere.py"), "", json.dumps([1, 2])):
        r = tur(repo, "hook", "pre-tool", stdin=stdin)
        assert (r.code, r.out) == (0, "{}\n"), stdin


def test_a_payload_that_is_not_json_gives_no_output_and_one_line_on_stderr(repo):
    tur(repo, "learn", "app flags", "--file", "src/app.py")
    for hook in ("session-start", "pre-turn", "pre-tool"):
        r = tur(repo, "hook", hook, stdin='{"prompt": "app flags", oops}')
        assert (r.code, r.out) == (0, ""), hook
        assert len(r.err.splitlines()) == 1 and "stdin is not JSON" in r.err, r.err


def test_a_hook_reads_only_the_first_json_object_of_its_stdin(repo):
    mid = tur(repo, "learn", "The sqlite queue retries failed jobs three times").out.strip()
    r = tur(repo, "hook", "pre-turn", stdin=prompt("sqlite queue retry") + "\n{garbage after it")
    assert r.code == 0 and mid in r.out and r.err == ""


def hook_process(repo: Path, hook: str, *args: str) -> subprocess.Popen:
    """``tur hook HOOK`` as its own process, its stdin a pipe this test keeps open."""
    return subprocess.Popen([sys.executable, "-m", "gitmem", "-C", str(repo), "hook", hook, *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_a_hook_answers_a_complete_payload_while_its_stdin_stays_open(repo):
    mid = tur(repo, "learn", "The sqlite queue retries failed jobs three times").out.strip()
    proc = hook_process(repo, "pre-turn")
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(prompt("how does the sqlite queue retry?").encode())
        proc.stdin.flush()  # and never closed: the harness keeps the pipe
        code = proc.wait(timeout=60)
        out, err = proc.stdout.read().decode(), proc.stderr.read().decode()
    finally:
        proc.stdin.close()
        proc.kill()
    assert code == 0 and mid in out, err


def test_an_incomplete_payload_on_an_open_stdin_times_out_quietly(repo):
    proc = hook_process(repo, "pre-tool")
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    started = time.monotonic()
    try:
        proc.stdin.write(b'{"session_id": "s-1", "tool_input": {"file_path": "src/app.py"')
        proc.stdin.flush()
        code = proc.wait(timeout=60)
        out, err = proc.stdout.read().decode(), proc.stderr.read().decode()
    finally:
        proc.stdin.close()
        proc.kill()
    assert (code, out) == (0, "")
    assert err.splitlines() == ["tur hook pre-tool: no complete JSON payload on stdin after 2 s"]
    assert time.monotonic() - started < 30  # the deadline, not the harness's timeout, ended it


def test_hooks_outside_a_repository_exit_0_with_the_error_on_stderr(tmp_path):
    for hook in ("session-start", "pre-turn", "pre-tool"):
        r = tur(tmp_path, "hook", hook, stdin=claude_read(tmp_path / "x.py"))
        assert r.code == 0 and r.out == "" and "not a git repository" in r.err


def test_memories_follow_a_renamed_file_once_verified(repo):
    mid = tur(repo, "learn", "lines 2-4 set up logging", "--file", "src/app.py#L2-L4").out.strip()
    git(repo, "mv", "src/app.py", "src/main.py")
    git(repo, "commit", "-qm", "rename")
    assert tur(repo, "verify").code == 0
    listed = tur(repo, "list", "--file", "src/main.py")
    assert mid in listed.out and "src/main.py#L2-L4" in listed.out
    assert mid not in tur(repo, "list", "--file", "src/app.py").out
    assert mid in context_of(tur(repo, "hook", "pre-tool", stdin=claude_read(repo / "src/main.py")).out)


def test_list_and_recall_by_file_put_that_files_memories_first(repo):
    commit_file(repo, "src/db.py", "".join(f"db {i}\n" for i in range(10)), "db")
    db_retry = tur(repo, "learn", "db.py retries the connection", "--file", "src/db.py#L1-L3",
                   "--confidence", "0.9").out.strip()
    db_pool = tur(repo, "learn", "db.py keeps a pool of five", "--file", "src/db.py").out.strip()
    app_retry = tur(repo, "learn", "app.py retries the connection too", "--file",
                    "src/app.py#L1-L2").out.strip()
    listed = tur(repo, "list", "--file", "src/db.py").out.splitlines()[1:]
    assert [line.split()[0] for line in listed] == [db_pool, db_retry]  # most confident first
    sub = repo / "src"
    listed_from_sub = tur(sub, "list", "--file", "db.py").out  # relative to the current directory
    assert db_pool in listed_from_sub
    hits = json.loads(tur(repo, "recall", "retries the connection", "--file", "src/db.py",
                          "--format", "json").out)["hits"]
    assert [h["id"] for h in hits] == [db_retry, db_pool, app_retry]
    only_file = json.loads(tur(repo, "recall", "--file", "src/db.py", "--format", "json").out)
    assert [h["id"] for h in only_file["hits"]] == [db_pool, db_retry]
    assert_one_line_error(tur(repo, "list", "--file", "../outside.py"), "outside the repository")


# -- context that fits --------------------------------------------------------------------------

def long_memory(repo, words: int = 900) -> str:
    text = "The retry policy: " + " ".join(f"step{i} waits and retries" for i in range(words // 4))
    return tur(repo, "learn", text, "--file", "src/app.py").out.strip()


def test_a_memory_longer_than_its_share_is_shown_compressed_never_dropped(repo):
    mid = long_memory(repo)
    short = tur(repo, "learn", "Retries are logged at INFO").out.strip()
    doc = json.loads(tur(repo, "wake", "--token-budget", "400", "--format", "json").out)
    assert doc["tokens"] <= 400
    reasons = {e["id"]: e["reason"] for e in doc["assembly"]}
    assert reasons[mid] == "compressed" and reasons[short] is None
    assert f"`tur show {mid}`" in doc["text"] and "step200" not in doc["text"]
    entry = next(e for e in doc["entries"] if e["id"] == mid)
    assert entry["compressed"] is True and entry["anchor"] == "src/app.py"
    recalled = tur(repo, "recall", "retry policy waits", "--max-chars", "700").out
    assert f"`tur show {mid}`" in recalled and len(recalled) <= 700


def test_wake_holds_both_caps_at_every_budget(repo):
    for i in range(12):
        tur(repo, "learn", f"fact {i}: the worker pool drains queue {i} before shutdown")
    long_memory(repo, 200)
    for budget, chars in ((1, 1), (1, 5000), (60, 250), (150, 400), (300, 9500), (4096, 900)):
        doc = json.loads(tur(repo, "wake", "--token-budget", str(budget), "--max-chars", str(chars),
                             "--format", "json").out)
        assert doc["tokens"] <= budget and len(doc["text"]) <= chars, (budget, chars)


def test_the_hook_default_keeps_within_9500_characters(repo):
    for i in range(40):
        tur(repo, "learn", f"queue note {i}: " + "the queue retries jobs with backoff " * 12)
    out = tur(repo, "hook", "pre-turn", "--top-k", "40", "--token-budget", "0",
              stdin=prompt("queue retries jobs backoff")).out
    assert 0 < len(out) <= 9500
    start = tur(repo, "hook", "session-start", "--token-budget", "0", stdin="{}").out
    assert 0 < len(start) <= 9500


# -- what an agent needs to check a memory ------------------------------------------------------

def test_entries_name_anchor_status_reason_and_author_in_markdown_and_json(repo):
    mid = tur(repo, "learn", "lines 5-7 handle quoting", "--file", "src/app.py#L5-L7",
              "--agent", "claude").out.strip()
    commit_file(repo, "src/app.py", "".join(f"changed {i}\n" for i in range(20)), "rewrite")
    tur(repo, "verify")
    md = tur(repo, "recall", "quoting", "--include-stale").out
    assert "Anchor: src/app.py#L5-L7" in md and "(STALE: " in md
    hit = json.loads(tur(repo, "recall", "quoting", "--include-stale", "--format", "json").out)["hits"][0]
    assert hit["id"] == mid
    # The author is who stated it (the git identity); the agent is the record's source_agent.
    assert (hit["anchor"], hit["status"], hit["author"], hit["source_agent"]) == (
        "src/app.py#L5-L7", "stale", "Test User <test@example.com>", "claude")
    assert hit["reason"] and "changed" in hit["reason"]
    fresh = tur(repo, "learn", "the README explains set-up", "--agent", "codex").out.strip()
    entry = next(e for e in json.loads(tur(repo, "wake", "--format", "json").out)["entries"]
                 if e["id"] == fresh)
    assert entry == {"id": fresh, "tier": 2, "anchor": None, "status": "fresh", "reason": None,
                     "author": "Test User <test@example.com>", "compressed": False}


def test_gemini_hooks_answer_in_json_under_the_payloads_event(repo):
    tur(repo, "learn", "The service listens on port 8080")
    payload = json.dumps({"session_id": "g-1", "hook_event_name": "BeforeAgent",
                          "prompt": "which port does the service listen on"})
    body = json.loads(tur(repo, "hook", "pre-turn", "--format", "json", stdin=payload).out)
    assert body["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert "port 8080" in body["hookSpecificOutput"]["additionalContext"]


def test_parse_payload_finds_the_file_of_each_harness():
    assert parse_payload(json.dumps({"tool_input": {"file_path": "/r/a.py"}})).files == ("/r/a.py",)
    assert parse_payload(json.dumps({"tool_input": {"absolute_path": "/r/b.py"}})).files == ("/r/b.py",)
    assert parse_payload(json.dumps({"tool_input": {"notebook_path": "n.ipynb"}})).files == ("n.ipynb",)
    assert parse_payload(b"\xff garbage").files == ()


def test_the_facade_hooks_return_the_text_and_the_event(repo):
    gm = Gitmem.open(repo)
    gm.learn("The queue uses WAL mode", file="src/app.py")
    out = gm.hooks.pre_tool(claude_read(repo / "src/app.py"))
    assert out.event == "PreToolUse" and "WAL" in out.text
    assert gm.anchored_to(str(repo / "src/app.py"))


# -- the reminder to learn, at the end of a turn --------------------------------------------------

def start(repo: Path, session: str = "s-1") -> None:
    payload = json.dumps({"session_id": session, "hook_event_name": "SessionStart", "source": "startup"})
    assert tur(repo, "hook", "session-start", stdin=payload).code == 0


def stop(repo: Path, session: str = "s-1", *args: str, **more) -> str:
    payload = json.dumps({"session_id": session, "hook_event_name": "Stop",
                          "stop_hook_active": False, **more})
    r = tur(repo, "hook", "stop", *args, stdin=payload)
    assert r.code == 0 and r.err == "", r.err
    return r.out


def test_stop_reminds_once_a_session_that_changed_files_and_learned_nothing(repo):
    start(repo)
    assert stop(repo) == ""  # nothing changed yet
    (repo / "src/app.py").write_text("line one\n" + (repo / "src/app.py").read_text())
    (repo / "src/new.py").write_text("x = 1\n")
    answer = json.loads(stop(repo))
    assert answer["decision"] == "block"  # Claude Code goes on, with the reason as its instruction
    reason = answer["reason"]
    assert "this session changed 2 files (`src/app.py`, `src/new.py`)" in reason
    assert "`tur learn \"...\" --file src/app.py#Lx-Ly --agent claude-code`" in reason
    assert stop(repo, stop_hook_active=True) == ""  # the turn it started never blocks again
    assert stop(repo) == ""  # nor does a later turn: once per session
    assert json.loads(stop(repo, "s-2") or "{}") == {}  # another session without a start: recorded now
    (repo / "src/other.py").write_text("y = 2\n")
    assert "`src/other.py`" in json.loads(stop(repo, "s-2"))["reason"]  # ... and compared from there


def test_stop_says_nothing_when_the_session_recorded_a_memory(repo):
    start(repo)
    commit_file(repo, "src/app.py", "changed\n", "the session rewrites app.py")
    assert tur(repo, "learn", "app.py now holds one line", "--file", "src/app.py#L1").code == 0
    assert stop(repo) == ""


def test_stop_counts_only_what_the_session_changed_committed_or_not(repo):
    (repo / "src/app.py").write_text("dirty before the session\n")
    (repo / "notes.txt").write_text("untracked before the session\n")
    start(repo)
    assert stop(repo) == ""  # the user's own changes are not the session's
    commit_file(repo, "src/db.py", "db = 1\n", "the session commits a file")
    (repo / "notes.txt").write_text("untracked before the session\n")  # written again, same bytes
    reason = json.loads(stop(repo))["reason"]
    assert "changed 1 file (`src/db.py`)" in reason


def test_a_change_made_and_undone_is_not_a_change(repo):
    start(repo)
    original = (repo / "src/app.py").read_text()
    (repo / "src/app.py").write_text("temporary\n")
    (repo / "src/app.py").write_text(original)
    assert stop(repo) == ""


def test_each_harness_gets_its_documented_end_of_turn_answer(repo):
    for session in ("g-1", "c-1", "u-1"):  # Gemini, Codex, Cursor
        start(repo, session)
    # Copilot CLI's sessionStart (camelCase payload; its output is ignored) only records the start
    began = tur(repo, "hook", "stop", "--harness", "copilot", "--start", stdin=json.dumps(
        {"sessionId": "p-1", "timestamp": 1704614400000, "cwd": str(repo), "source": "new"}))
    assert (began.code, began.out, began.err) == (0, "", "")
    (repo / "src/app.py").write_text("changed\n")
    gemini = json.loads(stop(repo, "g-1", "--harness", "gemini", hook_event_name="AfterAgent"))
    assert gemini["decision"] == "deny" and "--agent gemini" in gemini["reason"]
    # its retry turn: nothing to say, in JSON (a Gemini hook's stdout is JSON only)
    assert stop(repo, "g-1", "--harness", "gemini", stop_hook_active=True) == "{}\n"
    codex = json.loads(stop(repo, "c-1", "--harness", "codex"))
    assert set(codex) == {"decision", "reason"} and codex["decision"] == "block"
    cursor_payload = json.dumps({"conversation_id": "u-1", "hook_event_name": "stop",
                                 "status": "completed", "loop_count": 1})
    assert tur(repo, "hook", "stop", "--harness", "cursor", stdin=cursor_payload).out == ""
    cursor = json.loads(tur(repo, "hook", "stop", "--harness", "cursor",
                            stdin=cursor_payload.replace('"loop_count": 1', '"loop_count": 0')).out)
    assert list(cursor) == ["followup_message"] and "`src/app.py`" in cursor["followup_message"]
    copilot_payload = json.dumps({"sessionId": "p-1", "cwd": str(repo), "stopReason": "end_turn",
                                  "timestamp": 1704614750000})
    copilot = json.loads(tur(repo, "hook", "stop", "--harness", "copilot", stdin=copilot_payload).out)
    assert copilot["decision"] == "block" and "--agent copilot" in copilot["reason"]


def test_the_reminder_is_off_with_hooks_learn_reminder_false(repo):
    (repo / ".tur").mkdir()
    (repo / ".tur/config.yaml").write_text("hooks:\n  learn_reminder: false\n")
    start(repo)
    (repo / "src/app.py").write_text("changed\n")
    assert stop(repo) == ""
    (repo / ".tur/config.yaml").write_text("hooks:\n  learn_reminder: true\n")
    assert stop(repo) == ""  # no start was recorded while it was off: this stop records one
    (repo / "src/new.py").write_text("x = 1\n")
    assert "`src/new.py`" in json.loads(stop(repo))["reason"]


def test_stop_outside_a_repository_or_with_bad_input_exits_0_quietly(tmp_path, repo):
    r = tur(tmp_path, "hook", "stop", stdin=json.dumps({"session_id": "s-1"}))
    assert r.code == 0 and r.out == "" and "not a git repository" in r.err
    r = tur(repo, "hook", "stop", stdin='{"session_id": ')
    assert r.code == 0 and r.out == "" and len(r.err.splitlines()) == 1


def test_read_payload_takes_a_large_payload_split_across_pipe_reads_and_multibyte_chars():
    import threading

    from gitmem.cli.hook_input import read_payload

    payload = json.dumps({"session_id": "s", "tool_input": {"content": "é—" * 60_000}},
                         ensure_ascii=False)
    read_end, write_end = os.pipe()
    writer = threading.Thread(target=lambda: os.write(write_end, payload.encode()))
    writer.start()
    try:
        with os.fdopen(read_end, encoding="utf-8") as stream:
            got = read_payload(stream, deadline=30)
    finally:
        writer.join()
        os.close(write_end)  # closed only after the read returned: it did not wait for EOF
    assert got == payload


def test_a_working_tree_with_too_many_untracked_files_is_not_compared(repo):
    from gitmem.store.session_files import MAX_PATHS

    build = repo / "build"
    build.mkdir()
    for number in range(MAX_PATHS + 1):  # a build directory nobody ignored
        (build / f"o{number}.txt").write_text("")
    start(repo)
    (repo / "src/app.py").write_text("changed\n")
    assert stop(repo) == ""  # no snapshot to compare with: quiet, and quick


def test_session_starts_are_pruned_after_a_day_by_the_stop_hook_itself(repo):
    start(repo, "old")
    sessions = repo / ".git/tur/sessions"
    (old,) = [p for p in sessions.iterdir() if p.name.endswith(".start.json")]
    stale = time.time() - SESSION_TTL_SECONDS - 60
    os.utime(old, (stale, stale))
    stop(repo, "new")  # a new session's first stop records its start, and prunes
    assert not old.exists()
    assert len([p for p in sessions.iterdir() if p.name.endswith(".start.json")]) == 1


def test_a_hook_with_a_bad_option_says_so_and_never_blocks_the_harness(repo):
    # Exit 2 is Claude Code's "block": the prompt would be dropped, the tool call stopped.
    for args in (["pre-turn", "--bogus"], ["pre-turn", "--top-k", "abc"],
                 ["pre-tool", "--max-chars", "x"], ["stop", "--harness", "bogus"]):
        result = tur(repo, "hook", *args, stdin=prompt("where do retries live"))
        assert result.code == 0, (args, result.err)
        assert result.out == ""
        assert len(result.err.strip().splitlines()) == 1 and "tur: error:" in result.err, result.err
    assert tur(repo, "learn", "--bogus").code == 2  # other commands keep exit 2
