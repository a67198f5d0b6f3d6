"""Commands that create, show and curate records.

learn, list, show, refute, edit, forget, doctor, confidence, link, import.
"""

from __future__ import annotations

import argparse
from collections import Counter
from typing import TYPE_CHECKING, cast

from gitmem.cli.commands import add_command, add_format, add_id_argument
from gitmem.cli.output import json_dump, memory_json, one_line, table
from gitmem.cli.personal import add_personal
from gitmem.vocabulary import MemoryType, RelationType, Scope, Status, iso_z

TYPES = tuple(t.value for t in MemoryType)
STATUSES = tuple(s.value for s in Status)
SCOPES = tuple(s.value for s in Scope)
RELATIONS = tuple(r.value for r in RelationType)

if TYPE_CHECKING:
    from gitmem.api import CommitInfo, TurImportResult
    from gitmem.cli.env import Env


def _learn_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "learn", description="Remember a statement about the code, observed at HEAD. "
                    "Example: tur learn 'Queue uses WAL mode' --file src/queue/store.py#L10-L24")
    p.add_argument("text", nargs="?",
                   help="the statement to remember; `-` reads it from stdin")
    p.add_argument("--content-file", metavar="PATH",
                   help="read the statement from a file (UTF-8), for text too long for a command line")
    p.add_argument("--type", choices=TYPES, help=f"the kind of memory (default: {MemoryType.FACT.value})")
    p.add_argument("--file", metavar="PATH[#Lx-Ly]", help="anchor to a file or a line range")
    p.add_argument("--confidence", type=float, default=None, help="in [0, 1] (default 1.0)")
    p.add_argument("--agent", help="source agent name")
    p.add_argument("--harness", help="source harness name")
    p.add_argument("--scope", default=Scope.UNIVERSAL.value, choices=SCOPES,
                   help="universal (default): true for every session; incarnation: this one only")
    p.add_argument("--allow-secret", action="store_true",
                   help="store it even if it looks like a credential")
    p.add_argument("--supersedes", metavar="ID",
                   help="this memory replaces ID (adds the supersedes link in the same commit)")
    p.add_argument("--for", dest="for_agents", action="append", metavar="NAME",
                   help="only sessions of this agent or harness get it (repeat, or a comma list; "
                        "default: everyone)")
    add_format(p)
    add_personal(p, "learn it in the personal store")
    p.set_defaults(func=cmd_learn)


def _list_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "list")
    p.add_argument("--type", choices=TYPES, help="only memories of this type")
    p.add_argument("--status", choices=STATUSES, help="only memories with this status")
    p.add_argument("--file", metavar="PATH",
                   help="only memories anchored to this file (most confident first)")
    add_format(p, ("table", "json"))
    add_personal(p, "list the personal store")
    p.set_defaults(func=cmd_list)


def _show_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "show")
    add_id_argument(p, "id", help="a memory id or a unique prefix of one")
    add_format(p)
    add_personal(p, "show it from the personal store")
    p.set_defaults(func=cmd_show)



def _refute_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "refute")
    add_id_argument(p, "id", help="a memory id or a unique prefix of one")
    p.add_argument("--reason", help="why it is wrong, stored with the record (required unless --undo)")
    p.add_argument("--by", help="who refutes it (default: your git identity)")
    p.add_argument("--undo", action="store_true",
                   help="withdraw the refutation (a change like any other; sync merges it)")
    p.add_argument("--allow-secret", action="store_true",
                   help="store the reason even if it looks like a credential")
    add_format(p)
    add_personal(p, "in the personal store")
    p.set_defaults(func=cmd_refute)



