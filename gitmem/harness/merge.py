"""The merge engine of ``tur setup``: put entries into a user's settings files and take them out.

Three kinds of file, four kinds of entry, one rule: an entry is *ours* when it is exactly what
``tur setup`` writes, and nothing else in the file is touched.

- :class:`JsonFile` holds :class:`HookEntry` (one command handler under ``hooks.<event>``, in
  the ``{"matcher": ..., "hooks": [{"type": "command", "command": ...}]}`` shape Claude
  Code, Codex and Gemini CLI share), :class:`KeyEntry` (a value at a key path, such as
  ``mcpServers.tur``) and :class:`ListEntry` (one item of a list, such as Cursor's
  ``hooks.stop[]``). The file is re-indented as it was (two spaces, four, or a tab); every
  key we did not write keeps its value and its order.
- :class:`TomlFile` holds :class:`KeyEntry` in a TOML file, edited with tomlkit, which keeps
  the user's comments, order and formatting.
- :class:`~gitmem.harness.markdown.MarkdownFile` holds one block between begin and end
  markers (in its own module).

``apply`` adds what is missing (a second run changes nothing), ``remove`` takes out exactly
what ``apply`` wrote, ``check`` reports each entry as ``wired``, ``missing`` or ``differs``.
Given the file's :class:`~gitmem.harness.journal.Original` (what it held before ``apply``
first wrote into it), ``remove`` gives that text back byte for byte when nothing else in the
file changed since, an empty ``{"mcpServers": {}}`` or an empty file included; without it, a
group, event or table it emptied goes too, and a file left with nothing is deleted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitmem.errors import HarnessConfigError
from gitmem.harness.files import delete, read_exact, write_atomic
from gitmem.harness.journal import Original

__all__ = [
    "HookEntry",
    "JsonFile",
    "KeyEntry",
    "ListEntry",
    "Outcome",
    "TomlFile",
    "read_merged",
]

@dataclass(frozen=True)
class Outcome:
    """What happened to (or was found of) one entry in one file.

    Attributes:
        path: the file.
        what: the entry, in words (``SessionStart hook: tur hook session-start``).
        state: ``added``, ``updated``, ``unchanged`` (apply); ``removed``, ``absent``,
            ``kept`` (remove: present but not as ``tur setup`` writes it, so left alone);
            ``wired``, ``missing``, ``differs`` (check).
        note: what the user should know besides the state (the lines of theirs kept in a
            block), or ``""``.
    """

    path: Path
    what: str
    state: str
    note: str = ""


@dataclass(frozen=True)
class HookEntry:
    """One command handler in a hooks object: ``hooks.<event>[] = {matcher, hooks: [handler]}``.

    Attributes:
        event: the event name (``SessionStart``, ``PreToolUse``, ``BeforeAgent``...).
        matcher: the group's matcher, or ``None`` for a group without one.
        command: the shell command; what identifies the handler as ours.
        older: commands an earlier ``tur setup`` wrote for the same event and matcher (before
            hooks named their harness): ``apply`` replaces them, so a session never runs both.
    """

    event: str
    matcher: str | None
    command: str
    older: tuple[str, ...] = ()

    def describe(self) -> str:
        """``SessionStart (startup|clear) hook: tur hook session-start``."""
        on = f" ({self.matcher})" if self.matcher else ""
        return f"{self.event}{on} hook: {self.command}"

    def group(self) -> dict[str, Any]:
        """The matcher group ``apply`` adds."""
        group: dict[str, Any] = {} if self.matcher is None else {"matcher": self.matcher}
        group["hooks"] = [{"type": "command", "command": self.command}]
        return group

    def _ours(self, group: object) -> bool:
        return isinstance(group, dict) and group.get("matcher") == self.matcher

    def find(self, data: dict[str, Any]) -> bool:
        """Whether the file already runs this command for this event and matcher."""
        groups = _get(data, ("hooks", self.event))
        return isinstance(groups, list) and any(
            self._ours(g) and isinstance(g.get("hooks"), list)
            and any(isinstance(h, dict) and h.get("command") == self.command for h in g["hooks"])
            for g in groups)

    def add(self, data: dict[str, Any]) -> None:
        """Append this command's own matcher group to the event (creating what is missing)."""
        hooks = data.setdefault("hooks", {})
        if not isinstance(hooks, dict):
            raise HarnessConfigError("its \"hooks\" is not an object", "fix or remove that key")
        groups = hooks.setdefault(self.event, [])
        if not isinstance(groups, list):
            raise HarnessConfigError(f"its \"hooks.{self.event}\" is not a list",
                                     "fix or remove that key")
        for command in self.older:
            HookEntry(self.event, self.matcher, command).drop(data)
        groups = hooks.setdefault(self.event, [])
        groups.append(self.group())

    def drop(self, data: dict[str, Any]) -> bool:
        """Remove this command's handlers (and a group, event or hooks object left empty)."""
        hooks = data.get("hooks")
        groups = hooks.get(self.event) if isinstance(hooks, dict) else None
        if not isinstance(groups, list):
            return False
        removed = False
        for group in list(groups):
            if not self._ours(group) or not isinstance(group.get("hooks"), list):
                continue
            kept = [h for h in group["hooks"]
                    if not (isinstance(h, dict) and h.get("command") == self.command)]
            if len(kept) == len(group["hooks"]):
                continue
            removed = True
            if kept:
                group["hooks"] = kept
            else:
                groups.remove(group)
        if removed and not groups:
            del hooks[self.event]  # type: ignore[union-attr]
            if not hooks:
                del data["hooks"]
        return removed


