"""Whether a harness will use the wiring: its own approval and trust files, and ``tur`` on PATH.

A harness ignores project configuration until the user trusts the folder or approves the
server, and it records that answer in a file of its own. :func:`checks` reads those files as
the harness writes them (sources in docs/harness.md#will-the-harness-use-it):

- Claude Code: a project ``.mcp.json`` server runs once approved: ``enableAllProjectMcpServers:
  true`` or the name in ``enabledMcpjsonServers`` (and not in ``disabledMcpjsonServers``), in
  ``.claude/settings.local.json``, ``.claude/settings.json``, ``~/.claude/settings.json``, or
  the project's entry of ``~/.claude.json`` (``projects["/abs/root"]``).
- Codex CLI: a project's ``.codex/`` is read only when ``~/.codex/config.toml`` has
  ``[projects."/abs/root"] trust_level = "trusted"`` for the root or a folder above it.
- Gemini CLI: ``~/.gemini/trustedFolders.json`` maps a path to ``TRUST_FOLDER`` (that folder
  and below), ``TRUST_PARENT`` (its parent and below) or ``DO_NOT_TRUST``; folder trust off in
  ``~/.gemini/settings.json`` (``security.folderTrust.enabled: false``) trusts every folder.
- Copilot CLI: ``~/.copilot/config.json`` lists the folders trusted for future sessions in
  ``trusted_folders`` (``trustedFolders`` in newer releases); a folder trusts everything below it.

Every harness runs ``tur`` by name, so it must be on the PATH the harness inherits. The
default locations are read (``CODEX_HOME`` and ``COPILOT_HOME`` move them; library code
reads no environment variable, docs/architecture.md).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitmem.errors import HarnessConfigError
from gitmem.harness.files import read_exact

__all__ = ["TrustCheck", "checks"]

SERVER = "tur"
"""The MCP server's name in every harness's configuration."""


@dataclass(frozen=True)
class TrustCheck:
    """One condition the harness needs before it uses the wiring.

    Attributes:
        what: the condition, in words (``Codex trusts /repo``).
        ok: whether it holds now.
        fix: the one command or click that makes it hold.
        source: the file the answer was read from (``None`` for PATH).
    """

    what: str
    ok: bool
    fix: str
    source: Path | None = None


def _text(path: Path) -> str | None:
    """The file's text, ``None`` when it is missing or cannot be read (a FIFO is not opened)."""
    try:
        return read_exact(path)
    except HarnessConfigError:
        return None


def _json(path: Path) -> Any:
    text = _text(path)
    try:
        return None if text is None else json.loads(text)
    except json.JSONDecodeError:
        return None


def _under(root: Path, folder: str) -> bool:
    """Whether ``root`` is ``folder`` or below it (paths compared resolved)."""
    try:
        base = Path(folder).expanduser().resolve()
    except (OSError, RuntimeError):
        return False
    return root == base or base in root.parents


def _claude(root: Path, home: Path) -> TrustCheck:
    approved: bool | None = None
    source: Path | None = None
    layers: list[tuple[Path, Any]] = []
    for path in (root / ".claude/settings.local.json", root / ".claude/settings.json",
                 home / ".claude/settings.json"):
        layers.append((path, _json(path)))
    state = _json(home / ".claude.json")
    projects = state.get("projects") if isinstance(state, dict) else None
    entry = projects.get(str(root)) if isinstance(projects, dict) else None
    layers.append((home / ".claude.json", entry))
    for path, data in layers:
        if not isinstance(data, dict):
            continue
        disabled = data.get("disabledMcpjsonServers")
        if isinstance(disabled, list) and SERVER in disabled:
            approved, source = False, path
            break
        enabled = data.get("enabledMcpjsonServers")
        if data.get("enableAllProjectMcpServers") is True or (
                isinstance(enabled, list) and SERVER in enabled):
            approved, source = True, path
            break
    return TrustCheck(
        f'Claude Code has approved the project MCP server "{SERVER}" (.mcp.json)', bool(approved),
        f'start `claude` in {root} and approve "{SERVER}" when asked (or run /mcp and enable '
        f'it; or add "enabledMcpjsonServers": ["{SERVER}"] to .claude/settings.local.json)',
        source)


