"""MCP benchmark: ``wake`` and ``recall`` calls on a running ``tur mcp`` server.

Starts ``tur mcp`` on the repository of ``bench_scale.py`` (10,000 synthetic memories by
default; built once and kept, like that benchmark's) and talks to it with the ``mcp`` SDK's
own stdio client, as a harness would. Each figure is the median wall time of one call as the
client sees it (request written, result parsed), over ``--runs`` calls, and beside it the
median CPU time the server process spent on the call (Linux: its CPU clock; less disturbed
than wall time by other work on a busy machine):

- ``wake`` and ``recall`` on a server that has already answered once (the steady state);
- ``wake`` and ``recall`` each right after a ``learn`` through MCP (the write moves the memory
  ref; the server warms the new tip before it answers the learn);
- ``learn`` through MCP (one commit, then the warm-up of the new tip);
- ``recall`` right after a ``tur learn`` by another process (the CLI), which the server only
  sees on its next call and so pays for there.

Run from the repository root::

    python bench/bench_mcp.py                     # 10,000 memories, 15 runs
    python bench/bench_mcp.py --sizes 1000,10000 --runs 25

The first two kinds of row have a target of 50 ms at 10,000 memories (GitHub issue 14).

Memory (GitHub issue 29): ``--rss N`` instead starts ``tur mcp`` on a new small repository
and makes N write calls through raw JSON-RPC frames, printing the server's resident set size
(``VmRSS`` of ``/proc/PID/status``, MiB) every N/10 calls and its growth per call over the
second half (KiB; the first half fills the bounded memos). ``--mix learn`` learns N new
memories (the store grows, and so does what it legitimately holds); ``--mix learn-forget``
(the default) learns and forgets in turn, so the store keeps its size and RSS should stay
flat. Each text has a new number, so every learn brings a new word and a new text to
count: the word memos and token counts fill towards their bounds as the calls go on.
``--distinct K`` takes the numbers modulo K, so that after the first K texts the memos hold
what they will hold and any growth left is a leak. ``--big`` first stores one 900 KB
record. At the end a new server is started on the store the calls left and makes one more
write: its RSS is what that store costs a server, and the difference from the long-running
one is what the long-running one holds beyond it (the BPE tables, loaded once by the first
text with a piece never counted before, and the bounded memos). ``--code PATH`` runs the
server from another checkout (``--code
/path/to/old/checkout`` gives the "before" figure)::

    python bench/bench_mcp.py --rss 10000
    python bench/bench_mcp.py --rss 10000 --distinct 500
    python bench/bench_mcp.py --rss 10000 --mix learn --big
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_scale  # noqa: E402  (the repository builder, beside this file)

QUERY = bench_scale.QUERY
TARGET_S = 0.050
TARGET_ROWS = {"wake", "recall", "wake after learn", "recall after learn"}
TARGET_SIZE = 10_000


def _server_clock() -> int | None:
    """The CPU clock of the ``tur mcp`` child process (Linux), or ``None``."""
    for children in Path("/proc/self/task").glob("*/children"):
        for pid in children.read_text().split():
            try:
                if b"mcp" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return ((~int(pid)) << 3) | 2  # CPUCLOCK_SCHED of the whole process
            except OSError:
                continue
    return None


async def _timed(call: Callable[[], Awaitable[Any]], clock: int | None) -> tuple[float, float | None]:
    """Wall seconds of one call as the client sees it, and the server's CPU seconds in it."""
    cpu = time.clock_gettime(clock) if clock is not None else None
    started = time.perf_counter()
    result = await call()
    elapsed = time.perf_counter() - started
    if getattr(result, "is_error", False):
        sys.exit(f"bench: the server answered with an error: {result.content[0].text}")
    return elapsed, (time.clock_gettime(clock) - cpu if clock is not None and cpu is not None else None)