@dataclass(frozen=True)
class KeyEntry:
    """A value at a key path: ``mcpServers.tur = {...}`` (JSON) or ``[mcp_servers.tur]`` (TOML).

    Attributes:
        keys: the path of keys, outermost first.
        value: what ``tur setup`` writes there; a value that differs is not ours.
        label: the entry in words (``MCP server "tur": tur mcp``).
    """

    keys: tuple[str, ...]
    value: Any
    label: str

    def describe(self) -> str:
        """The label."""
        return self.label


@dataclass(frozen=True)
class ListEntry:
    """One item of a list at a key path, among the user's items: Cursor's ``hooks.stop[]``.

    Attributes:
        keys: the list's key path, outermost first.
        item: what ``tur setup`` appends; an equal item is ours.
        label: the entry in words.
        header: top-level keys the file must hold for the harness to read it (Cursor's
            ``"version": 1``), set where missing; taken out with the last entry, when
            nothing else is left.
    """

    keys: tuple[str, ...]
    item: Any
    label: str
    header: tuple[tuple[str, Any], ...] = ()

    def describe(self) -> str:
        """The label."""
        return self.label

    def find(self, data: dict[str, Any]) -> bool:
        """Whether the list holds the item."""
        found = _get(data, self.keys)
        return isinstance(found, list) and self.item in found

    def add(self, data: dict[str, Any]) -> None:
        """Append the item (creating the list, its objects and the header keys that are missing)."""
        for key, value in self.header:
            data.setdefault(key, value)
        node = data
        for key in self.keys[:-1]:
            node = node.setdefault(key, {})
            if not isinstance(node, dict):
                raise HarnessConfigError(f"its \"{key}\" is not an object", "fix or remove that key")
        items = node.setdefault(self.keys[-1], [])
        if not isinstance(items, list):
            raise HarnessConfigError(f"its \"{'.'.join(self.keys)}\" is not a list",
                                     "fix or remove that key")
        items.append(json.loads(json.dumps(self.item)))

    def drop(self, data: dict[str, Any]) -> bool:
        """Remove the item (and a list or object left empty; the header when it is all that is left)."""
        items = _get(data, self.keys)
        if not isinstance(items, list) or self.item not in items:
            return False
        items[:] = [i for i in items if i != self.item]
        if not items:
            _unset(data, self.keys)
        if data and all(data.get(key) == value for key, value in self.header) and len(data) == len(
                self.header):
            data.clear()
        return True


def _get(data: Any, keys: Sequence[str]) -> Any:
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _plain(value: Any) -> Any:
    """A tomlkit value as plain Python data, for comparison."""
    unwrap = getattr(value, "unwrap", None)
    return unwrap() if callable(unwrap) else value


def _give_back(path: Path, original: Original, empty: str) -> None:
    """Put ``original`` back exactly: its bytes, or no file when there was none (see :func:`delete`)."""
    if original.text is None:
        delete(path, empty)
    else:
        write_atomic(path, original.text, exact=True)


