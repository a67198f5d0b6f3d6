"""Staleness commands: ``tur verify`` (records new statuses in one commit) and ``tur status`` (read-only)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from gitmem.cli.output import json_dump

if TYPE_CHECKING:
    from gitmem.cli.env import Env


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``verify`` and ``status``."""
    p = sub.add_parser("verify", help="recompute staleness and record it in one commit",
                       description="Check every memory (or the given ids) against HEAD and the "
                       "working tree; re-anchor moved lines; record new statuses in one commit.")
    p.add_argument("ids", nargs="*", metavar="ID")
    p.add_argument("--confirm", action="store_true",
                   help="vouch for the named memories: set fresh and re-anchor them at HEAD")
    p.add_argument("--format", default="plain", choices=("plain", "json"))
    p.set_defaults(func=cmd_verify, write=True)

    p = sub.add_parser("status", help="staleness summary with weight and reason, without writing")
    p.add_argument("ids", nargs="*", metavar="ID")
    p.add_argument("--format", default="plain", choices=("plain", "json"))
    p.set_defaults(func=cmd_verify, write=False, confirm=False)


def cmd_verify(args: argparse.Namespace, env: Env) -> int:
    """Print counts per status and one line per memory whose status or anchor changed."""
    # The output shows ids, statuses, weights and anchors: rows the check leaves as they are
    # need no full record.
    outcome = env.gm.verify(args.ids or None, write=args.write, confirm=args.confirm,
                            full_records=False)
    env.warn_skipped(outcome.skipped)
    if args.format == "json":
        env.print(json_dump(outcome.to_json()))
        return 0
    counts = outcome.counts()
    env.print(", ".join(f"{n} {s}" for s, n in counts.items()) or "no memories")
    for row in outcome.rows:
        if args.write and not row.changed and not (args.ids and row.hint):
            continue
        anchor = f" -> {row.new_ref}" if row.new_ref and row.moved else ""
        reason = row.reason or ("confirmed" if args.confirm else
                                "re-anchored" if row.moved else "unchanged")
        env.print(f"{row.memory_id}  {row.status.value}  w={row.weight:.2f}  {reason}{anchor}")
        if row.hint and row.status.value != "fresh":
            env.print(f"    hint: {row.hint}")
    if args.write:
        if outcome.commit:
            env.print(f"recorded in {outcome.commit.sha[:12]} on refs/tur/memories")
        else:
            env.print("nothing changed")
    return 0
