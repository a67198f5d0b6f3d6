"""What an entry point sets for the whole process it owns: pydantic's plugins and the collector.

A library does not choose these for the application that imports it, so :mod:`gitmem.api`
never does (``tests/test_architecture.py``: no module but this one touches the collector).
The ``tur`` command owns its process: :func:`gitmem.cli.run` calls :func:`settle_process`
first and :func:`exempt_survivors` at exit; ``tur mcp``
(:func:`gitmem.cli.mcp_cmds.cmd_mcp`) calls :func:`exempt_survivors` once per tip of the
memory ref. This is the one place that does either.
"""

from __future__ import annotations

import gc
import os

__all__ = ["YOUNG_GENERATION_THRESHOLD", "exempt_survivors", "settle_process"]

#: Allocations of container objects (net of deallocations) between two collections of the
#: youngest generation, in ``tur`` processes; CPython's default is 700. At the default a
#: warm ``status`` at 10,000 memories runs about 140 collections (60-140 ms of its 0.45 s
#: on 2 cores), a ``learn`` about 100 and a warm ``recall`` about 60, each walking the
#: young objects that loading a table or a recall index has just made and keeps; at
#: 100,000 they run none, or one. Cyclic garbage (the only kind the collector frees) waits
#: for at most this many allocations, a few MB, so long-lived ``tur`` processes (``tui``,
#: ``watch``, ``mcp``) stay bounded.
YOUNG_GENERATION_THRESHOLD = 100_000


def settle_process() -> None:
    """Set what the ``tur`` process runs with; called by the entry point before anything else.

    * ``PYDANTIC_DISABLE_PLUGINS=__all__`` unless the environment already sets it: a pydantic
      plugin (entry point group ``pydantic``) observes every validation; gitmem registers
      none, and its records' validation is no other package's to observe. Looking them up
      reads the metadata of every installed distribution (5-10 ms on the first validation).
      It is pydantic's documented switch (https://docs.pydantic.dev/latest/concepts/plugins/).
    * The youngest generation's threshold raised to :data:`YOUNG_GENERATION_THRESHOLD`
      (``gc.set_threshold``, the older generations' thresholds kept).
    """
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, *gc.get_threshold()[1:])


def exempt_survivors(*, collect: bool = False) -> None:
    """Move every live object out of the cyclic garbage collector's reach (``gc.freeze``).

    Only entry points call it, because the collector is the process's, not a library's.
    Frozen objects are still freed when no longer referenced; the collector just stops
    walking them again.

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