async def bench_server(repo: Path, runs: int) -> dict[str, list[tuple[float, float | None]]]:
    """Start ``tur mcp`` on ``repo``; (wall, server CPU) seconds of each kind of call."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "gitmem", "mcp", "--repo", str(repo)], env=env)
    times: dict[str, list[tuple[float, float | None]]] = {name: [] for name in (
        "wake", "recall", "learn", "wake after learn", "recall after learn",
        "recall after a CLI learn")}
    counter = iter(range(10**9))

    def learn_args() -> dict[str, Any]:
        return {"content": f"Bench note {time.time_ns()} about the queue retry policy {next(counter)}",
                "source_agent": "bench"}

    with tempfile.TemporaryFile("w+") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            clock = _server_clock()

            async def timed(name: str, tool: str, args: dict[str, Any] | None = None) -> None:
                times[name].append(await _timed(lambda: s.call_tool(tool, args or {}), clock))

            await _timed(lambda: s.call_tool("wake", {}), clock)  # primes, as any first call
            await _timed(lambda: s.call_tool("recall", {"query": QUERY}), clock)
            for _ in range(runs):
                await timed("wake", "wake")
                await timed("recall", "recall", {"query": QUERY})
            for _ in range(runs):
                await timed("learn", "learn", learn_args())
                await timed("wake after learn", "wake")
                await timed("learn", "learn", learn_args())
                await timed("recall after learn", "recall", {"query": QUERY})
            for i in range(min(runs, 3)):  # each costs a cold build: a few are enough
                subprocess.run([sys.executable, "-m", "gitmem", "-C", str(repo), "learn",
                                f"Bench CLI note {time.time_ns()} {i}"], env=env, check=True,
                               capture_output=True)
                await timed("recall after a CLI learn", "recall", {"query": QUERY})
    return times


def table(rows: list[tuple[int, str, list[tuple[float, float | None]]]]) -> str:
    """The figures as a Markdown table (milliseconds)."""
    lines = ["| memories | call | wall median | wall min | wall max | server CPU median | calls | target |",
             "|---:|---|---:|---:|---:|---:|---:|---|"]
    for size, name, samples in rows:
        walls = [wall for wall, _ in samples]
        cpus = [cpu for _, cpu in samples if cpu is not None]
        median = statistics.median(walls)
        cpu = f"{statistics.median(cpus) * 1000:.1f}" if cpus else "-"
        verdict = ""
        if size == TARGET_SIZE and name in TARGET_ROWS:
            verdict = f"{'ok' if median <= TARGET_S else 'MISSED'} (<= {TARGET_S * 1000:.0f} ms)"
        lines.append(f"| {size:,} | `{name}` | {median * 1000:.1f} | {min(walls) * 1000:.1f} | "
                     f"{max(walls) * 1000:.1f} | {cpu} | {len(samples)} | {verdict} |")
    return "\n".join(lines)


def _rss_mib(pid: int) -> tuple[float, float]:
    """(resident set size, its anonymous part) of process ``pid``, in MiB.

    The rest of the RSS is file-backed: the pack and index files libgit2 maps, which grow with
    the memory ref's history and which the kernel can drop at any time.
    """
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon"):
            fields[key] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["RssAnon"]


def _server(work: Path, code: Path,
            env: dict[str, str]) -> tuple[subprocess.Popen, Callable[..., dict[str, Any]]]:
    """A ``tur mcp`` on ``work`` run from ``code``, initialised, and a function that calls it."""
    import json

    proc = subprocess.Popen([sys.executable, "-m", "gitmem", "mcp", "--repo", str(work)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=str(code))
    assert proc.stdin is not None and proc.stdout is not None
    ids = iter(range(1, 10**9))

    def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": next(ids), "method": method,
                                      "params": params}) + "\n").encode())
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        if "error" in answer or answer["result"].get("isError"):
            sys.exit(f"bench: the server answered with an error: {answer}")
        return answer["result"]

    ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "bench", "version": "1"}})
    proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    return proc, ask


def _learn(ask: Callable[..., dict[str, Any]], k: int, word: str = "") -> str:
    """Learn the bench's text number ``k`` (and ``word``) through ``ask``; the new memory's id."""
    result = ask("tools/call", {"name": "learn", "arguments": {
        "content": f"Bench note {k}: the queue retries with backoff {k % 97}{word}"}})
    return result["structuredContent"]["memory"]["id"]


def bench_rss(calls: int, mix: str, big: bool, code: Path,
              distinct: int | None = None,
              ) -> tuple[list[tuple[int, float, float, float]], tuple[float, float]]:
    """(calls made, server RSS and its anonymous part in MiB, seconds) every ``calls // 10``
    write calls of ``tur mcp``, and the RSS (total, anonymous; MiB) of a new server on the
    store the calls left, after one write of the same mix with a word never counted (so it
    loads the BPE tables too): what the store itself costs, so that the difference is what
    the long-running server holds beyond it.

    ``distinct``: how many different texts are learned (numbers taken modulo it); ``None``:
    every text is new.
    """
    work = Path(tempfile.mkdtemp(prefix="tur-bench-rss-"))
    env = dict(os.environ, PYTHONPATH=str(code), GIT_AUTHOR_NAME="Bench",
               GIT_AUTHOR_EMAIL="bench@example.com", GIT_COMMITTER_NAME="Bench",
               GIT_COMMITTER_EMAIL="bench@example.com")
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "app.py").write_text("".join(f"line {i}\n" for i in range(1, 41)))
    subprocess.run(["git", "-C", str(work), "add", "."], check=True)
    subprocess.run(["git", "-C", str(work), "commit", "-qm", "init"], check=True, env=env)
    if big:
        subprocess.run([sys.executable, "-m", "gitmem", "-C", str(work), "learn", "-"],
                       input=("big " * 230_000).encode(), check=True, env=env, capture_output=True)
    proc, ask = _server(work, code, env)
    samples = [(0, *_rss_mib(proc.pid), 0.0)]
    started = time.perf_counter()
    last: str | None = None
    for n in range(1, calls + 1):
        if mix == "learn-forget" and last is not None:
            ask("tools/call", {"name": "forget", "arguments": {"id": last}})
            last = None
        else:
            last = _learn(ask, n % distinct if distinct else n)
        if n % max(1, calls // 10) == 0:
            samples.append((n, *_rss_mib(proc.pid), time.perf_counter() - started))
            print(f"{n:,} calls: {samples[-1][1]:.1f} MiB ({samples[-1][2]:.1f} anonymous)",
                  file=sys.stderr, flush=True)
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait()
    fresh, ask = _server(work, code, env)
    # A word no text had, so that the new server loads the BPE tables (about 40 MiB) as the
    # long-running one did on its first learn: the store's piece counts spare it otherwise.
    unseen = "".join(chr(ord("a") + int(c, 16)) for c in uuid.uuid4().hex[:16])
    last = _learn(ask, calls + 1, f", {unseen}")
    if mix == "learn-forget":
        ask("tools/call", {"name": "forget", "arguments": {"id": last}})
    fresh_rss = _rss_mib(fresh.pid)
    assert fresh.stdin is not None
    fresh.stdin.close()
    fresh.wait()
    return samples, fresh_rss


def main(argv: list[str] | None = None) -> int:
    import anyio

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000",
                        help="comma-separated numbers of memories (default 10000)")
    parser.add_argument("--runs", type=int, default=15, help="calls per row (default 15)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "tur-bench",
                        help="where the repositories are built and kept (shared with bench_scale.py)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the repositories")
    parser.add_argument("--rss", type=int, metavar="N",
                        help="measure the server's RSS over N write calls")
    parser.add_argument("--mix", choices=["learn-forget", "learn"], default="learn-forget",
                        help="with --rss: the write calls (default learn-forget: the store keeps its size)")
    parser.add_argument("--distinct", type=int, metavar="K",
                        help="with --rss: learn only K different texts (default: every one new)")
    parser.add_argument("--big", action="store_true", help="with --rss: first store one 900 KB record")
    parser.add_argument("--code", type=Path, default=ROOT,
                        help="with --rss: the checkout the server runs from")
    args = parser.parse_args(argv)
    if args.rss:
        samples, fresh = bench_rss(args.rss, args.mix, args.big, args.code.resolve(), args.distinct)
        big = ", one 900 KB record" if args.big else ""
        big += f", {args.distinct:,} distinct texts" if args.distinct else ""
        print(f"\ntur mcp RSS over {args.rss:,} write calls ({args.mix}{big}), code {args.code}, "
              f"load average {os.getloadavg()[0]:.2f}\n")
        print("| calls | RSS (MiB) | anonymous (MiB) | seconds |\n|---:|---:|---:|---:|")
        for n, rss, anon, seconds in samples:
            print(f"| {n:,} | {rss:.1f} | {anon:.1f} | {seconds:.0f} |")
        half, last = samples[len(samples) // 2], samples[-1]
        calls_apart = max(1, last[0] - half[0])
        print(f"\ngrowth over the second half: {(last[1] - half[1]) * 1024 / calls_apart:.2f} KiB "
              f"per call, {(last[2] - half[2]) * 1024 / calls_apart:.2f} KiB of it anonymous")
        print(f"a new server on the store those calls left, after one more write: {fresh[0]:.1f} MiB "
              f"({fresh[1]:.1f} anonymous); the long-running one held {last[1] - fresh[0]:+.1f} MiB more")
        print(f"rerun: python bench/bench_mcp.py --rss {args.rss} --mix {args.mix}"
              f"{' --big' if args.big else ''}"
              f"{f' --distinct {args.distinct}' if args.distinct else ''} --code {args.code}")
        return 0
    rows: list[tuple[int, str, list[tuple[float, float | None]]]] = []
    for size in [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]:
        repo = bench_scale.repository(args.work, size, args.rebuild)
        print(f"{size:,} memories: tur mcp on {repo}", file=sys.stderr, flush=True)
        times = anyio.run(bench_server, repo, args.runs)
        rows += [(size, name, samples) for name, samples in times.items()]
    print(f"\ngitmem MCP benchmark, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
          f"load average {os.getloadavg()[0]:.2f}\n")
    print(table(rows))
    print(f"\nrerun: python bench/bench_mcp.py --sizes {args.sizes} --runs {args.runs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
