"""``tur log``: what wake and recall gave agents, from this clone's injection log (docs/log.md)."""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from gitmem.cli.commands import add_command

if TYPE_CHECKING:
    from gitmem.api import Injection
    from gitmem.cli.env import Env

_AGO = re.compile(r"^(\d+)\s*([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def _log_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "log",
        description="Every hook, MCP read, `tur wake` and `tur recall` appends what it gave the "
        "agent (each memory with its tokens, tier or rank) and what it left out and why to a "
        "log in .git/tur/log/ (this clone only, rotated by size: log.max_bytes × log.files). "
        "Example: tur log --session 4f1c... --since 2h",
    )
    p.add_argument("--session", metavar="ID", help="only the injections of this session id")
    p.add_argument("--since", metavar="T",
                   help="only from T on: an ISO 8601 date or time (UTC unless it says), or an "
                   "age such as 30m, 2h, 7d")
    p.add_argument("--format", default="text", choices=("text", "json"),
                   help="text (default), or json: one record per line")
    p.add_argument("--follow", "-f", action="store_true",
                   help="then print each new injection as it comes, until interrupted (Ctrl-C)")
    p.set_defaults(func=cmd_log)


#: Each command of this module and the function adding its parser (see gitmem.cli.commands).
PARSERS = {"log": _log_parser}


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """The time ``--since`` names: an ISO 8601 date or time (naive: UTC), or an age (``30m``, ``2h``).

    Raises:
        InvalidInput: neither (the message quotes ``text``).
    """
    from gitmem.errors import InvalidInput

    value = text.strip()
    ago = _AGO.match(value)
    if ago:
        return (now or datetime.now(UTC)) - timedelta(**{_UNITS[ago.group(2)]: int(ago.group(1))})
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"--since {text!r} is neither a date, a time nor an age",
                           "give 2026-12-01, 2026-12-01T09:30, 2026-12-01T09:30+02:00, 30m, 2h "
                           "or 7d") from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def cmd_log(args: argparse.Namespace, env: Env) -> int:
    """Print the injections (and with ``--follow`` the new ones as they come)."""
    since = parse_since(args.since) if args.since is not None else None
    log = env.gm.injections
    if not args.follow:
        records = log.read(args.session, since)
        for record in records:
            env.write(_shown(record, args.format))
        if not records:
            env.note("no injection logged yet" if args.session is None and since is None
                     else "no injection matches")
        return 0
    import threading

    from gitmem.cli.watch_cmds import install_stop_handlers

    stop = threading.Event()
    restore = install_stop_handlers(stop)
    try:
        for record in log.follow(stop, args.session, since):
            env.write(_shown(record, args.format))
            env.out.flush()
    finally:
        restore()
    return 0


def _shown(record: Injection, fmt: str) -> str:
    if fmt == "json":
        import json

        return json.dumps(record.to_json(), ensure_ascii=False) + "\n"
    from gitmem.api import render_injection

    return render_injection(record) + "\n"
