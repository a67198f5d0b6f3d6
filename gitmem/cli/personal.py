"""Which store a command works on: the project's, or the person's own (``--personal``, docs/personal.md).

``--personal`` sends the command to the personal store (created by the first write). Without
it, an id that names no memory of the project but one of the personal store is found there,
and a line on stderr names the store.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitmem.api import Gitmem
    from gitmem.cli.env import Env

__all__ = ["add_personal", "route"]

#: The commands whose ``--personal`` creates the personal store when there is none.
CREATES = frozenset({"learn", "remote"})
#: The commands taking a memory id, and the argument holding it.
ID_ARGUMENTS = {"show": "id", "refute": "id", "edit": "id", "forget": "id", "confidence": "id",
                "link": "source"}


def add_personal(parser: argparse.ArgumentParser, what: str = "the personal store") -> None:
    """Add ``--personal``: work on the person's own store instead of the project's."""
    parser.add_argument("--personal", action="store_true",
                        help=f"{what}: your own memories, in every repository (docs/personal.md)")


def route(command: str | None, args: argparse.Namespace, env: Env) -> int | None:
    """Point ``env`` at the store ``args`` ask for; an exit code when the command has nothing to do.

    Raises:
        InvalidInput: ``--personal`` with ``--file`` (personal memories are never anchored);
            ``tur link`` joining a memory of one store to a memory of the other.
        UnknownMemory: ``--personal`` naming an id while there is no personal store.
    """
    if command == "link" and not getattr(args, "remove", False):
        _one_store(args, env)
    return _route(command, args, env)


def _route(command: str | None, args: argparse.Namespace, env: Env) -> int | None:
    if getattr(args, "personal", False):
        return _personal(command, args, env)
    key = ID_ARGUMENTS.get(command or "")
    token = getattr(args, key, None) if key else None
    if not token:
        return None
    if getattr(args, "undo", False):
        _undo_route(command, token, args, env)
        return None
    from gitmem.errors import UnknownMemory

    try:
        env.gm.resolve(token)
        return None
    except UnknownMemory:
        # In neither store, the command itself says so, with its own hints (a forgotten id).
        mine = env.gm.personal
        if mine is None:
            return None
        try:
            mine.resolve(token)
        except UnknownMemory:
            return None
    _use(env, mine, f"tur: {token} is in your personal store")
    args.personal = True  # what the command prints (an undo hint) names the store too
    return None


def _one_store(args: argparse.Namespace, env: Env) -> None:
    """Refuse a link whose two ids are in different stores (a relation joins memories of one store).

    Checked before the command is routed, so that the refusal is the only line said.

    Raises:
        InvalidInput: the source is in one store and the target only in the other.
    """
    from gitmem.errors import GitmemError, InvalidInput

    try:
        project = env.gm
        mine = project.personal
    except GitmemError:
        return  # outside a repository: only one store to link in
    if mine is None:
        return

    def holds(gm: Gitmem, token: str) -> bool:
        try:
            gm.resolve(token)
            return True
        except GitmemError:
            return False

    personal = bool(getattr(args, "personal", False)) or (
        not holds(project, args.source) and holds(mine, args.source))
    here, there = (mine, project) if personal else (project, mine)
    if holds(here, args.target) or not holds(there, args.target):
        return  # one store, or a target in neither: the command says so, with its own hints
    source, target = ("your personal store", "this repository's") if personal \
        else ("this repository's store", "your personal store")
    raise InvalidInput(f"{args.source} is in {source} and {args.target} in {target}",
                       "a link joins two memories of one store")


def _personal(command: str | None, args: argparse.Namespace, env: Env) -> int | None:
    from gitmem.api import personal_store_path, refuse_personal_anchor

    refuse_personal_anchor(getattr(args, "file", None))
    if command in CREATES:
        url = None
        if command == "remote" and _is_url(args.remote):
            url, args.remote = args.remote, "origin"
        _use(env, env.gm.make_personal(url), None)
        return None
    mine = env.gm.personal
    if mine is None:
        key = ID_ARGUMENTS.get(command or "")
        if key and getattr(args, key, None):
            from gitmem.errors import UnknownMemory

            raise UnknownMemory(getattr(args, key), "there is no personal store yet: "
                                "`tur learn --personal TEXT` starts one")
        env.note(f"no personal memories yet ({personal_store_path()}): "
                 "`tur learn --personal TEXT` starts them")
        return 0
    _use(env, mine, None)
    return None


def _is_url(value: str) -> bool:
    """Whether ``tur remote setup --personal VALUE`` names a URL (or path) rather than a remote."""
    return "/" in value or ":" in value or value.endswith(".git")


def _use(env: Env, gm: object, line: str | None) -> None:
    """Work on ``gm`` from now on; what the project's store noted so far is said first."""
    env.warn_notices()
    env._gm = gm  # type: ignore[assignment]
    if line:
        env.warn(line)


def _undo_route(command: str | None, token: str, args: argparse.Namespace, env: Env) -> None:
    """``--undo`` of an id the project does not hold but the personal store does: run it there.

    ``forget --undo`` looks for a forgotten memory, ``refute --undo`` for a memory, in the
    project first.
    """
    from gitmem.errors import GitmemError
    from gitmem.vocabulary import ID_PATTERN

    def holds(gm: Gitmem) -> bool:
        try:
            if command == "forget":  # a full id with commits on the memory ref (forgotten since)
                return bool(ID_PATTERN.match(token)) and bool(gm.history(token))
            gm.resolve(token)
            return True
        except GitmemError:
            return False

    if holds(env.gm):
        return None
    mine = env.gm.personal
    if mine is not None and holds(mine):
        _use(env, mine, f"tur: {token} is in your personal store")
        args.personal = True
    return None
