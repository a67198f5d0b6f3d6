"""``tur serve``, started as a real subprocess on a loopback port the system picks.

The retrieval API, the memory and wake endpoints and their errors are driven with a real HTTP
client (the standard library's), MCP over HTTP with the ``mcp`` SDK's streamable HTTP client;
every test waits for the server's URL line, never for time.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from gitmem.mcp.bounds import MAX_HTTP_BODY_BYTES, MAX_QUERY_CHARS, MAX_TOP_K
from tests.conftest import commit_file, git, learn, memory_ref, tur, tur_ok
from tests.test_mcp import TOOLS

_URL_LINE = re.compile(r"listening on (http://\S+)")


class Server(NamedTuple):
    """A running ``tur serve``: its base URL and process."""

    url: str
    process: subprocess.Popen[str]


@contextmanager
def serving(repo: Path, tmp_path: Path, *extra: str) -> Iterator[Server]:
    """``tur serve --port 0 --repo REPO EXTRA`` as a child process, until the block ends.

    Waits for the URL line on stdout (the server prints it once it answers); at the end,
    stops it with SIGTERM and checks that it exited 0 with no traceback.
    """
    errors = (tmp_path / "serve-stderr.txt").open("w+")
    process = subprocess.Popen([sys.executable, "-m", "gitmem", "serve", "--port", "0", "--repo", str(repo),
                                *extra], stdout=subprocess.PIPE, stderr=errors, text=True,
                               env=dict(os.environ), cwd=str(repo.parent))
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # blocks until the server answers, or ends
        found = _URL_LINE.search(line)
        assert found, f"no URL line: {line!r}; stderr: {(tmp_path / 'serve-stderr.txt').read_text()}"
        yield Server(found.group(1), process)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
        errors.seek(0)
        log = errors.read()
        errors.close()
    assert code == 0, log
    assert "Traceback" not in log, log


class Answer(NamedTuple):
    """One HTTP answer: status, headers, JSON body."""

    status: int
    headers: Any
    body: Any


def call(url: str, method: str = "GET", body: bytes | None = None,
         headers: dict[str, str] | None = None) -> Answer:
    """One request with urllib; an error status is an answer too."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return Answer(response.status, response.headers, json.loads(response.read()))
    except urllib.error.HTTPError as exc:
        with exc:
            return Answer(exc.code, exc.headers, json.loads(exc.read()))


def query(server: Server, doc: Any) -> Answer:
    """``POST /v1/retrieval/queries`` with ``doc`` as JSON."""
    return call(server.url + "/v1/retrieval/queries", "POST", json.dumps(doc).encode(),
                {"Content-Type": "application/json"})


def one_line_error(answer: Answer, status: int) -> str:
    assert answer.status == status, answer
    assert answer.headers["content-type"] == "application/json"
    assert set(answer.body) == {"error"} and "\n" not in answer.body["error"], answer.body
    return answer.body["error"]


@pytest.fixture
def memories(repo: Path) -> dict[str, str]:
    """Two anchored memories, the second linked to the first: ``{"pnpm": id, "retry": id}``."""
    commit_file(repo, "package.json", '{"packageManager": "pnpm@9"}\n', "pnpm")
    pnpm = learn(repo, "We use pnpm as the package manager, never npm or yarn", "--file", "package.json",
                 "--type", "preference")
    retry = learn(repo, "The job queue retries failed jobs 3 times before giving up",
                  "--file", "src/app.py#L3-L7")
    tur_ok(repo, "link", retry, pnpm, "--type", "refines")
    return {"pnpm": pnpm, "retry": retry}


