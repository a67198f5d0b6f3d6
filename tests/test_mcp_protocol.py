"""``tur mcp`` on the wire: raw JSON-RPC frames to a real subprocess, on real temporary repositories.

Every malformed frame gets a JSON-RPC error (so no client waits forever), every argument is
bounded (one clear line, never an internal error), every request read before stdin closes is
answered, and outside a git repository the server still lists its tools (through the SDK's
own client) and answers each call with one error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from gitmem.mcp.bounds import MAX_FRAME_BYTES, MAX_QUERY_CHARS
from tests.test_cli import memory_ref, tur

INITIALIZE = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def exchange(cwd: Path, frames: list[Any], *args: str) -> tuple[dict[Any, dict], list[dict], str]:
    """Write the handshake and ``frames`` (objects, or raw bytes/str lines) to ``tur mcp ARGS``, close stdin.

    Returns the answers by id, the answers with id null in order, and the server's stderr;
    the server must have exited 0 on its own after answering.
    """
    lines = [json.dumps(INITIALIZE).encode(), json.dumps(INITIALIZED).encode()]
    for frame in frames:
        if isinstance(frame, bytes):
            lines.append(frame)
        elif isinstance(frame, str):
            lines.append(frame.encode())
        else:
            lines.append(json.dumps(frame).encode())
    proc = subprocess.run([sys.executable, "-m", "gitmem", "mcp", *args], cwd=cwd,
                          input=b"\n".join(lines) + b"\n", capture_output=True, env=dict(os.environ),
                          timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    by_id: dict[Any, dict] = {}
    unnamed: list[dict] = []
    for line in proc.stdout.decode().splitlines():
        answer = json.loads(line)
        assert answer["jsonrpc"] == "2.0"
        if answer.get("id") is None:
            unnamed.append(answer)
        else:
            assert answer["id"] not in by_id, f"answered twice: {answer}"
            by_id[answer["id"]] = answer
    assert "Traceback" not in proc.stderr.decode(), proc.stderr.decode()
    return by_id, unnamed, proc.stderr.decode()


def call(request_id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}


def tool_error(answer: dict) -> str:
    result = answer["result"]
    assert result["isError"], result
    (block,) = result["content"]
    assert "\n" not in block["text"], block["text"]
    assert "internal error" not in block["text"], block["text"]
    return block["text"]


def test_every_malformed_frame_gets_a_json_rpc_error_and_the_server_keeps_serving(repo):
    by_id, unnamed, _ = exchange(repo, [
        "this is not json",
        b"\xff\xfe not utf-8",
        "[1, 2, 3]",
        "42",
        {"jsonrpc": "2.0", "id": 10},
        {"jsonrpc": "1.0", "id": 11, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 12, "method": 7},
        {"jsonrpc": "2.0", "id": 13, "method": "no/such/method"},
        {"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": 5},
        {"jsonrpc": "2.0", "id": 15, "method": "tools/call", "params": ["learn"]},
        {"jsonrpc": "2.0", "id": 16, "method": "tools/call", "params": {}},
        {"jsonrpc": "2.0", "id": {"nested": 1}, "method": "tools/list"},
        {"jsonrpc": "2.0", "method": "notifications/whatever", "params": 3},
        "",
        {"jsonrpc": "2.0", "id": 17, "method": "tools/list"},
    ])
    assert [a["error"]["code"] for a in unnamed] == [-32700, -32700, -32600, -32600, -32600]
    assert by_id[10]["error"]["code"] == -32600
    assert by_id[11]["error"]["code"] == -32600
    assert by_id[12]["error"]["code"] == -32600
    assert by_id[13]["error"]["code"] == -32601
    assert by_id[14]["error"]["code"] == -32602 and by_id[15]["error"]["code"] == -32602
    assert by_id[16]["error"]["code"] == -32602
    assert all(a["error"]["message"] for a in [*unnamed, *(by_id[i] for i in range(10, 17))])
    assert len(by_id[17]["result"]["tools"]) == 12  # still serving


def test_a_frame_over_the_limit_is_refused_with_its_id_without_being_held(repo):
    huge = json.dumps(call(21, "recall", {"query": "x" * (MAX_FRAME_BYTES + 10)}))
    by_id, unnamed, _ = exchange(repo, [huge, call(22, "list", {})])
    assert by_id[21]["error"]["code"] == -32600 and "at most" in by_id[21]["error"]["message"]
    assert by_id[22]["result"]["structuredContent"]["total"] == 0
    assert unnamed == []


def test_every_request_read_before_stdin_closes_is_answered(repo):
    frames = [call(i, "learn", {"content": f"Worker {i} drains the outbox before it exits"})
              for i in range(1, 6)]
    frames += [call(6, "wake", {}), call(7, "list", {}), {"jsonrpc": "2.0", "id": 8, "method": "ping"}]
    by_id, unnamed, _ = exchange(repo, frames)
    assert sorted(k for k in by_id if k != "init") == list(range(1, 9)) and unnamed == []
    learned = {by_id[i]["result"]["structuredContent"]["memory"]["id"] for i in range(1, 6)}
    assert len(learned) == 5
    listed = json.loads(tur(repo, "list", "--format", "json").out)
    assert {m["id"] for m in listed} == learned  # every write answered is on the ref


def test_arguments_out_of_bounds_are_one_clear_line_and_change_nothing(repo):
    tur(repo, "learn", "The exporter writes one file per day")
    before = memory_ref(repo)
    ten_mb = "retry " * (10 * 1024 * 1024 // 6)
    by_id, _, _ = exchange(repo, [
        call(1, "learn", {"content": "anchored with a NUL", "file": "src/app.py\x00#L1-L2"}),
        call(2, "learn", {"content": "anchored far away", "file": "src/" + "d/" * 2500 + "app.py"}),
        call(3, "recall", {"query": ten_mb}),
        call(4, "show", {"id": "fact-\x00"}),
        call(5, "edit", {"id": "fact-1234", "file": "a" * 300 + "/app.py"}),
        call(6, "refute", {"id": "fact-1234", "reason": "x" * 20_000}),
        call(7, "learn", {"content": "nul \x00 in content"}),
        call(8, "recall", {"query": "exporter", "top_k": 10**6}),
        call(9, "list", {"file": "src/\x1b[31mapp.py"}),
        call(10, "recall", {"query": "exporter file per day"}),
    ])
    texts = {i: tool_error(by_id[i]) for i in range(1, 10)}
    assert texts[1] == "argument file: a path holds no NUL or control character"
    assert texts[2] == "argument file: String should have at most 4096 characters"
    assert texts[3] == f"argument query: String should have at most {MAX_QUERY_CHARS} characters"
    assert texts[4] == "argument id: holds no NUL or control character"
    assert texts[5] == "argument file: a path component is at most 255 bytes"
    assert texts[6].startswith("argument reason: String should have at most")
    assert texts[7] == "argument content: holds no NUL character"
    assert texts[8].startswith("argument top_k: Input should be less than or equal to")
    assert texts[9] == "argument file: a path holds no NUL or control character"
    assert by_id[10]["result"]["structuredContent"]["hits"]  # the server kept serving
    assert memory_ref(repo) == before


def test_outside_a_repository_the_server_lists_its_tools_and_each_call_says_why_it_cannot_serve(tmp_path):
    where = tmp_path / "not-a-repo"
    where.mkdir()
    log = tmp_path / "stderr.txt"

    async def main() -> Any:
        params = StdioServerParameters(command=sys.executable, args=["-m", "gitmem", "mcp"],
                                       env=dict(os.environ), cwd=str(where))
        with log.open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                answers = [await session.call_tool(t.name, {"id": "fact-1234", "content": "x",
                                                            "source": "fact-1234", "target": "fact-5678",
                                                            "type": "supports", "reason": "r"}
                                                   if t.input_schema.get("required") else {})
                           for t in tools.tools]
                return tools, answers

    tools, answers = anyio.run(main)
    assert len(tools.tools) == 12
    texts = {a.content[0].text for a in answers}
    assert all(a.is_error for a in answers)
    assert texts == {f"tur mcp was started outside a git repository ({where}): start it in a "
                     "repository, or register it with `tur mcp --repo PATH`"}
    assert "Traceback" not in log.read_text()