def read_merged(path: Path) -> str | None:
    """The file's text as :meth:`Path.read_text` reads it (universal newlines), ``None``: no file.

    What the entries are merged into (see :func:`gitmem.harness.files.read_exact` for the errors).
    """
    text = read_exact(path)
    return None if text is None else text.replace("\r\n", "\n").replace("\r", "\n")


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's members as a dict, refusing a key given twice (``json.loads`` keeps the last)."""
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise _DuplicateKey(key)
        data[key] = value
    return data


class JsonFile:
    """A JSON settings file and the entries ``tur setup`` keeps in it.

    Args:
        path: the file (it may not exist yet).
        entries: :class:`HookEntry`, :class:`KeyEntry` and :class:`ListEntry` items.
    """

    def __init__(self, path: Path, entries: Sequence[HookEntry | KeyEntry | ListEntry]) -> None:
        self.path = path
        self.entries = list(entries)

    def _load(self) -> tuple[dict[str, Any], str | None, int | str]:
        text = read_merged(self.path)
        if text is None or not text.strip():
            return {}, text, 2
        try:
            data = json.loads(text, object_pairs_hook=_unique)
        except json.JSONDecodeError as exc:
            raise HarnessConfigError(
                f"{self.path} is not JSON ({exc.msg}, line {exc.lineno}); nothing was changed",
                "fix the file (comments are not JSON), then run tur setup again") from None
        except _DuplicateKey as exc:
            raise HarnessConfigError(
                f"{self.path} has the key {json.dumps(exc.key)} twice in one object; nothing was "
                "changed", "keep one of them (a JSON reader keeps only the last), then run tur "
                "setup again") from None
        if not isinstance(data, dict):
            raise HarnessConfigError(f"{self.path} does not hold a JSON object; nothing was changed",
                                     "fix the file, then run tur setup again")
        return data, text, _indent_of(text)

    def _save(self, data: dict[str, Any], original: str | None, indent: int | str) -> None:
        if not data:
            delete(self.path, "{}\n")
            return
        write_atomic(self.path, _render(data, original, indent) + "\n")

    def check(self) -> list[Outcome]:
        """Each entry as ``wired``, ``missing`` or ``differs``."""
        data, _, _ = self._load()
        return [Outcome(self.path, e.describe(), _state(e, data)) for e in self.entries]

    def apply(self) -> list[Outcome]:
        """Add what is missing, set what differs; write only when something changed."""
        data, text, indent = self._load()
        outcomes = []
        for entry in self.entries:
            state = _state(entry, data)
            if state == "wired":
                outcomes.append(Outcome(self.path, entry.describe(), "unchanged"))
                continue
            if isinstance(entry, HookEntry | ListEntry):
                try:
                    entry.add(data)
                except HarnessConfigError as exc:
                    raise HarnessConfigError(f"{self.path}: {exc.message}", exc.hint) from None
            else:
                _set(data, entry.keys, entry.value, self.path)
            outcomes.append(Outcome(self.path, entry.describe(),
                                    "updated" if state == "differs" else "added"))
        if any(o.state != "unchanged" for o in outcomes):
            self._save(data, text, indent)
        return outcomes

    def remove(self, original: Original | None = None) -> list[Outcome]:
        """Take out the entries that are exactly ours; leave one that differs (``kept``).

        With ``original``, a container on an entry's path that the file held before set-up
        (empty, or holding only empty containers) stays, and when what is left equals the
        original's data the original text comes back byte for byte (or the file goes, when
        there was none).
        """
        data, text, indent = self._load()
        outcomes = []
        for entry in self.entries:
            if isinstance(entry, HookEntry | ListEntry):
                state = "removed" if entry.drop(data) else "absent"
            else:
                state = _state(entry, data)
                if state == "wired":
                    _unset(data, entry.keys)
                    state = "removed"
                elif state == "differs":
                    state = "kept"
                else:
                    state = "absent"
            outcomes.append(Outcome(self.path, entry.describe(), state))
        if text is None or not any(o.state == "removed" for o in outcomes):
            return outcomes
        before = _json_of(original)
        if original is not None and before is not None:
            for entry in self.entries:
                _keep_hollow(data, before, _containers(entry))
                for key, value in entry.header if isinstance(entry, ListEntry) else ():
                    if before.get(key) == value and key not in data:  # the user's own header
                        data[key] = value
            if data == before:
                _give_back(self.path, original, "{}\n")
                return outcomes
            if not data and original.text is not None:  # the user's file stays, emptied
                write_atomic(self.path, _render(data, text, indent) + "\n")
                return outcomes
        self._save(data, text, indent)
        return outcomes


