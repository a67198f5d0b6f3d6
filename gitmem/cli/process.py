"""What an entry point sets for the whole process it owns: pydantic's plugins, the collector, the heap.

A library does not choose these for the application that imports it, so :mod:`gitmem.api`
never does (``tests/test_architecture.py``: no module but this one touches the collector).
The ``tur`` command owns its process: :func:`gitmem.cli.run` calls :func:`settle_process`
first and :func:`exempt_survivors` at exit; ``tur mcp`` and ``tur serve``
(:mod:`gitmem.cli.mcp_cmds`) call :func:`settle_new_tip` once per tip of the memory ref
(the collector, then :func:`release_free_heap`). This is the one place that does any of them.
"""

from __future__ import annotations

import ctypes
import gc
import os
from collections.abc import Callable
from functools import cache

__all__ = ["YOUNG_GENERATION_THRESHOLD", "exempt_survivors", "release_free_heap", "settle_new_tip",
           "settle_process"]

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


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    """The C library's ``malloc_trim``, or ``None`` where it has none (musl, macOS, Windows)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError, TypeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_free_heap() -> bool:
    """Give the pages the C heap holds free back to the operating system (glibc's ``malloc_trim(0)``).

    Why a long-running server needs it: a write's reads allocate and free buffers of
    hundreds of KB to a few MB (table columns, a recall index, YAML texts), and glibc keeps
    what was freed inside its heap for reuse. Where a small live allocation sits above them
    the heap cannot shrink, so a ``tur mcp`` that learned 1,000 times held about 7 MB of
    free heap in its RSS, growing with every write (``mallinfo2().fordblks``);
    ``malloc_trim`` returns every free page of the heap, not only its top
    (glibc >= 2.8, https://man7.org/linux/man-pages/man3/malloc_trim.3.html; dask's
    workers do the same). Only entry points call it, once per tip of the memory ref: it
    costs about a millisecond per 100 MB of heap.

    Returns:
        whether memory was given back; ``False`` also where the C library has no
        ``malloc_trim`` (then nothing is done).
    """
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False


def settle_new_tip() -> None:
    """What a long-running ``tur`` server does once per new tip of the memory ref, between calls.

    :func:`exempt_survivors` with a collection first (what the new tip's reads keep leaves the
    collector's reach; cycles the old tip left are freed), then :func:`release_free_heap`
    (what that freed, and what the write's reads freed, goes back to the operating system).
    ``tur mcp`` and ``tur serve`` pass it as their ``on_new_tip``.
    """
    exempt_survivors(collect=True)
    release_free_heap()
