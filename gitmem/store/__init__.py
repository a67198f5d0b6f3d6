"""All git access for gitmem: the memory ref, the code history, and remotes.

:class:`Store` (``memories.py``) is the one entry point, composed of one part per job:
``repo.py`` (the repository and its paths), ``tree.py`` (the memory tree and its blobs),
``refs.py`` (tips and compare-and-swap commits), ``people.py`` (identity and authors).
Only modules in this package import pygit2 (enforced by tests/test_architecture.py).
"""

from gitmem.store.memories import (
    FORMAT_PATH,
    MEMORY_REF,
    CommitInfo,
    LayoutProblem,
    Mutation,
    Store,
    StoredBlob,
)
from gitmem.store.paths import repo_relative, worktree_path

__all__ = ["FORMAT_PATH", "MEMORY_REF", "CommitInfo", "LayoutProblem", "Mutation", "Store", "StoredBlob",
           "repo_relative", "worktree_path"]