def _json_of(original: Original | None) -> dict[str, Any] | None:
    """The data of an original JSON file (``{}`` for none or a blank one); ``None``: not an object."""
    if original is None:
        return None
    if original.text is None or not original.text.strip():
        return {}
    try:
        data = json.loads(original.text)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def _containers(entry: HookEntry | KeyEntry | ListEntry) -> list[tuple[str, ...]]:
    """The objects and lists on an entry's path, outermost first, that ``apply`` may create."""
    if isinstance(entry, HookEntry):
        return [("hooks",), ("hooks", entry.event)]
    if isinstance(entry, ListEntry):
        return [entry.keys[:i] for i in range(1, len(entry.keys) + 1)]
    return [entry.keys[:i] for i in range(1, len(entry.keys))]


def _hollow(value: Any) -> bool:
    """An object or list that holds nothing but (possibly nested) empty objects and lists."""
    if isinstance(value, dict):
        return all(_hollow(v) for v in value.values())
    if isinstance(value, list):
        return all(_hollow(v) for v in value)
    return False


def _keep_hollow(data: dict[str, Any], before: dict[str, Any], paths: list[tuple[str, ...]]) -> None:
    """Put back each hollow container ``before`` had on ``paths`` that removal took out.

    Removal prunes what it left empty, not knowing whether ``apply`` created it; ``before``
    says. A container that held the user's values is never put back (they removed those).
    """
    for path in paths:
        had = _get(before, path)
        if not _hollow(had) or _get(data, path) is not None:
            continue
        parent = _get(data, path[:-1]) if len(path) > 1 else data
        if isinstance(parent, dict):
            parent[path[-1]] = json.loads(json.dumps(had))


def _state(entry: HookEntry | KeyEntry | ListEntry, data: dict[str, Any]) -> str:
    if isinstance(entry, HookEntry | ListEntry):
        return "wired" if entry.find(data) else "missing"
    found = _get(data, entry.keys)
    if found is None:
        return "missing"
    return "wired" if _plain(found) == entry.value else "differs"


def _set(data: Any, keys: Sequence[str], value: Any, path: Path) -> None:
    for key in keys[:-1]:
        inner = data.get(key)
        if inner is None:
            inner = data[key] = {}
        if not isinstance(inner, dict):
            raise HarnessConfigError(f"{path}: \"{key}\" is not an object; nothing was changed",
                                     "fix or remove that key, then run tur setup again")
        data = inner
    data[keys[-1]] = value


def _unset(data: Any, keys: Sequence[str]) -> None:
    """Delete the key path's last key, then every enclosing table it left empty."""
    chain = [data]
    for key in keys[:-1]:
        chain.append(chain[-1][key])
    del chain[-1][keys[-1]]
    for depth in range(len(keys) - 1, 0, -1):
        if len(chain[depth]) == 0:
            del chain[depth - 1][keys[depth - 1]]
        else:
            break


_Path = tuple[str | int, ...]


def _spans(text: str) -> tuple[dict[_Path, tuple[int, int]], dict[_Path, int]]:
    """Where each value of a JSON text is, and where each object member's key starts.

    Returns ``(values, keys)``: ``values[path] = (start, end)`` offsets of the value at
    ``path`` (the keys and list indexes from the top; ``()`` is the whole document), and
    ``keys[path]`` the offset of the key of an object member. The text must already have
    parsed with :func:`json.loads`.
    """
    decoder = json.JSONDecoder()
    spans: dict[_Path, tuple[int, int]] = {}
    keys: dict[_Path, int] = {}

    def skip(i: int) -> int:
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        return i

    def value(i: int, path: _Path) -> int:
        i = skip(i)
        start = i
        if text[i] == "{":
            i = skip(i + 1)
            while text[i] != "}":
                at = i
                key, i = decoder.raw_decode(text, i)
                keys[(*path, key)] = at
                i = skip(skip(i) + 1)  # past the colon
                i = skip(value(i, (*path, key)))
                if text[i] == ",":
                    i = skip(i + 1)
            end = i + 1
        elif text[i] == "[":
            i = skip(i + 1)
            index = 0
            while text[i] != "]":
                i = skip(value(i, (*path, index)))
                index += 1
                if text[i] == ",":
                    i = skip(i + 1)
            end = i + 1
        else:
            _, end = decoder.raw_decode(text, i)
        spans[path] = (start, end)
        return end

    value(0, ())
    return spans, keys


