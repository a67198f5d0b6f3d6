"""``tur mcp``: serve the repository's memories over the Model Context Protocol (stdio).

The MCP SDK is imported only when the command runs: ``tur --help`` and every other command
must not pay for it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.cli.commands import add_command

if TYPE_CHECKING:
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
    p.set_defaults(func=cmd_mcp)


#: Each command of this module and the function adding its parser (see gitmem.cli.commands).
PARSERS = {"mcp": _mcp_parser}


def cmd_mcp(args: argparse.Namespace, env: Env) -> int:
    """Serve until the client closes stdin."""
    from gitmem.api import Gitmem

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
    from gitmem.cli.process import exempt_survivors

    # This process is the server's: the collector's setting per tip is the entry point's to make.
    serve(gm, on_new_tip=lambda: exempt_survivors(collect=True), where=Path(env.path).resolve())
    return 0
