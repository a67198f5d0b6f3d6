"""``tur hook pre-tool`` finds a file's memories through the anchor path index, not a scan.

The index of a tree's rows by anchored path (:mod:`gitmem.cache.paths`) is built on the
first lookup of the tree and read by every later one; it gives the rows a scan of every
anchor gives, for every path, also after a learn makes a new tree.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from gitmem.api import Gitmem
from gitmem.cache import cache_dir
from gitmem.cache.paths import _scan, anchored_rows
from gitmem.store import Store
from tests.conftest import add_filler_memories, tur


def indexed(repo: Path) -> dict[str, int]:
    """Tree -> rows in the repository's anchor path index."""
    with sqlite3.connect(cache_dir(Store.discover(repo)) / "cache.sqlite") as conn:
        return dict(conn.execute("SELECT tree, count(*) FROM anchor_path GROUP BY tree").fetchall())


def test_the_index_gives_the_rows_a_scan_gives_for_every_path_and_tree(repo):
    add_filler_memories(repo, 300, files=12)
    gm = Gitmem.open(repo)
    gm.learn("The entry point parses its flags first", file="src/app.py")
    for _ in range(2):  # the second tree: after a learn
        records = gm.records
        table, _ = records.table(records.tip())
        every = _scan(table, None)
        paths = sorted({p for p, _ in every}) + ["no/such/file.py"]
        for path in paths:
            assert anchored_rows(records.cache.files, table, [path]) == sorted(
                r for p, r in every if p == path)
        assert anchored_rows(records.cache.files, table, paths[:3]) == sorted(
            r for p, r in every if p in paths[:3])
        assert indexed(repo)[table.tree] == len(every)
        gm.learn(f"Module twelve is generated {len(every)}", file="lib/m03.py")
        gm = Gitmem.open(repo)


def test_a_pre_tool_hook_reads_the_index_of_its_tree(repo):
    add_filler_memories(repo, 200, files=8)
    payload = json.dumps({"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Read",
                          "tool_input": {"file_path": str(repo / "lib" / "m02.py")}, "cwd": str(repo)})
    first = tur(repo, "hook", "pre-tool", stdin=payload)
    assert first.code == 0 and "lib/m02.py" in first.out
    gm = Gitmem.open(repo)
    tree = gm.records.table(gm.records.tip())[0].tree
    assert tree in indexed(repo)
    with sqlite3.connect(cache_dir(Store.discover(repo)) / "cache.sqlite") as conn:
        conn.execute("DELETE FROM anchor_path WHERE path = 'lib/m02.py'")  # the index is what is read
    again = tur(repo, "hook", "pre-tool", stdin=payload.replace("s1", "s2"))
    assert again.code == 0 and "lib/m02.py" not in again.out
