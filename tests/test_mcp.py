"""``tur mcp``, started as a real subprocess and driven by the ``mcp`` SDK's own stdio client.

Every tool is called and every resource read on real temporary repositories; a memory learned
through MCP is on the ref and seen by the CLI, a write by the CLI is seen by the running
server, errors are tool errors carrying the CLI's one-line message (in the tools' words), and
concurrent calls lose no write.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from gitmem.api import Gitmem
from gitmem.errors import InvalidInput
from gitmem.mcp.wording import tool_words
from tests.conftest import commit_file, git
from tests.test_cli import memory_ref, tur

TOOLS = {"wake", "recall", "learn", "edit", "verify", "confirm", "refute", "forget", "link", "show", "list",
         "status"}


@asynccontextmanager
async def mcp_session(repo: Path, errlog, *extra: str) -> AsyncIterator[ClientSession]:
    """A client session with ``tur mcp --repo REPO`` running as a child process."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "gitmem", "mcp", "--repo", str(repo), *extra],
        env=dict(os.environ), cwd=str(repo.parent),
    )
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def run(repo: Path, tmp_path: Path, scenario: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    """Run ``scenario(session)`` against a fresh server; fail on a traceback in its stderr."""
    log = tmp_path / "server-stderr.txt"

    async def main() -> Any:
        with log.open("w") as errlog:
            async with mcp_session(repo, errlog) as session:
                return await scenario(session)

    result = anyio.run(main)
    assert "Traceback" not in log.read_text(), log.read_text()
    return result


def ok(result) -> dict:
    assert not result.is_error, result.content[0].text
    return result.structured_content


def error_text(result) -> str:
    assert result.is_error
    (block,) = result.content
    assert "\n" not in block.text.strip(), block.text
    return block.text


def cli_error(repo: Path, *args: str) -> str:
    """The CLI's one-line error for ``tur ARGS``, without its ``tur: error:`` prefix."""
    r = tur(repo, *args)
    assert r.code != 0
    (line,) = r.err.strip().splitlines()
    return line.removeprefix("tur: error: ")


# -- what the server offers ---------------------------------------------------------------------


def test_the_server_lists_typed_tools_and_the_three_resources(repo, tmp_path):
    async def scenario(s: ClientSession):
        return await s.list_tools(), await s.list_resources(), await s.list_resource_templates()

    tools, resources, templates = run(repo, tmp_path, scenario)
    by_name = {t.name: t for t in tools.tools}
    assert set(by_name) == TOOLS
    for tool in tools.tools:
        assert tool.description and tool.output_schema, tool.name
        assert tool.input_schema["type"] == "object"
    learn = by_name["learn"].input_schema
    assert learn["required"] == ["content"]
    assert learn["properties"]["type"]["enum"] == ["axiom", "core", "fact", "insight", "preference", None]
    assert set(learn["properties"]) == {"content", "type", "file", "confidence", "source_agent", "personal",
                                        "for"}
    assert set(by_name["recall"].input_schema["properties"]) >= {"query", "top_k", "include_stale", "file"}
    assert set(by_name["wake"].input_schema["properties"]) == {"token_budget", "max_chars", "explain"}
    assert set(by_name["list"].input_schema["properties"]) >= {"file", "status"}
    assert by_name["show"].annotations.read_only_hint and not by_name["learn"].annotations.read_only_hint
    assert by_name["forget"].annotations.destructive_hint
    edit_arguments = {"id", "content", "type", "file", "reanchor", "for"}
    assert set(by_name["edit"].input_schema["properties"]) == edit_arguments
    assert set(by_name["link"].input_schema["properties"]) == {"source", "target", "type", "remove"}
    assert by_name["link"].input_schema["properties"]["type"]["enum"] == [
        "supports", "contradicts", "refines", "supersedes", None]  # None: any, with `remove`
    assert "text" in by_name["wake"].output_schema["properties"]
    assert [str(r.uri) for r in resources.resources] == ["tur://wake"]
    assert sorted(t.uri_template for t in templates.resource_templates) == [
        "tur://context/recall?q={query}", "tur://memory/{id}"]


# -- every tool, and what the CLI sees ----------------------------------------------------------


def test_every_tool_answers_and_a_memory_learned_through_mcp_is_on_the_ref_for_the_cli(repo, tmp_path):
    commit_file(repo, "src/queue.py", "".join(f"q{i} = {i}\n" for i in range(1, 11)), "queue")

    async def scenario(s: ClientSession):
        out: dict[str, Any] = {}
        out["learn"] = ok(await s.call_tool("learn", {
            "content": "The signal queue uses SQLite in WAL mode", "file": "src/queue.py#L2-L4",
            "confidence": 0.9, "source_agent": "claude"}))
        out["other"] = ok(await s.call_tool("learn", {"content": "Deploys go out on Tuesdays",
                                                      "type": "preference"}))
        mid = out["learn"]["memory"]["id"]
        out["again"] = ok(await s.call_tool("learn", {"content": "The signal queue uses SQLite in WAL mode"}))
        out["wake"] = await s.call_tool("wake", {"token_budget": 500})
        out["explained"] = ok(await s.call_tool("wake", {"token_budget": 0, "explain": True}))
        out["recall"] = await s.call_tool("recall", {"query": "sqlite queue WAL", "top_k": 3})
        out["recall_file"] = ok(await s.call_tool("recall", {"query": "queue deploys",
                                                             "file": "src/queue.py"}))
        out["show"] = ok(await s.call_tool("show", {"id": mid[:9]}))
        out["list"] = ok(await s.call_tool("list", {}))
        out["list_file"] = ok(await s.call_tool("list", {"file": "./src/queue.py"}))
        out["list_limit"] = ok(await s.call_tool("list", {"limit": 1}))
        out["verify"] = ok(await s.call_tool("verify", {"id": mid}))
        out["status"] = ok(await s.call_tool("status", {}))
        out["refute"] = ok(await s.call_tool("refute", {"id": mid, "reason": "we moved to Postgres"}))
        out["list_refuted"] = ok(await s.call_tool("list", {"status": "refuted"}))
        out["recall_after"] = ok(await s.call_tool("recall", {"query": "sqlite queue WAL"}))
        return out

    out = run(repo, tmp_path, scenario)
    learned = out["learn"]
    mid = learned["memory"]["id"]
    assert learned["created"] and mid.startswith("fact-")
    assert learned["memory"] | {"observed_at": None, "last_verified_at": None, "git_sha": None} == {
        "id": mid, "type": "fact", "content": "The signal queue uses SQLite in WAL mode",
        "status": "fresh", "reason": None, "anchor": "src/queue.py#L2-L4", "confidence": 0.9,
        "observed_at": None, "author": "Test User <test@example.com>", "weight": None,
        "git_sha": None, "source_agent": "claude",
        "source_harness": None, "last_verified_at": None, "half_life_days": 14.0, "relations": [],
        "refuted_by": None, "visibility": [],
    }
    assert learned["commit"] and learned["memory"]["git_sha"] == git(repo, "rev-parse", "HEAD").strip()
    assert out["again"]["created"] is False
    assert out["again"]["notes"] == [f"{mid} was already known; re-verified it"]

    wake = out["wake"]
    assert not wake.is_error and wake.content[0].text == wake.structured_content["text"]
    assert "SQLite in WAL mode" in wake.structured_content["text"]
    assert wake.structured_content["budget"] == 500 and wake.structured_content["omitted"] == 0
    assert 0 < wake.structured_content["tokens"] <= 500 and wake.structured_content["included"] is None
    explained = out["explained"]
    assert explained["budget"] is None and set(explained["included"]) == {mid, out["other"]["memory"]["id"]}
    assert explained["excluded"] == {}

    recall = out["recall"]
    hits = recall.structured_content["hits"]
    assert hits[0]["id"] == mid and hits[0]["anchor"] == "src/queue.py#L2-L4" and hits[0]["score"] > 0
    assert f"[{mid}]" in recall.content[0].text == recall.structured_content["text"]
    # The file's memories come first (as `tur recall --file`), then the other hits.
    assert [h["id"] for h in out["recall_file"]["hits"]][0] == mid

    show = out["show"]
    assert show["id"] == mid and show["source_agent"] == "claude"
    assert [c["message"].splitlines()[0] for c in show["commits"]][-1].startswith(f"learn {mid}")
    assert out["list"]["total"] == 2 and {m["id"] for m in out["list"]["memories"]} >= {mid}
    assert all(0 <= m["weight"] <= 1 for m in out["list"]["memories"])
    assert [m["id"] for m in out["list_file"]["memories"]] == [mid]
    assert out["list_limit"]["truncated"] and len(out["list_limit"]["memories"]) == 1
    assert out["verify"] | {"weight": 0} == {
        "id": mid, "status": "fresh", "reason": None, "weight": 0, "changed": out["verify"]["changed"],
        "anchor": "src/queue.py#L2-L4", "moved": False, "hint": None, "commit": out["verify"]["commit"]}
    status = out["status"]
    assert status["counts"] == {"fresh": 2} and status["changes"] == []
    assert status["tip"] and status["head"] == git(repo, "rev-parse", "HEAD").strip()
    assert out["refute"]["memory"]["status"] == "refuted"
    assert out["refute"]["memory"]["reason"] == "we moved to Postgres"
    assert out["refute"]["memory"]["refuted_by"] == "Test User <test@example.com>"
    assert [m["id"] for m in out["list_refuted"]["memories"]] == [mid]
    assert mid not in [h["id"] for h in out["recall_after"]["hits"]]

    # On the ref, as the CLI's writes are: one commit per write, readable by `git log` and `tur`.
    log = git(repo, "log", "--format=%s", "refs/tur/memories").splitlines()
    assert log[-1].startswith(f"learn {mid}") and any(line.startswith("refute") for line in log)
    listed = json.loads(tur(repo, "list", "--format", "json").out)
    assert {m["id"]: m["status"] for m in listed}[mid] == "refuted"
    assert tur(repo, "show", mid).code == 0


def test_every_resource_reads(repo, tmp_path):
    mid = tur(repo, "learn", "The billing worker retries failed charges three times").out.strip()

    async def scenario(s: ClientSession):
        wake = await s.read_resource("tur://wake")
        recall = await s.read_resource("tur://context/recall?q=billing%20retries%20charges")
        nothing = await s.read_resource("tur://context/recall?q=zzqx")
        record = await s.read_resource(f"tur://memory/{mid}")
        with pytest.raises(MCPError) as unknown:
            await s.read_resource("tur://memory/fact-00000000")
        with pytest.raises(MCPError) as empty:
            await s.read_resource("tur://context/recall?q=")
        return wake, recall, nothing, record, str(unknown.value), str(empty.value)

    wake, recall, nothing, record, unknown, empty = run(repo, tmp_path, scenario)
    assert wake.contents[0].mime_type == "text/markdown"
    assert "retries failed charges" in wake.contents[0].text
    assert recall.contents[0].text.startswith("> [!NOTE] Working Hypotheses")
    assert f"[{mid}]" in recall.contents[0].text
    hook = tur(repo, "hook", "pre-turn", stdin=json.dumps({"prompt": "billing retries charges"}))
    assert recall.contents[0].text == hook.out  # the same block the pre-turn hook injects
    assert nothing.contents[0].text == ""
    assert json.loads(record.contents[0].text)["id"] == mid
    assert record.contents[0].mime_type == "application/json"
    assert unknown == tool_words(cli_error(repo, "show", "fact-00000000"))
    assert "recall needs a query" in empty


# -- errors -------------------------------------------------------------------------------------


def test_errors_are_tool_errors_with_the_cli_message_and_the_server_keeps_serving(repo, tmp_path):
    tur(repo, "learn", "a good memory about caching")
    from gitmem.store import Mutation, Store

    Store.discover(repo).transact(
        lambda tip: Mutation({"memories/ab/fact-ab000000.yaml": b"id: [unclosed\n"}, "bad push"))
    before = memory_ref(repo)

    async def scenario(s: ClientSession):
        calls = [
            ("show", {"id": "fact-zzzz0000"}),
            ("show", {"id": "fact-ab000000"}),
            ("verify", {"id": "fact-ab000000"}),
            ("learn", {"content": "x", "type": "bogus"}),
            ("learn", {"content": "x", "confidence": 2}),
            ("learn", {"content": "   "}),
            ("learn", {"content": "anchored", "file": "no/such/file.py"}),
            ("learn", {"content": "aws key AKIAIOSFODNN7EXAMPLE and secret "
                                  "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}),
            ("refute", {"id": "fact-zzzz0000", "reason": "wrong"}),
            ("recall", {"query": "caching", "top_k": 0}),
            ("wake", {"token_budget": -1}),
            ("list", {"status": "rotten"}),
            ("learn", {"content": "x", "confidence": "very"}),
            ("learn", {}),
        ]
        results = [await s.call_tool(name, args) for name, args in calls]
        after = ok(await s.call_tool("list", {}))
        return results, after

    results, after = run(repo, tmp_path, scenario)
    texts = [error_text(r) for r in results]
    assert texts[0] == tool_words(cli_error(repo, "show", "fact-zzzz0000"))
    assert texts[1] == tool_words(cli_error(repo, "show", "fact-ab000000"))
    assert "fact-ab000000" in texts[2] and "malformed" in texts[2]
    with pytest.raises(InvalidInput) as bad_type:  # the CLI's parser refuses it before the library
        Gitmem.open(repo).learn("x", type="bogus")
    assert texts[3] == tool_words(str(bad_type.value))
    assert texts[4] == tool_words(cli_error(repo, "learn", "x", "--confidence", "2"))
    assert texts[5] == tool_words(cli_error(repo, "learn", "   "))
    assert texts[6] == tool_words(cli_error(repo, "learn", "anchored", "--file", "no/such/file.py"))
    refused = cli_error(repo, "learn", "aws key AKIAIOSFODNN7EXAMPLE and secret "
                        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    # Same message; the hint points the agent away from an option no tool takes.
    assert texts[7].split(" — ")[0] == refused.split(" — ")[0]
    assert "--allow-secret" in refused and "leave the credential out" in texts[7]
    assert "pass --allow-secret" not in texts[7]
    assert texts[8] == tool_words(cli_error(repo, "refute", "fact-zzzz0000", "--reason", "wrong"))
    assert texts[9] == tool_words(cli_error(repo, "recall", "x", "--top-k", "0"))
    assert "token budget must be 0 or more, got -1 — 0 means no token cap" in texts[10]
    assert "unknown status 'rotten'" in texts[11]
    assert texts[12].startswith("argument confidence:")
    assert texts[13] == "argument content: Field required"
    assert memory_ref(repo) == before  # nothing stored changed
    assert after["total"] == 1 and any("fact-ab000000" in w for w in after["warnings"])


# -- other processes, concurrency ---------------------------------------------------------------


def test_the_running_server_sees_what_the_cli_writes(repo, tmp_path):
    async def scenario(s: ClientSession):
        assert ok(await s.call_tool("list", {}))["total"] == 0
        first = ok(await s.call_tool("wake", {}))
        mid = tur(repo, "learn", "The scheduler runs nightly at 02:00 UTC").out.strip()
        hits = ok(await s.call_tool("recall", {"query": "nightly scheduler"}))["hits"]
        woke = ok(await s.call_tool("wake", {}))
        assert tur(repo, "refute", mid, "--reason", "it is hourly now").code == 0
        shown = ok(await s.call_tool("show", {"id": mid}))
        again = ok(await s.call_tool("recall", {"query": "nightly scheduler"}))["hits"]
        return mid, first, hits, woke, shown, again

    mid, first, hits, woke, shown, again = run(repo, tmp_path, scenario)
    assert "nightly" not in first["text"]
    assert [h["id"] for h in hits] == [mid]
    assert "runs nightly" in woke["text"]
    assert shown["status"] == "refuted" and shown["reason"] == "it is hourly now"
    assert again == []


def test_concurrent_calls_and_cli_writes_lose_nothing(repo, tmp_path):
    cli_ids: list[str] = []

    def cli_writer() -> None:
        for i in range(3):
            r = tur(repo, "learn", f"CLI fact number {i} about the exporter")
            assert r.code == 0, r.err
            cli_ids.append(r.out.strip())

    async def scenario(s: ClientSession):
        results: list[Any] = []

        async def learn(i: int) -> None:
            results.append(await s.call_tool("learn", {"content": f"MCP fact number {i} about the importer"}))

        async def read(i: int) -> None:
            results.append(await s.call_tool("recall" if i % 2 else "wake",
                                             {"query": "importer"} if i % 2 else {}))

        writer = threading.Thread(target=cli_writer)
        writer.start()
        async with anyio.create_task_group() as group:
            for i in range(8):
                group.start_soon(learn, i)
                group.start_soon(read, i)
        writer.join()
        listed = ok(await s.call_tool("list", {"limit": 100}))
        return results, listed

    results, listed = run(repo, tmp_path, scenario)
    assert not any(r.is_error for r in results), [r.content[0].text for r in results if r.is_error]
    mcp_ids = {r.structured_content["memory"]["id"] for r in results if "memory" in r.structured_content}
    assert len(mcp_ids) == 8 and len(cli_ids) == 3
    assert {m["id"] for m in listed["memories"]} == mcp_ids | set(cli_ids)
    assert len(git(repo, "log", "--format=%H", "refs/tur/memories").split()) == 11


# -- the command --------------------------------------------------------------------------------


def test_tur_mcp_with_a_repo_that_is_not_one_is_one_line_and_serves_nothing(tmp_path):
    r = tur(tmp_path, "mcp", "--repo", str(tmp_path / "missing"))
    assert r.code != 0 and len(r.err.strip().splitlines()) == 1
    (tmp_path / "plain").mkdir()
    r = tur(tmp_path, "mcp", "--repo", str(tmp_path / "plain"))
    assert r.code != 0 and len(r.err.strip().splitlines()) == 1 and "not a git repository" in r.err


def test_file_paths_are_relative_to_the_repository_root_when_started_in_a_subdirectory(repo, tmp_path):
    (repo / "src" / "deep").mkdir()

    async def scenario(s: ClientSession):
        return ok(await s.call_tool("learn", {"content": "app.py has twenty lines",
                                              "file": "src/app.py#L1-L2"}))

    async def main() -> Any:
        with (tmp_path / "err.txt").open("w") as errlog:
            async with mcp_session(repo / "src" / "deep", errlog) as session:
                return await scenario(session)

    learned = anyio.run(main)
    assert learned["memory"]["anchor"] == "src/app.py#L1-L2"


def test_status_reports_what_verify_would_record_and_verify_records_it(repo, tmp_path):
    mid = tur(repo, "learn", "line 3 of the app says line 3", "--file", "src/app.py#L3-L3").out.strip()
    body = (repo / "src" / "app.py").read_text().replace("line 3\n", "line three\n")
    commit_file(repo, "src/app.py", body, "rename line 3")

    async def scenario(s: ClientSession):
        status = ok(await s.call_tool("status", {}))
        verified = ok(await s.call_tool("verify", {"id": mid[:10]}))
        listed = ok(await s.call_tool("list", {"status": "stale"}))
        return status, verified, listed

    status, verified, listed = run(repo, tmp_path, scenario)
    assert status["counts"] == {"stale": 1}
    assert [(c["id"], c["status"]) for c in status["changes"]] == [(mid, "stale")]
    assert verified["status"] == "stale" and verified["changed"] and verified["commit"]
    assert verified["reason"] == status["changes"][0]["reason"]
    assert [m["id"] for m in listed["memories"]] == [mid]
    assert json.loads(tur(repo, "list", "--format", "json").out)[0]["status"] == "stale"


def test_the_owner_hears_of_each_new_tip_once(repo):
    from gitmem.mcp.server import GitmemTools

    heard: list[str | None] = []
    tur(repo, "learn", "A first commit on the memory ref")
    gm = Gitmem.open(repo)
    tools = GitmemTools(gm, on_new_tip=lambda: heard.append(gm.tip()))
    tools.call(lambda: tools.wake(None, None, False))
    tools.call(lambda: tools.wake(None, None, False))
    assert heard == [gm.tip()]  # the same tip: told once
    tur(repo, "learn", "The owner hears of this commit")
    tools.call(lambda: tools.wake(None, None, False))
    assert len(heard) == 2 and heard[1] == gm.tip() != heard[0]
