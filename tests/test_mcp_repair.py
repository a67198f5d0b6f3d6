"""The repair loop through ``tur mcp``: edit, confirm, forget and link do what the CLI does.

Each write is made twice: once by the CLI on a real repository, once through the SDK's client
against a running ``tur mcp`` in a clone of it (same commits, same records): the records
written must be the same, and so must the errors (in the tools' words). The tool list is
small: its descriptions are short, dedented, and their tokens are counted against a cap.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from mcp import ClientSession

from gitmem.context.tokens import TokenCounter
from gitmem.mcp.wording import TOOL_ARGUMENTS, tool_words
from tests.conftest import commit_file, git, memory_ref, tur
from tests.test_mcp import cli_error, error_text, ok, run

#: Tokens (cl100k) all twelve tool descriptions may take together, and one of them.
DESCRIPTION_TOKENS_CAP = 200
ONE_DESCRIPTION_TOKENS_CAP = 25
#: Tokens of the whole ``tools/list`` answer (names, descriptions, input and output schemas):
#: 8,874 for the twelve tools (the output schemas take 6,623; the eight tools before took 6,832,
#: their descriptions 246 tokens, the twelve's 182).
TOOL_LIST_TOKENS_CAP = 9500

_TIMES = re.compile(r"_at$")


def record(repo: Path, memory_id: str) -> dict[str, Any] | None:
    """The stored record as ``tur show --format json`` gives it, without times and commits (its history)."""
    r = tur(repo, "show", memory_id, "--format", "json")
    if r.code != 0:
        return None

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items()
                    if not _TIMES.search(k) and k not in ("commits", "anchor_trail")}
        return value

    return strip(json.loads(r.out))


def ids(repo: Path) -> set[str]:
    return {m["id"] for m in json.loads(tur(repo, "list", "--format", "json").out)}


def twin_of(repo: Path) -> Path:
    """A clone of ``repo`` with its memory ref: the same commits, records and identity."""
    twin = repo.parent / "twin"
    git(repo.parent, "clone", "-q", str(repo), str(twin))
    git(twin, "fetch", "-q", "origin", "refs/tur/memories:refs/tur/memories")
    return twin


def cli_then_mcp(repo: Path, tmp_path: Path, cases: list[tuple[list[str], str, dict[str, Any], str]]):
    """For each (CLI args, tool, arguments, id to compare): the records the CLI wrote in ``repo``
    and the tool wrote in its twin (:func:`twin_of`), step by step, and the tool's answer.
    """
    twin = twin_of(repo)

    async def scenario(s: ClientSession):
        out = []
        for cli_args, tool, arguments, memory_id in cases:
            r = tur(repo, *cli_args)
            assert r.code == 0, r.err
            answer = ok(await s.call_tool(tool, arguments))
            out.append(((record(repo, memory_id), ids(repo)), (record(twin, memory_id), ids(twin)), answer))
        return out

    return run(twin, tmp_path, scenario)


def test_edit_confirm_forget_and_link_write_what_the_cli_writes(repo, tmp_path):
    body = "".join(f"line {i}\n" for i in range(1, 21))
    first = tur(repo, "learn", "lines 3 and 4 hold the retry loop", "--file", "src/app.py#L3-L4").out.strip()
    second = tur(repo, "learn", "the retry loop gives up after three tries").out.strip()
    other = tur(repo, "learn", "deploys go out on Tuesdays", "--type", "preference").out.strip()
    # Three lines above, and the loop's second line edited: stale, and confirm re-anchors it.
    commit_file(repo, "src/app.py", "a\nb\nc\n" + body.replace("line 4\n", "line 4 # edited\n"), "move")

    results = cli_then_mcp(repo, tmp_path, [
        (["edit", first, "--content", "the retry loop is on lines 6 and 7"], "edit",
         {"id": first, "content": "the retry loop is on lines 6 and 7"}, first),
        (["edit", second, "--type", "insight"], "edit", {"id": second, "type": "insight"}, second),
        (["verify", first, "--confirm"], "confirm", {"id": first}, first),
        (["edit", first, "--file", "src/app.py#L6-L7"], "edit",
         {"id": first, "file": "src/app.py#L6-L7"}, first),
        (["link", second, first, "--type", "refines"], "link",
         {"source": second, "target": first, "type": "refines"}, second),
        (["forget", other], "forget", {"id": other}, other),
    ])
    for by_cli, by_mcp, _ in results:
        assert by_mcp == by_cli
    edited, retyped, confirmed, reanchored, linked, forgot = (answer for _, _, answer in results)
    assert edited["changed"] and edited["memory"]["content"] == "the retry loop is on lines 6 and 7"
    assert retyped["memory"]["type"] == "insight" and retyped["memory"]["id"] == second
    assert reanchored["memory"]["anchor"] == "src/app.py#L6-L7" and reanchored["memory"]["status"] == "fresh"
    assert confirmed["id"] == first and confirmed["status"] == "fresh" and confirmed["commit"]
    assert confirmed["anchor"] == results[2][0][0]["provenance"]["context_ref"]  # where the CLI put it
    assert linked == {"source": second, "type": "refines", "target": first, "changed": True,
                      "commit": linked["commit"], "removed": False}
    assert {"type": "refines", "target": first} in results[4][1][0]["relations"]
    assert forgot == {"id": other, "commit": forgot["commit"], "restored": False} and results[5][1][0] is None
    # Forgotten, not lost: the record is in the ref's history.
    assert other in git(repo, "log", "-p", "refs/tur/memories", "--format=%s")


def test_reanchor_undo_of_forget_and_unlink_write_what_the_cli_writes(repo, tmp_path):
    body = "".join(f"line {i}\n" for i in range(1, 21))
    first = tur(repo, "learn", "lines 3 and 4 hold the retry loop", "--file", "src/app.py#L3-L4").out.strip()
    second = tur(repo, "learn", "the retry loop gives up after three tries").out.strip()
    assert tur(repo, "link", second, first, "--type", "refines").code == 0
    # Three lines inserted above: the loop's lines are now 6 and 7, as git's diff maps them.
    commit_file(repo, "src/app.py", "a\nb\nc\n" + body.replace("line 4\n", "line 4 # edited\n"), "move")

    results = cli_then_mcp(repo, tmp_path, [
        (["edit", first, "--reanchor"], "edit", {"id": first, "reanchor": True}, first),
        (["link", "--remove", second, first], "link", {"source": second, "target": first, "remove": True},
         second),
        (["forget", second], "forget", {"id": second}, second),
        (["forget", "--undo", second], "forget", {"id": second, "undo": True}, second),
    ])
    for by_cli, by_mcp, _ in results:
        assert by_mcp == by_cli
    reanchored, unlinked, forgot, restored = (answer for _, _, answer in results)
    assert reanchored["changed"] and reanchored["memory"]["anchor"] == "src/app.py#L6-L7"
    assert reanchored["memory"]["status"] == "fresh"
    assert unlinked["removed"] and unlinked["changed"] and unlinked["type"] is None
    assert not results[1][1][0].get("relations")
    assert results[2][1][0] is None
    assert restored == {"id": second, "commit": restored["commit"], "restored": True}
    assert results[3][1][0]["content"] == "the retry loop gives up after three tries"


def test_a_stale_memory_is_repaired_through_the_tools_alone(repo, tmp_path):
    mid = tur(repo, "learn", "line 3 is the third line", "--file", "src/app.py#L3-L3").out.strip()
    body = (repo / "src" / "app.py").read_text().replace("line 3\n", "line three\n")
    commit_file(repo, "src/app.py", body, "rename line 3")

    async def scenario(s: ClientSession):
        status = ok(await s.call_tool("status", {}))
        edited = ok(await s.call_tool("edit", {"id": mid, "content": "line 3 says three in words",
                                               "file": "src/app.py#L3-L3"}))
        after = ok(await s.call_tool("status", {}))
        again = ok(await s.call_tool("edit", {"id": mid, "content": "line 3 says three in words"}))
        return status, edited, after, again

    status, edited, after, again = run(repo, tmp_path, scenario)
    assert status["counts"] == {"stale": 1}
    assert edited["memory"]["status"] == "fresh" and edited["memory"]["anchor"] == "src/app.py#L3-L3"
    assert after["counts"] == {"fresh": 1} and after["changes"] == []
    assert again["changed"] is False and again["commit"] is None


def test_unlinking_from_a_target_forgotten_since_succeeds_and_names_its_whole_id(repo, tmp_path):
    a = tur(repo, "learn", "the parser reads flags").out.strip()
    b = tur(repo, "learn", "flags are read once at start").out.strip()
    assert tur(repo, "link", a, b, "--type", "supports").code == 0
    assert tur(repo, "forget", b).code == 0

    async def scenario(s: ClientSession):
        return ok(await s.call_tool("link", {"source": a, "target": b.rsplit("-", 1)[1][:4], "remove": True}))

    before = memory_ref(repo)
    unlinked = run(repo, tmp_path, scenario)
    assert unlinked["target"] == b and unlinked["changed"] is True and unlinked["removed"] is True
    assert memory_ref(repo) != before and not record(repo, a).get("relations")

    async def show_it(s: ClientSession):
        return error_text(await s.call_tool("show", {"id": b[:9]}))

    said = run(repo, tmp_path, show_it)
    assert f"no memory with id '{b}'" in said and f"`forget` with undo true, id {b} restores it" in said


def test_repair_errors_are_the_cli_errors_in_the_tools_words(repo, tmp_path):
    a = tur(repo, "learn", "the cache keeps one table per tree").out.strip()
    b = tur(repo, "learn", "the old cache kept every table", "--type", "insight").out.strip()
    before = memory_ref(repo)

    async def scenario(s: ClientSession):
        calls = [
            ("edit", {"id": a}),
            ("edit", {"id": a, "content": "  "}),
            ("edit", {"id": a, "file": "no/such/file.py"}),
            ("edit", {"id": "fact-zzzz0000", "content": "x"}),
            ("edit", {"id": a, "type": "bogus"}),
            ("confirm", {"id": "fact-zzzz0000"}),
            ("forget", {"id": "fact-zzzz0000"}),
            ("link", {"source": a, "target": a, "type": "supports"}),
            ("link", {"source": a, "target": "fact-zzzz0000", "type": "supports"}),
            ("link", {"source": a, "target": b, "type": "bogus"}),
            ("forget", {"id": a, "undo": True}),
            ("link", {"source": a, "target": b, "remove": True}),
            ("edit", {"id": a, "reanchor": True}),
        ]
        return [await s.call_tool(name, arguments) for name, arguments in calls]

    texts = [error_text(r) for r in run(repo, tmp_path, scenario)]
    assert texts[0] == tool_words(cli_error(repo, "edit", a))
    assert texts[0] == "nothing to edit — give `content`, `type`, `file`, `reanchor` or `for`"
    assert texts[1] == tool_words(cli_error(repo, "edit", a, "--content", "  "))
    assert texts[2] == tool_words(cli_error(repo, "edit", a, "--file", "no/such/file.py"))
    assert texts[3] == tool_words(cli_error(repo, "edit", "fact-zzzz0000", "--content", "x"))
    assert "bogus" in texts[4]
    assert texts[5] == tool_words(cli_error(repo, "verify", "fact-zzzz0000", "--confirm"))
    assert texts[6] == tool_words(cli_error(repo, "forget", "fact-zzzz0000"))
    assert texts[7] == tool_words(cli_error(repo, "link", a, a, "--type", "supports"))
    assert texts[8] == tool_words(cli_error(repo, "link", a, "fact-zzzz0000", "--type", "supports"))
    assert texts[9].startswith("argument type:") or "bogus" in texts[9]
    assert texts[10] == tool_words(cli_error(repo, "forget", "--undo", a))  # not forgotten
    assert texts[11] == tool_words(cli_error(repo, "link", "--remove", a, b))  # no such relation
    assert texts[12] == tool_words(cli_error(repo, "edit", a, "--reanchor"))  # no anchor
    for text in texts:  # no option of the CLI, no `tur <command>` that has a tool
        assert not re.search(r"--(content|type|file|reason|confirm|query)\b", text), text
        assert not re.search(r"`tur (show|list|verify|edit|forget|link|refute|recall|learn)\b", text), text
    assert memory_ref(repo) == before


def test_tool_descriptions_are_short_dedented_lines_within_a_token_cap(repo, tmp_path):
    async def scenario(s: ClientSession):
        return await s.list_tools()

    tools = run(repo, tmp_path, scenario).tools
    count = TokenCounter()
    descriptions = {t.name: t.description or "" for t in tools}
    for name, text in descriptions.items():
        assert text and text == text.strip() and "\n" not in text and "  " not in text, (name, text)
        assert count(text) <= ONE_DESCRIPTION_TOKENS_CAP, (name, count(text))
    assert sum(count(t) for t in descriptions.values()) <= DESCRIPTION_TOKENS_CAP
    listed = json.dumps([t.model_dump(mode="json", exclude_none=True) for t in tools])
    assert count(listed) <= TOOL_LIST_TOKENS_CAP, count(listed)
    # The wording table names exactly the arguments each tool takes.
    assert {t.name: set(t.input_schema["properties"]) for t in tools} == {
        name: set(arguments) for name, arguments in TOOL_ARGUMENTS.items()}


def test_hints_and_texts_name_the_tools_not_the_command_line(repo, tmp_path):
    mid = tur(repo, "learn", "line 3 is the third line", "--file", "src/app.py#L3-L3").out.strip()
    tur(repo, "learn", "the exporter writes one file a day " * 40)
    body = (repo / "src" / "app.py").read_text().replace("line 3\n", "line three\n")
    commit_file(repo, "src/app.py", body, "rename line 3")

    async def scenario(s: ClientSession):
        wake = ok(await s.call_tool("wake", {"token_budget": 120}))
        status = ok(await s.call_tool("status", {}))
        refute = await s.call_tool("refute", {"id": mid, "reason": " "})
        return wake, status, refute

    wake, status, refute = run(repo, tmp_path, scenario)
    cli_wake = tur(repo, "wake", "--token-budget", "120").out
    assert "`tur recall --query ...`" in cli_wake and "Use `recall` with query ..." in wake["text"]
    assert wake["text"] == tool_words(cli_wake)
    assert error_text(refute) == tool_words(cli_error(repo, "refute", mid, "--reason", " "))
    assert "--reason" not in error_text(refute)
    for change in status["changes"]:
        assert not change["hint"] or "tur verify" not in change["hint"]
