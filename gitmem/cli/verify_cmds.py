"""Staleness commands: ``tur verify`` (records new statuses in one commit) and ``tur status`` (read-only)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gitmem.cli.commands import add_command, add_format, add_id_argument
from gitmem.cli.output import json_dump

if TYPE_CHECKING:
    from gitmem.cli.env import Env


def _verify_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "verify", description="Check every memory (or the given ids) against HEAD "
                    "and the working tree; re-anchor moved lines; record new statuses in one commit. "
                    "Prints the memories whose status, reason or anchored lines changed.")
    add_id_argument(p, "ids", nargs="*", metavar="ID", help="only these memories (ids or unique prefixes)")
    p.add_argument("--confirm", action="store_true",
                   help="vouch for the named memories: set fresh and re-anchor them at HEAD")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print every memory checked, not only those that changed")
    add_format(p)
    p.set_defaults(func=cmd_verify, write=True, exit_code=False)


def _status_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "status", description="Check every memory (or the given ids) against HEAD "
                    "and the working tree without writing anything; print the counts and the "
                    "memories that are not fresh or whose verdict differs from the stored one.")
    add_id_argument(p, "ids", nargs="*", metavar="ID", help="only these memories (ids or unique prefixes)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print every memory checked, fresh ones too")
    p.add_argument("--exit-code", action="store_true",
                   help="exit 1 when a memory is stale, 0 otherwise (as `git diff --exit-code`)")
    add_format(p)
    p.set_defaults(func=cmd_verify, write=False, confirm=False)


#: Lines of the anchored diff ``tur show`` and ``tur status -v`` print for a memory that is not fresh.
DIFF_LINES = 60

#: Memories ``tur status -v`` prints the anchored diff of (each a ``git diff-index``); the others
#: get their line only, and one line says how many diffs were left out (``tur show ID`` has each).
STATUS_DIFFS = 20


def at_head(env: Env, memory: Any, note: Any = None, diff_too: bool = True) -> list[str]:
    """Where a memory that is not fresh stands at HEAD: its note, then its anchored diff since observed.

    The note is the library's (:meth:`gitmem.api.Gitmem.stale_note`: why, where its lines are
    now, what settles it), or ``note`` when the caller has it from a check already. Empty when
    it has no anchor, or is fresh at HEAD and in the working tree.
    """
    if not memory.anchor_path:
        return []  # no anchor: no lines to find at HEAD, no diff
    note = note or env.gm.stale_note(memory.id)
    if note is None:
        return []
    lines = [f"at HEAD: {note.text()}"]
    if not diff_too:
        return lines
    diff = env.gm.anchored_diff(memory, DIFF_LINES)
    sha = memory.provenance.git_sha if memory.provenance else None
    if diff.text:
        lines.append(f"diff of {memory.anchor_path} since observed {(sha or '')[:12]}:")
        lines.extend(diff.text.splitlines())
    if diff.note:
        lines.append(f"({diff.note})")
    return lines


def _at_head_of(env: Env, row: Any, diff_too: bool) -> list[str]:
    """:func:`at_head` of a verify row, from the row's own mapping when the check gave one."""
    from gitmem.api import StaleNote

    memory = row.memory
    note = None
    if row.status.value == "stale" and row.maps_to:
        note = StaleNote(memory.id, "stale", row.reason, row.maps_to, memory.content)
    elif not diff_too:
        return []  # past the diffs shown, no new check per memory either
    return at_head(env, memory, note, diff_too)


#: Each command of this module and the function adding its parser (see gitmem.cli.commands).
PARSERS = {"verify": _verify_parser, "status": _status_parser}


def cmd_verify(args: argparse.Namespace, env: Env) -> int:
    """Print counts per status, then one line per memory worth a look (``-v``: every memory).

    Worth a look: for ``verify``, a memory whose status, reason or anchored lines changed,
    one stale here because of uncommitted changes, or one named on the command line; for
    ``status``, also every memory that is not fresh.
    With ``--exit-code``, ``status`` exits 1 when a memory is stale.
    """
    # The output shows ids, statuses, weights and anchors: rows the check leaves as they are
    # need no full record.
    with env.progress("verifying") as progress:
        outcome = env.gm.verify(args.ids or None, write=args.write, confirm=args.confirm,
                                progress=progress, full_records=False)
    env.warn_skipped(outcome.skipped)
    stale = any(row.status.value == "stale" for row in outcome.rows)
    code = 1 if args.exit_code and stale else 0
    if args.format == "json":
        env.print(json_dump(outcome.to_json()))
        return code
    counts = outcome.counts()
    env.print(", ".join(f"{n} {s}" for s, n in counts.items()) or "no memories")
    if not outcome.rows and not args.ids:
        hint = env.gm.remote_hint()
        if hint:
            env.warn(hint)
    rows = {row.memory_id: row for row in outcome.rows} if args.verbose else {}
    diffs = 0
    for line in outcome.shown(written=args.write, verbose=args.verbose, named=bool(args.ids),
                              confirmed=args.confirm):
        env.print(line.text())
        if line.hint:
            env.print(f"    hint: {line.hint}")
        if args.verbose and line.status != "fresh" and rows[line.memory_id].memory.anchor_path:
            diffs += 1
            for text in _at_head_of(env, rows[line.memory_id], diffs <= STATUS_DIFFS):
                env.print(f"    {text}")
    if diffs > STATUS_DIFFS:
        env.print(f"anchored diffs of {diffs - STATUS_DIFFS} more memories left out "
                  "(`tur show ID` prints each)")
    quiet = 0 if args.verbose or args.ids else outcome.unchanged_unanchored()
    if quiet and not args.write:
        noun = "memory" if quiet == 1 else "memories"
        env.print(f"{quiet} unanchored {noun} unchanged (no anchor to check; -v lists them)")
    if args.write:
        env.print(outcome.recorded())
    return code
