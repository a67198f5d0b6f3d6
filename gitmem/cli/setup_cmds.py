"""``tur setup HARNESS``: wire hooks and/or MCP and the agent instructions, check them, remove them."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from gitmem.cli.commands import add_command, add_format

if TYPE_CHECKING:
    from gitmem.cli.env import Env

__all__ = ["PARSERS"]

# The same names as gitmem.harness.HARNESSES; spelled out so that `tur --help` imports nothing.
HARNESSES = ("claude", "codex", "cursor", "copilot", "gemini")

_VERBS = {"added": "added", "updated": "updated", "unchanged": "already there",
          "removed": "removed", "absent": "not there", "kept": "left (not as tur setup writes it)",
          "wired": "wired", "missing": "MISSING", "differs": "DIFFERS"}


def _setup_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "setup", description="Write HARNESS's hook and/or MCP configuration and an "
                       "agent-instructions block, merged into existing settings; a second run "
                       "changes nothing. Never installs git hooks.")
    p.add_argument("harness", choices=HARNESSES, help="the agent harness to wire")
    p.add_argument("--scope", default="project", choices=("project", "user"),
                   help="project: files in this repository (default); user: in your home")
    action = p.add_mutually_exclusive_group()
    action.add_argument("--check", action="store_true",
                        help="write nothing; say what is wired, what is missing and whether the harness "
                        "trusts this folder or approved the server (exit 1 if any is not)")
    action.add_argument("--remove", action="store_true",
                        help="take out exactly what tur setup writes")
    add_format(p)
    p.set_defaults(func=cmd_setup)


#: Each command of this module and the function adding its parser (see gitmem.cli.commands).
PARSERS = {"setup": _setup_parser}


def cmd_setup(args: argparse.Namespace, env: Env) -> int:
    """Print one line per entry (file, what, outcome) and the notes; exit 1 when a check misses one."""
    report = env.gm.harness.run(args.harness, scope=args.scope, check=args.check,
                                  remove=args.remove)
    if args.format == "json":
        from gitmem.cli.output import json_dump

        env.print(json_dump({"harness": args.harness, "changed": bool(report.changed),
                             "items": [{"state": i.state, "path": str(i.path), "what": i.what,
                                        "note": i.note or None} for i in report.items],
                             "notes": list(report.notes), "missing": len(report.missing),
                             "trust": [{"what": t.what, "ok": t.ok, "fix": t.fix,
                                        "source": str(t.source) if t.source else None}
                                       for t in report.trust]}))
        return 1 if args.check and (report.missing or report.next_steps) else 0
    for item in report.items:
        env.print(f"{_VERBS.get(item.state, item.state):<14} {item.path}  {item.what}")
        if item.note:
            env.print(f"{'':<14} {item.note}")
    for note in report.notes:
        env.print(f"note: {note}")
    if args.check:
        for check in report.trust:
            env.print(f"{'ok' if check.ok else 'NOT YET':<14} {check.what}")
    steps = report.next_steps
    for check in steps:  # the same next steps after a set-up and in a check
        env.print(f"next: {check.fix}")
    if args.check:
        missing = len(report.missing)
        words = [f"{missing} missing"] if missing else []
        words += [f"{len(steps)} to do in the harness"] if steps else []
        env.print(f"{args.harness}: {', '.join(words) if words else 'all wired'}")
        return 1 if missing or steps else 0
    if not args.remove and not report.changed:
        env.print(f"{args.harness}: already set up, nothing changed")
    return 0
