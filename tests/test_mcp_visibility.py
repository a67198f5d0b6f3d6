"""The MCP ``learn`` and ``edit`` tools bind a memory to agents with ``for``, as ``tur learn --for`` does.

The tools run in this process, as in ``tests/test_mcp_memory.py``: their bodies through
:class:`gitmem.mcp.tools.GitmemTools`, and their arguments through the server's own
validation (:func:`gitmem.mcp.server.build_server`), where a bad name is one line naming
the argument.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp.server.mcpserver.exceptions import ToolError

from gitmem.api import Gitmem, Via
from gitmem.mcp.bounds import MAX_AGENTS
from gitmem.mcp.server import build_server
from gitmem.mcp.tools import GitmemTools
from tests.conftest import memory_ref, tur


def call(server: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The structured result of the tool ``name`` called on ``server`` (asserted not an error)."""
    result = anyio.run(lambda: server.call_tool(name, arguments))
    assert not result.is_error, result.content[0].text
    return result.structured_content


def refused(server: Any, name: str, arguments: dict[str, Any]) -> str:
    """The one-line error of a call whose arguments the server refuses."""
    with pytest.raises(ToolError) as caught:
        anyio.run(lambda: server.call_tool(name, arguments))
    text = str(caught.value)
    assert "\n" not in text
    return text


def test_learn_and_edit_take_for_as_the_cli_does_and_the_binding_holds(repo):
    server = build_server(Gitmem.open(repo))
    learned = call(server, "learn", {"content": "The staging database is read-only", "for": "claude"})
    mid = learned["memory"]["id"]
    assert learned["created"] and learned["memory"]["visibility"] == ["claude"]
    assert learned["visibility_was"] is None
    # A comma list and a list, as `--for codex,gemini` and a repeated --for.
    many = call(server, "learn", {"content": "Lint runs before each commit",
                                  "for": ["codex,gemini", "codex"]})
    assert many["memory"]["visibility"] == ["codex", "gemini"]
    assert '"claude"' in tur(repo, "show", mid, "--format", "json").out

    tools = GitmemTools(Gitmem.open(repo), asking=Via(harness="codex"))
    woke = tools.call(lambda: tools.wake(None, None))
    assert mid not in woke.structured_content["text"]

    edited = call(server, "edit", {"id": mid, "for": ["codex"]})
    assert edited["changed"] and edited["memory"]["visibility"] == ["codex"]
    assert mid in tools.call(lambda: tools.wake(None, None)).structured_content["text"]
    unbound = call(server, "edit", {"id": mid, "for": []})  # `tur edit --everyone`
    assert unbound["changed"] and unbound["memory"]["visibility"] == []
    assert not call(server, "edit", {"id": mid, "for": []})["changed"]
    # No `for` and nothing else: refused, in the tools' words, with `for` among the choices.
    nothing = anyio.run(lambda: server.call_tool("edit", {"id": mid}))
    assert nothing.is_error
    assert nothing.content[0].text == "nothing to edit — give `content`, `type`, `file`, `reanchor` or `for`"


def test_a_bad_for_is_one_line_naming_the_argument_and_nothing_is_stored(repo):
    tur(repo, "learn", "The queue retries three times")
    before = memory_ref(repo)
    server = build_server(Gitmem.open(repo))
    for value, words in (("Claude", "agent name 'Claude' is not a lowercase identifier"),
                         (["ok", "x y"], "agent name 'x y' is not a lowercase identifier"),
                         ("", "an empty agent name"),
                         (["claude\n"], "holds no NUL or control character"),
                         (["a"] * (MAX_AGENTS + 1), f"at most {MAX_AGENTS} items"),
                         ("c" * 201, "at most 200 characters")):
        for name, arguments in (("learn", {"content": "Bound somewhere"}),
                                ("edit", {"id": "fact-", "content": "Bound somewhere"})):
            text = refused(server, name, {**arguments, "for": value})
            assert text.startswith("argument for") and words in text, (name, value, text)
    assert "use names such as claude, codex, gemini" in refused(
        server, "learn", {"content": "x", "for": "Claude"})
    assert memory_ref(repo) == before


def test_learning_again_with_another_for_says_the_binding_changed_on_both_surfaces(repo):
    mid = tur(repo, "learn", "Deploys go through staging first", "--for", "claude").out.strip()
    again = tur(repo, "learn", "Deploys go through staging first", "--for", "codex")
    assert again.code == 0 and again.out.strip() == mid
    assert f"binding of {mid} changed: for claude → for codex" in again.err
    same = tur(repo, "learn", "Deploys go through staging first", "--for", "codex", "--format", "json")
    assert "binding" not in same.err and '"visibility_was"' not in same.out
    tools = GitmemTools(Gitmem.open(repo))
    moved = tools.call(lambda: tools.learn("Deploys go through staging first", None, None, None, None,
                                           for_agents=[]))
    out = moved.structured_content
    assert out["visibility_was"] == ["codex"] and out["memory"]["visibility"] == []
    assert f"binding of {mid} changed: for codex → everyone" in out["notes"]
    # Without `for`, a known memory keeps its binding: nothing to say.
    kept = tools.call(lambda: tools.learn("Deploys go through staging first", None, None, None, None))
    assert kept.structured_content["visibility_was"] is None
    rebound = tur(repo, "learn", "Deploys go through staging first", "--for", "gemini", "--format", "json")
    assert '"visibility_was": []' in rebound.out and f"binding of {mid} changed: everyone → for gemini" \
        in rebound.err