def _edit_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "edit", description="Change a memory's content, type or anchor in one commit. "
                    "The id stays; `tur show ID` lists the commits, and the old text stays in the "
                    "ref's history. You become the memory's author.")
    add_id_argument(p, "id", help="a memory id or a unique prefix of one")
    p.add_argument("--content", help="the new statement; `-` reads it from stdin")
    p.add_argument("--content-file", metavar="PATH", help="read the new statement from a file (UTF-8)")
    p.add_argument("--type", choices=TYPES, help="the new type (the id keeps its old type prefix)")
    p.add_argument("--file", metavar="PATH[#Lx-Ly]", help="re-anchor at HEAD to a file or a line range")
    p.add_argument("--reanchor", action="store_true",
                   help="re-anchor where git's diff maps its lines at HEAD (as `tur show` prints it)")
    p.add_argument("--allow-secret", action="store_true",
                   help="store it even if it looks like a credential")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--for", dest="for_agents", action="append", metavar="NAME",
                     help="bind it to these agents or harnesses (repeat, or a comma list)")
    who.add_argument("--everyone", action="store_true", help="unbind it: every agent gets it")
    add_format(p)
    add_personal(p, "in the personal store")
    p.set_defaults(func=cmd_edit)


def _forget_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "forget")
    add_id_argument(p, "id", nargs="?", help="a memory id or a unique prefix of one")
    p.add_argument("--path", dest="tree_path", metavar="TREE_PATH",
                   help="remove this entry of the memory tree instead (what `tur doctor` names)")
    p.add_argument("--undo", action="store_true",
                   help="restore the forgotten memory ID (its id or 4 hex digits of it) from history")
    add_format(p)
    add_personal(p, "in the personal store")
    p.set_defaults(func=cmd_forget)


def _doctor_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "doctor", description="List every entry of refs/tur/memories that readers "
                    "skip: records not where their id says, second records for an id, entries that "
                    "are not regular files, malformed records. With --fix, move or remove the "
                    "misplaced entries in one commit (they stay in the ref's history).")
    p.add_argument("--fix", action="store_true", help="repair the layout problems in one commit")
    add_format(p)
    p.set_defaults(func=cmd_doctor)


def _confidence_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "confidence")
    add_id_argument(p, "id", help="a memory id or a unique prefix of one")
    p.add_argument("value", type=float, help="the new confidence, in [0, 1]")
    add_format(p)
    add_personal(p, "in the personal store")
    p.set_defaults(func=cmd_confidence)


def _link_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "link", description="Relate two memories: SOURCE --type--> TARGET "
                    f"({', '.join(RELATIONS)}).")
    add_id_argument(p, "source", help="the memory the relation starts from (id or prefix)")
    add_id_argument(p, "target", help="the memory it points to (id or prefix)")
    p.add_argument("--type", choices=RELATIONS,
                   help="the kind of relation (required to add; with --remove, only that kind)")
    p.add_argument("--remove", action="store_true", help="remove the relation instead")
    add_format(p)
    add_personal(p, "in the personal store")
    p.set_defaults(func=cmd_link)



def _import_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "import", description="Import legacy .tur/memories/*.yaml record files, or "
                    "with --from-tur the store of the Tur package, in one commit. Old ids stay usable.")
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="legacy record files, or directories holding them")
    p.add_argument("--from-tur", nargs="?", const="", metavar="PATH",
                   help="import the Tur store of the project at PATH (default: this repository)")
    p.add_argument("--home", nargs="?", const="~/.tur", metavar="DIR",
                   help="with --from-tur: also the user-level Tur store (default DIR: ~/.tur)")
    p.add_argument("--persona", metavar="NAME", help="with --from-tur: the persona to import "
                   "(default: the active or only one)")
    p.add_argument("--dry-run", action="store_true", help="print what would be imported; write nothing")
    p.add_argument("--allow-secret", action="store_true",
                   help="import records even if their content looks like a credential")
    add_format(p)
    p.set_defaults(func=cmd_import)


#: Each command of this module and the function adding its parser (see gitmem.cli.commands).
PARSERS = {
    "learn": _learn_parser, "list": _list_parser, "show": _show_parser,
    "refute": _refute_parser, "edit": _edit_parser, "forget": _forget_parser, "doctor": _doctor_parser,
    "confidence": _confidence_parser, "link": _link_parser, "import": _import_parser,
}


