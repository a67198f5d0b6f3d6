"""Sharing commands: ``tur remote setup [REMOTE]`` and ``tur sync [REMOTE] [--dry-run]``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from gitmem.cli.commands import add_command, add_format
from gitmem.cli.output import json_dump
from gitmem.cli.personal import add_personal

if TYPE_CHECKING:
    from gitmem.api import SyncResult
    from gitmem.cli.env import Env


def _remote_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "remote", description="Configure how a git remote carries refs/tur/memories.")
    remote_sub = p.add_subparsers(dest="remote_command", metavar="SUBCOMMAND")
    setup = remote_sub.add_parser(
        "setup", help="make a plain `git fetch` also fetch teammates' memories",
        description="Add the fetch refspec +refs/tur/memories:refs/tur/remotes/<REMOTE>/memories "
        "(idempotent). No push refspec is added: a plain `git push` sends what it sent before.",
    )
    setup.add_argument("remote", nargs="?", default="origin", metavar="REMOTE",
                       help="the git remote (default origin)")
    add_format(setup)
    add_personal(setup, "set up the personal store's remote; REMOTE may then be its URL")
    setup.set_defaults(func=cmd_remote_setup)
    p.set_defaults(func=lambda args, env: _usage(p, env))


def _sync_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(
        sub, "sync",
        description="Fetch refs/tur/memories from REMOTE (default origin); adopt it, fast-forward, "
        "or merge record by record; then push with a lease, retrying if the remote moved.",
    )
    p.add_argument("remote", nargs="?", default="origin", metavar="REMOTE",
                   help="the git remote (default origin)")
    p.add_argument("--dry-run", action="store_true",
                   help="show what would be merged and pushed; change nothing but the tracking ref")
    p.add_argument("--allow-secret", action="store_true",
                   help="adopt incoming records and notes even where the credential scan finds something")
    p.add_argument("--publish", action="store_true",
                   help="push refs/tur/memories to REMOTE even if it has none yet (the first "
                   "sync asks on a terminal, and pushes nothing otherwise)")
    add_format(p)
    add_personal(p, "sync the personal store with its own remote")
    p.set_defaults(func=cmd_sync)


#: Each command of this module and the function adding its parser (see gitmem.cli.commands).
PARSERS = {"remote": _remote_parser, "sync": _sync_parser}


def _usage(parser: argparse.ArgumentParser, env: Env) -> int:
    parser.print_help(env.out)
    return 2


def cmd_remote_setup(args: argparse.Namespace, env: Env) -> int:
    """Add the memory fetch refspec to the remote and say whether it was new."""
    added = env.gm.setup_remote(args.remote)
    spec = f"+refs/tur/memories:refs/tur/remotes/{args.remote}/memories"
    if args.format == "json":
        env.print(json_dump({"remote": args.remote, "fetch": spec, "added": added}))
        return 0
    env.print(f"{'added' if added else 'already configured'}: remote.{args.remote}.fetch {spec}")
    return 0


def _short(sha: str | None) -> str:
    return sha[:12] if sha else "(none)"


def cmd_sync(args: argparse.Namespace, env: Env) -> int:
    """Print the outcome: one summary line, then one line per record the merge decided."""
    result = env.gm.sync(args.remote, dry_run=args.dry_run, allow_secret=args.allow_secret,
                         publish=args.publish)
    if result.unpublished and not args.dry_run and args.format != "json" and _yes(env, args.remote):
        result = env.gm.sync(args.remote, allow_secret=args.allow_secret, publish=True)
    for line in result.warnings:
        env.warn(line)
    if args.format == "json":
        env.print(json_dump(result.to_json()))
        return 0
    prefix = "would " if result.dry_run else ""
    summary = {
        "up-to-date": "up to date",
        "adopted": f"{prefix}adopt {args.remote}'s memories",
        "fast-forward": f"{prefix}fast-forward to {args.remote}",
        "merged": f"{prefix}merge {args.remote}",
        "pushed": f"{prefix}push to {args.remote}",
    }[result.status]
    if result.unpublished:
        summary = f"{args.remote} has no memories yet, nothing pushed"
    env.print(f"{summary}: local {_short(result.local_before)} -> {_short(result.local_after)}, "
              f"{args.remote} {_short(result.remote_before)} -> {_short(result.remote_after)} "
              f"({result.ahead} ahead, {result.behind} behind)")
    for row in result.merged:
        env.print(f"  {row.status:<17} {row.memory_id}  {row.reason}")
    for author, ids in sorted(result.new_authors.items()):
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        noun = "memory" if len(ids) == 1 else "memories"
        env.print(f"  new author       {' '.join(author.split())}: {len(ids)} {noun} ({shown}); "
                  "not trusted for Tier 1 of wake unless listed in trust.authors")
    _print_arrivals(result, env)
    if result.pushed and result.status != "pushed":
        env.print(f"{prefix}push to {args.remote}" + ("" if result.dry_run else " done"))
    if result.unpublished:
        personal = " --personal" if getattr(args, "personal", False) else ""
        env.print(f"not published: {args.remote} has no refs/tur/memories yet; "
                  f"`tur sync {args.remote}{personal} --publish` shares your memories with everyone "
                  f"who can fetch from {args.remote}")
    return 0


def _print_arrivals(result: SyncResult, env: Env) -> None:
    """A line per persona version or note that came from others: from whom, and whether it is in force."""
    if not result.arrived:
        return
    waiting = {p.version.blob for p in env.gm.proposals()} if not result.dry_run else set()
    for arrival in result.arrived:
        who = ", ".join(" ".join(a.split()) for a in arrival.authors) or "an unknown author"
        what = "persona" if arrival.kind == "persona" else f"note {arrival.path.rsplit('/', 1)[-1]}"
        accept = "tur persona accept" + (" --note" if arrival.kind == "note" else "")
        if result.dry_run:
            state = "would arrive"
        elif arrival.blob in waiting:
            state = (f"untrusted, NOT in force here (yours stays); read it with `tur persona show "
                     f"--proposed`, adopt it with `{accept}`")
        else:
            state = "in force here (a trusted author)" if arrival.kind == "persona" else "trusted"
        made = "deleted" if arrival.deleted else "written"
        env.print(f"  arrived          {what} {made} by {who}: {state}")


def _publish_question(remote: str) -> str:
    return (f"{remote} has no refs/tur/memories yet. Publish this clone's memories there, "
            f"for everyone who can fetch from {remote} to see? [y/N] ")


def _yes(env: Env, remote: str) -> bool:
    """Ask on a terminal whether to publish the memory ref; anything but y/yes is no."""
    if not (env.inp.isatty() and env.err.isatty()):
        return False
    env.err.write(_publish_question(remote))
    env.err.flush()
    return env.inp.readline().strip().lower() in ("y", "yes")