def _codex(root: Path, home: Path) -> TrustCheck:
    config = home / ".codex" / "config.toml"
    trusted = False
    try:
        import tomllib

        data = tomllib.loads(_text(config) or "")
    except ValueError:
        data = {}
    projects = data.get("projects")
    if isinstance(projects, dict):
        trusted = any(isinstance(v, dict) and v.get("trust_level") == "trusted" and _under(root, k)
                      for k, v in projects.items())
    return TrustCheck(
        f"Codex trusts {root} (its .codex/ is read only then)", trusted,
        f"start `codex` in {root} and trust the folder when asked (or add "
        f'[projects."{root}"] trust_level = "trusted" to {config})', config)


def _gemini(root: Path, home: Path) -> TrustCheck:
    settings = _json(home / ".gemini/settings.json")
    trust = settings.get("security", {}).get("folderTrust", {}) if isinstance(settings, dict) else {}
    listed = _json(home / ".gemini/trustedFolders.json")
    trusted = isinstance(trust, dict) and trust.get("enabled") is False
    if not trusted and isinstance(listed, dict):
        # The longest matching path decides, so a DO_NOT_TRUST below a trusted parent wins.
        best: tuple[int, str] | None = None
        for folder, level in listed.items():
            base = str(Path(folder).expanduser().parent) if level == "TRUST_PARENT" else folder
            if _under(root, base) and (best is None or len(base) > best[0]):
                best = (len(base), level)
        trusted = best is not None and best[1] in ("TRUST_FOLDER", "TRUST_PARENT")
    return TrustCheck(
        f"Gemini CLI trusts {root} (else its MCP servers and hooks are disabled)", trusted,
        f'start `gemini` in {root} and choose "Trust folder" (or run /permissions)',
        home / ".gemini/trustedFolders.json")


def _copilot(root: Path, home: Path) -> TrustCheck:
    config = home / ".copilot" / "config.json"
    data = _json(config)
    folders: list[Any] = []
    if isinstance(data, dict):
        for key in ("trusted_folders", "trustedFolders"):
            if isinstance(data.get(key), list):
                folders += data[key]
    trusted = any(isinstance(f, str) and _under(root, f) for f in folders)
    return TrustCheck(
        f"Copilot CLI trusts {root} (else it reads no project MCP server)", trusted,
        f'start `copilot` in {root} and choose "Yes, and remember this folder for future '
        f'sessions" (or add "{root}" to trusted_folders in {config})', config)


def _path() -> TrustCheck:
    found = shutil.which("tur")
    return TrustCheck(
        "`tur` is on PATH (the harness runs it by name)" + (f": {found}" if found else ""),
        found is not None,
        "install gitmem where the harness starts from (`pip install /path/to/gitmem`, or "
        "`pipx install /path/to/gitmem`), or put its checkout's .venv/bin on PATH before "
        "starting the harness")


def checks(harness: str, scope: str, root: Path, home: Path) -> list[TrustCheck]:
    """What ``harness`` needs besides the files ``tur setup`` writes, each as found now.

    Args:
        harness: one of :data:`gitmem.harness.HARNESSES`.
        scope: ``project`` or ``user``; Claude Code's approval and Codex's trust concern only
            project files, Gemini's and Copilot's folder trust every session in ``root``.
        root: the repository's working tree (resolved).
        home: the user's home directory (resolved).

    Returns:
        The checks in order: the harness's own condition (when it has one), then PATH.
        Cursor keeps its approvals in its own database, so only PATH is checked for it.
    """
    found: list[TrustCheck] = []
    if harness == "claude" and scope == "project":
        found.append(_claude(root, home))
    elif harness == "codex" and scope == "project":
        found.append(_codex(root, home))
    elif harness == "gemini":
        found.append(_gemini(root, home))
    elif harness == "copilot":
        found.append(_copilot(root, home))
    found.append(_path())
    return found
