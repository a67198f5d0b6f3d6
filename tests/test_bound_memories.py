"""Memories bound to agents, and limits per harness (docs/configuration.md, docs/commands.md).

A memory learned ``--for claude`` goes to claude's sessions only; a session of another harness
never gets it, and the injection log says why (``visibility``). Real repositories, hooks run as
their own processes, the MCP tools' bodies over a real store.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gitmem.api import Gitmem, Via
from gitmem.mcp.tools import GitmemTools
from tests.conftest import git, learn, memory_ref, tur, tur_ok
from tests.test_cli import assert_one_line_error
from tests.test_injection_log import OTHER_TOPICS, records

ROOT = Path(__file__).resolve().parent.parent
WAIT_S = 60.0


def hook(repo: Path, name: str, payload: dict, *args: str) -> str:
    """``tur hook NAME ARGS`` as its own process, the payload on stdin; its stdout."""
    done = subprocess.run([sys.executable, "-m", "gitmem", "-C", str(repo), "hook", name, *args],
                          input=json.dumps(payload), capture_output=True, text=True, cwd=ROOT,
                          timeout=WAIT_S)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def bound(repo: Path) -> dict[str, str]:
    ids = {"everyone": learn(repo, "The service listens on port 8080"),
           "claude": learn(repo, "Staging deploys need the release tag", "--for", "claude")}
    for text in OTHER_TOPICS:
        learn(repo, text)
    return ids


def start(session: str) -> dict:
    return {"session_id": session, "hook_event_name": "SessionStart", "source": "startup"}


def test_a_bound_memory_reaches_its_harness_session_and_not_another_harness_session(repo, bound):
    to_claude = hook(repo, "session-start", start("s-claude"), "--harness", "claude")
    to_codex = hook(repo, "session-start", start("s-codex"), "--harness", "codex")
    assert bound["claude"] in to_claude and bound["everyone"] in to_claude
    assert bound["claude"] not in to_codex and bound["everyone"] in to_codex

    prompt = {"hook_event_name": "UserPromptSubmit", "prompt": "how do staging deploys need a release tag"}
    turn_codex = hook(repo, "pre-turn", {**prompt, "session_id": "t-codex"}, "--harness", "codex")
    turn_claude = hook(repo, "pre-turn", {**prompt, "session_id": "t-claude"}, "--harness", "claude")
    assert bound["claude"] in turn_claude and bound["claude"] not in turn_codex

    (wake,) = records(repo, "--session", "s-codex")
    assert {"id": bound["claude"], "reason": "visibility", "visibility": ["claude"]} in wake["left_out"]
    assert wake["counts"]["visibility"] == 1 and wake["harness"] == "codex"
    (recall,) = records(repo, "--session", "t-codex")
    assert {"id": bound["claude"], "reason": "visibility"} in recall["left_out"]
    (claude_wake,) = records(repo, "--session", "s-claude")
    assert "visibility" not in claude_wake["counts"]
    shown = tur_ok(repo, "log", "--session", "s-codex")
    assert bound["claude"] in shown and "visibility" in shown


def test_an_unnamed_caller_sees_every_memory_and_a_named_one_only_its_own(repo, bound):
    gm = Gitmem.open(repo)
    assert bound["claude"] in gm.wake()[0].text  # a person's plain wake: everything
    assert bound["claude"] not in gm.wake(via=Via("api", "gemini"))[0].text
    assert bound["claude"] in gm.wake(via=Via("api", "", agent="claude"))[0].text
    query = "staging deploys release tag"
    assert [h.memory.id for h in gm.recall(query)[0].hits][:1] == [bound["claude"]]
    hidden = gm.recall(query, via=Via("api", "codex"))[0]
    assert bound["claude"] not in [h.memory.id for h in hidden.hits]
    assert hidden.hidden == (bound["claude"],)
    assert bound["claude"] not in tur_ok(repo, "wake", "--for", "codex")
    assert bound["claude"] in tur_ok(repo, "recall", query, "--for", "claude")


def test_mcp_tools_of_a_server_for_one_harness_leave_out_memories_of_another(repo, bound):
    gm = Gitmem.open(repo)
    for_codex = GitmemTools(gm, asking=Via(harness="codex"))
    for_claude = GitmemTools(gm, asking=Via(harness="claude"))
    assert bound["claude"] not in for_codex.wake_text()
    assert bound["claude"] in for_claude.wake_text()
    logged = [r for r in records(repo) if r["surface"] == "mcp:resource"]
    assert [r["harness"] for r in logged] == ["codex", "claude"]


def test_learn_and_edit_for_set_the_visibility_and_an_unbound_record_has_no_such_key(repo, bound):
    shown = tur_ok(repo, "show", bound["claude"])
    assert "visibility:\n  - claude\n" in shown
    assert "visibility" not in tur_ok(repo, "show", bound["everyone"])
    tur_ok(repo, "edit", bound["everyone"], "--for", "codex,gemini", "--for", "codex")
    doc = json.loads(tur_ok(repo, "show", bound["everyone"], "--format", "json"))
    assert doc["visibility"] == ["codex", "gemini"]
    tur_ok(repo, "edit", bound["everyone"], "--everyone")
    record = tur_ok(repo, "show", bound["everyone"]).split("# commits")[0]
    assert "\nvisibility:" not in record and "changed_at:\n" in record  # the change is stamped


@pytest.mark.parametrize("value", ["Claude", "", "claude code", "x" * 41, "claude,,Codex"])
def test_a_bad_for_value_is_one_line_and_stores_nothing(repo, bound, value):
    before = memory_ref(repo)
    assert_one_line_error(tur(repo, "learn", "Bound to a bad name", "--for", value), "agent name")
    assert_one_line_error(tur(repo, "edit", bound["everyone"], "--for", value), "agent name")
    assert memory_ref(repo) == before


def write_config(repo: Path, text: str) -> None:
    (repo / ".tur").mkdir(exist_ok=True)
    (repo / ".tur" / "config.yaml").write_text(text)


def test_a_harness_wake_budget_from_config_applies_to_its_session_start(repo, bound):
    write_config(repo, "harness:\n  claude:\n    wake_budget: 60\n    recall_top_k: 1\n")
    hook(repo, "session-start", start("c1"), "--harness", "claude")
    hook(repo, "session-start", start("g1"), "--harness", "gemini")
    hook(repo, "session-start", start("x1"), "--harness", "codex")
    (claude,) = records(repo, "--session", "c1")
    (gemini,) = records(repo, "--session", "g1")
    (codex,) = records(repo, "--session", "x1")
    assert claude["budget"] == 60 and claude["tokens"] <= 60 and claude["counts"]["over_budget"] >= 1
    assert gemini["budget"] == 4096  # the global default
    assert codex["budget"] == 2400  # codex's own limit, set by no command line
    # An explicit argument still wins over the config.
    hook(repo, "session-start", start("c2"), "--harness", "claude", "--token-budget", "500")
    assert records(repo, "--session", "c2")[0]["budget"] == 500
    gm = Gitmem.open(repo)
    assert len(gm.recall("port service staging deploys", via=Via("api", "claude"))[0].hits) == 1


def test_a_persona_budget_applies_when_the_harness_sets_none(repo, bound):
    persona = repo / "persona.yaml"
    persona.write_text("name: reviewer\nwake_budget: 70\n")
    tur_ok(repo, "persona", "set", str(persona))
    write_config(repo, "harness:\n  claude:\n    wake_budget: 90\n")
    hook(repo, "session-start", start("p1"), "--harness", "gemini")
    hook(repo, "session-start", start("p2"), "--harness", "claude")
    assert records(repo, "--session", "p1")[0]["budget"] == 70
    assert records(repo, "--session", "p2")[0]["budget"] == 90


@pytest.mark.parametrize("text, key", [
    ("harness:\n  Claude:\n    wake_budget: 10\n", "harness"),
    ("harness:\n  claude:\n    wake_budget: -1\n", "harness.claude.wake_budget"),
    ("harness:\n  claude:\n    recall_top_k: 0\n", "harness.claude.recall_top_k"),
    ("harness:\n  claude:\n    budget: 10\n", "harness.claude.budget"),
])
def test_a_bad_harness_section_is_one_line_naming_the_key(repo, text, key):
    write_config(repo, text)
    assert_one_line_error(tur(repo, "wake"), key)


HARNESS_FILES = {"claude": [".claude/settings.json", ".mcp.json"],
                 "codex": [".codex/hooks.json", ".codex/config.toml"],
                 "gemini": [".gemini/settings.json"],
                 "copilot": [".github/mcp.json", ".github/hooks/gitmem.json"],
                 "cursor": [".cursor/mcp.json", ".cursor/hooks.json"]}


@pytest.mark.parametrize("harness", sorted(HARNESS_FILES))
def test_setup_writes_the_harness_into_each_tur_command_and_no_numbers(repo, harness):
    tur_ok(repo, "setup", harness)
    written = "\n".join((repo / name).read_text() for name in HARNESS_FILES[harness])
    commands = [line for line in written.splitlines() if "tur hook" in line]
    assert commands or harness == "copilot" and "tur hook stop --harness copilot" in written
    for line in commands:
        assert f"--harness {harness}" in line, line
        assert not any(flag in line for flag in ("--token-budget", "--max-chars", "--top-k")), line
    assert f'"mcp","--harness","{harness}"' in re.sub(r"\s+", "", written)
    check = tur(repo, "setup", harness, "--check").out
    assert not re.search(r"^(missing|differs) ", check, re.MULTILINE), check


def test_setup_replaces_the_hook_commands_an_earlier_setup_wrote(repo):
    settings = repo / ".codex" / "hooks.json"
    settings.parent.mkdir()
    old = {"hooks": {"SessionStart": [{"matcher": "startup|clear", "hooks": [
        {"type": "command", "command": "tur hook session-start --token-budget 2400"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "tur hook pre-turn"}]}]}}
    settings.write_text(json.dumps(old))
    tur_ok(repo, "setup", "codex")
    data = json.loads(settings.read_text())
    starts = [h["command"] for g in data["hooks"]["SessionStart"] for h in g["hooks"]]
    turns = [h["command"] for g in data["hooks"]["UserPromptSubmit"] for h in g["hooks"]]
    assert starts == ["tur hook session-start --harness codex"]
    assert turns == ["tur hook pre-turn --harness codex"]
    assert git(repo, "status", "--porcelain", "--", ".codex").strip()  # the user's file, not the ref
