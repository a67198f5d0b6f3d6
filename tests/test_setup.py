"""``tur setup HARNESS``: on a real repository, with the user's own settings already there.

For every harness: the user's settings (hooks, MCP servers, TOML comments, instructions) are in
place first; ``tur setup`` runs twice (the second run changes no byte); ``--check`` reports all
wired; ``--remove`` takes out exactly what was added, leaving the user's files byte for byte as
they were (and deleting the files and directories it created).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from tests.test_cli import assert_one_line_error, tur

# -- the user's settings, present before tur setup --------------------------------------------

CLAUDE_SETTINGS = {
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}],
    },
}
MCP_SERVERS = {"mcpServers": {"github": {"command": "gh-mcp", "args": ["--stdio"]}}}
CODEX_TOML = (
    "# my Codex settings: keep this comment\n"
    'model = "o3"  # and this one\n'
    "\n"
    "[mcp_servers.docs]\n"
    'command = "docs-mcp"\n'
    'args = ["serve"]\n'
)
CODEX_HOOKS = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}
GEMINI_SETTINGS = {"ui": {"theme": "GitHub"}, **MCP_SERVERS,
                   "hooks": {"BeforeTool": [{"matcher": "run_shell_command",
                                             "hooks": [{"type": "command", "command": "audit"}]}]}}
CURSOR_HOOKS = {"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}],
                                        "stop": [{"command": "./notify.sh"}]}}
INSTRUCTIONS = "# Team rules\n\nRun `make test` before every commit.\n"


def _dump(data: dict) -> str:
    return json.dumps(data, indent=4) + "\n"  # four spaces: setup keeps the user's indent


def user_files(repo: Path, home: Path) -> dict[str, dict[Path, str]]:
    """Per harness, the files the user already has (path -> text)."""
    return {
        "claude": {repo / ".claude/settings.json": _dump(CLAUDE_SETTINGS),
                   repo / ".mcp.json": _dump(MCP_SERVERS),
                   repo / "CLAUDE.md": INSTRUCTIONS},
        "codex": {repo / ".codex/config.toml": CODEX_TOML,
                  repo / ".codex/hooks.json": _dump(CODEX_HOOKS),
                  repo / "AGENTS.md": INSTRUCTIONS},
        "cursor": {repo / ".cursor/mcp.json": _dump(MCP_SERVERS),
                   repo / ".cursor/hooks.json": _dump(CURSOR_HOOKS)},
        "copilot": {repo / ".github/mcp.json": _dump(MCP_SERVERS),
                    repo / ".github/copilot-instructions.md": INSTRUCTIONS},
        "gemini": {repo / ".gemini/settings.json": _dump(GEMINI_SETTINGS),
                   repo / "GEMINI.md": INSTRUCTIONS},
    }


def snapshot(*roots: Path) -> dict[Path, bytes]:
    """Every file under ``roots`` (but .git) and its bytes."""
    return {p: p.read_bytes() for root in roots for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts}


def directories(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_dir() and ".git" not in p.relative_to(root).parts}


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def commands(settings: dict, event: str) -> list[tuple[str | None, str]]:
    return [(g.get("matcher"), h["command"]) for g in settings["hooks"].get(event, [])
            for h in g["hooks"]]


@pytest.fixture
def home(isolated_env) -> Path:
    return isolated_env


@pytest.fixture(autouse=True)
def tur_on_path(monkeypatch):
    """``tur`` resolvable, as in the environment a harness is started from after installing gitmem."""
    import os

    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")


def approve(harness: str, repo: Path, home: Path) -> None:
    """Trust the folder or approve the server, in the file and shape the harness itself writes."""
    root = str(repo.resolve())
    if harness == "claude":  # the answer to "New MCP server found in .mcp.json", per project
        (home / ".claude.json").write_text(json.dumps(
            {"projects": {root: {"allowedTools": [], "enabledMcpjsonServers": ["tur"],
                                 "disabledMcpjsonServers": [], "hasTrustDialogAccepted": True}}}))
    elif harness == "codex":
        (home / ".codex").mkdir(exist_ok=True)
        (home / ".codex/config.toml").write_text(f'[projects."{root}"]\ntrust_level = "trusted"\n')
    elif harness == "gemini":
        (home / ".gemini").mkdir(exist_ok=True)
        (home / ".gemini/trustedFolders.json").write_text(json.dumps({root: "TRUST_FOLDER"}, indent=2))
    elif harness == "copilot":
        (home / ".copilot").mkdir(exist_ok=True)
        (home / ".copilot/config.json").write_text(json.dumps({"trusted_folders": [root]}, indent=2))


def setup_twice_check_remove(repo: Path, home: Path, harness: str) -> dict[Path, bytes]:
    """Run the whole cycle; return the files as they were after the first set-up."""
    for path, text in user_files(repo, home)[harness].items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    approve(harness, repo, home)
    before, dirs_before = snapshot(repo, home), directories(repo)

    first = tur(repo, "setup", harness)
    assert first.code == 0, first.err
    assert "added" in first.out
    after = snapshot(repo, home)
    assert set(before) <= set(after)  # the user's files are still there ...
    second = tur(repo, "setup", harness)  # ... and a second run changes nothing
    assert second.code == 0, second.err
    assert snapshot(repo, home) == after
    assert "nothing changed" in second.out

    check = tur(repo, "setup", harness, "--check")
    assert check.code == 0, check.out
    assert f"{harness}: all wired" in check.out

    removed = tur(repo, "setup", harness, "--remove")
    assert removed.code == 0, removed.err
    assert snapshot(repo, home) == before  # exactly what it wrote is gone
    assert directories(repo) == dirs_before
    missing = tur(repo, "setup", harness, "--check")
    assert missing.code == 1 and "MISSING" in missing.out
    return after


def test_setup_claude_wires_hooks_mcp_and_claude_md_and_keeps_the_users_settings(repo, home):
    after = setup_twice_check_remove(repo, home, "claude")
    settings = json.loads(after[repo / ".claude/settings.json"])
    assert settings["permissions"] == CLAUDE_SETTINGS["permissions"]
    assert commands(settings, "SessionStart") == [
        ("startup", "echo hi"), ("startup|clear|compact", "tur hook session-start --harness claude")]
    assert commands(settings, "UserPromptSubmit") == [(None, "tur hook pre-turn --harness claude")]
    assert commands(settings, "PreToolUse") == [
        ("Bash", "./guard.sh"), ("Read|Edit|MultiEdit|Write", "tur hook pre-tool --harness claude")]
    assert commands(settings, "Stop") == [(None, "tur hook stop --harness claude")]
    assert after[repo / ".claude/settings.json"].startswith(b'{\n    "permissions"')  # its indent
    mcp = json.loads(after[repo / ".mcp.json"])
    assert mcp["mcpServers"] == {**MCP_SERVERS["mcpServers"], "tur": {
        "type": "stdio", "command": "tur", "args": ["mcp", "--harness", "claude"]}}
    guide = after[repo / "CLAUDE.md"].decode()
    assert guide.startswith(INSTRUCTIONS + "\n<!-- BEGIN gitmem")
    assert guide.rstrip().endswith("<!-- END gitmem -->")
    assert "tur refute ID" in guide and "--agent claude-code" in guide


def test_setup_codex_keeps_the_comments_of_config_toml(repo, home):
    after = setup_twice_check_remove(repo, home, "codex")
    toml = after[repo / ".codex/config.toml"].decode()
    assert toml.startswith(CODEX_TOML)  # comments, order and formatting untouched
    assert toml.endswith('\n[mcp_servers.tur]\ncommand = "tur"\nargs = ["mcp", "--harness", "codex"]\n')
    hooks = json.loads(after[repo / ".codex/hooks.json"])
    assert commands(hooks, "Stop") == [(None, "notify-send done"), (None, "tur hook stop --harness codex")]
    assert commands(hooks, "SessionStart") == [
        ("startup|clear", "tur hook session-start --harness codex")]
    assert commands(hooks, "UserPromptSubmit") == [(None, "tur hook pre-turn --harness codex")]
    assert commands(hooks, "PreToolUse") == [("apply_patch", "tur hook pre-tool --harness codex")]
    assert "<!-- BEGIN gitmem" in after[repo / "AGENTS.md"].decode()


def test_setup_cursor_wires_mcp_and_a_rule_and_says_hooks_cannot_inject(repo, home):
    after = setup_twice_check_remove(repo, home, "cursor")
    assert load_bytes(after[repo / ".cursor/mcp.json"])["mcpServers"]["tur"] == {
        "command": "tur", "args": ["mcp", "--harness", "cursor"]}
    rule = after[repo / ".cursor/rules/gitmem.mdc"].decode()
    assert rule.startswith("---\ndescription: ") and "alwaysApply: true\n---\n<!-- BEGIN" in rule
    assert load_bytes(after[repo / ".cursor/hooks.json"]) == {"version": 1, "hooks": {
        "afterFileEdit": [{"command": "./format.sh"}],
        "stop": [{"command": "./notify.sh"}, {"command": "tur hook stop --harness cursor"}]}}
    note = tur(repo, "setup", "cursor", "--check").out
    assert "cannot add context" in note and "MCP" in note


def test_setup_copilot_wires_mcp_and_copilot_instructions(repo, home):
    after = setup_twice_check_remove(repo, home, "copilot")
    server = load_bytes(after[repo / ".github/mcp.json"])["mcpServers"]["tur"]
    assert server == {"type": "local", "command": "tur", "args": ["mcp", "--harness", "copilot"],
                      "tools": ["*"]}
    assert after[repo / ".github/copilot-instructions.md"].decode().startswith(INSTRUCTIONS)
    hooks = load_bytes(after[repo / ".github/hooks/gitmem.json"])
    assert hooks == {"version": 1, "hooks": {
        "sessionStart": [{"type": "command", "bash": "tur hook stop --harness copilot --start",
                          "timeoutSec": 10}],
        "agentStop": [{"type": "command", "bash": "tur hook stop --harness copilot", "timeoutSec": 10}]}}


def test_setup_gemini_wires_json_hooks_and_mcp_in_settings_json(repo, home):
    after = setup_twice_check_remove(repo, home, "gemini")
    settings = load_bytes(after[repo / ".gemini/settings.json"])
    assert settings["ui"] == {"theme": "GitHub"}
    assert set(settings["mcpServers"]) == {"github", "tur"}
    assert commands(settings, "BeforeTool") == [("run_shell_command", "audit")]
    assert commands(settings, "SessionStart") == [
        ("startup", "tur hook session-start --format json --harness gemini"),
        ("clear", "tur hook session-start --format json --harness gemini")]
    assert commands(settings, "BeforeAgent") == [
        (None, "tur hook pre-turn --format json --harness gemini")]
    assert [c for _, c in commands(settings, "AfterTool")] == [
        "tur hook pre-tool --format json --harness gemini"]
    assert commands(settings, "AfterAgent") == [(None, "tur hook stop --harness gemini")]


def load_bytes(data: bytes) -> dict:
    return json.loads(data)


@pytest.mark.parametrize("harness", ["claude", "codex", "cursor", "copilot", "gemini"])
def test_user_scope_writes_under_home_only_and_removes_cleanly(repo, home, harness):
    if harness in ("gemini", "copilot"):  # their folder trust holds for user-scope servers too
        approve(harness, repo, home)
    repo_before, home_before = snapshot(repo), snapshot(home)
    first = tur(repo, "setup", harness, "--scope", "user")
    assert first.code == 0, first.err
    assert snapshot(repo) == repo_before  # nothing in the repository
    written = set(snapshot(home)) - set(home_before)
    assert written and all(home in p.parents for p in written)
    again = snapshot(home)
    assert tur(repo, "setup", harness, "--scope", "user").code == 0
    assert snapshot(home) == again
    assert tur(repo, "setup", harness, "--scope", "user", "--check").code == 0
    assert tur(repo, "setup", harness, "--scope", "user", "--remove").code == 0
    assert snapshot(home) == home_before


def test_check_names_what_is_missing_and_exits_1(repo, home):
    assert tur(repo, "setup", "claude").code == 0
    settings = repo / ".claude/settings.json"
    data = load(settings)
    del data["hooks"]["PreToolUse"]
    settings.write_text(json.dumps(data))
    check = tur(repo, "setup", "claude", "--check")
    assert check.code == 1
    missing = [line for line in check.out.splitlines() if line.startswith("MISSING")]
    assert len(missing) == 1 and "PreToolUse" in missing[0]
    assert "1 missing" in check.out


def test_setup_updates_an_older_instructions_block_in_place(repo, home):
    assert tur(repo, "setup", "codex").code == 0
    agents = repo / "AGENTS.md"
    text = agents.read_text()
    agents.write_text("# Mine\n\n" + text.replace("Before you stop", "At the end") + "\n## After\n")
    assert "DIFFERS" in tur(repo, "setup", "codex", "--check").out
    out = tur(repo, "setup", "codex").out
    assert "updated" in out
    fixed = agents.read_text()
    assert fixed.startswith("# Mine\n\n") and fixed.endswith("\n## After\n")
    assert "Before you stop" in fixed and fixed.count("<!-- BEGIN gitmem") == 1


def test_a_changed_mcp_entry_is_not_removed(repo, home):
    assert tur(repo, "setup", "cursor").code == 0
    mcp = repo / ".cursor/mcp.json"
    data = load(mcp)
    data["mcpServers"]["tur"]["args"] = ["mcp", "--verbose"]
    mcp.write_text(json.dumps(data))
    out = tur(repo, "setup", "cursor", "--remove").out
    assert "left (not as tur setup writes it)" in out
    assert load(mcp)["mcpServers"]["tur"]["args"] == ["mcp", "--verbose"]


def test_a_settings_file_that_is_not_json_is_refused_and_nothing_is_written(repo, home):
    bad = repo / ".claude/settings.json"
    bad.parent.mkdir()
    bad.write_text('{"hooks": // a comment\n}')
    result = tur(repo, "setup", "claude")
    assert_one_line_error(result, "settings.json is not JSON")
    assert bad.read_text() == '{"hooks": // a comment\n}'
    assert not (repo / ".mcp.json").exists() and not (repo / "CLAUDE.md").exists()


def test_check_and_remove_together_are_refused(repo):
    assert tur(repo, "setup", "claude", "--check", "--remove").code == 2


def test_setup_never_installs_git_hooks(repo, home):
    hooks = repo / ".git" / "hooks"
    before = sorted(p.name for p in hooks.iterdir()) if hooks.exists() else []
    for harness in ("claude", "codex", "cursor", "copilot", "gemini"):
        assert tur(repo, "setup", harness).code == 0
    after = sorted(p.name for p in hooks.iterdir()) if hooks.exists() else []
    assert after == before
    assert "core.hookspath" not in (repo / ".git" / "config").read_text().lower()


def test_check_fails_when_tur_is_not_on_path_and_says_how_to_fix_it(repo, home, tmp_path, monkeypatch):
    approve("claude", repo, home)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    setup = tur(repo, "setup", "claude")
    assert setup.code == 0 and "next: install gitmem where the harness starts from" in setup.out
    check = tur(repo, "setup", "claude", "--check")
    assert check.code == 1
    assert "NOT YET        `tur` is on PATH" in check.out
    assert check.out.rstrip().endswith("claude: 1 to do in the harness")
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    again = tur(repo, "setup", "claude", "--check")
    assert again.code == 0 and "next:" not in again.out and "claude: all wired" in again.out


def test_the_users_own_layout_survives_setup_and_remove_byte_for_byte(repo, home):
    settings = repo / ".claude/settings.json"
    settings.parent.mkdir()
    own = ('{\n  "permissions": {"allow": ["Bash(ls)", "Read"], "deny": []},\n'
           '  "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", '
           '"command": "./guard.sh"}]}]},\n  "env": { "A" : "1" }\n}\n')
    settings.write_text(own)
    assert tur(repo, "setup", "claude").code == 0
    wired = settings.read_text()
    assert '  "permissions": {"allow": ["Bash(ls)", "Read"], "deny": []},\n' in wired
    assert '  "env": { "A" : "1" }\n' in wired
    assert '{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}' in wired
    assert tur(repo, "setup", "claude", "--remove").code == 0
    assert settings.read_text() == own  # byte for byte, the one-line hooks object included


# -- --remove gives back the file the user had --------------------------------------------------


def plan_files(harness: str, repo: Path, home: Path, scope: str = "project") -> list:
    import importlib

    return importlib.import_module(f"gitmem.harness.{harness}").plan(scope, repo, home).files


def hollow(target) -> str:
    """The file as a user may have it before set-up: the containers of our entries, all empty."""
    from gitmem.harness.merge import HookEntry, JsonFile, TomlFile

    if isinstance(target, JsonFile):
        data: dict = {}
        for entry in target.entries:
            if isinstance(entry, HookEntry):
                data.setdefault("hooks", {})
            elif len(entry.keys) > 1:  # a key at the top has no container but the file
                data.setdefault(entry.keys[0], {})
        return json.dumps(data, separators=(",", ":"))  # compact, no newline at the end
    if isinstance(target, TomlFile):
        return "# my Codex settings\r\n[mcp_servers]\r\n"
    return ""


def test_remove_gives_back_a_cursor_mcp_json_that_held_only_an_empty_mcp_servers(repo, home):
    mcp = repo / ".cursor/mcp.json"
    mcp.parent.mkdir()
    mcp.write_text('{"mcpServers":{}}')
    assert tur(repo, "setup", "cursor").code == 0
    assert load(mcp)["mcpServers"]["tur"] == {"command": "tur", "args": ["mcp", "--harness", "cursor"]}
    assert tur(repo, "setup", "cursor", "--remove").code == 0
    assert mcp.read_bytes() == b'{"mcpServers":{}}'
    assert not (repo / ".cursor/rules").exists()  # what setup created goes


@pytest.mark.parametrize("harness", ["claude", "codex", "cursor", "copilot", "gemini"])
@pytest.mark.parametrize("shape", ["empty", "hollow"])
def test_remove_gives_back_every_file_byte_for_byte(repo, home, harness, shape):
    for target in plan_files(harness, repo, home):
        target.path.parent.mkdir(parents=True, exist_ok=True)
        target.path.write_bytes((hollow(target) if shape == "hollow" else "").encode())
    before = snapshot(repo, home)
    assert tur(repo, "setup", harness).code == 0
    assert snapshot(repo, home) != before
    assert tur(repo, "setup", harness).code == 0  # a second run keeps the record as it was
    assert tur(repo, "setup", harness, "--remove").code == 0
    assert snapshot(repo, home) == before
    assert not (repo / ".git/tur/setup.json").exists()  # no record is left once given back


def test_remove_after_the_user_edited_the_file_keeps_their_edit_and_their_empty_object(repo, home):
    mcp = repo / ".cursor/mcp.json"
    mcp.parent.mkdir()
    mcp.write_text('{"mcpServers":{}}')
    assert tur(repo, "setup", "cursor").code == 0
    data = load(mcp)
    data["inputs"] = [{"id": "token"}]
    mcp.write_text(json.dumps(data))
    assert tur(repo, "setup", "cursor", "--remove").code == 0
    assert load(mcp) == {"mcpServers": {}, "inputs": [{"id": "token"}]}


def test_remove_of_a_set_up_from_another_clone_still_takes_out_only_its_entries(repo, home):
    mcp = repo / ".cursor/mcp.json"
    mcp.parent.mkdir()
    mcp.write_text('{"mcpServers":{}}')
    assert tur(repo, "setup", "cursor").code == 0
    (repo / ".git/tur/setup.json").unlink()  # no record: what the entries leave empty goes
    assert tur(repo, "setup", "cursor", "--remove").code == 0
    assert not mcp.exists()


@pytest.mark.parametrize("harness", ["claude", "codex", "cursor", "copilot", "gemini"])
def test_user_scope_remove_gives_back_the_users_empty_files(repo, home, harness):
    for target in plan_files(harness, repo, home, "user"):
        target.path.parent.mkdir(parents=True, exist_ok=True)
        target.path.write_bytes(hollow(target).encode())
    before = snapshot(home)
    assert tur(repo, "setup", harness, "--scope", "user").code == 0
    assert tur(repo, "setup", harness, "--scope", "user", "--remove").code == 0
    assert snapshot(home) == before


# -- --check sees what the harness sees -----------------------------------------------------------


@pytest.mark.parametrize("harness", ["claude", "codex", "gemini", "copilot"])
def test_check_fails_until_the_harness_trusts_the_folder_or_approves_the_server(repo, home, harness):
    first = tur(repo, "setup", harness)
    (step,) = [line for line in first.out.splitlines() if line.startswith("next: ")]
    assert f"start `{harness}` in {repo.resolve()}" in step
    check = tur(repo, "setup", harness, "--check")
    assert check.code == 1, check.out
    assert [line for line in check.out.splitlines() if line.startswith("next: ")] == [step]
    assert check.out.rstrip().endswith(f"{harness}: 1 to do in the harness")
    approve(harness, repo, home)
    check = tur(repo, "setup", harness, "--check")
    assert check.code == 0, check.out
    assert "next:" not in check.out and f"{harness}: all wired" in check.out


def test_claude_approval_is_read_from_the_settings_files_too(repo, home):
    assert tur(repo, "setup", "claude").code == 0
    local = repo / ".claude/settings.local.json"
    local.write_text(json.dumps({"enableAllProjectMcpServers": True}))
    assert tur(repo, "setup", "claude", "--check").code == 0
    local.write_text(json.dumps({"disabledMcpjsonServers": ["tur"]}))
    approve("claude", repo, home)  # a server disabled in the project's settings stays off
    assert tur(repo, "setup", "claude", "--check").code == 1


def test_a_trusted_parent_folder_trusts_the_repository(repo, home):
    assert tur(repo, "setup", "gemini").code == 0
    trusted = home / ".gemini/trustedFolders.json"
    trusted.parent.mkdir(exist_ok=True)
    trusted.write_text(json.dumps({str(repo.resolve() / "src"): "TRUST_PARENT"}))
    assert tur(repo, "setup", "gemini", "--check").code == 0
    trusted.write_text(json.dumps({str(repo.resolve().parent): "TRUST_FOLDER",
                                   str(repo.resolve()): "DO_NOT_TRUST"}))
    assert tur(repo, "setup", "gemini", "--check").code == 1
    assert tur(repo, "setup", "copilot").code == 0
    (home / ".copilot").mkdir()
    (home / ".copilot/config.json").write_text(json.dumps({"trustedFolders": [str(repo.resolve().parent)]}))
    assert tur(repo, "setup", "copilot", "--check").code == 0


# -- the user's files stay theirs: links, FIFOs, read-only files, their own lines and keys ---------


def test_setup_and_remove_edit_a_settings_file_through_its_symlink_into_dotfiles(repo, home, tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "claude-settings.json"
    target.write_text(_dump(CLAUDE_SETTINGS))
    target.chmod(0o600)
    link = repo / ".claude/settings.json"
    link.parent.mkdir()
    link.symlink_to(target)
    assert tur(repo, "setup", "claude").code == 0
    assert link.is_symlink() and link.resolve() == target  # the link stays ...
    # ... and its target holds the entries
    assert commands(load(target), "UserPromptSubmit") == [(None, "tur hook pre-turn --harness claude")]
    assert target.stat().st_mode & 0o777 == 0o600  # and kept its mode
    assert tur(repo, "setup", "claude", "--remove").code == 0
    assert link.is_symlink() and link.resolve() == target
    assert target.read_text() == _dump(CLAUDE_SETTINGS)


def test_a_link_whose_settings_file_was_created_by_setup_keeps_the_link_on_remove(repo, home, tmp_path):
    target = tmp_path / "dotfiles" / "mcp.json"
    target.parent.mkdir()
    target.write_text("{}\n")
    link = repo / ".mcp.json"
    link.symlink_to(target)
    (repo / ".git/tur").mkdir(exist_ok=True)
    assert tur(repo, "setup", "claude").code == 0
    (repo / ".git/tur/setup.json").unlink()  # no record: what the entries leave empty goes ...
    assert tur(repo, "setup", "claude", "--remove").code == 0
    assert link.is_symlink() and load(target) == {}  # ... but a link and its file are the user's


def test_a_link_to_nothing_is_refused_and_named(repo, home, tmp_path):
    link = repo / ".mcp.json"
    link.symlink_to(tmp_path / "gone.json")
    result = tur(repo, "setup", "claude")
    assert_one_line_error(result, ".mcp.json is a link to", "which does not exist")
    assert link.is_symlink() and not (repo / ".claude").exists()


def test_a_fifo_where_a_settings_file_should_be_is_refused_without_blocking(repo, home):
    fifo = repo / ".claude/settings.json"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    for args in ((), ("--check",), ("--remove",)):
        # A FIFO nobody writes to: an open() for reading would block for ever.
        result = tur(repo, "setup", "claude", *args)
        assert_one_line_error(result, "settings.json is a FIFO (named pipe), not a regular file")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert not (repo / ".mcp.json").exists() and not (repo / "CLAUDE.md").exists()


def test_a_directory_or_a_device_where_a_settings_file_should_be_is_refused(repo, home):
    (repo / ".mcp.json").mkdir()
    assert_one_line_error(tur(repo, "setup", "claude"), ".mcp.json is a directory, not a regular file")
    assert not (repo / ".claude").exists()
    (repo / ".cursor").mkdir()
    (repo / ".cursor/mcp.json").symlink_to("/dev/null")
    assert_one_line_error(tur(repo, "setup", "cursor"),
                          "mcp.json (a link to /dev/null) is a character device, not a regular file")


def test_a_read_only_settings_file_is_refused_and_keeps_its_mode(repo, home):
    settings = repo / ".claude/settings.json"
    settings.parent.mkdir()
    settings.write_text(_dump(CLAUDE_SETTINGS))
    settings.chmod(0o444)
    result = tur(repo, "setup", "claude")
    assert_one_line_error(result, "settings.json is read-only; nothing was changed", "chmod u+w")
    assert settings.stat().st_mode & 0o777 == 0o444
    assert settings.read_text() == _dump(CLAUDE_SETTINGS)
    assert not (repo / ".mcp.json").exists()  # refused before anything was written
    settings.chmod(0o644)
    assert tur(repo, "setup", "claude").code == 0
    settings.chmod(0o444)  # wired already: nothing to write, so nothing to refuse
    again = tur(repo, "setup", "claude")
    assert again.code == 0 and "nothing changed" in again.out
    assert_one_line_error(tur(repo, "setup", "claude", "--remove"), "is read-only")
    assert commands(load(settings), "UserPromptSubmit") == [(None, "tur hook pre-turn --harness claude")]


def test_a_settings_file_with_a_key_twice_is_refused_rather_than_losing_one(repo, home):
    settings = repo / ".claude/settings.json"
    settings.parent.mkdir()
    text = ('{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "a"}]}]},\n'
            ' "hooks": {"PreToolUse": [{"matcher": "Bash",\n'
            '                           "hooks": [{"type": "command", "command": "b"}]}]}}\n')
    settings.write_text(text)
    result = tur(repo, "setup", "claude")
    assert_one_line_error(result, 'settings.json has the key "hooks" twice in one object')
    assert settings.read_text() == text and not (repo / ".mcp.json").exists()


def test_remove_keeps_the_lines_the_user_wrote_inside_the_block_and_says_so(repo, home):
    guide = repo / "CLAUDE.md"
    guide.write_text(INSTRUCTIONS)
    assert tur(repo, "setup", "claude").code == 0
    text = guide.read_text()
    mine = "- Always run `make lint` before you stop."
    edited = text.replace("<!-- END gitmem -->", mine + "\n<!-- END gitmem -->")
    guide.write_text(edited)
    check = tur(repo, "setup", "claude", "--check")
    assert "MISSING" not in check.out and "DIFFERS" not in check.out  # still wired
    again = tur(repo, "setup", "claude")
    assert "nothing changed" in again.out and guide.read_text() == edited  # setup keeps it too
    removed = tur(repo, "setup", "claude", "--remove")
    assert removed.code == 0
    assert f'kept 1 line you wrote inside the block: "{mine}"' in removed.out
    assert guide.read_text() == INSTRUCTIONS + "\n" + mine + "\n"


def test_an_update_of_the_block_keeps_the_users_lines(repo, home):
    import importlib

    agents = repo / "AGENTS.md"
    assert tur(repo, "setup", "codex").code == 0
    mine = "- Our deploys are manual; never run `make deploy`."
    agents.write_text(agents.read_text().replace("<!-- END gitmem -->", mine + "\n<!-- END gitmem -->"))
    # gitmem's own text changes (a newer release): the journal says what it wrote before
    journal = json.loads((repo / ".git/tur/setup.json").read_text())
    old = journal["blocks"][str(agents.resolve())]
    older = old.replace("Before you stop", "Before the session ends")
    agents.write_text(agents.read_text().replace("Before you stop", "Before the session ends"))
    journal["blocks"][str(agents.resolve())] = older
    (repo / ".git/tur/setup.json").write_text(json.dumps(journal))
    assert "DIFFERS" in tur(repo, "setup", "codex", "--check").out
    updated = tur(repo, "setup", "codex")
    assert "updated" in updated.out and mine in updated.out
    text = agents.read_text()
    assert "Before the session ends" not in text and "Before you stop" in text
    assert text.count(mine) == 1 and text.index(mine) < text.index("<!-- END gitmem -->")
    block = importlib.import_module("gitmem.harness.codex").plan("project", repo.resolve(), home)
    assert block.files[-1].check()[0].state == "wired"


def test_the_stop_hook_setup_wires_reminds_the_agent_when_the_harness_runs_it(repo, home):
    """The command as written into settings.json, run by a shell as Claude Code runs it."""
    import subprocess

    assert tur(repo, "setup", "claude").code == 0
    settings = load(repo / ".claude/settings.json")
    (start_command,) = [c for m, c in commands(settings, "SessionStart")]
    (stop_command,) = [c for _, c in commands(settings, "Stop")]

    def run(command: str, payload: dict) -> str:
        proc = subprocess.run(command, shell=True, cwd=repo, input=json.dumps(payload).encode(),
                              capture_output=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.decode()

    run(start_command, {"session_id": "cc-1", "hook_event_name": "SessionStart", "source": "startup"})
    (repo / "src/app.py").write_text("rewritten\n")
    answer = json.loads(run(stop_command, {"session_id": "cc-1", "hook_event_name": "Stop",
                                           "stop_hook_active": False}))
    assert answer["decision"] == "block" and "`src/app.py`" in answer["reason"]
    assert run(stop_command, {"session_id": "cc-1", "hook_event_name": "Stop",
                              "stop_hook_active": True}) == ""
