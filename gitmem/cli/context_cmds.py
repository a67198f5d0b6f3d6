"""What an agent reads: ``tur wake``, ``tur recall``, ``tur hook …``, persona and spark notes."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from gitmem.cli.commands import add_command, add_format
from gitmem.defaults import (
    HOOK_MAX_CHARS,
    PRE_TOOL_MAX_CHARS,
    PRE_TOOL_TOKEN_BUDGET,
    PRE_TURN_TOKEN_BUDGET,
    RECALL_TOP_K,
    WAKE_TOKEN_BUDGET,
)
from gitmem.vocabulary import RECALL_FORMATS, WAKE_FORMATS

# The names of gitmem.harness.stop.STOP_HARNESSES; spelled out so that `tur --help` imports nothing.
STOP_HARNESSES = ("claude", "codex", "gemini", "copilot", "cursor")

if TYPE_CHECKING:
    from gitmem.api import Via
    from gitmem.cli.env import Env


def _wake_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "wake")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--token-budget", type=int, default=None, metavar="N",
                      help=f"tokens (default from config, {WAKE_TOKEN_BUDGET}); 0 = unbounded")
    size.add_argument("--unbounded", action="store_true", help="every active memory, no budget")
    p.add_argument("--max-chars", type=int, default=None, metavar="N",
                   help="characters the text may take as well (default: no cap)")
    p.add_argument("--format", default=WAKE_FORMATS[0], choices=WAKE_FORMATS,
                   help=f"output: {WAKE_FORMATS[0]} (default) or {', '.join(WAKE_FORMATS[1:])}")
    p.add_argument("--explain", action="store_true",
                   help="after the prompt, list every memory included or excluded, with the reason")
    _for_option(p)
    p.set_defaults(func=cmd_wake)


def _recall_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "recall")
    p.add_argument("query_pos", nargs="?", metavar="QUERY", help="what you are about to do")
    p.add_argument("--query", "-q", help="the query, as an option")
    p.add_argument("--file", metavar="PATH",
                   help="memories anchored to this file first (QUERY is then optional)")
    p.add_argument("--top-k", type=int, default=None,
                   help=f"number of memories (default from config, {RECALL_TOP_K})")
    p.add_argument("--token-budget", type=int, default=None, metavar="N",
                   help="tokens the output may take (default: no cap)")
    p.add_argument("--max-chars", type=int, default=None, metavar="N",
                   help="characters the output may take (default: no cap)")
    p.add_argument("--format", default=RECALL_FORMATS[0], choices=RECALL_FORMATS,
                   help=f"output: {RECALL_FORMATS[0]} (default) or {', '.join(RECALL_FORMATS[1:])}")
    p.add_argument("--include-stale", action="store_true", help="stale memories may be recalled too")
    _for_option(p)
    p.set_defaults(func=cmd_recall)


def _for_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--for", dest="agent", default="", metavar="NAME",
                   help="as the agent or harness NAME sees it: memories bound to others left out "
                        "(default: nobody named, every memory)")


def _asking(surface: str, agent: str) -> Via:
    from gitmem.api import Via, agent_names

    names = agent_names([agent]) if agent else ()
    return Via(surface, agent=names[0] if names else "")


def _hook_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "hook")
    hook = p.add_subparsers(dest="hook", metavar="HOOK", required=True)
    h = hook.add_parser("session-start",
                        help="read the harness's JSON on stdin; print the wake for the session")
    h.add_argument("--token-budget", type=int, default=None, metavar="N",
                   help=f"tokens (default from config, {WAKE_TOKEN_BUDGET}); 0 = no cap")
    _hook_options(h, None, HOOK_MAX_CHARS, "text")
    h.set_defaults(func=cmd_hook, hook_method="session_start")
    h = hook.add_parser("pre-turn", help="read the harness's JSON on stdin; print the recall block")
    h.add_argument("--top-k", type=int, default=None,
                   help=f"number of memories (default from config, {RECALL_TOP_K})")
    _hook_options(h, PRE_TURN_TOKEN_BUDGET, HOOK_MAX_CHARS, "text")
    h.set_defaults(func=cmd_hook, hook_method="pre_turn")
    h = hook.add_parser("pre-tool", help="read a PreToolUse JSON on stdin; print the memories "
                        "anchored to the file the tool is about to read or edit")
    h.add_argument("--top-k", type=int, default=None,
                   help=f"number of memories (default from config, {RECALL_TOP_K})")
    _hook_options(h, PRE_TOOL_TOKEN_BUDGET, PRE_TOOL_MAX_CHARS, "json")
    h.set_defaults(func=cmd_hook, hook_method="pre_tool")
    h = hook.add_parser("stop", help="read an end-of-turn JSON on stdin; once per session, remind "
                        "a session that changed files and learned nothing to record a memory")
    h.add_argument("--harness", default="claude", choices=STOP_HARNESSES,
                   help="whose answer format to print (default claude: also Codex's and Copilot "
                   "CLI's)")
    h.add_argument("--start", action="store_true",
                   help="the session begins: record its working tree and print nothing (for a "
                   "harness whose session-start hook does not run tur hook session-start)")
    h.set_defaults(func=cmd_hook_stop)


def _persona_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "persona")
    ps = p.add_subparsers(dest="persona", metavar="ACTION", required=True)
    s = ps.add_parser("set", help="store FILE (YAML mapping) as the persona")
    s.add_argument("file", help="a YAML mapping (name, invariants, ...)")
    s.add_argument("--allow-secret", action="store_true",
                   help="store it even if a line looks like a credential")
    add_format(s)
    s.set_defaults(func=cmd_persona_set)
    s = ps.add_parser("show", help="print the persona in force here")
    s.add_argument("--format", default="yaml", choices=("yaml", "json"),
                   help="output: yaml (default, as stored) or json, for scripts")
    s.add_argument("--proposed", action="store_true",
                   help="print instead the persona and note from untrusted authors that are not in force "
                   "here, with who wrote them (docs/sharing.md, Trust)")
    s.set_defaults(func=cmd_persona_show)
    s = ps.add_parser("accept", help="put the persona a teammate proposed in force in this clone",
                      description="A persona (or, with --note, a continuity note) made by an author "
                      "you do not trust arrives by sync as a proposal: wake shows it framed as "
                      "untrusted, and yours stays in force. Read it with `tur persona show "
                      "--proposed`; this puts it in force here (kept in .git/tur/accepted, never "
                      "shared). To trust an author for good, list them in trust.authors.")
    s.add_argument("--note", action="store_true", help="accept the proposed continuity note instead")
    add_format(s)
    s.set_defaults(func=cmd_persona_accept)


def _spark_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "spark")
    p.add_argument("text", help="the note: where you stopped, what comes next")
    p.add_argument("--allow-secret", action="store_true",
                   help="store the note even if it looks like it holds a credential")
    add_format(p)
    p.set_defaults(func=cmd_spark)


#: Each command of this module and the function adding its parser (see gitmem.cli.commands).
PARSERS = {"wake": _wake_parser, "recall": _recall_parser, "hook": _hook_parser,
           "persona": _persona_parser, "spark": _spark_parser}


def _hook_options(h: argparse.ArgumentParser, tokens: int | None, chars: int, fmt: str) -> None:
    if tokens is not None:
        h.add_argument("--token-budget", type=int, default=tokens, metavar="N",
                       help=f"tokens (default {tokens}); 0 = no cap")
    h.add_argument("--max-chars", type=int, default=None, metavar="N",
                   help=f"characters (default: the harness's char_cap in config, else {chars:,}, "
                        "under Claude Code's 10,000); 0 = no cap")
    h.add_argument("--format", default=fmt, choices=("text", "json"),
                   help=f"text, or the harness's JSON envelope (default {fmt})")
    h.add_argument("--harness", default="", metavar="NAME",
                   help="the harness running the hook: its memories and limits (config harness.NAME), "
                        "as the injection log names it (tur log)")


def cmd_wake(args: argparse.Namespace, env: Env) -> int:
    """Print the wake prompt (and the assembly record with --explain)."""
    from gitmem import api

    budget = 0 if args.unbounded else args.token_budget
    result, skipped = env.gm.wake(token_budget=budget, max_chars=args.max_chars,
                                  via=_asking("cli:wake", args.agent))
    env.warn_skipped(skipped)
    hint = env.gm.remote_hint() if env.gm.tip() is None else None
    if hint:  # where the memories are says more than that there are none here
        env.warn(hint)
    env.write(api.render_wake(result, args.format))
    if not hint:
        env.note(api.empty_notice(result))
    if args.explain and args.format != "json":
        env.write(api.render_explain(result))
    return 0


def cmd_recall(args: argparse.Namespace, env: Env) -> int:
    """Print the memories recalled for the query."""
    from gitmem import api

    query = args.query or args.query_pos or ""
    result, skipped = env.gm.recall(query, top_k=args.top_k, token_budget=args.token_budget,
                                    include_stale=args.include_stale, full_records=False,
                                    max_chars=args.max_chars, file=args.file,
                                    via=_asking("cli:recall", args.agent))
    env.warn_skipped(skipped)
    env.write(api.render_recall(result, args.format))
    env.note(api.empty_notice(result, args.file or ""))
    if result.omitted:
        noun = "hit" if result.omitted == 1 else "hits"
        caps = [f"--{name} {value}" for name, value in (("token-budget", args.token_budget),
                                                         ("max-chars", args.max_chars)) if value]
        env.warn(f"{result.omitted} {noun} left out to fit {' and '.join(caps)}")
    return 0


def cmd_hook(args: argparse.Namespace, env: Env) -> int:
    """Never block a harness: print the text (or its JSON envelope) or nothing; always exit 0."""
    from gitmem import api
    from gitmem.cli.hook_input import BadPayload, read_payload

    try:
        payload = read_payload(env.inp)
    except BadPayload as exc:  # nothing to answer: no output, and the reason on stderr
        env.warn(f"tur hook {args.hook}: {exc}")
        return 0
    except (OSError, ValueError, AttributeError) as exc:  # no stdin at all (closed, or None)
        env.warn(f"tur hook {args.hook}: cannot read stdin: {exc}")
        return 0
    try:
        from gitmem.api import Via, agent_names
        from gitmem.errors import InvalidInput

        harness = args.harness
        if harness:
            try:
                agent_names([harness])
            except InvalidInput as exc:  # a hook still answers: as a harness no memory is bound to
                env.warn(f"tur hook {args.hook}: --harness: {exc}")
        options = {"token_budget": args.token_budget, "max_chars": args.max_chars,
                   "via": Via(f"hook:{args.hook}", harness)}
        if hasattr(args, "top_k"):
            options["top_k"] = args.top_k
        output = getattr(env.gm.hooks, args.hook_method)(payload, **options)
        printed = api.render_hook(output.text, output.event, args.format)
        if printed:
            env.write(printed)
    except Exception as exc:
        env.warn(f"tur hook {args.hook}: {exc}")
    return 0


def cmd_hook_stop(args: argparse.Namespace, env: Env) -> int:
    """Print the reminder in the harness's answer format, or nothing; always exit 0."""
    from gitmem.cli.hook_input import read_payload

    try:  # bad input (BadPayload), no repository, a git failure: one line on stderr, no answer
        printed = env.gm.hooks.stop(read_payload(env.inp), args.harness, start=args.start)
        if printed:
            env.write(printed)
    except Exception as exc:
        env.warn(f"tur hook stop: {exc}")
    return 0


