"""Commands that create, show and curate records: learn, list, show, refute, forget, link, import."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, cast

from gitmem.cli.output import json_dump, memory_json, one_line, table
from gitmem.vocabulary import MemoryType, RelationType, Scope, Status

TYPES = tuple(t.value for t in MemoryType)
STATUSES = tuple(s.value for s in Status)
SCOPES = tuple(s.value for s in Scope)
RELATIONS = tuple(r.value for r in RelationType)

if TYPE_CHECKING:
    from gitmem.api import Memory
    from gitmem.cli.env import Env


def register(sub: argparse._SubParsersAction) -> None:
    """Add this group's commands to the ``tur`` parser."""
    p = sub.add_parser("learn", help="remember a statement, observed at HEAD",
                       description="Remember a statement about the code, observed at HEAD. "
                       "Example: tur learn 'Queue uses WAL mode' --file src/queue/store.py#L10-L24")
    p.add_argument("text", help="the statement to remember")
    p.add_argument("--type", choices=TYPES, help=f"default: {MemoryType.FACT.value}")
    p.add_argument("--file", metavar="PATH[#Lx-Ly]", help="anchor to a file or a line range")
    p.add_argument("--confidence", type=float, default=None, help="in [0, 1] (default 1.0)")
    p.add_argument("--agent", help="source agent name")
    p.add_argument("--harness", help="source harness name")
    p.add_argument("--scope", default=Scope.UNIVERSAL.value, choices=SCOPES)
    p.add_argument("--allow-secret", action="store_true",
                   help="store it even if it looks like a credential")
    p.add_argument("--format", default="plain", choices=("plain", "json"))
    p.set_defaults(func=cmd_learn)

    p = sub.add_parser("list", help="list memories with status and weight")
    p.add_argument("--type", choices=TYPES)
    p.add_argument("--status", choices=STATUSES)
    p.add_argument("--format", default="table", choices=("table", "json"))
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("show", help="show one record and the commits that touched it")
    p.add_argument("id")
    p.add_argument("--format", default="plain", choices=("plain", "json"))
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("refute", help="mark a memory as wrong, with a reason")
    p.add_argument("id")
    p.add_argument("--reason", required=True)
    p.add_argument("--by", help="who refutes it (default: your git identity)")
    p.set_defaults(func=cmd_refute)

    p = sub.add_parser("forget", help="remove a memory (it stays in the ref's history)")
    p.add_argument("id")
    p.set_defaults(func=cmd_forget)

    p = sub.add_parser("confidence", help="set a memory's confidence")
    p.add_argument("id")
    p.add_argument("value", type=float)
    p.set_defaults(func=cmd_confidence)

    p = sub.add_parser("link", help=f"relate two memories: SOURCE TARGET --type {'|'.join(RELATIONS)}")
    p.add_argument("source")
    p.add_argument("target")
    p.add_argument("--type", required=True, choices=RELATIONS)
    p.set_defaults(func=cmd_link)

    p = sub.add_parser("import", help="import legacy .tur/memories/*.yaml records in one commit")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--allow-secret", action="store_true",
                   help="import records even if their content looks like a credential")
    p.set_defaults(func=cmd_import)


def cmd_learn(args: argparse.Namespace, env: Env) -> int:
    """``tur learn``: print the id (and whether it was new)."""
    result = env.gm.learn(
        args.text, type=args.type or MemoryType.FACT.value, file=args.file, confidence=args.confidence,
        agent=args.agent, harness=args.harness, scope=args.scope, allow_secret=args.allow_secret,
    )
    m = result.memory
    if args.format == "json":
        env.print(json_dump({"id": m.id, "created": result.created, "status": m.status.value}))
        return 0
    env.print(m.id)
    if not result.created and args.type and args.type != m.type.value:
        env.warn(f"{m.id} was already known as a {m.type.value}; --type {args.type} is ignored "
                 f"(to change it: tur forget {m.id}, then learn it again)")
    if not result.created and m.status.value == "refuted":
        reason = f" ({m.refutation.reason})" if m.refutation else ""
        env.warn(f"{m.id} was already known and is refuted{reason}; it stays refuted")
    elif not result.created and m.status.value == "stale":
        reason = f": {m.decay.reason}" if m.decay and m.decay.reason else ""
        env.warn(f"{m.id} was already known and its anchor is still stale{reason}; "
                 "re-learn it with --file to re-anchor it, or refute it if it no longer holds")
    elif not result.created:
        env.warn(f"{m.id} was already known; re-verified it")
    if m.status.value == "unanchored" and m.decay and m.decay.reason:
        env.warn(f"{m.id} is unanchored: {m.decay.reason}")
    return 0


