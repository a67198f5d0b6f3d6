"""Drive the real Tur package (pinned in the ``test`` extra) to build stores, as its users do.

Every call runs the package in a subprocess with its own HOME, so what lands on disk is what
``pip install tur`` writes: ``tur learn`` (its agent CLI), the persona wizard behind
``tur-adm persona init`` (that command refuses to run without a terminal, so its wizard is
called directly, answering its prompts on stdin) and ``MemoryManager.archive``/``subsume``
(what ``tur-adm memory forget`` and Tur's introspection call).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

__all__ = ["TUR_VERSION", "RealTur", "git_env", "hash_of"]

TUR_VERSION = "0.15.1"
"""The version in pyproject's test extra; the tests check that this one is installed."""

_HASH = re.compile(r"_([0-9a-f]{64})\.md$")


def git_env(home: Path, date: str = "2026-01-05T10:00:00+00:00") -> dict[str, str]:
    """An environment for git and Tur with HOME (and git's global config) at ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TUR_", "GIT_"))}
    env.update(
        HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local/share"), XDG_STATE_HOME=str(home / ".local/state"),
        GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
        GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date, GIT_AUTHOR_NAME="Ada Author",
        GIT_AUTHOR_EMAIL="ada@example.com", GIT_COMMITTER_NAME="Ada Author",
        GIT_COMMITTER_EMAIL="ada@example.com", COLUMNS="500", NO_COLOR="1", TERM="dumb",
        TUR_RUNTIME_DIR=str(home / ".tur-runtime"),
    )
    return env


class RealTur:
    """The Tur package at work on one project, with its user-level store under ``home/.tur``.

    Args:
        project: the project directory (a git repository): where ``.tur/`` goes.
        home: the HOME the package runs with.
    """

    def __init__(self, project: Path, home: Path) -> None:
        self.project = project
        self.home = home
        self.env = git_env(home)

    def run(self, *args: str, cwd: Path | None = None, stdin: str = "") -> str:
        """``python -m tur ARGS`` (the agent CLI); return its output.

        Raises:
            AssertionError: the command failed.
        """
        return self._python(["-m", "tur", *args], cwd, stdin)

    def api(self, code: str, cwd: Path | None = None) -> str:
        """Run Python ``code`` against the installed package; return its output."""
        return self._python(["-c", code], cwd, "")

    def _python(self, args: list[str], cwd: Path | None, stdin: str) -> str:
        proc = subprocess.run([sys.executable, *args], cwd=cwd or self.project, env=self.env, input=stdin,
                              capture_output=True, text=True, check=False, timeout=120)
        if proc.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed ({proc.returncode}): {proc.stdout}{proc.stderr}")
        return proc.stdout

    def version(self) -> str:
        """The installed package's version."""
        return self.api("import importlib.metadata as m; print(m.version('tur'))").strip()

    def init_persona(self, name: str = "Ariel", aleph: str = "To safeguard reality") -> str:
        """Create a persona with the package's own wizard; return its id."""
        # Run from HOME: the wizard also writes an AGENTS.md into the current directory.
        self._python(["-c", "from tur.cli.wizards import init_wizard; init_wizard()"], self.home,
                     f"{name}\n{aleph}\n")
        index = yaml.safe_load((self.home / ".tur" / "personas.yaml").read_text())
        return next(str(p["id"]) for p in index["personas"] if p["name"] == name)

    def memory_files(self) -> list[Path]:
        """Every memory file of both stores, sorted."""
        roots = [self.project / ".tur", self.home / ".tur"]
        return sorted(p for root in roots for p in root.glob("personas/*/memories/*/*.md"))

    def learn(self, content: str, *args: str, cwd: Path | None = None) -> str:
        """``tur learn CONTENT ARGS``; return the new memory's hash."""
        before = set(self.memory_files())
        self.run("learn", content, *args, cwd=cwd)
        return self._new_hashes(before)[0]

    def learn_many(self, memories: list[dict]) -> list[str]:
        """``tur learn --json FILE`` with ``{"memories": [...]}``; return the hashes, in order of content."""
        payload = self.home / "batch.json"
        payload.write_text(json.dumps({"memories": memories}))
        before = set(self.memory_files())
        self.run("learn", "--json", str(payload))
        payload.unlink()
        by_content = {self.content(p): hash_of(p) for p in set(self.memory_files()) - before}
        return [by_content[m["content"]] for m in memories]

    def _manager(self, action: str, hashes: list[str], *args: str) -> None:
        self.api(
            "from tur import persona\n"
            "from tur.memory.storage import MemoryManager\n"
            "m = MemoryManager(base_dir=persona.get_persona_path(persona.get_active_persona_id()))\n"
            f"for h in {hashes!r}:\n"
            f"    m.{action}(h, *{args!r})\n"
        )

    def archive(self, *hashes: str) -> None:
        """What ``tur-adm memory forget`` does: move memories to ``archive/``."""
        self._manager("archive", list(hashes))

    def subsume(self, *hashes: str) -> None:
        """What Tur's introspection does to memories it compacted: move them to ``subsumed/``."""
        self._manager("subsume", list(hashes))

    def redact(self, memory_hash: str, reason: str) -> None:
        """What ``tur-adm memory redact`` does: replace the content with a tombstone."""
        self._manager("redact", [memory_hash], reason)

    def file_of(self, memory_hash: str) -> Path:
        """The file of a memory."""
        return next(p for p in self.memory_files() if hash_of(p) == memory_hash)

    @staticmethod
    def content(path: Path) -> str:
        """A memory file's content (its body)."""
        return path.read_text().split("---", 2)[2].strip()

    def _new_hashes(self, before: set[Path]) -> list[str]:
        return sorted(hash_of(p) for p in set(self.memory_files()) - before)


def hash_of(path: Path) -> str:
    """The hash a Tur memory file is named for."""
    match = _HASH.search(path.name)
    assert match, path
    return match.group(1)