def _learn_text(args: argparse.Namespace, env: Env) -> str:
    """The statement: the argument, stdin (``-``) or ``--content-file``.

    Raises:
        InvalidInput: none or two of them, or a file that cannot be read as UTF-8.
    """
    from gitmem.errors import InvalidInput

    if (args.text is None) == (args.content_file is None):
        raise InvalidInput("give the statement as TEXT, `-` (stdin) or --content-file PATH, exactly once")
    if args.content_file is None:
        return cast(str, env.inp.read() if args.text == "-" else args.text)
    from pathlib import Path

    try:
        return Path(args.content_file).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInput(f"no such file: {args.content_file}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {args.content_file} as UTF-8 text: {exc}") from None


def cmd_learn(args: argparse.Namespace, env: Env) -> int:
    """``tur learn``: print the id (and whether it was new)."""
    result = env.gm.learn(
        _learn_text(args, env), type=args.type or MemoryType.FACT.value, file=args.file,
        confidence=args.confidence, agent=args.agent, harness=args.harness, scope=args.scope,
        allow_secret=args.allow_secret, supersedes=args.supersedes, visibility=args.for_agents,
    )
    m = result.memory
    if args.format == "json":
        rebound = {} if result.visibility_was is None else {"visibility_was": list(result.visibility_was)}
        env.print(json_dump({"id": m.id, "created": result.created, "status": m.status.value,
                             "similar": list(result.similar), "visibility": list(m.visibility),
                             **rebound}))
    else:
        env.print(m.id)
    from gitmem.api import LearnActions

    # The notes' words are the facade's; only how the actions are named is ``tur``'s.
    actions = LearnActions(supersede="tur link {id} {other} --type supersedes",
                           re_anchor="re-learn it with --file to re-anchor it",
                           retype="tur forget {id}, then learn it again")
    for note in result.notes(args.type, actions):
        if not (args.personal and "unanchored" in note):  # every personal memory is: not news
            env.warn(note)
    return 0


def cmd_list(args: argparse.Namespace, env: Env) -> int:
    """``tur list``: a table (or JSON) of memories with status and weight."""
    view = env.gm.status_view(full_records=args.format == "json", type=args.type or None,
                              status=args.status or None, file=args.file or None)
    env.warn_skipped(view.skipped)
    rows = view.rows
    if args.format == "json":
        from gitmem.api import memory_to_json

        # The one JSON shape of a memory (as the MCP tools and recall give it), with the
        # row's weight and this clone's working-tree reason; full records (above) carry
        # every field of it.
        env.print(json_dump([{**memory_to_json(r.memory), "weight": round(r.weight, 6),
                              "local": r.local} for r in rows]))
        return 0
    tty = env.out.isatty()
    body = [[r.memory.id, f"{r.status.value} ({r.local})" if r.local else r.status.value,
             f"{r.weight:.2f}", f"{r.memory.confidence:.2f}",
             r.memory.provenance.context_ref if r.memory.provenance and
             r.memory.provenance.context_ref else "-",
             one_line(r.memory.content, escape=tty)] for r in rows]
    if rows:
        table(env, ["ID", "STATUS", "WEIGHT", "CONF", "ANCHOR", "CONTENT"], body)
        return 0
    from gitmem.api import empty_notice

    filters = " ".join(f"{name}={value}" for name, value in
                       (("type", args.type), ("status", args.status), ("file", args.file)) if value)
    hint = None if filters else env.gm.remote_hint()
    if hint:  # a clone whose memories are still on the remote: said on a pipe too
        env.warn(hint)
    else:
        env.note(empty_notice(None, filters))
    return 0


