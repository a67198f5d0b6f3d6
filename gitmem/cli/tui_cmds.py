"""``tur tui``: the interactive browser (Textual). Textual is imported only when the command runs."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from gitmem.cli.commands import add_command

if TYPE_CHECKING:
    from gitmem.cli.env import Env


def _tui_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "tui",
        description="Open the terminal UI: a table of memories with a detail pane "
        "(provenance, history, anchored diff) that follows working-tree edits; keys v verify, "
        "r refute, u undo refutation, d forget, c confidence, n learn, e edit, m mark and l link, "
        "o open in $EDITOR, s sync, w wake preview, i what the agent saw, / search, ? every key, "
        "ctrl+p actions, q quit. Example: tur tui",
    )
    p.add_argument("--poll", type=float, default=1.0, metavar="SECONDS",
                   help="how often to check whether another process wrote (default 1)")
    p.add_argument("--no-follow", dest="follow", action="store_false",
                   help="do not watch the working tree for edits (for a tree too large to watch)")
    p.set_defaults(func=cmd_tui)


#: Each command of this module and the function adding its parser (see gitmem.cli.commands).
PARSERS = {"tui": _tui_parser}


def cmd_tui(args: argparse.Namespace, env: Env) -> int:
    """Run the app until the user quits."""
    from gitmem.errors import InvalidInput

    if args.poll <= 0:
        raise InvalidInput(f"--poll must be > 0, got {args.poll}")
    gm = env.gm  # open (and fail on a non-repository) before the screen switches
    gm.set_read_progress(None)  # a bar on stderr would draw over the app's screen
    try:
        # Lazy: `tur --help` and every other command must not pay for importing Textual.
        from tui import make_app
    except ImportError as exc:
        raise InvalidInput(f"the TUI needs textual ({exc})", "pip install 'textual>=0.80'") from None
    make_app(gm, poll_interval=args.poll, follow=args.follow).run()
    return 0
