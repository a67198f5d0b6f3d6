"""``tur mcp`` and ``tur serve``: the repository's memories over MCP (stdio), and over HTTP.

The MCP SDK (and with it Starlette and uvicorn) is imported only when a command runs:
``tur --help`` and every other command must not pay for it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.cli.commands import add_command

if TYPE_CHECKING:
    from gitmem.api import Via
    from gitmem.cli.env import Env

__all__ = ["PARSERS"]


def _mcp_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "mcp",
        description="Run a Model Context Protocol server on stdin/stdout: tools wake, recall, "
        "learn, edit, verify, confirm, refute, forget, link, show, list, status; resources tur://wake, "
        "tur://context/recall?q={query}, tur://memory/{id}. Register it with a harness, e.g. "
        "claude mcp add tur -- tur mcp. Outside a git repository it lists its tools and "
        "answers each call with an error naming --repo.",
    )
    p.add_argument("--repo", metavar="PATH", default=None,
                   help="the repository to serve (default: the one containing the current "
                   "directory, or -C PATH)")
    _asking_options(p, agent=True)
    p.set_defaults(func=cmd_mcp)


def _serve_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "serve",
        description="Serve the repository's memories over HTTP until Ctrl-C (or SIGTERM): the "
        "retrieval API (POST /v1/retrieval/queries with {\"query\", \"limit\"}, GET "
        "/v1/memory/ID, GET /v1/wake?budget=N) and the tur mcp tools over MCP's streamable "
        "HTTP transport at /mcp. Prints the URL on stdout once it answers. Loopback only "
        "unless --host says otherwise. The manual: docs/serve.md.",
    )
    p.add_argument("--host", default="127.0.0.1",
                   help="the address to listen on (default: 127.0.0.1; an address other than loopback "
                   "lets other machines read the memories, without authentication)")
    p.add_argument("--port", type=int, default=_DEFAULT_PORT,
                   help=f"the port (default: {_DEFAULT_PORT}; 0: a free one, printed)")
    p.add_argument("--repo", metavar="PATH", default=None,
                   help="the repository to serve (default: the one containing the current "
                   "directory, or -C PATH)")
    _asking_options(p, agent=False)
    p.set_defaults(func=cmd_serve)


def _asking_options(p: argparse.ArgumentParser, agent: bool) -> None:
    p.add_argument("--harness", default="", metavar="NAME",
                   help="the harness it serves: memories bound to other agents are left out, and "
                   "config harness.NAME's limits apply (default: none named, every memory)")
    if agent:
        p.add_argument("--agent", default="", metavar="NAME",
                       help="the agent it serves, matched against memories' visibility as --harness is")


def _asking(args: argparse.Namespace) -> Via:
    from gitmem.api import Via, agent_names

    harness, agent = (agent_names([v])[0] if v else "" for v in (args.harness, getattr(args, "agent", "")))
    return Via("", harness, agent=agent)


#: The port of ``tur serve`` unless ``--port`` says otherwise (Kura's retrieval API's port).
_DEFAULT_PORT = 19192

#: Each command of this module and the function adding its parser (see gitmem.cli.commands).
PARSERS = {"mcp": _mcp_parser, "serve": _serve_parser}


def cmd_mcp(args: argparse.Namespace, env: Env) -> int:
    """Serve until the client closes stdin."""
    from gitmem.api import Gitmem

    asking = _asking(args)
    if args.repo is not None and not Path(args.repo).is_dir():
        from gitmem.errors import InvalidInput

        raise InvalidInput(f"no such directory: {args.repo}", "pass an existing directory to --repo")
    from gitmem.errors import NotARepository

    try:
        gm: Gitmem | None = Gitmem.open(args.repo or env.path)  # a bad --repo fails here, as one line
    except NotARepository:
        if args.repo is not None or not Path(env.path).is_dir():
            raise
        # A user-scope server is started in every folder: outside a repository it still
        # lists its tools, and each call says where it runs and how to name a repository.
        gm = None
    try:
        # Lazy: the SDK (starlette, pydantic settings, …) costs ~0.8 s to import.
        from gitmem.mcp.server import serve
    except ImportError as exc:
        from gitmem.errors import InvalidInput

        raise InvalidInput(f"tur mcp needs the mcp package ({exc})", "pip install 'mcp>=2.3,<3'") from None
    from gitmem.cli.process import settle_new_tip

    # This process is the server's: the collector and the heap per tip are the entry point's to settle.
    serve(gm, on_new_tip=settle_new_tip, where=Path(env.path).resolve(),
          asking=asking)
    return 0


def cmd_serve(args: argparse.Namespace, env: Env) -> int:
    """Serve over HTTP until SIGINT or SIGTERM; exit 0 after a clean shutdown."""
    from gitmem.api import Gitmem
    from gitmem.errors import InvalidInput

    if not 0 <= args.port <= 65535:
        raise InvalidInput(f"--port must be from 0 to 65535, got {args.port}")
    asking = _asking(args)
    if args.repo is not None and not Path(args.repo).is_dir():
        raise InvalidInput(f"no such directory: {args.repo}", "pass an existing directory to --repo")
    gm = Gitmem.open(args.repo or env.path)
    try:
        from gitmem.mcp.http import is_loopback, listen, serve_http
    except ImportError as exc:
        raise InvalidInput(f"tur serve needs the mcp package ({exc})", "pip install 'mcp>=2.3,<3'") from None
    from gitmem.cli.process import settle_new_tip

    sock = listen(args.host, args.port)
    if not is_loopback(args.host):
        env.warn(f"tur serve: warning: listening on {args.host}, beyond this machine: anyone who can "
                 "reach it reads and writes the memories, with no authentication")

    def started(url: str) -> None:
        env.print(f"tur serve: listening on {url} (retrieval API /v1, MCP /mcp; Ctrl-C stops)")
        env.out.flush()

    serve_http(gm, sock, started, on_new_tip=settle_new_tip, asking=asking)
    env.warn("tur serve: stopped")
    return 0
