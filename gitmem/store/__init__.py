"""All git access for gitmem: the memory ref, the code history, and remotes.

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

__all__ = ["FORMAT_PATH", "MEMORY_REF", "CommitInfo", "LayoutProblem", "Mutation", "Store", "StoredBlob"]