def cmd_show(args: argparse.Namespace, env: Env) -> int:
    """``tur show``: the record as stored, and its commits on the memory ref."""
    from gitmem.errors import UnknownMemory

    gm = env.gm
    try:
        memory = gm.get(args.id)
    except UnknownMemory as missing:
        raise gm.records.forgotten_error(args.id) or missing from None
    commits = gm.history(memory.id)
    trail = gm.anchor_trail(memory.id, commits)
    local = gm.local_reasons().get(memory.id)
    if args.format == "json":
        doc = memory_json(memory)
        doc["local"] = local
        doc["commits"] = [{"sha": c.sha, "message": c.message, "author": c.author,
                           "time": iso_z(c.time)} for c in commits]
        doc["anchor_trail"] = [step.to_json() for step in trail]
        note = gm.stale_note(memory.id) if memory.refutation is None else None
        doc["at_head"] = None if note is None else {"status": note.status, "reason": note.reason,
                                                    "maps_to": note.maps_to, "text": note.text()}
        env.print(json_dump(doc))
        return 0
    env.write(gm.record_text(memory.id))
    env.print()
    # Who wrote it is who git says made the newest version (docs/sharing.md, Trust); the
    # record's own author field is only a claim.
    writer = commits[0].author if commits else None
    claim = memory.writer
    if writer and writer != gm.identity():
        env.print(f"# written by {' '.join(writer.split())}, not you")
    if claim and writer and claim != writer:
        env.print(f"# its author field claims {' '.join(claim.split())}: a claim, not who wrote it")
    if local and memory.refutation is None:
        env.print(f"# here: stale ({local}); uncommitted, not shared")
    env.print(f"# commits on refs/tur/memories that touched {memory.id}:")
    for c in commits:
        env.print(f"{c.sha[:12]} {c.time:%Y-%m-%d %H:%M} {c.author}  {c.message.splitlines()[0]}")
    if len(trail) > 1:  # the anchor travelled
        env.print()
        env.print("# how the anchor travelled:")
        for step in trail:
            env.print(f"{step.commit[:12]} {step.time:%Y-%m-%d %H:%M} {step.describe()}")
    if memory.refutation is None:
        from gitmem.cli.verify_cmds import at_head

        lines = at_head(env, memory)
        if lines:
            env.print()
            env.print("# " + lines[0])
            for line in lines[1:]:
                env.print(line)
    return 0


def cmd_refute(args: argparse.Namespace, env: Env) -> int:
    """``tur refute``: mark refuted (or ``--undo``: withdraw it); prints the id."""
    from gitmem.errors import InvalidInput

    if args.undo:
        if args.reason is not None or args.by is not None:
            raise InvalidInput("--undo takes no --reason or --by")
        memory, commit = env.gm.unrefute(args.id)
        if args.format == "json":
            env.print(json_dump({"id": memory.id, "status": memory.status.value, "undone": True,
                                 "commit": _sha(commit)}))
            return 0
        env.print(f"unrefuted {memory.id} (now {memory.status.value})")
        return 0
    if args.reason is None:
        raise InvalidInput("a refutation needs a reason", 'pass --reason "why it is wrong"')
    by = args.by or env.gm.identity()
    earlier = env.gm.get(args.id).refutation
    memory, commit = env.gm.refute(args.id, args.reason, by=by, allow_secret=args.allow_secret)
    if earlier is not None and commit is not None:
        # The ref's history keeps it, but a silent replacement reads as a first refutation.
        env.warn(f"replaced the earlier refutation of {memory.id}"
                 f"{f' by {earlier.by}' if earlier.by else ''}: {one_line(earlier.reason)}")
    if args.format == "json":
        env.print(json_dump({"id": memory.id, "status": memory.status.value, "reason": args.reason,
                             "by": by, "commit": _sha(commit),
                             "replaced": None if earlier is None else earlier.reason}))
        return 0
    env.print(f"refuted {memory.id}")
    return 0


def cmd_edit(args: argparse.Namespace, env: Env) -> int:
    """``tur edit``: change content, type or anchor in place; prints the id."""
    from gitmem.errors import InvalidInput

    if args.content is not None and args.content_file is not None:
        raise InvalidInput("give --content or --content-file, not both")
    content = args.content
    if content == "-":
        content = env.inp.read()
    elif args.content_file is not None:
        from pathlib import Path

        try:
            content = Path(args.content_file).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InvalidInput(f"no such file: {args.content_file}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read {args.content_file} as UTF-8 text: {exc}") from None
    memory, commit = env.gm.edit(args.id, content=content, type=args.type, file=args.file,
                                 allow_secret=args.allow_secret, reanchor=args.reanchor,
                                 visibility=[] if args.everyone else args.for_agents)
    if args.format == "json":
        env.print(json_dump({"id": memory.id, "changed": commit is not None, "status": memory.status.value,
                             "commit": _sha(commit)}))
        return 0
    if not commit:
        env.print(f"{memory.id} unchanged")
    elif args.reanchor and memory.provenance is not None:
        env.print(f"edited {memory.id}: re-anchored at {memory.provenance.context_ref}")
    else:
        env.print(f"edited {memory.id}")
    return 0


