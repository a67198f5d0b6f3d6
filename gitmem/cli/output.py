"""Plain-text and JSON rendering helpers shared by the commands (no terminal styling library)."""

from __future__ import annotations

import json
import shutil
from typing import TYPE_CHECKING, Any

from gitmem.text import first_words, printable

if TYPE_CHECKING:
    from gitmem.api import Memory
    from gitmem.cli.env import Env

__all__ = ["json_dump", "memory_json", "one_line", "table"]


def json_dump(data: Any) -> str:
    """JSON text, indented, non-ASCII kept, keys in insertion order."""
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)


def memory_json(memory: Memory, **extra: Any) -> dict[str, Any]:
    """A record as stored, as JSON-ready data (``tur show``: nested as in its YAML), plus ``extra``.

    Not the JSON of a memory in a list (:func:`gitmem.api.memory_to_json`): this is the
    whole document, every stored field (scope, fingerprint, legacy ids, the edit stamps).
    """
    doc = memory.model_dump(mode="json", exclude_none=True)
    if not doc.get("relations"):
        doc.pop("relations", None)
    doc.update({k: v for k, v in extra.items() if v is not None})
    return doc


def one_line(text: str, escape: bool = False) -> str:
    """Content on one line: newlines shown as ``⏎``; control characters escaped when ``escape``.

    Escaping (:func:`gitmem.text.printable`, tabs kept) is only for a terminal, where an ANSI
    sequence stored in a memory would otherwise restyle the screen; piped output keeps the
    exact text.
    """
    text = text.replace("\r\n", "\n").replace("\n", " ⏎ ")
    return printable(text, keep="\t") if escape else text


def table(env: Env, headers: list[str], rows: list[list[str]]) -> None:
    """Aligned columns; the last column is cut to the terminal width only on a terminal.

    Args:
        env: the command's :class:`gitmem.cli.Env` (its ``out`` tells whether it is a terminal).
        headers: column titles.
        rows: cells, as many per row as ``headers``; the last one is cut with
            :func:`gitmem.text.first_words` when it does not fit.
    """
    widths = [len(h) for h in headers[:-1]]
    for row in rows:
        for i, cell in enumerate(row[:-1]):
            widths[i] = max(widths[i], len(cell))
    tty = env.out.isatty()
    room = shutil.get_terminal_size((120, 24)).columns - sum(w + 2 for w in widths)
    for row in [headers, *rows]:
        head = "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:-1]))
        last = row[-1]
        if tty and room > 10 and len(last) > room:
            last = first_words(last, room)
        env.print(f"{head}  {last}".rstrip())