def _render(data: dict[str, Any], original: str | None, indent: int | str) -> str:
    """``data`` as JSON text that keeps ``original``'s own text for everything left as it was.

    - A value that did not change is copied as it stood, and so is its member's key and
      colon (``"permissions" : {...}``), so a compact ``[1, 2]`` is not reflowed.
    - An object or list that gained or lost an entry is written anew: on one line when it
      was on one line (with its own separators), else one entry a line at ``indent`` (the
      file's own). New values follow their container's style.

    Nesting never changes (entries are added or taken out in place), so copied text keeps
    the right indentation.
    """
    if not original:
        return json.dumps(data, indent=indent, ensure_ascii=False)
    return _Rewriter(original, indent).emit(data, (), 0, _Style(False, ", ", ": "))


@dataclass(frozen=True)
class _Style:
    """How a container is written: on one line or not, and its separators."""

    one_line: bool
    items: str
    keys: str

    @classmethod
    def of(cls, text: str) -> _Style:
        """The style of a container's original text."""
        one_line = "\n" not in text
        tight_items = one_line and "," in text and re.search(r",\s", text) is None
        tight_keys = one_line and ":" in text and re.search(r":\s", text) is None
        return cls(one_line, "," if tight_items else ", ", ":" if tight_keys else ": ")


class _Rewriter:
    """Writes a changed JSON document, copying what did not change from its original text."""

    def __init__(self, original: str, indent: int | str) -> None:
        self.original = original
        self.before = json.loads(original)
        self.spans, self.keys = _spans(original)
        self.unit = indent if isinstance(indent, str) else " " * indent

    def old_at(self, path: _Path) -> Any:
        node = self.before
        for step in path:
            node = node[step]
        return node

    def text_at(self, path: _Path) -> str:
        start, end = self.spans[path]
        return self.original[start:end]

    def emit(self, node: Any, path: _Path | None, depth: int, style: _Style) -> str:
        """``node`` at ``depth``; ``path`` is where it stood in the original (``None``: new)."""
        old = self.old_at(path) if path is not None else None
        if path is not None and old == node:
            return self.text_at(path)
        if not (isinstance(node, dict | list) and node):
            return json.dumps(node, ensure_ascii=False)
        if path is None:
            if style.one_line:
                return json.dumps(node, ensure_ascii=False, separators=(style.items, style.keys))
        else:
            style = _Style.of(self.text_at(path))
        inner = "" if style.one_line else self.unit * (depth + 1)
        if isinstance(node, dict):
            parts = [inner + self.member(key, child, path, old, depth, style) for key, child in node.items()]
            opening, closing = "{", "}"
        else:
            parts = [inner + text for text in self.entries(node, path, old, depth, style)]
            opening, closing = "[", "]"
        if style.one_line:
            return opening + style.items.join(parts) + closing
        return opening + "\n" + ",\n".join(parts) + "\n" + self.unit * depth + closing

    def member(self, key: str, child: Any, path: _Path | None, old: Any, depth: int,
               style: _Style) -> str:
        """One ``"key": value`` of an object: as typed when its value did not change."""
        at = (*path, key) if path is not None and isinstance(old, dict) and key in old else None
        if at is not None and self.old_at(at) == child:
            return self.original[self.keys[at]:self.spans[at][1]]
        return json.dumps(key, ensure_ascii=False) + style.keys + self.emit(child, at, depth + 1, style)

    def entries(self, node: list[Any], path: _Path | None, old: Any, depth: int,
                style: _Style) -> list[str]:
        """A list's entries, each matched to an equal entry of the original list, wherever it stood.

        Taking an entry out shifts the ones after it, so positions do not match.
        """
        unused = list(range(len(old))) if path is not None and isinstance(old, list) else []
        out = []
        for child in node:
            match = next((i for i in unused if old[i] == child), None)
            if match is not None:
                unused.remove(match)
            at = None if match is None or path is None else (*path, match)
            out.append(self.emit(child, at, depth + 1, style))
        return out


