"""``tur mcp``: serve the repository's memories over the Model Context Protocol (stdio).

The MCP SDK is imported only when the command runs: ``tur --help`` and every other command
must not pay for it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitmem.cli.env import Env

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``mcp``."""
    p = sub.add_parser(
        "mcp", help="serve memories to agents over the Model Context Protocol (stdio)",
        description="Run a Model Context Protocol server on stdin/stdout: tools wake, recall, "
        "learn, verify, refute, show, list, status; resources tur://wake, "
        "tur://context/recall?q={query}, tur://memory/{id}. Register it with a harness, e.g. "
        "claude mcp add tur -- tur mcp",
    )
    p.add_argument("--repo", metavar="PATH", default=None,
                   help="the repository to serve (default: the one containing the current "
                   "directory, or -C PATH)")
    p.set_defaults(func=cmd_mcp)


def cmd_mcp(args: argparse.Namespace, env: Env) -> int:
    """Serve until the client closes stdin."""
    from gitmem.api import Gitmem

    if args.repo is not None and not Path(args.repo).is_dir():
        from gitmem.errors import InvalidInput

        raise InvalidInput(f"no such directory: {args.repo}", "pass an existing directory to --repo")
    gm = Gitmem.open(args.repo or env.path)  # a bad path fails here, as one line
    try:
        # Lazy: the SDK (starlette, pydantic settings, …) costs ~0.8 s to import.
        from gitmem.mcp_server import serve
    except ImportError as exc:
        from gitmem.errors import InvalidInput

        raise InvalidInput(f"tur mcp needs the mcp package ({exc})", "pip install 'mcp>=2.3,<3'") from None
    serve(gm)
    return 0
