"""What an entry point sets for the whole process it owns: the garbage collector's setting.

Library code never touches the collector (``tests/test_architecture.py``); ``tur`` (at exit,
:func:`gitmem.cli.run`) and ``tur mcp`` (once per tip of the memory ref,
:func:`gitmem.cli.mcp_cmds.cmd_mcp`) call :func:`exempt_survivors` from here, the one place.
"""

from __future__ import annotations

import gc

__all__ = ["exempt_survivors"]


def exempt_survivors(*, collect: bool = False) -> None:
    """Move every live object out of the cyclic garbage collector's reach (``gc.freeze``).

    The one place gitmem touches the collector; only entry points call it, because the
    collector is the process's, not a library's. Frozen objects are still freed when no
    longer referenced; the collector just stops walking them again.

    Args:
        collect: first unfreeze and collect, so that cycles among objects frozen earlier are
            found. ``tur mcp`` does this once per tip of the memory ref (what a tip's reads keep,
            the record table and the recall index, is hundreds of thousands of objects at 10,000
            memories, and every full collection would walk them: 50-80 ms each on 2 cores,
            landing inside later calls). The CLI's exit does not: a collection there would cost
            what freezing saves.
    """
    if collect:
        gc.unfreeze()
        gc.collect()
    gc.freeze()
