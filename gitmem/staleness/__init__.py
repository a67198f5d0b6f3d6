"""Staleness: whether a memory still describes the code it is anchored to, judged from git history.

:mod:`.verdicts` judges each memory; :mod:`.relocate` follows anchored lines through a diff;
:mod:`.overlay` holds this clone's working-tree verdicts. The package itself imports nothing, so
that a warm read of :mod:`.overlay` loads no libgit2.
"""
