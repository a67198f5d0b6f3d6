"""What a wake, recall or list that finds nothing says: one line for a person, nothing for a pipe.

The words come from one place (:func:`gitmem.api.empty_notice`); the CLI prints them on a
terminal's stderr, the MCP tools give them as their text, and a pipe gets empty output.
"""

from __future__ import annotations

import io
from pathlib import Path

from gitmem.api import Gitmem
from gitmem.cli import Env, main
from tests.conftest import Result, tur


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def tur_on_terminal(repo: Path, *args: str) -> Result:
    """``tur ARGS`` with stdout and stderr both terminals (as a person at the keyboard runs it)."""
    out, err = _Terminal(), _Terminal()
    code = main(["-C", str(repo), *args], Env(inp=io.StringIO(""), out=out, err=err))
    return Result(code, out.getvalue(), err.getvalue())


def test_a_recall_without_hits_says_so_once_on_a_terminal_and_nothing_on_a_pipe(repo):
    tur(repo, "learn", "The build runs with make")
    shown = tur_on_terminal(repo, "recall", "kubernetes")
    assert shown == (0, "", 'no memory matches "kubernetes"\n')
    assert tur(repo, "recall", "kubernetes") == (0, "", "")
    found = tur_on_terminal(repo, "recall", "build")
    assert "The build runs with make" in found.out and found.err == ""


def test_a_recall_by_file_without_hits_names_the_file(repo):
    tur(repo, "learn", "The build runs with make")
    assert tur_on_terminal(repo, "recall", "--file", "src/app.py").err == (
        'no memory matches "src/app.py"\n')


def test_a_wake_in_an_empty_store_says_there_are_no_memories_yet(repo):
    assert tur_on_terminal(repo, "wake") == (0, "", "no memories yet: tur learn TEXT\n")
    assert tur(repo, "wake") == (0, "", "")


def test_a_wake_whose_memories_are_all_refuted_does_not_call_the_store_empty(repo):
    mid = tur(repo, "learn", "The build runs with make").out.strip()
    tur(repo, "refute", mid, "--reason", "it uses ninja")
    shown = tur_on_terminal(repo, "wake")
    assert shown.code == 0 and shown.out == ""
    assert shown.err == 'no memory matches ""\n'


def test_an_empty_list_prints_no_header(repo):
    assert tur(repo, "list") == (0, "", "")
    assert tur_on_terminal(repo, "list") == (0, "", "no memories yet: tur learn TEXT\n")
    tur(repo, "learn", "The build runs with make")
    assert tur_on_terminal(repo, "list", "--status", "stale") == (
        0, "", 'no memory matches "status=stale"\n')
    listed = tur(repo, "list").out.splitlines()
    assert listed[0].split()[:2] == ["ID", "STATUS"] and len(listed) == 2


def test_the_mcp_tools_say_what_the_cli_says(repo):
    from gitmem.mcp.server import GitmemTools

    tools = GitmemTools(Gitmem.open(repo))
    (block,) = tools.call(lambda: tools.wake(None, None, False)).content
    assert block.text == tur_on_terminal(repo, "wake").err.strip() == "no memories yet: tur learn TEXT"
    tur(repo, "learn", "The build runs with make")
    result = tools.call(lambda: tools.recall("kubernetes", None, False, None))
    (block,) = result.content
    assert block.text == tur_on_terminal(repo, "recall", "kubernetes").err.strip()
    assert result.structured_content["hits"] == [] and result.structured_content["text"] == ""
