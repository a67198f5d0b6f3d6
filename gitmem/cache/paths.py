"""The anchor path index of a tree's records: which rows are anchored to a file, without a scan.

``tur hook pre-tool`` runs before every tool call on a file and shows that file's memories;
finding them by parsing every record's anchor costs a pass over the whole store. The rows of
one ``memories`` tree anchored to each path are kept in the cache database instead
(``anchor_path(tree, path, row)``, rows as in :class:`gitmem.cache.table.RecordTable`), with a
``paths`` memo per tree saying that its index is complete (its value: the number of rows of
the table it was built from). A tree's index is built once, on the first lookup of that tree,
and kept while its memo is (the newest :data:`KEEP_TREES`); a lookup is then one indexed
query. A tree names its records for good, so an index is never out of date.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from gitmem.cache.db import CacheDB
from gitmem.cache.table import RecordTable

__all__ = ["KEEP_TREES", "anchored_rows"]

KEEP_TREES = 3
"""Trees whose index is kept: the newest ones (as many as the tables kept)."""

_KIND = "paths"


def _scan(table: RecordTable, wanted: set[str] | None) -> list[tuple[str, int]]:
    """``(path, row)`` of every row of ``table`` anchored to a path (of ``wanted``, when given)."""
    from gitmem.record.anchors import split_ref  # lazily: a wake reads no anchor

    out = []
    for r, prov in enumerate(table.columns["prov"]):
        if prov is not None and prov[2]:
            path = split_ref(prov[2])[0]
            if wanted is None or path in wanted:
                out.append((path, r))
    return out


def anchored_rows(db: CacheDB, table: RecordTable, paths: Sequence[str]) -> list[int]:
    """Rows of ``table`` whose anchor names one of ``paths`` now, in ascending order.

    Read from the index of the table's tree (built on the first lookup of the tree); a
    table of no tree, or a cache that cannot be written, is scanned instead (the same rows).

    Args:
        db: the cache database.
        table: the records of one tree.
        paths: repository-relative paths.
    """
    tree = table.tree
    if tree is None:
        return sorted(r for _, r in _scan(table, set(paths)))
    if db.get(_KIND, tree) != len(table.ids):
        pairs = _scan(table, None)
        # One transaction: another process pruning never sees these rows without their memo.
        with db.batch():
            saved = (db.run("DELETE FROM anchor_path WHERE tree = ?", (tree,), write=True) is not None
                     and db.run_many("INSERT OR REPLACE INTO anchor_path VALUES (?, ?, ?)",
                                        ((tree, p, r) for p, r in pairs))
                     and db.put(_KIND, tree, len(table.ids)))
            if saved:
                kept = db.keys(_KIND)
                db.run(f"DELETE FROM anchor_path WHERE tree NOT IN ({', '.join('?' * len(kept))})",
                       tuple(kept), write=True)
        if not saved:
            wanted = set(paths)
            return sorted(r for p, r in pairs if p in wanted)
    found = db.run("SELECT row FROM anchor_path WHERE tree = ? AND path IN (SELECT value FROM json_each(?))"
                     " ORDER BY row", (tree, json.dumps(list(paths))))
    if found is None or not all(type(r) is int and 0 <= r < len(table.ids) for r, in found):
        return sorted(r for _, r in _scan(table, set(paths)))
    return [r for r, in found]
