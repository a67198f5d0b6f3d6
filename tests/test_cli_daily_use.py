"""The CLI in daily use: help that explains itself, completion, typos, JSON everywhere, CI exit codes.

Real repositories and real processes: completion scripts are run by the real bash where
there is one, progress is drawn on a real pseudo-terminal.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gitmem.cli import _COMMAND_MODULES, build_parser
from gitmem.cli.commands import COMMANDS
from tests.conftest import commit_file, git
from tests.test_cli import assert_one_line_error, tur

ROOT = Path(__file__).resolve().parent.parent


def _walk(parser: argparse.ArgumentParser, prog: str = "tur"):
    """Every (command path, action) of ``parser`` and its sub-parsers."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in action._choices_actions}
            for name, sub in action.choices.items():
                yield f"{prog} {name}", helps.get(name)
                yield from _walk(sub, f"{prog} {name}")
        elif not isinstance(action, argparse._HelpAction):
            yield f"{prog} {'/'.join(action.option_strings) or action.dest}", action.help


# -- help -----------------------------------------------------------------------------------------


def test_every_command_and_option_has_a_one_line_help():
    missing = [name for name, text in _walk(build_parser()) if not text]
    assert missing == [], f"no help line: {missing}"
    multi = [name for name, text in _walk(build_parser()) if text and "\n" in text]
    assert multi == []


def test_the_main_help_lists_every_command_and_ends_with_examples(tmp_path, capsys):
    assert tur(tmp_path, "--help").code == 0
    out = capsys.readouterr().out
    for name, command in COMMANDS.items():
        assert name in out and command.help.split(";")[0][:30] in out.replace("\n", " ").replace(
            "  ", " ") or name in out
    tail = out.rstrip().splitlines()
    examples = tail.index("examples:")
    assert all(line.startswith("  $ tur ") for line in tail[examples + 1:examples + 6])
    assert tail[-1].startswith("Every command has --help")


def test_the_command_table_names_every_command_of_every_module():
    """A new command module needs its rows in gitmem.cli.commands.COMMANDS (its help line)."""
    declared = {}
    for module in _COMMAND_MODULES:
        for name in importlib.import_module(module).PARSERS:
            declared[name] = module
    assert declared == {name: command.module for name, command in COMMANDS.items()}


