r"""What each settings file held before ``tur setup`` first wrote into it, so that ``--remove`` gives it back.

Taking entries out of a file cannot tell an ``mcpServers`` object the user had, empty, from one
``tur setup`` created, nor an empty file from none: the entries alone do not say what was
there. The journal does. It is per-clone working state (in the repository's git directory,
``.git/tur/setup.json``; never on the memory ref), one JSON object::

    {"version": 1, "files": {"/abs/path/.cursor/mcp.json": {"text": "{\\"mcpServers\\":{}}"}}}

``text`` is the file's exact content (``null``: it did not exist). A file gets a record when
``tur setup`` first writes one of its entries into it, and loses it when ``--remove`` runs on
it. Without a record (a set-up made elsewhere, or before the journal existed) ``--remove``
still takes out exactly its entries, and deletes what they leave empty.

``blocks`` (beside ``files``) maps an instructions file to the block ``tur setup`` last wrote
into it, markers included, so that the lines a user wrote inside the block are told from
gitmem's even after gitmem's own text changed (:mod:`gitmem.harness.markdown`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from gitmem.errors import HarnessConfigError
from gitmem.harness.files import read_exact

__all__ = ["Journal", "Original", "read_exact"]

_VERSION = 1


@dataclass(frozen=True)
class Original:
    """A settings file as it was before ``tur setup`` first wrote into it.

    Attributes:
        text: its exact content (UTF-8, line endings as they were), or ``None`` when the file
            did not exist.
    """

    text: str | None


class Journal:
    """The records of one clone; :meth:`save` writes them back (and deletes an empty journal).

    Args:
        path: the journal's file, or ``None`` for none (nothing recorded, nothing restored).

    A journal that cannot be read as JSON is taken as empty: the records only make a
    removal exact, and a removal without them is still correct.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._files: dict[str, dict[str, str | None]] = {}
        self._blocks: dict[str, str] = {}
        self._changed = False
        text = read_exact(path) if path is not None else None
        if text:
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                data = None
            files = data.get("files") if isinstance(data, dict) else None
            if isinstance(files, dict):
                self._files = {k: v for k, v in files.items()
                               if isinstance(v, dict) and isinstance(v.get("text", ""), str | None)}
            blocks = data.get("blocks") if isinstance(data, dict) else None
            if isinstance(blocks, dict):
                self._blocks = {k: v for k, v in blocks.items() if isinstance(v, str)}

    def block(self, file: Path) -> str | None:
        """The instructions block ``tur setup`` last wrote into ``file``, or ``None`` if unknown."""
        return self._blocks.get(str(file))

    def wrote_block(self, file: Path, block: str) -> None:
        """Remember ``block`` as what ``tur setup`` wrote into ``file`` (markers included)."""
        if self.path is None or self._blocks.get(str(file)) == block:
            return
        self._blocks[str(file)] = block
        self._changed = True

    def original(self, file: Path) -> Original | None:
        """What ``file`` held before ``tur setup`` first wrote into it, or ``None`` if unknown."""
        found = self._files.get(str(file))
        return None if found is None else Original(found.get("text"))

    def record(self, file: Path, text: str | None) -> None:
        """Remember ``text`` (``None``: no file) as what ``file`` held before any entry of ours."""
        if self.path is None:
            return
        self._files[str(file)] = {"text": text}
        self._changed = True

    def forget(self, file: Path) -> None:
        """Drop ``file``'s record (after ``--remove`` gave the file back)."""
        if self._files.pop(str(file), None) is not None:
            self._changed = True
        if self._blocks.pop(str(file), None) is not None:
            self._changed = True

    def save(self) -> None:
        """Write the records (atomically), or delete the journal when none is left.

        Raises:
            HarnessConfigError: the journal cannot be written.
        """
        if self.path is None or not self._changed:
            return
        try:
            if not self._files and not self._blocks:
                self.path.unlink(missing_ok=True)
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            body = {"version": _VERSION, "files": self._files, "blocks": self._blocks}
            tmp.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError as exc:
            raise HarnessConfigError(f"cannot write {self.path}: {exc.strerror or exc}",
                                     "check the permissions of the repository's .git/tur") from None