def cmd_forget(args: argparse.Namespace, env: Env) -> int:
    """``tur forget``: remove from the tree (kept in history)."""
    from gitmem.errors import InvalidInput

    if (args.id is None) == (args.tree_path is None):
        raise InvalidInput("give a memory ID or --path TREE_PATH, exactly one")
    if args.undo:
        if args.id is None:
            raise InvalidInput("--undo restores a memory: give its ID, not --path")
        memory, commit = env.gm.restore(args.id)
        if args.format == "json":
            env.print(json_dump({"id": memory.id, "restored": True, "commit": _sha(commit)}))
        else:
            env.print(f"restored {memory.id} ({memory.status.value})")
        return 0
    if args.tree_path is not None:
        commit = env.gm.forget_path(args.tree_path)
        what, key = args.tree_path.strip().strip("/"), "path"
    else:
        from gitmem.errors import UnknownMemory

        try:
            what, key = env.gm.resolve(args.id), "id"  # a malformed record can be forgotten too
        except UnknownMemory as missing:
            raise env.gm.records.forgotten_error(args.id) or missing from None
        commit = env.gm.forget(what)
    if args.format == "json":
        env.print(json_dump({key: what, "commit": _sha(commit)}))
    else:
        personal = " --personal" if getattr(args, "personal", False) else ""
        env.print(f"forgot {what} (`tur forget --undo {what}{personal}` brings it back)")
    return 0


def cmd_doctor(args: argparse.Namespace, env: Env) -> int:
    """``tur doctor``: every skipped entry with its reason; exit 1 while layout problems remain."""
    report = env.gm.doctor(fix=args.fix)
    malformed = any(i.memory_id for i in report.malformed)
    if args.format == "json":
        env.print(json_dump({
            "problems": [{"path": i.path, "reason": i.reason} for i in report.problems],
            "malformed": [{"id": i.memory_id, "blob": i.blob_id, "reason": i.reason}
                          for i in report.malformed if i.memory_id],
            "repairs": report.repairs, "commit": _sha(report.commit)}))
        return 1 if malformed or (report.repairs and report.commit is None) else 0
    for item in report.problems:
        env.print(f"{item.path}: {item.reason}")
    for item in report.malformed:
        if item.memory_id:
            env.print(f"{item.memory_id}: malformed record blob {item.blob_id[:12]}: {item.reason} "
                      f"(`tur forget {item.memory_id}` removes it)")
    if args.fix and report.commit is not None:
        for line in report.repairs:
            env.print(f"fixed: {line}")
        env.print(f"committed {report.commit.sha[:12]} (the old entries stay in the ref's history)")
        return 1 if malformed else 0
    if report.repairs:
        env.warn(f"{len(report.repairs)} layout problem(s); `tur doctor --fix` would: "
                 + "; ".join(report.repairs))
        return 1
    if not malformed:
        env.print("no problems: every entry of refs/tur/memories is read")
    return 1 if malformed else 0


def cmd_confidence(args: argparse.Namespace, env: Env) -> int:
    """``tur confidence``: set confidence."""
    memory, commit = env.gm.set_confidence(args.id, args.value)
    if args.format == "json":
        env.print(json_dump({"id": memory.id, "confidence": memory.confidence, "commit": _sha(commit)}))
        return 0
    env.print(f"{memory.id} confidence {memory.confidence:.2f}")
    return 0


