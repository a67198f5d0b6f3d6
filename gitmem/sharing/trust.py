"""Whose persona and continuity note are in force here: trust from git's identity (docs/sharing.md, Trust).

The author of ``persona.yaml`` or of a continuity note is who **git** says made it: the
author of the commit on the memory ref that last changed it
(:meth:`gitmem.store.Store.attribution`), never what its text says. A version is in force
in this clone when every one of its authors is trusted (the local identity, or listed in
``trust.authors``) or when this clone accepted it (``tur persona accept``, kept in
``<common dir>/tur/accepted``: a person's decision about their own clone, never shared).

* Persona: the tip's version when it is in force; otherwise the newest earlier version
  that is (the local persona stays until the user accepts), and the tip's version is a
  *proposal*: wake shows it attributed and framed as untrusted, never as Tier 0. A
  deletion of ``persona.yaml`` is a version too: by an untrusted author, the persona
  before it stays in force and the deletion is the proposal (:attr:`Version.deleted`).
* Continuity: the newest note in force; a newer note by an untrusted author is a proposal,
  and so is an untrusted author's deletion of the note in force (which stays in force).

Both walks are bounded (:data:`MAX_VERSIONS` versions, notes) and remembered per tip in
the store's object memo, so a warm wake starts no git process for them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gitmem.errors import GitmemError
from gitmem.store import Store

__all__ = ["CONTINUITY_DIR", "MAX_VERSIONS", "PERSONA_PATH", "Proposal", "Standing", "Version",
           "note_standing", "persona_standing", "shown_writer"]

PERSONA_PATH = "persona.yaml"
CONTINUITY_DIR = "continuity"
MAX_VERSIONS = 20
"""Older persona versions (and notes) looked at for one in force; beyond: none is."""


@dataclass(frozen=True)
class Version:
    """One version of the persona or one continuity note, with who made it.

    Attributes:
        path: its path on the memory ref (``persona.yaml``, ``continuity/<name>``).
        blob: its blob id.
        authors: who made it (``Name <email>``, newest first; see ``Store.attribution``).
        trusted: whether it is in force here (every author trusted, or accepted).
        deleted: the version is a deletion: ``blob`` is then the sha of the commit that
            deleted the path (what ``tur persona accept`` records), ``authors`` who made it.
    """

    path: str
    blob: str
    authors: tuple[str, ...]
    trusted: bool
    deleted: bool = False


@dataclass(frozen=True)
class Standing:
    """What is in force here, and the newer version from an untrusted author (``None``: none)."""

    in_force: Version | None
    proposed: Version | None


@dataclass(frozen=True)
class Proposal:
    """A persona or note from an untrusted author that is not in force here, as a surface shows it.

    Attributes:
        kind: ``persona`` or ``note``.
        version: the version (path, blob, authors).
        writer: the author to name (:func:`shown_writer`).
        text: its stored text (decoded; undecodable bytes replaced).
        accept: the command that puts it in force here.
    """

    kind: str
    version: Version
    writer: str
    text: str
    accept: str

    def to_json(self) -> dict[str, object]:
        """JSON-ready form."""
        return {"kind": self.kind, "path": self.version.path, "blob": self.version.blob,
                "written_by": self.writer, "authors": list(self.version.authors), "text": self.text,
                "accept": self.accept, "deleted": self.version.deleted}


def shown_writer(authors: tuple[str, ...], trusts: Callable[[str], bool]) -> str | None:
    """The author to name for a version made by ``authors``: the first untrusted one, else the newest."""
    for who in authors:
        if not trusts(who):
            return who
    return authors[0] if authors else None


def _version(store: Store, commit: str, path: str, blob: str, trusts: Callable[[str], bool],
             accepted: set[str], require_signatures: bool) -> Version:
    authors = store.attribution(commit, {path}, require_signatures=require_signatures).get(path, ())
    ok = blob in accepted or (bool(authors) and all(map(trusts, authors)))
    return Version(path, blob, authors, ok)


def _changes(store: Store, tip: str) -> list[str]:
    """The newest commits that changed the persona (at most ``MAX_VERSIONS + 1``), newest first."""
    try:
        return store.path_changes(tip, PERSONA_PATH)[: MAX_VERSIONS + 1]
    except GitmemError:  # a history git cannot walk: no earlier persona is in force
        return []


def _deletion(commit: str, authors: tuple[str, ...], trusts: Callable[[str], bool],
              accepted: set[str]) -> Version:
    """The deletion of the persona by ``commit``, which ``authors`` made."""
    ok = commit in accepted or (bool(authors) and all(map(trusts, authors)))
    return Version(PERSONA_PATH, commit, authors, ok, deleted=True)


def persona_standing(store: Store, tip: str | None, trusts: Callable[[str], bool],
                     accepted: set[str], require_signatures: bool = False) -> Standing:
    """The persona in force at ``tip`` in this clone, and the proposal beside it (module docstring).

    Args:
        store: the repository's store.
        tip: a commit of the memory ref (``None``: nothing).
        trusts: ``Name <email> -> bool``, the configured trust.
        accepted: blob ids this clone accepted (``Store.accepted``).
        require_signatures: ``trust.require_signatures`` (an unsigned commit's author is
            marked, see ``Store.attribution``).
    """
    if tip is None:
        return Standing(None, None)
    blob = store.blob_id_at(tip, PERSONA_PATH)
    commits: list[str] | None = None
    if blob is None:
        # Deleted (or never there): a deletion is a version like any other, by whoever made it.
        # Who made the newest change is remembered per tip: a ref that never had a persona
        # costs no walk of its history on a warm wake.
        found = store.attribution(tip, {PERSONA_PATH}, require_signatures=require_signatures)
        commits = _changes(store, tip) if found.get(PERSONA_PATH) else []
        if not commits:
            return Standing(None, None)
        newest = _deletion(commits[0], found[PERSONA_PATH], trusts, accepted)
    else:
        newest = _version(store, tip, PERSONA_PATH, blob, trusts, accepted, require_signatures)
    if newest.trusted:
        return Standing(None if newest.deleted else newest, None)
    for commit in commits if commits is not None else _changes(store, tip):
        older = store.blob_id_at(commit, PERSONA_PATH)
        if older is None or older == blob:
            continue
        version = _version(store, commit, PERSONA_PATH, older, trusts, accepted, require_signatures)
        if version.trusted:
            return Standing(version, newest)
    return Standing(None, newest)


def note_standing(store: Store, tip: str | None, trusts: Callable[[str], bool],
                  accepted: set[str], require_signatures: bool = False) -> Standing:
    """The newest continuity note in force at ``tip``, and a newer untrusted one (module docstring).

    A note that an untrusted author deleted (one of the newest :data:`MAX_VERSIONS`
    deleting commits, not accepted here) stays a candidate: if it is the newest note in
    force, it stays in force and its deletion is the proposal, as with the persona.
    """
    notes = store.list_dir(tip, CONTINUITY_DIR) if tip is not None else {}
    if tip is None:
        return Standing(None, None)
    held = _held_notes(store, tip, set(notes), trusts, accepted, require_signatures)
    if not notes and not held:
        return Standing(None, None)
    names = sorted({*notes, *held}, reverse=True)[:MAX_VERSIONS]  # names sort by time
    paths = {f"{CONTINUITY_DIR}/{n}" for n in names if n in notes}
    found = store.attribution(tip, paths, require_signatures=require_signatures)
    proposed: Version | None = None
    for name in names:
        if name in held:
            version, deletion = held[name]
            if version.trusted:
                return Standing(version, proposed or deletion)
            continue
        path = f"{CONTINUITY_DIR}/{name}"
        authors = found.get(path, ())
        blob = notes[name]
        ok = blob in accepted or (bool(authors) and all(map(trusts, authors)))
        version = Version(path, blob, authors, ok)
        if ok:
            return Standing(version, proposed)
        proposed = proposed or version
    return Standing(None, proposed)


def _held_notes(store: Store, tip: str, present: set[str], trusts: Callable[[str], bool],
                accepted: set[str], require_signatures: bool) -> dict[str, tuple[Version, Version]]:
    """Notes gone from ``tip`` that an untrusted author deleted: name -> (the note, its deletion)."""
    try:
        deletions = store.deletions(tip, CONTINUITY_DIR, MAX_VERSIONS)
    except GitmemError:  # a history git cannot walk: no deletion is known
        return {}
    held: dict[str, tuple[Version, Version]] = {}
    for commit, parent, path in deletions:
        name = path.rpartition("/")[2]
        if name in present or name in held or path.count("/") != 1:
            continue
        deleter = store.attribution(commit, {path}, require_signatures=require_signatures).get(path, ())
        if commit in accepted or (deleter and all(map(trusts, deleter))):
            continue
        blob = store.blob_id_at(parent, path)
        if blob is None:
            continue
        authors = store.attribution(parent, {path}, require_signatures=require_signatures).get(path, ())
        ok = blob in accepted or (bool(authors) and all(map(trusts, authors)))
        held[name] = (Version(path, blob, authors, ok), Version(path, commit, deleter, False, deleted=True))
    return held
