"""Refuse memory content that looks like it contains a credential, using detect-secrets.

Memories are pushed to every clone of the repository, so a pasted token would leak to the
whole team and stay in the memory ref's history forever. ``tur learn`` therefore scans the
content first and refuses it unless the user passes ``--allow-secret``.

Detection is Yelp's detect-secrets (https://github.com/Yelp/detect-secrets), in-memory: each
line goes through ``detect_secrets.core.scan.scan_line`` with the library's default plugins
and default filters, except for the choices below, made because memory content is prose
about code rather than a source file:

* ``KeywordDetector`` is **used**. With no file extension it only fires on a keyword
  assigned a quoted literal (``password = "hunter2hunter2"``), never on prose such as
  "the password field is hashed with bcrypt"; its own filters skip indirect references
  (``password = get_password()``).
* ``Base64HighEntropyString`` is **used with its entropy limit (4.5 bits) enforced**.
  Ad-hoc ``scan_line`` returns every candidate word so that the CLI can print its entropy;
  we keep only those over the plugin's own limit. A 40-hex git SHA (at most 4 bits) never
  reaches it, ordinary words and paths stay around 4 bits, long random keys go above.
* ``HexHighEntropyString`` is **not used**: git SHAs and ``sha256:`` fingerprints, which
  memories quote all the time, are exactly its positives.
* ``IPPublicDetector`` is **not used**: an address is not a credential.

The same scan covers every string gitmem stores, not only ``content``: each string of a
record (agent and harness names, a refutation's reason, the extra fields of an imported
record, a teammate's record arriving by ``tur sync``), a continuity note and the persona
(:func:`check_fields`, :func:`record_fields`). Values whose shape is checked when a record
is read (id, type, scope, status, timestamps, ``git_sha``) cannot hold a credential and are
not scanned; many strings are scanned in one call (:func:`scan_texts`).

Known gap: a random key without a recognisable prefix and without quotes after a keyword
(``API_KEY=sk-live-9f8e7d6c5b4a``) is short and low-entropy enough to pass. Lines carrying
detect-secrets' ``pragma: allowlist secret`` marker are skipped, as the library does.

Cost (measured on 2 cores): the first check in a process imports detect-secrets, which is
why it is imported inside :func:`scan_texts`: about 0.11 s, of which ``requests`` (which its
plugins and filters import at the top, to verify a found key over the network, which gitmem
never asks for) is about 0.07 s. After that a one-line memory takes about 2.5 ms and ten
260-character lines about 30 ms. Calling the plugin classes directly would not import less:
every ``detect_secrets.*`` module first runs the package's ``__init__``, which imports
``SecretsCollection`` and with it the scan, the filters, every plugin's base module and
``requests`` (detect-secrets 1.5.0; in instructions executed, ``valgrind --tool=callgrind``:
the package 448 M, 380 M of them ``requests``; its plugins 101 M; the first scan 34 M).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gitmem.errors import SecretRefused

__all__ = [
    "EXCLUDED_PLUGINS",
    "SecretFinding",
    "check_content",
    "check_fields",
    "describe",
    "field_findings",
    "find_secrets",
    "record_fields",
    "refusal",
    "scan_texts",
]

#: detect-secrets plugin class names left out of the default set (see the module docstring).
EXCLUDED_PLUGINS = frozenset({"HexHighEntropyString", "IPPublicDetector"})

_HINT = "remove it, or pass --allow-secret if it is not a real credential"
_SHOWN = 3

# detect-secrets keeps its settings in a process-wide singleton that
# ``transient_settings`` swaps in and out; two threads (watcher, TUI, MCP) must not
# interleave those swaps.
_settings_lock = threading.Lock()


@dataclass(frozen=True)
class SecretFinding:
    """One suspected credential; the secret value itself is never kept.

    Attributes:
        kind: detect-secrets' secret type, e.g. ``"AWS Access Key"``, ``"Secret Keyword"``.
        line: 1-based line number in the scanned text (lines split at newlines).
    """

    kind: str
    line: int


def find_secrets(text: str) -> list[SecretFinding]:
    """Scan ``text`` line by line and return what looks like a credential.

    Args:
        text: Memory content, any number of lines.

    Returns:
        Findings sorted by line then kind, at most one per (line, kind); empty when clean.
        A generic high-entropy finding is dropped on a line where a specific detector
        (AWS, GitHub, private key, keyword, ...) fired.
    """
    return scan_texts([text])[0]


def scan_texts(texts: Sequence[str]) -> list[list[SecretFinding]]:
    """:func:`find_secrets` of each text, with detect-secrets set up once for all of them.

    Setting detect-secrets up costs about 0.7 ms a call, three times a one-line scan: a
    sync that checks thousands of incoming strings scans them in one call.

    Returns:
        One list of findings per text, in order.
    """
    # Lazy, from the function: detect-secrets loads ~30 plugin modules and ``requests``
    # (about 0.1 s), which every read-only command (wake, recall, list) would otherwise pay for.
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.core.scan import scan_line
    from detect_secrets.plugins.high_entropy_strings import HighEntropyStringsPlugin
    from detect_secrets.settings import get_plugins, transient_settings

    # detect-secrets annotates this mapping with an unbound TypeVar (type[Never] to mypy).
    plugin_classes: Iterable[type] = get_mapping_from_secret_type_to_class().values()
    plugins_used = [
        {"name": cls.__name__} for cls in plugin_classes if cls.__name__ not in EXCLUDED_PLUGINS
    ]
    out: list[list[SecretFinding]] = []
    with _settings_lock, transient_settings({"plugins_used": plugins_used}):
        entropy_plugins = {
            p.secret_type: p for p in get_plugins() if isinstance(p, HighEntropyStringsPlugin)
        }
        for text in texts:
            findings: list[SecretFinding] = []
            for number, raw in enumerate(text.split("\n"), start=1):
                line = raw.rstrip("\r")
                if not line.strip():
                    continue
                specific, generic = set(), set()
                for secret in scan_line(line):
                    plugin = entropy_plugins.get(secret.type)
                    if plugin is None:
                        specific.add(secret.type)
                    elif secret.secret_value and (
                        plugin.calculate_shannon_entropy(secret.secret_value) > plugin.entropy_limit
                    ):
                        generic.add(secret.type)
                # "GitHub Token" says more than "Base64 High Entropy String" about the same
                # token, so the generic kind is reported only where nothing specific fired.
                kinds = specific or generic
                findings.extend(SecretFinding(kind=k, line=number) for k in sorted(kinds))
            out.append(findings)
    return out


def check_content(text: str, allow: bool = False) -> None:
    """Raise unless ``text`` is free of credentials (or the user allowed it).

    Args:
        text: Memory content to be stored.
        allow: ``True`` (``--allow-secret``) skips the scan entirely.

    Raises:
        SecretRefused: when :func:`find_secrets` reports anything; the message names each
            finding's kind and line (at most three, then a count), never the value.
    """
    if allow:
        return
    refused = refusal(find_secrets(text))
    if refused is not None:
        raise refused


def refusal(findings: Sequence[SecretFinding]) -> SecretRefused | None:
    """The error :func:`check_content` raises for these findings, or ``None`` when there are none."""
    if not findings:
        return None
    shown = ", ".join(f"{f.kind} on line {f.line}" for f in findings[:_SHOWN])
    if len(findings) > _SHOWN:
        shown += f" and {len(findings) - _SHOWN} more"
    return SecretRefused(
        f"content looks like it contains a secret ({shown}); nothing was stored", _HINT
    )


#: Record fields whose values are validated to a shape that cannot hold a credential.
_SHAPED = frozenset({
    "id", "type", "scope", "provenance.observed_at", "provenance.git_sha",
    "decay.last_verified_at", "decay.staleness_status", "refutation.at", "relations.type",
})


def record_fields(mapping: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """Every free-text string of a record mapping, as ``(field path, text)``.

    Args:
        mapping: a record as plain data (``Memory.model_dump(mode="json")``, or parsed YAML),
            unknown keys included.
        prefix: the path of ``mapping`` inside the record (for nested calls).

    Returns:
        ``[("content", "..."), ("provenance.source_agent", "..."), ...]``; list items are
        named ``relations[0].target``. Fields listed in ``_SHAPED`` are left out.
    """
    out: list[tuple[str, str]] = []

    def walk(value: Any, path: str, shape: str) -> None:
        if isinstance(value, str):
            if shape not in _SHAPED:
                out.append((path, value))
        elif isinstance(value, Mapping):
            for key, item in value.items():
                walk(item, f"{path}.{key}" if path else str(key), f"{shape}.{key}" if shape else str(key))
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                walk(item, f"{path}[{i}]", shape)

    walk(mapping, prefix, prefix)
    return out


def field_findings(fields: Iterable[tuple[str, str]]) -> list[tuple[str, SecretFinding]]:
    """The findings of :func:`find_secrets` in each named text, as ``(name, finding)``.

    One detect-secrets set-up for all the texts, and each distinct text scanned once.
    """
    named = [(name, text) for name, text in fields if text.strip()]
    unique = list(dict.fromkeys(text for _, text in named))
    found = dict(zip(unique, scan_texts(unique), strict=True)) if unique else {}
    return [(name, finding) for name, text in named for finding in found[text]]


def describe(found: list[tuple[str, SecretFinding]]) -> str:
    """One phrase naming where the findings are: ``--agent (Secret Keyword on line 1)``."""
    by_name: dict[str, list[str]] = {}
    for name, finding in found:
        by_name.setdefault(name, []).append(f"{finding.kind} on line {finding.line}")
    parts = [f"{name} ({', '.join(kinds[:_SHOWN])})" for name, kinds in by_name.items()]
    return ", ".join(parts[:_SHOWN]) + (f" and {len(parts) - _SHOWN} more" if len(parts) > _SHOWN else "")


def check_fields(fields: Iterable[tuple[str, str]], allow: bool = False, hint: str = _HINT) -> None:
    """Raise unless every named text is free of credentials (or the user allowed it).

    Args:
        fields: ``(name, text)`` pairs; the name is what the message calls the text
            (``"--agent"``, ``"refutation.reason"``).
        allow: ``True`` (``--allow-secret``) skips the scan entirely.
        hint: what to do, after the message.

    Raises:
        SecretRefused: naming each field with a finding, its kind and line (never the value).
    """
    if allow:
        return
    found = field_findings(fields)
    if found:
        raise SecretRefused(f"{describe(found)} looks like it contains a secret; nothing was stored", hint)