def cmd_link(args: argparse.Namespace, env: Env) -> int:
    """``tur link``: add a relation."""
    if not args.remove and args.type is None:
        from gitmem.errors import InvalidInput

        raise InvalidInput("tur link needs --type", f"one of {', '.join(RELATIONS)}")
    from gitmem.errors import UnknownMemory

    try:  # before the unlink: a target forgotten since is named by the source's relations alone
        target = env.gm.records.link_target(args.source, args.target) if args.remove else None
    except UnknownMemory:
        target = None  # the unlink below says what is wrong
    memory, commit = env.gm.link(args.source, args.target, args.type, remove=args.remove)
    target = target or env.gm.resolve(args.target)
    if args.format == "json":
        env.print(json_dump({"source": memory.id, "type": args.type, "target": target,
                             "removed": args.remove, "commit": _sha(commit)}))
        return 0
    if args.remove:
        env.print(f"unlinked {memory.id} -/-> {target}" + (f" ({args.type})" if args.type else ""))
        return 0
    env.print(f"{memory.id} {args.type} {target}")
    return 0


def _sha(commit: CommitInfo | None) -> str | None:
    return commit.sha if commit is not None else None


def cmd_import(args: argparse.Namespace, env: Env) -> int:
    """``tur import``: legacy files or a Tur store in one commit; failures listed on stderr."""
    from gitmem.errors import InvalidInput

    if args.from_tur is None:
        if args.home is not None or args.persona is not None:
            raise InvalidInput("--home and --persona go with --from-tur")
        if not args.paths:
            raise InvalidInput("nothing to import", "give record files (PATH ...) or --from-tur")
        return _import_files(args, env)
    if args.paths:
        raise InvalidInput("give record files or --from-tur PATH, not both")
    return _import_tur(args, env)


def _import_files(args: argparse.Namespace, env: Env) -> int:
    with env.progress("importing") as progress:
        result = env.gm.import_legacy(args.paths, allow_secret=args.allow_secret, dry_run=args.dry_run,
                                      progress=progress)
    for line in result.failed:
        env.warn(f"tur: skipped {line}")
    for line in result.renamed:
        env.warn(f"tur: {line}")
    for line in result.notes:
        env.warn(f"tur: note: {line}")
    if args.format == "json":
        env.print(json_dump({"imported": result.imported, "unchanged": result.unchanged,
                             "failed": result.failed, "renamed": result.renamed, "notes": result.notes,
                             "dry_run": result.dry_run, "commit": _sha(result.commit)}))
    else:
        verb = "would import" if result.dry_run else "imported"
        env.print(f"{verb} {len(result.imported)}, unchanged {len(result.unchanged)}, "
                  f"failed {len(result.failed)}")
    if result.failed and not result.imported and not result.unchanged:
        return 1
    return 0


def _import_tur(args: argparse.Namespace, env: Env) -> int:
    if args.home:
        return _import_tur_home(args, env)
    import time

    started = time.monotonic()
    result = env.gm.import_tur(args.from_tur or None, home=args.home, persona=args.persona,
                               allow_secret=args.allow_secret, dry_run=args.dry_run)
    return _tur_outcome(result, time.monotonic() - started, args, env)


def _import_tur_home(args: argparse.Namespace, env: Env) -> int:
    """``--home``: the user-level memories and the persona to the personal store, the rest here."""
    import time

    project = env.gm
    path = args.from_tur or str(project.paths.workdir or project.cwd)
    options = {"home": args.home, "persona": args.persona, "allow_secret": args.allow_secret,
               "dry_run": args.dry_run}
    codes, payload = [], {}
    for name, gm, part in (("personal store", None, "home"), ("project", project, "project")):
        started = time.monotonic()
        gm = gm or (project.personal if args.dry_run else project.make_personal()) or project
        if gm is project and part == "home" and args.format != "json":  # a dry run, no store yet
            from gitmem.api import personal_store_path

            env.print(f"{name} ({personal_store_path()}): created by the import")
        result = gm.import_tur(path, part=part, **options)
        seconds = time.monotonic() - started
        if args.format == "json":  # one object: {"personal": …, "project": …}
            for line in result.failed:
                env.warn(f"tur: not imported: {line}")
            payload[part if part == "project" else "personal"] = _tur_json(result, seconds)
            done = result.imported or result.merged or result.unchanged
            codes.append(1 if result.failed and not done else 0)
            continue
        env.print(f"{name}:")
        codes.append(_tur_outcome(result, seconds, args, env))
    if payload:
        env.print(json_dump(payload))
    return max(codes)