def _indent_of(text: str) -> int | str:
    """The indentation of a JSON text's first indented line (two spaces when none is)."""
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            lead = line[: len(line) - len(stripped)]
            return "\t" if lead.startswith("\t") else len(lead)
    return 2


class TomlFile:
    """A TOML settings file (Codex's ``config.toml``), edited with tomlkit.

    Comments, key order and formatting of everything ``tur setup`` did not write are kept
    byte for byte.

    Args:
        path: the file (it may not exist yet).
        entries: :class:`KeyEntry` items; each value is a table (a dict of plain values).
    """

    def __init__(self, path: Path, entries: Sequence[KeyEntry]) -> None:
        self.path = path
        self.entries = list(entries)

    def _load(self) -> Any:
        import tomlkit  # lazily: only `tur setup` edits TOML
        from tomlkit.exceptions import ParseError

        text = read_merged(self.path)
        try:
            return tomlkit.parse(text or "")
        except ParseError as exc:
            raise HarnessConfigError(f"{self.path} is not TOML ({exc}); nothing was changed",
                                     "fix the file, then run tur setup again") from None

    def _save(self, doc: Any) -> None:
        import tomlkit

        text = tomlkit.dumps(doc)
        if text.endswith("\n\n"):  # the blank line tomlkit put before a table it then lost
            text = text.rstrip("\n") + "\n"
        if not text.strip():
            delete(self.path, "")
            return
        write_atomic(self.path, text)

    def check(self) -> list[Outcome]:
        """Each entry as ``wired``, ``missing`` or ``differs``."""
        doc = self._load()
        return [Outcome(self.path, e.describe(), _state(e, doc)) for e in self.entries]

    def apply(self) -> list[Outcome]:
        """Add what is missing (as ``[a.b]`` tables), replace what differs."""
        import tomlkit

        doc = self._load()
        outcomes = []
        for entry in self.entries:
            state = _state(entry, doc)
            if state == "wired":
                outcomes.append(Outcome(self.path, entry.describe(), "unchanged"))
                continue
            parent = doc
            for key in entry.keys[:-1]:
                if key not in parent:
                    parent[key] = tomlkit.table(is_super_table=True)
                parent = parent[key]
                if not isinstance(parent, dict):
                    raise HarnessConfigError(
                        f"{self.path}: \"{key}\" is not a table; nothing was changed",
                        "fix or remove that key, then run tur setup again")
            table = tomlkit.table()
            for key, value in entry.value.items():
                table[key] = value
            if entry.keys[-1] in parent:
                del parent[entry.keys[-1]]
            parent[entry.keys[-1]] = table
            outcomes.append(Outcome(self.path, entry.describe(),
                                    "updated" if state == "differs" else "added"))
        if any(o.state != "unchanged" for o in outcomes):
            self._save(doc)
        return outcomes

    def remove(self, original: Original | None = None) -> list[Outcome]:
        """Take out the tables that are exactly ours (and a parent table they leave empty).

        With ``original``: when what is left holds the original's data, its text comes back
        byte for byte (or the file goes, when there was none).
        """
        exists = self.path.exists()
        doc = self._load()
        outcomes = []
        for entry in self.entries:
            state = _state(entry, doc)
            if state == "wired":
                _unset(doc, entry.keys)
                state = "removed"
            else:
                state = "kept" if state == "differs" else "absent"
            outcomes.append(Outcome(self.path, entry.describe(), state))
        if exists and any(o.state == "removed" for o in outcomes):
            before = None if original is None else _toml_data(original.text)
            if isinstance(before, dict):
                for entry in self.entries:
                    _keep_hollow(doc, before, _containers(entry))
            if original is not None and before == _plain(doc):
                _give_back(self.path, original, "")
            else:
                self._save(doc)
        return outcomes


def _toml_data(text: str | None) -> Any:
    """The plain data of a TOML text (``{}`` for none); ``None`` when it does not parse."""
    import tomlkit
    from tomlkit.exceptions import ParseError

    try:
        return tomlkit.parse(text or "").unwrap()
    except ParseError:
        return None
