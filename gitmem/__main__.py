"""``python -m gitmem``: the same as the ``tur`` command."""

from gitmem.cli import run

run()