def _tur_outcome(result: TurImportResult, seconds: float, args: argparse.Namespace, env: Env) -> int:
    """Print an import's report (or JSON); 1 when nothing at all was imported and some failed."""
    if args.format == "json":
        for line in result.failed:
            env.warn(f"tur: not imported: {line}")
        env.print(json_dump(_tur_json(result, seconds)))
        done = result.imported or result.merged or result.unchanged
        return 1 if result.failed and not done else 0
    for line in tur_report(result):
        env.print(line)
    for line in result.failed:
        env.warn(f"tur: not imported: {line}")
    if result.dry_run:
        env.print(f"dry run: nothing written ({seconds:.2f} s)")
    elif result.commit is not None:
        env.print(f"committed {result.commit.sha[:12]} in {seconds:.2f} s")
    else:
        env.print(f"nothing to commit: every memory is already stored ({seconds:.2f} s)")
    done = result.imported or result.merged or result.unchanged
    return 1 if result.failed and not done else 0


def tur_report(result: TurImportResult) -> list[str]:
    """The lines of ``tur import --from-tur``'s report (failures are printed apart, on stderr)."""
    def counts(counter: Counter[str], order: tuple[str, ...] = ()) -> str:
        keys = [k for k in order if counter[k]] + sorted(k for k in counter if k not in order)
        return ", ".join(f"{counter[k]} {k}" for k in keys) or "none"

    would = "would be " if result.dry_run else ""
    lines = [f"Tur store: {', '.join(result.sources)}; persona {result.persona}"]
    per_state = Counter({state: sum(c.values()) for state, c in result.states.items()})
    lines.append(f"read {result.files} memory files: {counts(per_state, _STATES)}")
    types = ", ".join(f"{n} {t}" + (f" (as {result.mapped_as[t]})" if result.mapped_as.get(t, t) != t else "")
                      for t, n in sorted(result.types.items(), key=lambda kv: (-kv[1], kv[0])))
    lines.append(f"types: {types or 'none'}")
    for state in sorted(result.states, key=lambda s: (_STATES + (s,)).index(s)):
        lines.append(f"  {state}: {counts(result.states[state], _BECAME)}")
    lines.append(f"provenance: {counts(result.anchors, _ANCHORS)}")
    lines.append(f"memories: {len(result.imported)} new, {len(result.merged)} merged into stored ones, "
                 f"{len(result.unchanged)} unchanged, {result.folded} folded into a duplicate, "
                 f"{len(result.failed)} not imported")
    lines.append(f"persona: {would if result.persona_status == 'imported' else ''}{result.persona_status}")
    lines.append(f"continuity note (the latest Tur session note): "
                 f"{would if result.note_status == 'imported' else ''}{result.note_status}")
    lines.extend(f"note: {line}" for line in result.notes)
    lines.extend(f"not imported: {line}" for line in result.not_imported)
    return lines


def _tur_json(result: TurImportResult, seconds: float) -> dict[str, object]:
    """``tur import --from-tur --format json``: the report's figures, by name."""
    return {
        "sources": result.sources, "persona": result.persona, "files": result.files,
        "states": {state: dict(c) for state, c in result.states.items()}, "types": dict(result.types),
        "mapped_as": result.mapped_as, "anchors": dict(result.anchors), "imported": result.imported,
        "merged": result.merged, "unchanged": result.unchanged, "folded": result.folded,
        "failed": result.failed, "notes": result.notes, "not_imported": result.not_imported,
        "persona_status": result.persona_status, "note_status": result.note_status,
        "dry_run": result.dry_run, "commit": _sha(result.commit), "seconds": round(seconds, 3),
    }


_STATES = ("active", "archive", "subsumed", "legacy")
_BECAME = ("active", "stale", "superseded", "refuted", "folded", "not imported")
_ANCHORS = ("anchored", "commit only", "commit not in this repository", "no commit")


__all__ = ["PARSERS"]
