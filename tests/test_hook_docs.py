"""The examples of docs/harness.md, "What each hook prints", are what the hooks print.

Each example is an HTML comment ``<!-- hook-example: HARNESS: tur hook ... -->`` followed by two
fenced blocks: the payload that harness documents, and what the command prints for it. The
test builds the repository the section describes (fixed commits, so the short sha in a stale
line is the same on every run), runs each payload through the real ``tur hook`` command in
process, and compares; the end-of-turn examples run after every session's first turn (which
changed nothing) and an edit of ``a.py``. Two things are normalised, as the section says: the
payload's ``/repo`` is the test repository's path, and the ``Observed`` stamps (the memories are learnt at the
time the test runs; a fact's 14-day half-life would otherwise drop them) read as in the doc.
The command of each example must be the one ``tur setup HARNESS`` wires.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from tests.conftest import commit_file, git, learn, tur_ok
from tests.test_repair_loop import AFTER, BEFORE

DOC = Path(__file__).resolve().parent.parent / "docs" / "harness.md"
_EXAMPLE = re.compile(
    r"<!-- hook-example: (\w+): (tur hook [^>]+?) -->\s*```\w*\n(.*?)^```\n\s*```\w*\n(.*?)^```",
    re.S | re.M)
_OBSERVED = re.compile(r"Observed \d{4}-\d{2}-\d{2}( \d{2}:\d{2} UTC)?")
#: The stamps the doc shows for the memories' observation time.
DOC_DAY, DOC_TIME = "2026-01-05", "2026-01-05 10:00 UTC"


def examples() -> list[tuple[str, str, str, str]]:
    """(harness, command, payload, output) of every example in docs/harness.md, in order."""
    return [(m[1], m[2], m[3], m[4]) for m in _EXAMPLE.finditer(DOC.read_text())]


def build_repo(repo: Path) -> tuple[str, str]:
    """``a.py`` with a fresh memory at L1 and a stale one at L21-L22 (its lines moved); their ids."""
    commit_file(repo, "a.py", BEFORE, "area")
    fresh = learn(repo, "x1 is the first constant", "--file", "a.py#L1-L1")
    stale = learn(repo, "area multiplies width by height", "--file", "a.py#L21-L22")
    commit_file(repo, "a.py", AFTER, "shorter, with a comment")
    tur_ok(repo, "verify")
    return fresh, stale


def normalised(out: str) -> str:
    """``out`` with each ``Observed`` stamp as the doc shows it."""
    return _OBSERVED.sub(lambda m: f"Observed {DOC_TIME if m[1] else DOC_DAY}", out)


def run_example(repo: Path, command: str, payload: str) -> str:
    """What ``command`` (``tur hook ...``) prints for ``payload`` in ``repo``, normalised."""
    args = shlex.split(command)[1:]
    return normalised(tur_ok(repo, *args, stdin=payload.replace('"/repo', json.dumps(str(repo))[:-1])))


def hook_of(command: str) -> str:
    """``pre-tool`` of ``tur hook pre-tool --format json``."""
    return shlex.split(command)[2]


def same_output(shown: str, printed: str) -> bool:
    """A JSON answer may be shown indented; any other output must be shown exactly."""
    if printed.startswith("{"):
        return json.loads(shown) == json.loads(printed) and printed.count("\n") == 1
    return shown == printed


def test_the_doc_has_an_example_of_each_hook_each_harness_is_wired_with():
    shown = {(harness, hook_of(command)) for harness, command, _, _ in examples()}
    for harness in ("claude", "codex", "gemini"):
        assert {(harness, hook) for hook in ("session-start", "pre-turn", "pre-tool", "stop")} <= shown
    assert {("copilot", "stop"), ("cursor", "stop")} <= shown


@pytest.mark.parametrize("harness", ["claude", "codex", "gemini", "copilot", "cursor"])
def test_each_example_runs_the_command_tur_setup_wires(harness, tmp_path):
    target = tmp_path / harness
    target.mkdir()
    git(target, "init", "-q", "-b", "main")
    tur_ok(target, "setup", harness)
    written = "\n".join(p.read_text() for p in target.rglob("*") if p.is_file() and ".git" not in p.parts)
    for shown_harness, command, _, _ in examples():
        if shown_harness == harness:
            assert f'"{command}"' in written, command


def test_the_hook_outputs_in_docs_harness_md_are_what_tur_hook_prints(repo):
    found = examples()
    assert found, "no <!-- hook-example: ... --> in docs/harness.md"
    fresh, stale = build_repo(repo)
    head = git(repo, "rev-parse", "--short=7", "HEAD").strip()
    intro = DOC.read_text().split("## What each hook prints", 1)[1].split("### ", 1)[0]
    assert all(f"`{name}`" in intro for name in (fresh, stale, head)), "the intro names other ids"
    pre_tool = [e for e in found if hook_of(e[1]) == "pre-tool"]
    assert pre_tool and all(fresh in out and stale in out and "Not fresh, anchored here" in out
                            for _, _, _, out in pre_tool)
    context = [e for e in found if hook_of(e[1]) != "stop"]
    starts = [e for e in found if hook_of(e[1]) == "stop" and "--start" in e[1].split()]
    stops = [e for e in found if hook_of(e[1]) == "stop" and "--start" not in e[1].split()]
    printed = {e: run_example(repo, e[1], e[2]) for e in context + starts}
    for _, command, payload, _ in stops:  # a first turn that changed nothing records the start
        assert run_example(repo, command, payload) in ("", "{}\n")  # Gemini's hooks print JSON only
    (repo / "a.py").write_text(AFTER + "y6 = 6\n")
    printed |= {e: run_example(repo, e[1], e[2]) for e in stops}
    for example in found:
        harness, command, _, shown = example
        assert same_output(shown, printed[example]), \
            f"{harness}: {command}\n--- doc\n{shown}--- printed\n{printed[example]}"
