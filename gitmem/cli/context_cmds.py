"""What an agent reads: ``tur wake``, ``tur recall``, ``tur hook pre-turn``, persona and spark notes."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from gitmem.defaults import PRE_TURN_TOKEN_BUDGET, RECALL_TOP_K, WAKE_TOKEN_BUDGET
from gitmem.vocabulary import RECALL_FORMATS, WAKE_FORMATS

if TYPE_CHECKING:
    from gitmem.cli.env import Env


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``wake``, ``recall``, ``hook``, ``persona`` and ``spark``."""
    p = sub.add_parser("wake", help="the token-budgeted prompt for the start of a session")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--token-budget", type=int, default=None, metavar="N",
                      help=f"tokens (default from config, {WAKE_TOKEN_BUDGET}); 0 = unbounded")
    size.add_argument("--unbounded", action="store_true", help="every active memory, no budget")
    p.add_argument("--format", default=WAKE_FORMATS[0], choices=WAKE_FORMATS)
    p.add_argument("--explain", action="store_true",
                   help="after the prompt, list every memory included or excluded, with the reason")
    p.set_defaults(func=cmd_wake)

    p = sub.add_parser("recall", help="memories relevant to a query (BM25 + trigram vectors, RRF)")
    p.add_argument("query_pos", nargs="?", metavar="QUERY")
    p.add_argument("--query", "-q")
    p.add_argument("--top-k", type=int, default=None,
                   help=f"number of memories (default from config, {RECALL_TOP_K})")
    p.add_argument("--token-budget", type=int, default=None, metavar="N")
    p.add_argument("--format", default=RECALL_FORMATS[0], choices=RECALL_FORMATS)
    p.add_argument("--include-stale", action="store_true")
    p.set_defaults(func=cmd_recall)

    p = sub.add_parser("hook", help="entry points for agent harness hooks")
    hook = p.add_subparsers(dest="hook", metavar="HOOK", required=True)
    h = hook.add_parser("pre-turn", help="read the harness's JSON on stdin; print the recall block")
    h.add_argument("--top-k", type=int, default=None,
                   help=f"number of memories (default from config, {RECALL_TOP_K})")
    h.add_argument("--token-budget", type=int, default=PRE_TURN_TOKEN_BUDGET, metavar="N",
                   help=f"tokens (default {PRE_TURN_TOKEN_BUDGET}); 0 = no cap")
    h.set_defaults(func=cmd_hook_pre_turn)

    p = sub.add_parser("persona", help="tier 0 identity and invariants (persona.yaml on the ref)")
    ps = p.add_subparsers(dest="persona", metavar="ACTION", required=True)
    s = ps.add_parser("set", help="store FILE (YAML mapping) as the persona")
    s.add_argument("file")
    s.add_argument("--allow-secret", action="store_true",
                   help="store it even if a line looks like a credential")
    s.set_defaults(func=cmd_persona_set)
    s = ps.add_parser("show", help="print the stored persona")
    s.set_defaults(func=cmd_persona_show)

    p = sub.add_parser("spark", help="leave a continuity note for the next session")
    p.add_argument("text")
    p.add_argument("--allow-secret", action="store_true",
                   help="store the note even if it looks like it holds a credential")
    p.set_defaults(func=cmd_spark)


def cmd_wake(args: argparse.Namespace, env: Env) -> int:
    """Print the wake prompt (and the assembly record with --explain)."""
    from gitmem import api

    budget = 0 if args.unbounded else args.token_budget
    if budget is not None and budget < 0:
        from gitmem.errors import InvalidInput

        raise InvalidInput(f"--token-budget must be >= 0, got {budget}")
    result, skipped = env.gm.wake(token_budget=budget)
    env.warn_skipped(skipped)
    env.write(api.render_wake(result, args.format))
    if args.explain and args.format != "json":
        env.write(api.render_explain(result))
    return 0


def cmd_recall(args: argparse.Namespace, env: Env) -> int:
    """Print the memories recalled for the query."""
    from gitmem import api
    from gitmem.errors import InvalidInput

    query = args.query or args.query_pos
    if not query or not query.strip():
        raise InvalidInput("recall needs a query", 'pass --query "what you are about to do"')
    if args.top_k is not None and args.top_k < 1:
        raise InvalidInput(f"--top-k must be >= 1, got {args.top_k}")
    result, skipped = env.gm.recall(query, top_k=args.top_k, token_budget=args.token_budget,
                                    include_stale=args.include_stale, full_records=False)
    env.warn_skipped(skipped)
    env.write(api.render_recall(result, args.format))
    if result.omitted:
        noun = "hit" if result.omitted == 1 else "hits"
        env.warn(f"{result.omitted} {noun} left out to fit --token-budget {args.token_budget}")
    return 0


def cmd_hook_pre_turn(args: argparse.Namespace, env: Env) -> int:
    """Never block a harness turn: print the block or nothing, always exit 0."""
    try:
        payload = env.inp.read()
        text = env.gm.pre_turn(payload, top_k=args.top_k, token_budget=args.token_budget)
        if text:
            env.write(text)
    except Exception as exc:
        env.warn(f"tur hook pre-turn: {exc}")
    return 0


def cmd_persona_set(args: argparse.Namespace, env: Env) -> int:
    """Store a persona file."""
    from pathlib import Path

    from gitmem.errors import InvalidInput

    path = Path(args.file)
    if not path.is_file():
        raise InvalidInput(f"no such file: {path}")
    commit = env.gm.set_persona(path.read_bytes(), where=str(path), allow_secret=args.allow_secret)
    env.print("persona stored" if commit else "persona unchanged")
    return 0


def cmd_persona_show(args: argparse.Namespace, env: Env) -> int:
    """Print the stored persona."""
    text = env.gm.persona_text()
    if text is None:
        env.warn("no persona set: tur persona set FILE")
        return 1
    env.write(text)
    return 0


def cmd_spark(args: argparse.Namespace, env: Env) -> int:
    """Record a continuity note."""
    name = env.gm.spark(args.text, allow_secret=args.allow_secret)
    env.print(f"continuity note {name}")
    return 0
