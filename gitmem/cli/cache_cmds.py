"""``tur cache clear`` and ``tur cache info``: the read cache under the git directory."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from gitmem.cli.commands import add_command, add_format
from gitmem.cli.output import json_dump

if TYPE_CHECKING:
    from gitmem.cli.env import Env


def _cache_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "cache", description="gitmem keeps parsed records, token counts and recall "
                    "indexes in <git dir>/tur/cache, keyed by git object ids. It is never part of "
                    "the working tree or the memory ref, and deleting it loses nothing.")
    actions = p.add_subparsers(dest="cache", metavar="ACTION", required=True)
    c = actions.add_parser("clear", help="delete the cache (the next read rebuilds it)")
    add_format(c)
    c.set_defaults(func=cmd_cache_clear)
    i = actions.add_parser("info", help="where the cache is and how big")
    add_format(i)
    i.set_defaults(func=cmd_cache_info)


#: Each command of this module and the function adding its parser (see gitmem.cli.commands).
PARSERS = {"cache": _cache_parser}


def cmd_cache_clear(args: argparse.Namespace, env: Env) -> int:
    """Delete every cache file; print how many."""
    removed = env.gm.cache_clear()
    if args.format == "json":
        env.print(json_dump({"removed": removed}))
        return 0
    env.print(f"removed {removed} cache file{'' if removed == 1 else 's'}")
    return 0


def cmd_cache_info(args: argparse.Namespace, env: Env) -> int:
    """Print the cache directory, its files and their size."""
    info = env.gm.cache_info()
    if args.format == "json":
        env.print(json_dump({"path": str(info.path), "bytes": info.total_bytes,
                             "files": [{"name": n, "bytes": b} for n, b in info.files]}))
        return 0
    count = len(info.files)
    env.print(f"{info.path}: {count} file{'' if count == 1 else 's'}, {info.total_bytes / 1e6:.1f} MB")
    for name, size in info.files:
        env.print(f"  {size:>12,}  {name}")
    return 0


__all__ = ["PARSERS"]