def _modules_loaded_by(*argv: str) -> tuple[int, list[str]]:
    probe = ("import contextlib, io, json, sys\nfrom gitmem.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
             f"    code = main({list(argv)!r})\n"
             "print(json.dumps([code, sorted(m for m in sys.modules if m.endswith('_cmds'))]))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    code, modules = json.loads(proc.stdout.splitlines()[-1])
    return code, modules


def test_a_command_builds_only_its_own_parser_and_help_builds_none(repo):
    assert _modules_loaded_by("--help") == (0, [])
    assert _modules_loaded_by("-C", str(repo), "status") == (0, ["gitmem.cli.verify_cmds"])
    assert _modules_loaded_by("-C", str(repo), "wake") == (0, ["gitmem.cli.context_cmds"])
    assert _modules_loaded_by("lern") == (2, [])


# -- "did you mean" -------------------------------------------------------------------------------


def test_a_mistyped_command_suggests_the_nearest(tmp_path):
    r = tur(tmp_path, "lern", "x")
    assert r.code == 2
    assert_one_line_error(r, "unknown command 'lern'", "did you mean `tur learn`?")
    assert tur(tmp_path, "zzzz").err.startswith("tur: error: unknown command 'zzzz' (see")


def test_a_mistyped_action_or_choice_suggests_the_nearest(repo):
    assert_one_line_error(tur(repo, "cache", "inf"), "did you mean `tur cache info`?")
    hook = tur(repo, "hook", "pre-trun")  # exit 0: a harness reads a hook's 2 as "block"
    assert hook.code == 0 and hook.err.count("\n") == 1 and "did you mean `tur hook pre-turn`?" in hook.err
    r = tur(repo, "status", "--format", "jsn")
    assert_one_line_error(r, "invalid choice 'jsn'", "did you mean 'json'?")


# -- completion ------------------------------------------------------------------------------------


def test_completion_prints_a_script_for_bash_zsh_and_fish(tmp_path):
    bash = tur(tmp_path, "completion", "bash")
    assert bash.code == 0 and "complete " in bash.out and "_ARGCOMPLETE=1" in bash.out
    zsh = tur(tmp_path, "completion", "zsh")
    assert zsh.out.startswith("#compdef tur") and "compdef _python_argcomplete" in zsh.out
    fish = tur(tmp_path, "completion", "fish")
    assert "complete --command tur" in fish.out and "_ARGCOMPLETE_SHELL fish" in fish.out
    assert_one_line_error(tur(tmp_path, "completion", "bsah"), "did you mean `tur completion bash`?")


def _complete(line: str, shell: str, tmp_path: Path) -> list[str]:
    """What tur answers a shell's completion request for ``line`` (the argcomplete protocol)."""
    answer = tmp_path / "answer"
    env = dict(os.environ, PYTHONPATH=str(ROOT), _ARGCOMPLETE="1", _ARGCOMPLETE_SHELL=shell,
               COMP_LINE=line, COMP_POINT=str(len(line)), _ARGCOMPLETE_STDOUT_FILENAME=str(answer),
               _ARGCOMPLETE_IFS="\n", **({"_ARGCOMPLETE_DFS": "\t"} if shell == "fish" else {}))
    subprocess.run([sys.executable, "-m", "gitmem"], env=env, cwd=tmp_path, check=True,
                   capture_output=True)
    return answer.read_text().split("\n")


def test_completion_answers_commands_options_and_choices(tmp_path):
    assert _complete("tur le", "bash", tmp_path) == ["learn "]
    assert [c.split("\t")[0].strip() for c in _complete("tur sta", "fish", tmp_path)] == ["status"]
    assert "--exit-code" in " ".join(_complete("tur status --ex", "bash", tmp_path))
    assert {"bash", "fish", "zsh"} <= {c.strip() for c in _complete("tur completion ", "bash", tmp_path)}


def test_a_memory_id_completes_from_the_store_with_its_content_as_description(repo, tmp_path):
    first = tur(repo, "learn", "the build runs make test\nsecond line").out.strip()
    second = tur(repo, "learn", "deploys go through the staging cluster", "--type", "preference").out.strip()
    typed = first[: len("fact-") + 1]
    assert [c.strip() for c in _complete(f"tur show {typed}", "bash", repo)] == [first]
    fish = [c for c in _complete("tur link ", "fish", repo) if not c.startswith("--")]
    assert sorted(fish) == sorted([f"{first}\tthe build runs make test",
                                   f"{second}\tdeploys go through the staging cluster"])
    assert [c.strip() for c in _complete(f"tur verify {first} pre", "bash", repo)] == [second]
    hex_part = first.split("-")[1][:4]  # what `tur show 12cc` resolves, completes too
    assert [c.strip() for c in _complete(f"tur show {hex_part}", "bash", repo)] == [first]
    assert _complete("tur hook p", "bash", repo) != [""]  # other words still match by prefix
    assert all(c.strip().startswith("p") for c in _complete("tur hook p", "bash", repo))
    # Outside a repository nothing is offered, and no error lands in the command line.
    assert _complete("tur show fact-", "bash", tmp_path) == [""]


def test_refute_undo_completes_only_refuted_memories(repo):
    wrong = tur(repo, "learn", "the cache lives in /var/cache/app").out.strip()
    right = tur(repo, "learn", "the cache lives in .cache/app").out.strip()
    assert tur(repo, "refute", wrong, "--reason", "moved to .cache").code == 0
    assert sorted(c.strip() for c in _complete("tur refute fact-", "bash", repo)) == sorted([wrong, right])
    assert [c.strip() for c in _complete("tur refute --undo fact-", "bash", repo)] == [wrong]


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completes_tur_with_the_generated_script(tmp_path):
    tur_bin = tmp_path / "bin" / "tur"
    tur_bin.parent.mkdir()
    tur_bin.write_text(f"#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m gitmem \"$@\"\n")
    tur_bin.chmod(0o755)
    script = subprocess.run([str(tur_bin), "completion", "bash"], capture_output=True, text=True,
                            check=True).stdout
    (tmp_path / "tur.bash").write_text(script)
    run = ('source tur.bash; COMP_LINE="tur verify --ver"; COMP_POINT=${#COMP_LINE}; '
           'COMP_WORDS=(tur verify --ver); COMP_CWORD=2; _python_argcomplete tur --ver verify; '
           'printf "%s\\n" "${COMPREPLY[@]}"')
    out = subprocess.run(["bash", "-c", run], cwd=tmp_path, capture_output=True, text=True, check=True,
                         env=dict(os.environ, PATH=f"{tur_bin.parent}:{os.environ['PATH']}"))
    assert out.stdout.split() == ["--verbose"]


# -- status --exit-code ----------------------------------------------------------------------------


def test_status_exit_code_is_1_while_a_memory_is_stale_as_git_diff_exit_code(repo):
    mid = tur(repo, "learn", "line six says six", "--file", "src/app.py#L5-L7").out.strip()
    tur(repo, "learn", "an unanchored fact")
    assert tur(repo, "status", "--exit-code").code == 0
    app = repo / "src/app.py"
    original = app.read_text()
    app.write_text(original.replace("line 6\n", "line six\n"))  # uncommitted counts
    stale = tur(repo, "status", "--exit-code")
    assert stale.code == 1 and f"{mid}  stale" in stale.out and stale.err == ""
    assert tur(repo, "status").code == 0  # without the option, as before
    as_json = tur(repo, "status", "--exit-code", "--format", "json")
    assert as_json.code == 1 and json.loads(as_json.out)["counts"]["stale"] == 1
    app.write_text(original)
    assert tur(repo, "status", "--exit-code").code == 0


# -- verify prints what changed --------------------------------------------------------------------


def test_verify_prints_what_changed_and_v_prints_every_memory(repo):
    mid = tur(repo, "learn", "line six says six", "--file", "src/app.py#L5-L7").out.strip()
    others = [tur(repo, "learn", f"unrelated fact number {i}").out.strip() for i in range(5)]
    commit_file(repo, "README.md", "hello\n", "unrelated commit")  # every memory is corroborated
    body = (repo / "src/app.py").read_text().replace("line 6\n", "line six\n")
    sha = commit_file(repo, "src/app.py", body, "change line 6")
    r = tur(repo, "verify")
    lines = r.out.splitlines()
    assert lines[0] == "5 fresh, 1 stale"
    assert lines[1] == f"{mid}  fresh -> stale  w=1.00  line 6 changed in {sha[:7]}" or (
        lines[1].startswith(f"{mid}  fresh -> stale  w=") and lines[1].endswith(f"changed in {sha[:7]}"))
    assert lines[2].startswith("recorded in ") and len(lines) == 3
    commit_file(repo, "README.md", "hello again\n", "another commit")
    quiet = tur(repo, "verify")
    assert quiet.out.splitlines()[0] == "5 fresh, 1 stale" and len(quiet.out.splitlines()) == 2
    loud = tur(repo, "verify", "-v")
    assert all(any(line.startswith(i) for line in loud.out.splitlines()) for i in [mid, *others])


# -- --format json on every command that reports something ----------------------------------------


@pytest.fixture
def two(repo):
    first = tur(repo, "learn", "the queue retries five times").out.strip()
    second = tur(repo, "learn", "workers ack after commit").out.strip()
    return repo, first, second


def _json(result) -> dict:
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_json_from_refute_confidence_link_and_forget(two):
    repo, first, second = two
    refuted = _json(tur(repo, "refute", first[:9], "--reason", "it is three", "--format", "json"))
    assert (refuted["id"], refuted["status"], refuted["reason"]) == (first, "refuted", "it is three")
    assert refuted["by"] == "Test User <test@example.com>" and len(refuted["commit"]) == 40
    assert refuted["replaced"] is None
    again = tur(repo, "refute", first, "--reason", "it is four")
    assert again.code == 0 and again.out.strip() == f"refuted {first}"
    assert again.err.strip() == (f"replaced the earlier refutation of {first} by "
                                 "Test User <test@example.com>: it is three")
    fifth = _json(tur(repo, "refute", first, "--reason", "five", "--format", "json"))
    assert fifth["replaced"] == "it is four"
    conf = _json(tur(repo, "confidence", second, "0.5", "--format", "json"))
    assert (conf["id"], conf["confidence"]) == (second, 0.5)
    link = _json(tur(repo, "link", second, first[:9], "--type", "supersedes", "--format", "json"))
    assert (link["source"], link["type"], link["target"]) == (second, "supersedes", first)
    again = _json(tur(repo, "link", second, first, "--type", "supersedes", "--format", "json"))
    assert again["commit"] is None  # nothing changed
    gone = _json(tur(repo, "forget", first, "--format", "json"))
    assert gone["id"] == first and gone["commit"] == git(repo, "rev-parse", "refs/tur/memories").strip()


def test_json_from_edit_and_refute_undo(two):
    repo, first, second = two
    edited = _json(tur(repo, "edit", first[:9], "--content", "the queue retries three times",
                       "--format", "json"))
    assert (edited["id"], edited["changed"]) == (first, True) and len(edited["commit"]) == 40
    same = _json(tur(repo, "edit", first, "--content", "the queue retries three times", "--format", "json"))
    assert (same["changed"], same["commit"]) == (False, None)
    tur(repo, "refute", second, "--reason", "acks come first")
    undone = _json(tur(repo, "refute", second, "--undo", "--format", "json"))
    assert (undone["id"], undone["undone"]) == (second, True) and undone["status"] != "refuted"
    assert undone["commit"] == git(repo, "rev-parse", "refs/tur/memories").strip()


def test_json_from_spark_persona_and_cache(repo, tmp_path):
    note = _json(tur(repo, "spark", "halfway through the retry refactor", "--format", "json"))
    assert note["note"]
    persona = tmp_path / "persona.yaml"
    persona.write_text("name: test agent\ninvariants:\n  - never push to main\n")
    stored = _json(tur(repo, "persona", "set", str(persona), "--format", "json"))
    assert stored["stored"] is True and len(stored["commit"]) == 40
    assert _json(tur(repo, "persona", "set", str(persona), "--format", "json")) == {
        "stored": False, "commit": None}
    assert _json(tur(repo, "persona", "show", "--format", "json")) == {
        "name": "test agent", "invariants": ["never push to main"]}
    tur(repo, "wake")
    info = _json(tur(repo, "cache", "info", "--format", "json"))
    assert info["files"] and info["bytes"] > 0
    cleared = _json(tur(repo, "cache", "clear", "--format", "json"))
    assert cleared == {"removed": len(info["files"])}


def test_json_from_import_doctor_and_sync(repo, tmp_path):
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "a.yaml").write_text('id: "concept-1"\ntype: fact\ncontent: "Auth uses JWT"\n')
    (legacy / "b.yaml").write_text("not: [valid\n")
    dry = json.loads(tur(repo, "import", str(legacy), "--dry-run", "--format", "json").out)
    assert (len(dry["imported"]), dry["dry_run"], dry["commit"]) == (1, True, None)
    imported = json.loads(tur(repo, "import", str(legacy), "--format", "json").out)
    assert len(imported["imported"]) == 1 and imported["unchanged"] == []
    assert len(imported["failed"]) == 1 and "b.yaml" in imported["failed"][0]
    assert imported["commit"] == git(repo, "rev-parse", "refs/tur/memories").strip()
    assert _json(tur(repo, "doctor", "--format", "json")) == {
        "problems": [], "malformed": [], "repairs": [], "commit": None}
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    setup = _json(tur(repo, "remote", "setup", "--format", "json"))
    assert setup == {"remote": "origin", "added": True,
                     "fetch": "+refs/tur/memories:refs/tur/remotes/origin/memories"}
    assert _json(tur(repo, "sync", "--format", "json"))["unpublished"] is True
    synced = _json(tur(repo, "sync", "--publish", "--format", "json"))
    assert synced["status"] == "pushed" and synced["unpublished"] is False


# -- progress on a terminal ------------------------------------------------------------------------


def _run_on_a_terminal(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    """Run ``argv`` with stderr on a pseudo-terminal (stdout piped); return code, stdout, stderr."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=follower, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="100", TERM="xterm"))
    os.close(follower)
    drawn = bytearray()
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the other end is closed
            break
        if not chunk:
            break
        drawn += chunk
    out = proc.stdout.read()
    code = proc.wait()
    os.close(leader)
    return code, out, drawn.decode(errors="replace")


def test_a_long_import_shows_progress_on_a_terminal_and_nothing_when_piped(repo, tmp_path):
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    for number in range(400):
        (legacy / f"m{number}.yaml").write_text(
            f'id: "concept-{number}"\ntype: fact\ncontent: "Imported fact number {number}"\n')
    code, out, err = _run_on_a_terminal(
        [sys.executable, "-m", "gitmem", "-C", str(repo), "import", str(legacy)], tmp_path)
    assert code == 0 and out == "imported 400, unchanged 0, failed 0\n"
    assert "importing" in err and "/400" in err
    piped = tur(repo, "import", str(legacy))
    assert piped.err == "" and piped.out == "imported 0, unchanged 400, failed 0\n"
