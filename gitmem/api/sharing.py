"""Sharing memories through a git remote, for the facade: remote set-up, sync and its guards.

The guards keep sharing from losing anything: a lost tip merged back, a fresh clone's hint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gitmem.errors import GitmemError

if TYPE_CHECKING:
    from gitmem.sharing.sync import SyncResult
    from gitmem.store import Store

__all__ = ["Sharing", "guard_lost_tip"]


def guard_lost_tip(store: Store, current: str | None) -> None:
    """Merge back the tip gitmem last wrote when the memory ref was rewritten without it.

    Installed as :attr:`gitmem.store.Store.guard`: runs on the first read of the memory ref
    in a process. Cheap when nothing happened (two small files read). When the ref moved to
    a commit that does not contain the last tip gitmem wrote (``<common dir>/tur/tip``) — a
    fetch refspec such as ``+refs/tur/*:refs/tur/*``, a ``git update-ref``, a reset — that tip
    is merged back exactly as ``tur sync`` merges (:func:`gitmem.sharing.sync.recover_lost_tip`) and
    one line on stderr says so. A deleted ref is restored to it. A move that keeps the tip
    (a fast-forward by ``git fetch``) is only remembered.
    """
    last = store.last_written_tip()
    if last == current:
        return
    if last is None:
        if current is not None:
            store.note_tip(current)
        return
    try:
        if not store.has_commit(last):
            store.note_tip(current)  # pruned away: nothing left to merge back
            return
        if current is not None and store.is_ancestor(last, current):
            store.note_tip(current)
            return
        from gitmem.sharing.sync import recover_lost_tip

        line = recover_lost_tip(store, last, current)
        if line is not None:
            store.add_notice(line)
    except GitmemError as exc:
        store.add_notice(f"tur: warning: refs/tur/memories no longer contains {last[:12]}, the last tip "
                         f"tur wrote, and it could not be merged back ({exc}); "
                         f"`git update-ref refs/tur/memories {last[:12]}` restores it by hand")


class Sharing:
    """``setup_remote``, ``sync`` and the fresh-clone hint over one repository's store.

    Args:
        store: the repository's store.
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    def setup_remote(self, remote: str = "origin") -> bool:
        """See :meth:`gitmem.api.Gitmem.setup_remote`."""
        from gitmem.sharing.sync import setup_remote

        return setup_remote(self.store, remote)

    def sync(self, remote: str = "origin", *, dry_run: bool = False, attempts: int = 5,
             allow_secret: bool = False, publish: bool = True,
             require_signatures: bool = False) -> SyncResult:
        """See :meth:`gitmem.api.Gitmem.sync` (``require_signatures``: ``trust.require_signatures``)."""
        from gitmem.sharing.sync import sync

        return sync(self.store, remote, dry_run=dry_run, attempts=attempts, allow_secret=allow_secret,
                    publish=publish, require_signatures=require_signatures)

    def remote_hint(self) -> str | None:
        """See :meth:`gitmem.api.Gitmem.remote_hint`."""
        if self.store.tip() is not None:
            return None
        from gitmem.store.remote import Remote, tracking_ref

        remotes = Remote.names(self.store)
        if not remotes:
            return None
        for name in remotes:
            tip = self.store.tip(tracking_ref(name))
            if tip is not None:
                count = len(self.store.entries(tip))
                noun = "memory waits" if count == 1 else "memories wait"
                return (f"{count} {noun} in {tracking_ref(name)} (fetched from {name}): "
                        f"run `tur sync {name}` to take them")
        return (f"no memories in this clone yet, but it has a remote ({', '.join(remotes)}) that may "
                "hold some: run `tur remote setup && tur sync`")