def cmd_persona_set(args: argparse.Namespace, env: Env) -> int:
    """Store a persona file."""
    from pathlib import Path

    from gitmem.errors import InvalidInput

    path = Path(args.file)
    if not path.is_file():
        raise InvalidInput(f"no such file: {path}")
    commit = env.gm.set_persona(path.read_bytes(), where=str(path), allow_secret=args.allow_secret)
    if args.format == "json":
        from gitmem.cli.output import json_dump

        env.print(json_dump({"stored": commit is not None,
                             "commit": commit.sha if commit is not None else None}))
        return 0
    env.print("persona stored" if commit else "persona unchanged")
    return 0


def cmd_persona_show(args: argparse.Namespace, env: Env) -> int:
    """Print the persona in force (or ``--proposed``: the untrusted proposals, attributed)."""
    if args.proposed:
        return _show_proposed(args, env)
    text = env.gm.persona_text()
    if text is None:
        env.warn("no persona set: tur persona set FILE")
        return 1
    if args.format == "json":
        from gitmem.cli.output import json_dump

        env.print(json_dump(env.gm.persona()))
        return 0
    env.write(text)
    return 0


def _show_proposed(args: argparse.Namespace, env: Env) -> int:
    """The persona and note waiting from untrusted authors: who wrote each, then its text."""
    found = env.gm.proposals()
    if args.format == "json":
        from gitmem.cli.output import json_dump

        env.print(json_dump([p.to_json() for p in found]))
        return 0
    if not found:
        env.warn("nothing proposed: no persona or note from an untrusted author waits")
        return 1
    for p in found:
        who = " ".join(p.writer.split())
        if p.version.deleted:
            env.print(f"# {p.kind} {p.version.path} deleted by {who}: untrusted, not in force here "
                      f"(yours stays); `{p.accept}` puts the deletion in force")
            continue
        env.print(f"# {p.kind} {p.version.path} written by {who}: untrusted, "
                  f"not in force here; `{p.accept}` puts it in force")
        env.write(p.text if p.text.endswith("\n") else p.text + "\n")
    return 0


def cmd_persona_accept(args: argparse.Namespace, env: Env) -> int:
    """Put the proposed persona (or note) in force in this clone."""
    version = env.gm.accept(note=args.note)
    if args.format == "json":
        from gitmem.cli.output import json_dump

        env.print(json_dump({"accepted": version.path, "blob": version.blob,
                             "authors": list(version.authors), "deleted": version.deleted}))
        return 0
    by = ", ".join(version.authors) or "nobody known"
    what = f"the deletion of {version.path} (commit " if version.deleted else f"{version.path} ("
    env.print(f"accepted {what}{version.blob[:12]}) by {by}: in force in this clone")
    return 0


def cmd_spark(args: argparse.Namespace, env: Env) -> int:
    """Record a continuity note."""
    name = env.gm.spark(args.text, allow_secret=args.allow_secret)
    if args.format == "json":
        from gitmem.cli.output import json_dump

        env.print(json_dump({"note": name}))
        return 0
    env.print(f"continuity note {name}")
    return 0
