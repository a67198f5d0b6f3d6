"""The long-running ``tur mcp`` holds what it derives per tree of the memory ref for the newest
tree only, and a bounded number of written records, on a real temporary repository.

The tools run in this process (:class:`gitmem.mcp.tools.GitmemTools`, as the server runs
them), learning and forgetting so that the store keeps its size: the record tables and the
record models alive must not grow with the number of writes. Before the fix, every write kept
the record table of its tree (with its token column, in ``TokenCounts``) and the written
record (in ``Tables``) for the life of the process: 0.3 MB a write in a small store.
RSS figures over 10,000 writes: ``bench/bench_mcp.py --rss``.
"""

from __future__ import annotations

import gc

from gitmem.api import Gitmem
from gitmem.cache.table import RecordTable
from gitmem.mcp.tools import GitmemTools
from gitmem.record.models import Memory
from tests.conftest import tur

WORDS = ["depth", "retry", "backoff", "worker", "outbox", "lease", "batch"]


def alive(kind: type) -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, kind))


def test_tables_and_records_held_do_not_grow_with_writes(repo):
    for i in range(20):  # a store that is not trivially small
        tur(repo, "learn", f"Settled fact {i} about the ingestion pipeline and its retries")
    tools = GitmemTools(Gitmem.open(repo))

    def cycle(i: int) -> None:
        words = " ".join(WORDS[(i // len(WORDS) ** k) % len(WORDS)] for k in range(4))
        learned = tools.call(lambda: tools.learn(f"Passing note on the {words} queue",
                                                 None, None, None, None))
        assert not learned.is_error, learned.content[0].text
        memory_id = learned.structured_content["memory"]["id"]
        forgot = tools.call(lambda: tools.forget(memory_id))
        assert not forgot.is_error, forgot.content[0].text
        assert not tools.call(lambda: tools.wake(None, None)).is_error

    for i in range(70):  # past every bound: what is held from now on is all that is ever held
        cycle(i)
    tables, records = alive(RecordTable), alive(Memory)
    for i in range(70, 190):
        cycle(i)
    assert alive(RecordTable) <= tables and tables <= 4
    assert alive(Memory) <= records


def test_libgit2_object_cache_is_emptied_by_each_write(repo):
    import pygit2

    tools = GitmemTools(Gitmem.open(repo))

    def cycle(i: int) -> None:
        learned = tools.call(lambda: tools.learn(f"Passing note {i} on the outbox queue",
                                                 None, None, None, None))
        assert not learned.is_error, learned.content[0].text
        memory_id = learned.structured_content["memory"]["id"]
        assert not tools.call(lambda: tools.forget(memory_id)).is_error
        assert not tools.call(lambda: tools.recall("outbox queue", None, False, None)).is_error

    for i in range(5):
        cycle(i)
    cached = pygit2.settings.cached_memory[0]
    for i in range(5, 65):
        cycle(i)
    # What the newest tip's reads cached, never a share for each of the 120 writes before it.
    assert pygit2.settings.cached_memory[0] - cached < 4096


def test_tree_lookups_hold_at_most_one_string_per_name(repo):
    # pygit2 1.21 keeps a reference to each str a tree is indexed by; the store looks up by the
    # interned string, so that 25 lookups of one name with 25 new strings hold at most one of them
    # (the first, when it becomes the interned one), not 25.
    import sys

    tur(repo, "learn", "The outbox worker retries with backoff")
    gm = Gitmem.open(repo)
    tip = gm.store.tip()
    memories = gm.store.subtree_id(tip, "memories")
    assert tip is not None and memories is not None
    paths = ["".join(["memo", "ries"]) for _ in range(25)]  # new objects of one value
    names = ["".join(["no-such", "-entry"]) for _ in range(25)]
    before = [sys.getrefcount(s) for s in paths + names]
    for path, name in zip(paths, names, strict=True):
        assert gm.store.entry_kind(tip, path) == "tree"
        assert gm.store.id_in_tree(memories, name) is None
    del path, name
    after = [sys.getrefcount(s) for s in paths + names]
    held = sum(1 for b, a in zip(before, after, strict=True) if a > b)
    assert held <= 2, f"{held} of 50 strings held after their lookup"
