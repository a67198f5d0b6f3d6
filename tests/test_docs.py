"""The README documents every command, and each command has help text."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from gitmem.cli import build_parser

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_command_is_in_the_readme():
    missing = [name for name in _commands() if not re.search(rf"`tur {re.escape(name)}\b", README)]
    assert missing == [], f"commands not documented in README.md: {missing}"


def test_every_command_has_help_text():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in sub._choices_actions}
    assert set(helps) == set(_commands())
    assert all(helps.values()), helps


def test_readme_has_exactly_the_two_setup_commands():
    setup = README.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    block = setup.split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make demo", "make test"]