def test_the_retrieval_api_ranks_hits_with_source_links_and_related_ids(repo, tmp_path, memories):
    head = git(repo, "rev-parse", "HEAD").strip()
    recalled = json.loads(tur_ok(repo, "recall", "how are failed jobs retried", "--format", "json"))
    with serving(repo, tmp_path) as server:
        answer = query(server, {"query": "how are failed jobs retried", "limit": 5})
        one = query(server, {"query": "how are failed jobs retried", "limit": 1})
        with ThreadPoolExecutor(8) as pool:  # calls at once are answered one at a time, all alike
            together = list(pool.map(lambda _: query(server, {"query": "how are failed jobs retried"}),
                                     range(8)))
    assert answer.status == 200 and answer.headers["content-type"] == "application/json"
    hits = answer.body["hits"]
    # The same facade recall as the CLI's: the same memories in the same order.
    assert [h["id"] for h in hits] == [h["id"] for h in recalled["hits"]]
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    top = hits[0]
    assert top | {"score": None} == {
        "rank": 1, "id": memories["retry"], "type": "fact",
        "content": "The job queue retries failed jobs 3 times before giving up", "status": "fresh",
        "reason": None, "anchor": {"link": "src/app.py#L3-L7", "path": "src/app.py", "commit": head},
        "related": [memories["pnpm"]], "score": None,
    }
    assert top["score"] > 0 and [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert answer.body["query"] == "how are failed jobs retried" and answer.body["warnings"] == []
    assert [h["id"] for h in one.body["hits"]] == [memories["retry"]]
    assert all(a.status == 200 and a.body == answer.body for a in together)


def test_memory_and_wake_endpoints_give_the_mcp_tools_shapes(repo, tmp_path, memories):
    with serving(repo, tmp_path) as server:
        shown = call(f"{server.url}/v1/memory/{memories['retry']}")
        by_prefix = call(f"{server.url}/v1/memory/{memories['retry'][:9]}")
        woken = call(f"{server.url}/v1/wake?budget=60")
        unbounded = call(f"{server.url}/v1/wake?budget=0")
    assert shown.status == 200 and shown.body == by_prefix.body
    assert shown.body["id"] == memories["retry"] and shown.body["anchor"] == "src/app.py#L3-L7"
    assert shown.body["relations"] == [{"type": "refines", "target": memories["pnpm"]}]
    # The show tool's record and commits, newest first: the link, then the learn.
    assert [c["sha"] for c in shown.body["commits"]][0] == memory_ref(repo)
    assert len(shown.body["commits"]) == 2
    assert woken.status == 200 and woken.body["budget"] == 60 and woken.body["tokens"] <= 60
    assert unbounded.body["budget"] is None
    assert memories["pnpm"] in unbounded.body["text"] and memories["retry"] in unbounded.body["text"]
    assert unbounded.body["omitted"] == 0


def test_bad_requests_are_json_errors_and_the_server_keeps_serving(repo, tmp_path, memories):
    with serving(repo, tmp_path) as server:
        api = server.url + "/v1/retrieval/queries"
        unknown = call(f"{server.url}/v1/memory/fact-00000000")
        assert "fact-00000000" in one_line_error(unknown, 404)
        assert "no such endpoint: GET /v1/nothing" in one_line_error(call(server.url + "/v1/nothing"), 404)
        wrong_method = call(api)
        assert one_line_error(wrong_method, 405) == "GET is not allowed on /v1/retrieval/queries; use POST"
        assert wrong_method.headers["allow"] == "POST"
        deleted = call(f"{server.url}/v1/wake", "DELETE")
        assert one_line_error(deleted, 405).startswith("DELETE is not allowed")
        form = call(api, "POST", b"query=x", {"Content-Type": "application/x-www-form-urlencoded"})
        assert "application/json" in one_line_error(form, 415)
        broken = call(api, "POST", b"{", {"Content-Type": "application/json"})
        assert "not JSON" in one_line_error(broken, 400)
        for doc, words in [
            (["query"], "one JSON object"),
            ({"query": 3}, "query: a string is required"),
            ({}, "query: a string is required"),
            ({"query": "x", "top_k": 3}, "unknown field 'top_k'"),
            ({"query": "x", "limit": 0}, f"limit: an integer from 1 to {MAX_TOP_K}, got 0"),
            ({"query": "x", "limit": True}, "got true"),
            ({"query": "x", "limit": MAX_TOP_K + 1}, "limit: an integer"),
            ({"query": "x" * (MAX_QUERY_CHARS + 1)}, f"a query is at most {MAX_QUERY_CHARS} characters"),
            ({"query": "a\x00b"}, "query: holds no NUL character"),
            ({"query": ""}, "recall needs a query"),  # the facade's own check, as the CLI says it
        ]:
            assert words in one_line_error(query(server, doc), 400), doc
        assert "budget: an integer from 0" in one_line_error(call(f"{server.url}/v1/wake?budget=-1"), 400)
        assert "budget: an integer" in one_line_error(call(f"{server.url}/v1/wake?budget=lots"), 400)
        assert "unknown parameter 'x'" in one_line_error(call(f"{server.url}/v1/wake?x=1"), 400)
        assert "id: holds no NUL" in one_line_error(call(f"{server.url}/v1/memory/fact%01x"), 400)
        big = json.dumps({"query": "x" * MAX_HTTP_BODY_BYTES}).encode()
        too_big = call(api, "POST", big, {"Content-Type": "application/json"})
        assert f"at most {MAX_HTTP_BODY_BYTES} bytes" in one_line_error(too_big, 413)
        # A chunked body declares no length: it is cut off as it arrives.
        host, port = server.url.removeprefix("http://").rsplit(":", 1)
        connection = http.client.HTTPConnection(host, int(port), timeout=60)
        connection.request("POST", "/v1/retrieval/queries", body=iter([b" " * 65536] * 5),
                           headers={"Content-Type": "application/json"}, encode_chunked=True)
        chunked = connection.getresponse()
        assert chunked.status == 413 and "at most" in json.loads(chunked.read())["error"]
        connection.close()
        # A request naming another host (a rebound DNS name) is refused, as the SDK refuses it on /mcp.
        rebound = call(f"{server.url}/v1/wake", headers={"Host": "evil.example:80"})
        assert one_line_error(rebound, 421) == "Invalid Host header"
        rebound_post = call(api, "POST", b"{", {"Content-Type": "application/json", "Host": "evil.example"})
        assert one_line_error(rebound_post, 421) == "Invalid Host header"  # before the body is read
        foreign = call(f"{server.url}/v1/memory/{memories['pnpm']}", headers={"Origin": "http://evil.example"})
        assert one_line_error(foreign, 403) == "Invalid Origin header"
        assert query(server, {"query": "package manager"}).body["hits"][0]["id"] == memories["pnpm"]


async def _mcp_scenario(url: str, memories: dict[str, str]) -> tuple[set[str], dict, dict]:
    async with streamable_http_client(url + "/mcp") as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = {tool.name for tool in (await session.list_tools()).tools}
        recalled = await session.call_tool("recall", {"query": "which package manager do we use"})
        learned = await session.call_tool("learn", {"content": "Releases are cut from the release branch"})
        assert not recalled.is_error and not learned.is_error, (recalled.content, learned.content)
        return listed, recalled.structured_content, learned.structured_content


def test_mcp_over_http_serves_the_tur_mcp_tools_and_shares_the_store_with_the_api(repo, tmp_path, memories):
    with serving(repo, tmp_path) as server:
        listed, recalled, learned = anyio.run(_mcp_scenario, server.url, memories)
        # What MCP learned, the retrieval API finds at once: one store, one server.
        found = query(server, {"query": "where are releases cut from"})
    assert listed == TOOLS
    assert recalled["hits"][0]["id"] == memories["pnpm"]
    assert found.body["hits"][0]["id"] == learned["memory"]["id"]
    assert found.body["hits"][0] | {"score": None} == {
        "rank": 1, "id": learned["memory"]["id"], "type": "fact",
        "content": "Releases are cut from the release branch",
        "status": "fresh", "reason": None, "anchor": None, "related": [], "score": None}
    assert learned["commit"] == memory_ref(repo)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_server_cleanly(repo, tmp_path, stop):
    with serving(repo, tmp_path) as server:
        assert call(server.url + "/v1/wake").status == 200
        server.process.send_signal(stop)
        assert server.process.wait(timeout=60) == 0  # the block's end checks stderr too
    assert (tmp_path / "serve-stderr.txt").read_text().strip().splitlines()[-1] == "tur serve: stopped"


def test_a_host_beyond_loopback_is_served_with_a_warning(repo, tmp_path):
    with serving(repo, tmp_path, "--host", "0.0.0.0") as server:
        port = server.url.rsplit(":", 1)[1]
        assert call(f"http://127.0.0.1:{port}/v1/wake").status == 200
    warning = (tmp_path / "serve-stderr.txt").read_text().splitlines()[0]
    assert warning.startswith("tur serve: warning: listening on 0.0.0.0, beyond this machine")


def test_bad_options_are_one_line_and_nothing_listens(repo, tmp_path):
    r = tur(repo, "serve", "--port", "70000")
    assert (r.code, r.err) == (2, "tur: error: --port must be from 0 to 65535, got 70000\n")
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        r = tur(repo, "serve", "--port", str(port))
    assert r.code == 2 and r.out == ""
    (line,) = r.err.splitlines()
    assert line.startswith(f"tur: error: cannot listen on 127.0.0.1:{port}: ") and "--port" in line
    outside = tmp_path / "plain"
    outside.mkdir()
    r = tur(outside, "serve", "--port", "0")
    assert r.code != 0 and len(r.err.splitlines()) == 1 and r.err.startswith("tur: error: ")
