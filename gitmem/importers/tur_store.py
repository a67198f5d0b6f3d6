"""Reading a store of the Tur package (``pip install tur``) and mapping it onto gitmem records.

Tur is the reference system of EP-0131 and EP-0132. Version 0.15.1 (the one the tests
build stores with) keeps, per persona, one Markdown file per memory (``tur.memory.storage``,
``MemoryManager.save``)::

    <project>/.tur/personas/<uuid>/memories/{active,archive,subsumed}/<time>_<type>_<hash>.md
    ~/.tur/personas.yaml                                 index: [{id, name, version}]
    ~/.tur/personas/<uuid>/{persona.yaml, CONSTITUTION.md}
    ~/.tur/personas/<uuid>/memories/{active,archive,subsumed}/*.md

Project memories are the ``incarnation`` scope; ``universal``, ``user`` and ``persona``
memories live under ``~/.tur`` (or ``$TUR_HOME``). A file is YAML front matter between
``---`` lines (written by PyYAML: ``hash``, ``timestamp``, ``scope``, ``memory_type``,
``tags``, ``links``, ``status``, ``confidence``, ``provenance{observed_at, git_sha,
source_agent, source_harness, context_ref}``, ``decay{half_life_days, last_verified_at,
staleness_status}``, core-memory, redaction and embedding fields; ``type``, ``title`` and
``description`` are derived) and the content as the body. Older stores also hold
``memories/*.yaml`` files, one Tur ``Memory`` model each. Front matter is read as Tur reads
it: PyYAML's safe loader (YAML 1.1), timestamps naive in local time.

:func:`find_store` reads the files; :func:`convert` maps one onto a :class:`Memory` (the
table is in docs/coming-from-tur.md); :func:`fold` merges memories that map to one id.
Nothing here touches git: the caller passes a :class:`RepoView` for commits and blobs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from gitmem.errors import InvalidAnchor, InvalidInput
from gitmem.record.anchors import anchor_fingerprint, parse_anchor, split_lines, split_ref
from gitmem.record.ids import memory_id, normalise_content
from gitmem.record.models import Decay, Memory, Provenance, Refutation, Relation
from gitmem.vocabulary import MemoryType, RelationType, Scope, Status

__all__ = [
    "STATES",
    "TYPE_MAP",
    "Converted",
    "RepoView",
    "TurFile",
    "TurNote",
    "TurPersona",
    "TurStore",
    "Unmappable",
    "convert",
    "find_store",
    "fold",
    "link_superseders",
]

STATES = ("active", "archive", "subsumed", "legacy")
"""Where a Tur memory file lies: ``memories/<state>/``, or ``memories/`` itself (``legacy``)."""

TYPE_MAP: dict[str, MemoryType] = {
    "fact": MemoryType.FACT,
    "preference": MemoryType.PREFERENCE,
    "axiom": MemoryType.AXIOM,
    "insight": MemoryType.INSIGHT,
    "core": MemoryType.CORE,
    # "Narrative history (e.g. 'Refactored Council')": an observation of what happened,
    # checked against the code like a fact; its own half-life (30 d in Tur) is kept.
    "event": MemoryType.FACT,
}
"""Tur ``memory_type`` (lower case) -> gitmem type."""

SCOPE_MAP: dict[str, Scope] = {
    "universal": Scope.UNIVERSAL,
    "incarnation": Scope.INCARNATION,
    # Stored in ~/.tur and true beyond one project: the user's taste, the persona's values.
    "user": Scope.UNIVERSAL,
    "persona": Scope.UNIVERSAL,
}
"""Tur ``scope`` (lower case) -> gitmem scope."""

#: Tur link relation -> (gitmem relation, whether it is carried by the *other* memory).
LINK_MAP: dict[str, tuple[RelationType, bool]] = {
    "supports": (RelationType.SUPPORTS, False),
    "contradicts": (RelationType.CONTRADICTS, False),
    "refutes": (RelationType.CONTRADICTS, False),
    "refuted_by": (RelationType.CONTRADICTS, False),
    "competes_with": (RelationType.CONTRADICTS, False),
    "refines": (RelationType.REFINES, False),
    "derived_from": (RelationType.REFINES, False),
    "supersedes": (RelationType.SUPERSEDES, False),
    "superseded_by": (RelationType.SUPERSEDES, True),
}

_MEMORY_URI = re.compile(r"tur://memory/([0-9a-f]{4,64})")
_HEX = re.compile(r"[0-9a-f]{4,64}")
_NAME_HASH = re.compile(r"_([0-9a-f]{16,64})\.(?:md|yaml)$")
_MAX_FILE_BYTES = 1 << 20

#: Front-matter keys a memory file of Tur 0.15.1 may hold, and those of a ``*.yaml`` one.
_MD_KEYS = frozenset({
    "type", "title", "description", "tags", "timestamp", "scope", "memory_type", "hash", "links",
    "source_session", "core_type", "derived_principle", "ethical_covenant", "status", "confidence",
    "provenance", "decay", "redacted", "redacted_at", "redaction_reason", "embedding_model",
    "embedding_vector",
})
_YAML_KEYS = (_MD_KEYS - {"title", "description", "memory_type", "hash"}) | {"id", "content"}
#: Kept verbatim under ``tur:`` when set: no gitmem field says the same.
_KEPT = ("source_session", "core_type", "derived_principle", "ethical_covenant", "embedding_model")
#: Persona keys that configure Tur's runtime rather than describe an identity.
_RUNTIME_PERSONA_KEYS = ("model", "compaction")


# -- reading the store -----------------------------------------------------------------------------


@dataclass(frozen=True)
class TurFile:
    """One memory file of a Tur store, read but not yet mapped.

    Attributes:
        path: the file.
        state: one of :data:`STATES`.
        data: the front matter (``*.md``) or the whole mapping (``*.yaml``).
        body: the Markdown body of a ``*.md`` file (the content), ``None`` for ``*.yaml``.
    """

    path: Path
    state: str
    data: dict[str, Any]
    body: str | None


@dataclass
class TurPersona:
    """A Tur persona as gitmem's ``persona.yaml`` will hold it.

    Attributes:
        uuid: the persona's directory name.
        name: its name.
        mapping: identity and invariants, in the order Tier 0 shows them.
        source: the file read (``CONSTITUTION.md``, else ``persona.yaml``).
        dropped: keys left out (Tur runtime settings).
    """

    uuid: str
    name: str
    mapping: dict[str, Any]
    source: Path
    dropped: list[str] = field(default_factory=list)


@dataclass
class TurStore:
    """What :func:`find_store` read.

    Attributes:
        roots: the ``.tur`` directories read (project first, then home).
        project: the project's ``.tur`` directory, ``None`` when only the home store was read.
        persona_id: the persona whose memories are read.
        persona_name: its name in ``personas.yaml`` (the id when not listed).
        persona: its identity, when a ``CONSTITUTION.md`` or ``persona.yaml`` was found.
        files: the memory files, sorted by path within each root.
        unreadable: (path, reason) of files that are not Tur memories.
        not_imported: one line per other part of the store (concept graph, sessions, …).
        latest_note: the newest note of the persona's sessions, ``None`` when there is none.
    """

    roots: list[Path]
    project: Path | None
    persona_id: str
    persona_name: str
    persona: TurPersona | None
    files: list[TurFile] = field(default_factory=list)
    unreadable: list[tuple[Path, str]] = field(default_factory=list)
    not_imported: list[str] = field(default_factory=list)
    latest_note: TurNote | None = None


@dataclass(frozen=True)
class TurNote:
    """The latest session note of the persona: what Tur's wake shows as the previous session's spark.

    Attributes:
        at: when it was written (aware UTC).
        text: the note.
        source: the session file it is in.
    """

    at: datetime
    text: str
    source: Path


def find_store(path: Path, home: Path | None = None, persona: str | None = None) -> TurStore:
    """Read the Tur store of the project at ``path`` (and of ``home``, the user-level store).

    Args:
        path: the project directory holding ``.tur/``, or that ``.tur`` directory itself.
        home: the user-level store (``~/.tur``), or ``None`` to read only the project.
        persona: the persona's name or id (or id prefix); default: the project's active
            persona (``.tur/state.yaml``), else the only one.

    Raises:
        InvalidInput: no Tur store there, an unknown persona, or several personas and none
            chosen.
    """
    project = _project_root(path)
    roots = [r for r in (project, home) if r is not None]
    if home is not None and not home.is_dir():
        raise InvalidInput(f"no Tur home store at {home}", "pass --home DIR, the directory of personas.yaml")
    if not roots:
        raise InvalidInput(
            f"no Tur store at {path}: no .tur/personas directory",
            "pass the project directory that holds .tur/, or --home for ~/.tur",
        )
    names = _persona_names(roots)
    uuid = _choose_persona(roots, names, persona, project)
    store = TurStore(roots=roots, project=project, persona_id=uuid, persona_name=names.get(uuid, uuid),
                     persona=None)
    store.persona = _read_persona(roots, uuid, names, store.unreadable)
    for root in roots:
        base = root / "personas" / uuid
        _read_memories(base / "memories", store)
        _read_notes(base / "sessions", store)
        store.not_imported.extend(_other_parts(base, root))
    return store


def _read_notes(directory: Path, store: TurStore) -> None:
    """Keep the newest note of ``sessions/*.yaml`` (Tur's ``SessionNotes``: timestamp, content)."""
    if not directory.is_dir():
        return
    for path in sorted(directory.glob("*.yaml")):
        data = _read_yaml_file(path)
        notes = data.get("notes") if isinstance(data, dict) else None
        for note in notes if isinstance(notes, list) else []:
            text = note.get("content") if isinstance(note, dict) else None
            try:
                at = _time(note.get("timestamp"), "timestamp") if isinstance(note, dict) else None
            except ValueError:
                at = None
            if isinstance(text, str) and text.strip() and at is not None and (
                    store.latest_note is None or at >= store.latest_note.at):
                store.latest_note = TurNote(at, text.strip(), path)


def _project_root(path: Path) -> Path | None:
    for candidate in (path / ".tur", path):
        if (candidate / "personas").is_dir():
            return candidate
    return None


def _load_yaml(text: str) -> Any:
    """Parse YAML as Tur does.

    Raises:
        InvalidInput: not YAML (the message starts ``bad YAML:``).
    """
    # Tur writes with PyYAML and reads with its safe loader (YAML 1.1): reading the same way
    # keeps every value as Tur sees it (a 12-hex SHA such as 1234567e8901 stays a string).
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)  # a safe loader: plain data only
    except (yaml.YAMLError, ValueError, TypeError) as exc:  # values too: a timestamp of month 13
        raise InvalidInput(f"bad YAML: {exc}".splitlines()[0]) from None


def _read_yaml_file(path: Path) -> Any:
    """The YAML in ``path``, or ``None`` when it cannot be read (Tur ignores such index files too)."""
    try:
        return _load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, InvalidInput):
        return None


def _persona_names(roots: list[Path]) -> dict[str, str]:
    names: dict[str, str] = {}
    for root in reversed(roots):  # the home index wins, as Tur reads it first
        index = root / "personas.yaml"
        if not index.is_file():
            continue
        data = _read_yaml_file(index)
        entries = data.get("personas") if isinstance(data, dict) else None
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and entry.get("id") is not None:
                names[str(entry["id"])] = str(entry.get("name") or entry["id"])
    return names


def _choose_persona(roots: list[Path], names: dict[str, str], wanted: str | None,
                    project: Path | None) -> str:
    found = sorted({d.name for root in roots if (root / "personas").is_dir()
                    for d in (root / "personas").iterdir() if d.is_dir() and (d / "memories").is_dir()})
    listed = ", ".join(f"{names.get(u, u)} ({u[:8]})" for u in found) or "none"
    if wanted is not None:
        matches = [u for u in found if u == wanted or names.get(u, "").casefold() == wanted.casefold()]
        matches = matches or [u for u in found if len(wanted) >= 4 and u.startswith(wanted)]
        if len(matches) != 1:
            raise InvalidInput(f"no single Tur persona {wanted!r} with memories", f"personas: {listed}")
        return matches[0]
    state = project / "state.yaml" if project is not None else None
    active = None
    if state is not None and state.is_file():
        data = _read_yaml_file(state)
        active = str(data.get("active_persona_id") or "") if isinstance(data, dict) else ""
    if active and active in found:
        return active
    if len(found) == 1:
        return found[0]
    if not found:
        raise InvalidInput(f"no Tur memories under {', '.join(map(str, roots))}",
                           "pass the project directory that holds .tur/, or --home for ~/.tur")
    raise InvalidInput(f"the Tur store has several personas and none is active: {listed}",
                       "choose one with --persona NAME")


def _read_persona(roots: list[Path], uuid: str, names: dict[str, str],
                  unreadable: list[tuple[Path, str]]) -> TurPersona | None:
    """The persona's identity, from ``CONSTITUTION.md`` (else ``persona.yaml``), as Tur loads it.

    A file that cannot be read goes to ``unreadable`` (and is reported); the memories are
    imported all the same.
    """
    for root in reversed(roots):  # home first: where `tur-adm persona init` writes
        directory = root / "personas" / uuid
        for source in (directory / "CONSTITUTION.md", directory / "persona.yaml"):
            if not source.is_file():
                continue
            try:
                text = source.read_text(encoding="utf-8")
                front, body = _split_front_matter(text) if source.suffix == ".md" else (text, "")
                data = _load_yaml(front) if front is not None else {}
            except (OSError, UnicodeDecodeError) as exc:
                unreadable.append((source, f"persona not imported: unreadable: {exc}"))
                return None
            except InvalidInput as exc:
                unreadable.append((source, f"persona not imported: {exc.message}"))
                return None
            data = data if isinstance(data, dict) else {}
            return _persona(uuid, names, data, body.strip(), source)
    return None


def _persona(uuid: str, names: dict[str, str], data: dict[str, Any], body: str, source: Path) -> TurPersona:
    """Tier 0 from a Tur persona: identity first, each principle or protocol on one line."""
    mapping: dict[str, Any] = {}
    name = str(data.get("name") or names.get(uuid) or uuid)
    mapping["name"] = name
    for key in ("aleph", "version"):
        if data.get(key) is not None:
            mapping[key] = _plain(data[key])
    principles = [_principle(p) for p in data.get("principles") or [] if isinstance(p, dict)]
    if principles:
        mapping["principles"] = principles
    protocols = [f"{p.get('name')}: when {p.get('trigger')}, {p.get('action')}"
                 for p in data.get("protocols") or [] if isinstance(p, dict)]
    if protocols:
        mapping["protocols"] = protocols
    modes = [f"{m.get('name')}: {m.get('description')}"
             for m in data.get("speech_modulations") or [] if isinstance(m, dict)]
    if modes:
        mapping["speech_modulations"] = modes
    handled = {"name", "aleph", "version", "principles", "protocols", "speech_modulations",
               *_RUNTIME_PERSONA_KEYS}
    for key, value in data.items():
        if key not in handled and value not in (None, [], {}):
            mapping[str(key)] = _plain(value)
    if body and body != _generated_constitution(data):
        mapping["constitution"] = body  # written or edited by hand: Tier 0 shows it whole
    dropped = [k for k in _RUNTIME_PERSONA_KEYS if data.get(k) is not None]
    return TurPersona(uuid, name, mapping, source, dropped)


def _principle(p: dict[str, Any]) -> str:
    avatar = f" ({p['avatar']})" if p.get("avatar") else ""
    role = f" — {p['role']}" if p.get("role") else ""
    weight = f" [weight {p['weight']}]" if p.get("weight") not in (None, 1, 1.0) else ""
    rules = [str(c) for c in p.get("constraints") or []]
    return f"{p.get('name')}{avatar}{role}{weight}" + (f": {'; '.join(rules)}" if rules else "")


def _generated_constitution(data: dict[str, Any]) -> str:
    """The body ``tur.persona.dump_constitution_markdown`` writes for this front matter.

    A body equal to it says nothing the front matter does not, so it is not imported twice.
    """
    lines = [f"# Persona Constitution: {data.get('name')}", "", "## 1. The Aleph (Primary Directive)", "",
             str(data.get("aleph")), ""]
    principles = [p for p in data.get("principles") or [] if isinstance(p, dict)]
    if principles:
        lines += ["## 2. Active Principles (Council Framework)", ""]
        for p in principles:
            avatar = f" ({p['avatar']})" if p.get("avatar") else ""
            role = f" — Role: {p['role']}" if p.get("role") else ""
            lines += [f"### {p.get('name')}{avatar}{role}", ""]
            if p.get("constraints"):
                lines += ["**Constraints:**", *(f"- {c}" for c in p["constraints"]), ""]
    return "\n".join(lines).strip()


def _split_front_matter(text: str) -> tuple[str | None, str]:
    """(front matter, body) the way Tur splits a file: on the first two ``---``."""
    if not text.startswith("---"):
        return None, text
    parts = text.split("---", 2)
    if len(parts) < 3:
        return None, text
    return parts[1], parts[2].strip()


def _read_memories(directory: Path, store: TurStore) -> None:
    places = [(directory / state, state) for state in STATES[:3]] + [(directory, "legacy")]
    for folder, state in places:
        if not folder.is_dir():
            continue
        suffixes = (".yaml",) if state == "legacy" else (".md", ".yaml")
        for path in sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in suffixes):
            try:
                store.files.append(_read_file(path, state))
            except InvalidInput as exc:
                store.unreadable.append((path, exc.message))


def _read_file(path: Path, state: str) -> TurFile:
    try:
        size = path.stat().st_size
        if size > _MAX_FILE_BYTES:
            raise InvalidInput(f"{size} bytes, larger than the {_MAX_FILE_BYTES} byte limit")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"not UTF-8: {exc.reason}") from None
    except OSError as exc:
        raise InvalidInput(f"unreadable: {exc.strerror}") from None
    front, body = _split_front_matter(text)
    if path.suffix == ".md" and front is None:
        raise InvalidInput("no YAML front matter between --- lines")
    data = _load_yaml(front if front is not None else text)
    if not isinstance(data, dict):
        raise InvalidInput("the front matter is not a mapping")
    return TurFile(path, state, {str(k): v for k, v in data.items()}, body if front is not None else None)


def _other_parts(base: Path, root: Path) -> list[str]:
    """One line per part of the persona's directory that holds no memory or identity."""
    if not base.is_dir():
        return []
    lines = []
    for entry in sorted(base.iterdir()):
        if entry.name in ("memories", "persona.yaml", "CONSTITUTION.md") or entry.name.startswith("."):
            continue
        count = sum(1 for p in entry.rglob("*") if p.is_file()) if entry.is_dir() else 1
        what = f"{entry.name}/ ({count} files)" if entry.is_dir() else entry.name
        why = ("session notes: the latest is imported as the continuity note, earlier ones are not"
               if entry.name == "sessions"
               else "no gitmem equivalent (Tur's concept graph and session state)")
        lines.append(f"{root / 'personas' / base.name / what}: {why}")
    return lines


# -- mapping one memory ----------------------------------------------------------------------------


class Unmappable(Exception):
    """A Tur memory file that cannot become a gitmem record; ``reason`` says why (one line)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class RepoView:
    """What mapping needs of the repository the memories are imported into.

    Attributes:
        workdir: the working tree (``None`` when bare): absolute Tur paths inside it anchor.
        base: the repository-relative directory Tur's relative paths start from (the
            directory holding ``.tur``; ``""`` at the root).
        resolve_commit: full SHA of a commit named by a SHA or prefix, or ``None``.
        blob_at: a file's bytes at a commit, or ``None`` when it is not there.
    """

    workdir: Path | None
    base: str
    resolve_commit: Callable[[str], str | None]
    blob_at: Callable[[str, str], bytes | None]


@dataclass
class _Draft:
    """What mapping one file finds out besides the record (see :class:`Converted`)."""

    became: str = "active"
    superseded_by: list[str] = field(default_factory=list)
    anchor: str = ""
    notes: list[str] = field(default_factory=list)


@dataclass
class Converted:
    """One Tur memory mapped onto a gitmem record.

    Attributes:
        memory: the record (``legacy_id`` is the Tur hash).
        file: where it came from.
        tur_type: Tur's ``memory_type`` (lower case).
        state: the file's state (:data:`STATES`).
        became: what the state became (``active``, ``refuted``, ``superseded`` …), for the report.
        superseded_by: Tur hashes of the memories that supersede this one (their relation).
        anchor: ``anchored``, ``commit only``, ``commit not in this repository`` … (report).
        notes: lines for the report about fields that could not be mapped as they were.
    """

    memory: Memory
    file: TurFile
    tur_type: str
    state: str
    became: str
    superseded_by: list[str] = field(default_factory=list)
    anchor: str = ""
    notes: list[str] = field(default_factory=list)


def convert(file: TurFile, repo: RepoView) -> Converted:
    """Map one Tur memory file onto a gitmem :class:`Memory` (docs/coming-from-tur.md).

    Raises:
        Unmappable: no hash, an unknown type or scope, empty content, a bad value.
    """
    data = file.data
    legacy, tur_type, content, raw_scope = _identity(file)
    type_ = TYPE_MAP[tur_type]
    status = str(data.get("status") or "active")
    tur = _tur_fields(file, tur_type, raw_scope, status)
    out = _Draft()
    relations, kept_links = _links(data.get("links"), out)
    if kept_links:
        tur["links"] = kept_links
    try:
        timestamp = _time(data.get("timestamp"), "timestamp")
        confidence = _confidence(data.get("confidence", 1.0))
        provenance = _provenance(data.get("provenance"), timestamp, repo, out, tur)
        decay = _decay(data.get("decay"))
    except ValueError as exc:
        raise Unmappable(str(exc)) from None
    refutation = _refutation(data, status, decay, file.state, tur)
    _set_status(out, decay, refutation, provenance)
    extras: dict[str, Any] = {}
    tags = [str(t) for t in data.get("tags") or [] if t is not None]
    if tags:
        extras["tags"] = tags
    if tur:
        extras["tur"] = tur
    if data.get("embedding_vector"):
        out.notes.append("embedding_vector dropped (recomputed by whoever needs it)")
    try:
        memory = Memory(
            id=memory_id(type_, content), type=type_, scope=SCOPE_MAP[raw_scope], content=content,
            confidence=confidence, provenance=provenance, decay=decay, relations=relations,
            refutation=refutation, legacy_id=legacy, **extras,
        )
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise Unmappable(str(exc).splitlines()[-1].strip()) from None
    return Converted(memory, file, tur_type, file.state, out.became, out.superseded_by, out.anchor,
                     out.notes)


def _identity(file: TurFile) -> tuple[str, str, str, str]:
    """(Tur hash, Tur type, content, Tur scope) of a memory file, all checked.

    Raises:
        Unmappable: one of them is missing or unknown.
    """
    data, md = file.data, file.body is not None
    legacy = _text(data.get("hash" if md else "id")) or _hash_from_name(file.path)
    if not legacy:
        raise Unmappable("no hash in the front matter or the file name")
    raw_type = data.get("memory_type" if md else "type")
    tur_type = str(raw_type or "").lower()
    if tur_type not in TYPE_MAP:
        raise Unmappable(f"unknown memory_type {raw_type!r}")
    content = file.body if md else data.get("content")
    if not isinstance(content, str) or not content.strip():
        raise Unmappable("empty content")
    raw_scope = str(data.get("scope") or "incarnation").lower()
    if raw_scope not in SCOPE_MAP:
        raise Unmappable(f"unknown scope {data.get('scope')!r} (Tur does not load this file either)")
    return legacy, tur_type, content.strip(), raw_scope


def _tur_fields(file: TurFile, tur_type: str, raw_scope: str, status: str) -> dict[str, Any]:
    """What goes under ``tur:``: Tur's values where gitmem's differ, and fields gitmem lacks."""
    data = file.data
    tur: dict[str, Any] = {}
    if TYPE_MAP[tur_type].value != tur_type:
        tur["memory_type"] = tur_type
    if SCOPE_MAP[raw_scope].value != raw_scope:
        tur["scope"] = raw_scope
    if file.state != "active":
        tur["state"] = file.state
    if status != "active":
        tur["status"] = status
    for key in _KEPT:
        if data.get(key) not in (None, ""):
            tur[key] = _plain(data[key])
    known = _MD_KEYS if file.body is not None else _YAML_KEYS
    for key, value in data.items():
        if key not in known and value is not None:
            tur[key] = _plain(value)  # a field of a newer Tur, kept as it was
    return tur


def _text(value: Any) -> str | None:
    return str(value).strip() or None if value is not None else None


def _hash_from_name(path: Path) -> str | None:
    match = _NAME_HASH.search(path.name)
    return match.group(1) if match else None


def _plain(value: Any) -> Any:
    """A YAML value as plain data gitmem writes: timestamps as ISO text, sets as lists."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_plain(v) for v in value]
        return sorted(items, key=str) if isinstance(value, set | frozenset) else items
    if isinstance(value, bytes):
        return value.hex()
    return value


def _time(value: Any, what: str) -> datetime | None:
    """A Tur timestamp as aware UTC; Tur writes local time without a zone (``datetime.now()``)."""
    if value is None or value == "":
        return None
    if isinstance(value, date) and not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    if not isinstance(value, datetime):
        try:
            value = datetime.fromisoformat(str(value))
        except ValueError:
            raise ValueError(f"{what}: not an ISO 8601 time: {value!r}") from None
    moment = value.astimezone() if value.tzinfo is None else value  # naive: this machine's zone
    return moment.astimezone(UTC).replace(microsecond=0)


def _confidence(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"confidence: not a number: {value!r}") from None
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"confidence: {number} is outside [0, 1]")
    return number


def _links(raw: Any, out: _Draft) -> tuple[list[Relation], list[Any]]:
    """Relations from Tur links to memories; links gitmem has no relation for are kept."""
    relations: list[Relation] = []
    kept: list[Any] = []
    for link in raw if isinstance(raw, list) else []:
        uri = str(link.get("uri") or "") if isinstance(link, dict) else ""
        kind = str(link.get("relation") or "").lower() if isinstance(link, dict) else ""
        match = _MEMORY_URI.fullmatch(uri)
        mapped = LINK_MAP.get(kind)
        if match is None or mapped is None:
            kept.append(_plain(link))
            continue
        relation, reverse = mapped
        if reverse:
            out.superseded_by.append(match.group(1))
        elif all(r.target != match.group(1) or r.type != relation for r in relations):
            relations.append(Relation(type=relation, target=match.group(1)))
    if kept:
        out.notes.append(f"{len(kept)} link(s) with no gitmem relation kept under tur.links")
    return relations, kept


def _provenance(raw: Any, timestamp: datetime | None, repo: RepoView, out: _Draft,
                tur: dict[str, Any]) -> Provenance:
    prov = raw if isinstance(raw, dict) else {}
    observed = _time(prov.get("observed_at"), "provenance.observed_at") or timestamp
    sha = _text(prov.get("git_sha"))
    full = repo.resolve_commit(sha) if sha and _HEX.fullmatch(sha) else None
    if sha and not _HEX.fullmatch(sha):
        tur["git_sha"] = sha
        sha = None
    ref, fingerprint = None, None
    raw_ref = _text(prov.get("context_ref"))
    if raw_ref:
        ref, fingerprint, why = _anchor(raw_ref, full, repo)
        if ref is None:
            tur["context_ref"] = raw_ref
            out.notes.append(f"context_ref {raw_ref!r} kept under tur.context_ref: {why}")
    if full is None:
        out.anchor = "commit not in this repository" if sha else "no commit"
    else:
        out.anchor = "anchored" if ref else "commit only"
    return Provenance(
        observed_at=observed or _epoch(), git_sha=full or sha,
        source_agent=_text(prov.get("source_agent")), source_harness=_text(prov.get("source_harness")),
        context_ref=ref, fingerprint=fingerprint,
    )


def _epoch() -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC)


def _anchor(raw: str, commit: str | None, repo: RepoView) -> tuple[str | None, str | None, str]:
    """(context_ref, fingerprint, why not) for a Tur ``context_ref`` (``path[#Lx[-Ly]]``)."""
    path, rng = split_ref(raw)
    sep = "#" if rng else ""
    pure = PurePosixPath(path)
    if "://" in raw:
        return None, None, "a URI, not a file of the repository"
    if pure.is_absolute():
        if repo.workdir is None:
            return None, None, "an absolute path"
        try:
            pure = PurePosixPath(Path(path).resolve().relative_to(repo.workdir.resolve()).as_posix())
        except ValueError:
            return None, None, "outside the repository"
    elif repo.base:
        pure = PurePosixPath(repo.base) / pure
    try:
        anchor = parse_anchor(f"{pure.as_posix()}{sep}{rng}")
    except InvalidAnchor as exc:
        return None, None, exc.message
    if commit is None:
        return anchor.ref(), None, ""  # kept: verify says why it cannot check it
    data = repo.blob_at(commit, anchor.path)
    if data is None:
        return None, None, f"{anchor.path} is not in commit {commit[:12]}"
    if anchor.end is not None and anchor.end > len(split_lines(data)):
        return None, None, f"{anchor.path} has fewer than {anchor.end} lines at {commit[:12]}"
    return anchor.ref(), anchor_fingerprint(anchor, data), ""


def _decay(raw: Any) -> Decay | None:
    if not isinstance(raw, dict):
        return None
    half_life = raw.get("half_life_days")
    try:
        days = float(half_life) if half_life is not None else None
    except (TypeError, ValueError):
        raise ValueError(f"decay.half_life_days: not a number: {half_life!r}") from None
    verified = _time(raw.get("last_verified_at"), "decay.last_verified_at")
    # Tur: a half-life that is missing or not positive means no time decay.
    decay = Decay(half_life_days=days if days and days > 0 else None)
    if verified is not None:
        decay.last_verified_at = verified
    status = str(raw.get("staleness_status") or "fresh").lower()
    decay.staleness_status = Status(status) if status in {s.value for s in Status} else Status.FRESH
    return decay


def _refutation(data: dict[str, Any], status: str, decay: Decay | None, state: str,
                tur: dict[str, Any]) -> Refutation | None:
    """A refutation for what Tur keeps out of an agent's context: redacted, falsified, refuted, archived."""
    reason = None
    if data.get("redacted"):
        reason = f"redacted in Tur: {data.get('redaction_reason') or 'no reason given'}"
        for key in ("redacted_at", "redaction_reason"):
            if data.get(key):
                tur[key] = _plain(data[key])
    elif status == "falsified":
        reason = "falsified in Tur"
    elif decay is not None and decay.staleness_status is Status.REFUTED:
        reason = "refuted in Tur"
    elif state == "archive":
        reason = "archived in Tur (forgotten)"
    if reason is None:
        return None
    at = decay.last_verified_at if decay is not None else _epoch()
    return Refutation(reason=reason, by="tur import --from-tur", at=at)


def _set_status(out: _Draft, decay: Decay | None, refutation: Refutation | None,
                provenance: Provenance) -> None:
    """The stored status: refuted, Tur's stale, else what gitmem can check now."""
    if refutation is not None:
        out.became = "refuted"
        if decay is not None:
            decay.staleness_status, decay.reason = Status.REFUTED, None
        return
    if decay is None:
        return  # no decay in Tur: never decays, unanchored until verified (EP-0131)
    if decay.staleness_status is Status.STALE:
        decay.reason = "stale in Tur"
    elif provenance.git_sha is None:
        decay.staleness_status, decay.reason = Status.UNANCHORED, "no commit recorded in Tur"
    elif out.anchor == "commit not in this repository":
        decay.staleness_status = Status.UNANCHORED
        decay.reason = f"observed commit {provenance.git_sha[:12]} is not in this repository"
    else:
        decay.staleness_status, decay.reason = Status.FRESH, None


# -- folding duplicates ----------------------------------------------------------------------------

_STATE_RANK = {"active": 0, "legacy": 1, "subsumed": 2, "archive": 3}


def fold(converted: Iterable[Converted]) -> tuple[dict[str, Converted], list[tuple[Converted, str]]]:
    """Merge the Tur memories that map to one gitmem id (same type and normalised content).

    The one kept is the most alive (active, then legacy, subsumed, archived), then the most
    recently verified; it gains the others' legacy ids, relations and tags.

    Returns:
        (id -> the memory kept, [(memory, reason)] for a different content whose 8-hex id
        is taken by another memory of the batch).
    """
    groups: dict[str, list[Converted]] = {}
    collisions: list[tuple[Converted, str]] = []
    for item in converted:
        group = groups.setdefault(item.memory.id, [])
        if group and normalise_content(group[0].memory.content) != normalise_content(item.memory.content):
            collisions.append((item, f"its id {item.memory.id} is taken by another content "
                                     f"({group[0].file.path.name})"))
            continue
        group.append(item)
    kept: dict[str, Converted] = {}
    for memory_id_, group in groups.items():
        group.sort(key=lambda c: (_STATE_RANK[c.state], -_verified(c.memory)))
        head = group[0]
        names = [n for c in group for n in c.memory.legacy_ids]
        relations = [r for c in group for r in c.memory.relations]
        tags = [t for c in group for t in (c.memory.model_extra or {}).get("tags", [])]
        if len(group) > 1:
            head.memory.legacy_id = list(dict.fromkeys(names))
            head.memory.relations = list({(r.type, r.target): r for r in relations}.values())
            if tags:
                setattr(head.memory, "tags", list(dict.fromkeys(tags)))  # noqa: B010 - an extra
            head.superseded_by = [h for c in group for h in c.superseded_by]
        kept[memory_id_] = head
    return kept, collisions


def _verified(memory: Memory) -> float:
    moment = memory.last_verified_at
    return moment.timestamp() if moment is not None else 0.0


def link_superseders(kept: Mapping[str, Converted], batch: Mapping[str, Memory],
                     known: Callable[[str], str | None]) -> tuple[dict[str, list[str]], list[str]]:
    """Give each memory Tur marked ``superseded_by`` another a ``supersedes`` relation from that one.

    The superseding memory is found by its Tur hash in the batch (its ``legacy_id``), else
    in the store (``known``); a relation on a memory of the batch is added to ``batch``'s
    record in place. A superseder found nowhere is named under the memory's
    ``tur.superseded_by`` and reported.

    Args:
        kept: id -> the mapped Tur memory (its ``became`` is set to ``superseded``).
        batch: id -> the record that will be written (a copy of ``kept``'s).
        known: a stored memory's id for an id or legacy id, or ``None``.

    Returns:
        (stored id -> the ids it must supersede, one line per superseder found nowhere).
    """
    by_hash = {name: mid for mid, memory in batch.items() for name in memory.legacy_ids}
    stored: dict[str, list[str]] = {}
    notes: list[str] = []
    for mid, item in kept.items():
        missing = []
        for name in item.superseded_by:
            source = by_hash.get(name) or known(name)
            if source is None or source == mid:
                missing.append(name)
                continue
            if source in batch:
                memory = batch[source]
                if all(r.type != RelationType.SUPERSEDES or r.target != mid for r in memory.relations):
                    memory.relations = [*memory.relations, Relation(type=RelationType.SUPERSEDES, target=mid)]
            elif mid not in stored.setdefault(source, []):
                stored[source].append(mid)
            if item.became == "active":
                item.became = "superseded"
        if missing:
            extra = batch[mid].model_extra or {}
            tur = dict(extra.get("tur") or {})
            tur["superseded_by"] = missing
            setattr(batch[mid], "tur", tur)  # noqa: B010 - an extra field
            notes.append(f"{mid} (Tur {item.memory.legacy_ids[0][:12]}) superseded by "
                         f"{', '.join(n[:12] for n in missing)}, not in the Tur store or gitmem: "
                         "kept under tur.superseded_by")
    return stored, notes