def cmd_list(args: argparse.Namespace, env: Env) -> int:
    """``tur list``: a table (or JSON) of memories with status and weight."""
    view = env.gm.status_view(full_records=args.format == "json")
    env.warn_skipped(view.skipped)
    rows = [r for r in view.rows
            if (not args.type or r.memory.type.value == args.type)
            and (not args.status or r.status.value == args.status)]
    if args.format == "json":
        # full_records=True above: every row carries a full record.
        env.print(json_dump([memory_json(cast("Memory", r.memory), weight=r.weight,
                                         status=r.status.value, reason=r.reason) for r in rows]))
        return 0
    tty = env.out.isatty()
    body = [[r.memory.id, r.status.value, f"{r.weight:.2f}", f"{r.memory.confidence:.2f}",
             r.memory.provenance.context_ref if r.memory.provenance and
             r.memory.provenance.context_ref else "-",
             one_line(r.memory.content, escape=tty)] for r in rows]
    table(env, ["ID", "STATUS", "WEIGHT", "CONF", "ANCHOR", "CONTENT"], body)
    if not rows:
        env.warn("no memories" + (" match" if args.type or args.status else " yet: tur learn TEXT"))
    return 0


def cmd_show(args: argparse.Namespace, env: Env) -> int:
    """``tur show``: the record as stored, and its commits on the memory ref."""
    gm = env.gm
    memory = gm.get(args.id)
    commits = gm.history(memory.id)
    trail = gm.anchor_trail(memory.id, commits)
    if args.format == "json":
        doc = memory_json(memory)
        doc["commits"] = [{"sha": c.sha, "message": c.message, "author": c.author,
                           "time": c.time.isoformat().replace("+00:00", "Z")} for c in commits]
        doc["anchor_trail"] = [step.to_json() for step in trail]
        env.print(json_dump(doc))
        return 0
    env.write(gm.record_text(memory.id))
    env.print()
    env.print(f"# commits on refs/tur/memories that touched {memory.id}:")
    for c in commits:
        env.print(f"{c.sha[:12]} {c.time:%Y-%m-%d %H:%M} {c.message.splitlines()[0]}")
    if len(trail) > 1:  # the anchor travelled
        env.print()
        env.print("# how the anchor travelled:")
        for step in trail:
            env.print(f"{step.commit[:12]} {step.time:%Y-%m-%d %H:%M} {step.describe()}")
    return 0


def cmd_refute(args: argparse.Namespace, env: Env) -> int:
    """``tur refute``: mark refuted; prints the id."""
    by = args.by or env.gm.identity()
    memory, _ = env.gm.refute(args.id, args.reason, by=by)
    env.print(f"refuted {memory.id}")
    return 0


def cmd_forget(args: argparse.Namespace, env: Env) -> int:
    """``tur forget``: remove from the tree (kept in history)."""
    memory_id = env.gm.resolve(args.id)  # a malformed record can be forgotten too
    env.gm.forget(memory_id)
    env.print(f"forgot {memory_id} (still in `git log refs/tur/memories`)")
    return 0


def cmd_confidence(args: argparse.Namespace, env: Env) -> int:
    """``tur confidence``: set confidence."""
    memory, _ = env.gm.set_confidence(args.id, args.value)
    env.print(f"{memory.id} confidence {memory.confidence:.2f}")
    return 0


def cmd_link(args: argparse.Namespace, env: Env) -> int:
    """``tur link``: add a relation."""
    memory, _ = env.gm.link(args.source, args.target, args.type)
    env.print(f"{memory.id} {args.type} {env.gm.get(args.target).id}")
    return 0


def cmd_import(args: argparse.Namespace, env: Env) -> int:
    """``tur import``: legacy files in one commit; failures listed on stderr."""
    result = env.gm.import_legacy(args.paths, allow_secret=args.allow_secret)
    for line in result.failed:
        env.warn(f"tur: skipped {line}")
    env.print(f"imported {len(result.imported)}, unchanged {len(result.unchanged)}, "
              f"failed {len(result.failed)}")
    if result.failed and not result.imported and not result.unchanged:
        return 1
    return 0


__all__ = ["register"]
