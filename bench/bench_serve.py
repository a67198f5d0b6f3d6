"""``tur serve`` benchmark: the retrieval API, wake and memory endpoints, and MCP over HTTP.

Starts ``tur serve --port 0`` on the repository of ``bench_scale.py`` (10,000 synthetic
memories by default; built once and kept under ``--work``) and times, as a client sees it
(request sent, answer parsed), the median wall time of ``--runs`` calls of each kind, after
one call of each has warmed the server:

- ``POST /v1/retrieval/queries`` (bench_scale's query, limit 5), one new connection each,
  as ``curl`` makes;
- ``GET /v1/wake`` and ``GET /v1/memory/ID`` (the top hit);
- the ``recall`` tool over MCP's streamable HTTP transport (one session, the SDK's client),
  to compare with ``bench/bench_mcp.py``'s stdio figure;

and the time from starting the process to its URL line. Run from the repository root::

    python bench/bench_serve.py                   # 10,000 memories, 25 runs
    python bench/bench_serve.py --sizes 1000,10000 --runs 50
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_scale  # noqa: E402  (the repository builder, beside this file)

QUERY = bench_scale.QUERY


def _post(url: str, doc: dict[str, Any]) -> Any:
    request = urllib.request.Request(url, data=json.dumps(doc).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=120) as response:
        return json.loads(response.read())


def _timed(call: Callable[[], Any], runs: int) -> list[float]:
    call()  # warms, as any first call
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples


async def _mcp_recall(url: str, runs: int) -> list[float]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url + "/mcp") as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("recall", {"query": QUERY})
        samples = []
        for _ in range(runs):
            started = time.perf_counter()
            result = await session.call_tool("recall", {"query": QUERY})
            samples.append(time.perf_counter() - started)
            if result.is_error:
                sys.exit(f"bench: recall answered an error: {result.content[0].text}")
        return samples


def bench_server(repo: Path, runs: int) -> dict[str, list[float]]:
    """Start ``tur serve`` on ``repo``; seconds of each kind of call."""
    import anyio

    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "gitmem", "serve", "--port", "0", "--repo", str(repo)],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        assert process.stdout is not None
        found = re.search(r"listening on (http://\S+)", process.stdout.readline())
        if found is None:
            sys.exit("bench: tur serve printed no URL line")
        url = found.group(1)
        times = {"start to URL line": [time.perf_counter() - started]}
        top = _post(url + "/v1/retrieval/queries", {"query": QUERY, "limit": 5})["hits"][0]["id"]
        times["POST /v1/retrieval/queries"] = _timed(
            lambda: _post(url + "/v1/retrieval/queries", {"query": QUERY, "limit": 5}), runs)
        times["GET /v1/wake"] = _timed(lambda: _get(url + "/v1/wake"), runs)
        times["GET /v1/memory/ID"] = _timed(lambda: _get(f"{url}/v1/memory/{top}"), runs)
        times["recall over MCP (HTTP)"] = anyio.run(_mcp_recall, url, runs)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000",
                        help="comma-separated numbers of memories (default 10000)")
    parser.add_argument("--runs", type=int, default=25, help="calls per row (default 25)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "tur-bench-serve",
                        help="where the repositories are built and kept")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the repositories")
    args = parser.parse_args(argv)
    lines = ["| memories | call | median (ms) | min | max | calls |", "|---:|---|---:|---:|---:|---:|"]
    for size in [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]:
        repo = bench_scale.repository(args.work, size, args.rebuild)
        print(f"{size:,} memories: tur serve on {repo}", file=sys.stderr, flush=True)
        for name, samples in bench_server(repo, args.runs).items():
            lines.append(f"| {size:,} | `{name}` | {statistics.median(samples) * 1000:.1f} | "
                         f"{min(samples) * 1000:.1f} | {max(samples) * 1000:.1f} | {len(samples)} |")
    print(f"\ngitmem tur serve benchmark, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
          f"load average {os.getloadavg()[0]:.2f}\n")
    print("\n".join(lines))
    print(f"\nrerun: python bench/bench_serve.py --sizes {args.sizes} --runs {args.runs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
