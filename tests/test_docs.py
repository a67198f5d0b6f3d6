"""The documentation stays true to the code.

The README is the front door: the two set-up commands and a command table naming every
``tur`` command. ``docs/`` is the manual: every command and option in ``docs/commands.md``,
every configuration key, every error class, and a home for the proposals the code cites.
Every relative link in the README, CONTRIBUTING.md and ``docs/`` leads to a file (and
heading) that exists.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from gitmem.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text()
MARKDOWN_FILES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted(DOCS.glob("*.md"))]


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _commands() -> dict[str, argparse.ArgumentParser]:
    return _subcommands(build_parser())


def _options(parser: argparse.ArgumentParser) -> set[str]:
    """Long options of ``parser`` and of its subcommands, without ``--help``."""
    found = {
        option
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    }
    for sub in _subcommands(parser).values():
        found |= _options(sub)
    return found


def _without_code(text: str) -> str:
    """``text`` without fenced code blocks (their ``#`` lines are not headings)."""
    return re.sub(r"^```.*?^```[^\n]*$", "", text, flags=re.S | re.M)


def _headings(text: str) -> list[tuple[int, str]]:
    return [(len(m[1]), m[2].strip())
            for m in re.finditer(r"^(#{1,6})\s+(.+)$", _without_code(text), re.M)]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for _, heading in _headings(text):
        slug = _slug(heading)
        anchors.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


def _section(text: str, heading: str) -> str:
    """The body under the first heading equal to ``heading``, up to the next heading of its level or above."""
    lines = text.splitlines()
    match = re.match(r"(#+)\s", heading)
    assert match, heading
    level = len(match[1])
    start = lines.index(heading)  # ValueError names the missing heading
    body = []
    fenced = False
    for line in lines[start + 1:]:
        fenced ^= line.startswith("```")
        stop = re.match(r"(#+)\s", line)
        if not fenced and stop and len(stop[1]) <= level:
            break
        body.append(line)
    return "\n".join(body)


# --- The README: the front door -------------------------------------------------------------

def test_readme_has_exactly_the_two_setup_commands():
    setup = _section(README, "## Set-up")
    block = setup.split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make demo", "make test"]
    assert "Both create `.venv/`" in setup, "the set-up says where the commands install"


def test_readme_command_table_lists_every_command():
    table = _section(README, "## Commands")
    rows = [line for line in table.splitlines() if line.startswith("| `tur ")]
    named = [name for row in rows for name in re.findall(r"`tur ([a-z][a-z-]*)", row.split(" | ")[0])]
    commands = _commands()
    missing = sorted(set(commands) - set(named))
    unknown = sorted(set(named) - set(commands))
    assert missing == [], f"commands missing from the README's command table: {missing}"
    assert unknown == [], f"the README's command table names commands tur does not have: {unknown}"
    first_cells = " ".join(row.split(" | ")[0] for row in rows)
    for name, parser in commands.items():
        for sub in _subcommands(parser):
            assert f"`tur {name} {sub}" in first_cells, f"`tur {name} {sub}` not in the command table"


def test_every_command_has_help_text():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in sub._choices_actions}
    assert set(helps) == set(_commands())
    assert all(helps.values()), helps


# --- docs/: the manual ---------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_command_and_option_is_in_docs_commands(name):
    text = (DOCS / "commands.md").read_text()
    section = _section(text, f"### `tur {name}`")
    parser = _commands()[name]
    missing = sorted(option for option in _options(parser) if option not in section)
    assert missing == [], f"options of `tur {name}` not in its docs/commands.md section: {missing}"
    for sub in _subcommands(parser):
        assert f"tur {name} {sub}" in section, f"`tur {name} {sub}` not in docs/commands.md"


def test_every_configuration_key_is_documented():
    from gitmem.config.schema import SettingsFile

    keys = []
    for name, field in SettingsFile.model_fields.items():
        section = field.annotation
        if isinstance(section, type) and hasattr(section, "model_fields"):
            keys += [f"{name}.{key}" for key in section.model_fields]
        else:
            keys.append(name)
    reference = (DOCS / "configuration.md").read_text()
    assert [k for k in keys if f"`{k}`" not in reference] == [], "keys missing from docs/configuration.md"
    # The error for an unknown key points at the README's Configuration section.
    example = _section(README, "## Configuration")
    for key in keys:
        *section, leaf = key.split(".")
        assert re.search(rf"^{'  ' * len(section)}{leaf}:", example, re.M), f"{key} not in the README"


def test_every_error_class_is_documented():
    from gitmem import errors

    text = (DOCS / "errors.md").read_text()
    missing = [name for name in errors.__all__ if not re.search(rf"`[^`\n]*\b{name}\b", text)]
    assert missing == [], f"error classes missing from docs/errors.md: {missing}"


def test_every_proposal_cited_in_the_code_has_a_heading_in_docs_design():
    cited = {
        ep
        for directory in ("gitmem", "tui")
        for path in (ROOT / directory).rglob("*.py")
        for ep in re.findall(r"EP-\d{4}", path.read_text())
    }
    assert cited, "the code cites no proposal: is this test still needed?"
    headings = {heading for _, heading in _headings((DOCS / "design.md").read_text())}
    assert sorted(cited - headings) == [], "a cited proposal has no `## EP-....` heading in docs/design.md"


def test_doc_files_cited_in_the_code_exist():
    cited = {
        (path.relative_to(ROOT), doc)
        for directory in ("gitmem", "tui")
        for path in (ROOT / directory).rglob("*.py")
        for doc in re.findall(r"\b(?:docs/[\w./-]+\.md|[A-Z]+\.md)\b", path.read_text())
    }
    # README.md is cited by name; DESIGN.md is the design brief, summarised in docs/design.md;
    # the harnesses' instruction files are what `tur setup` writes in a user's repository;
    # CONSTITUTION.md is a file of a Tur store (what `tur import --from-tur` reads).
    not_ours = {"DESIGN.md", "AGENTS.md", "CLAUDE.md", "GEMINI.md", "CONSTITUTION.md"}
    missing = sorted((str(p), d) for p, d in cited if d not in not_ours and not (ROOT / d).is_file())
    assert missing == [], f"the code cites documents that do not exist: {missing}"


def test_docs_index_lists_every_page():
    index = (DOCS / "index.md").read_text()
    pages = [p.name for p in sorted(DOCS.glob("*.md")) if p.name != "index.md"]
    unlisted = [name for name in pages if f"]({name})" not in index]
    assert unlisted == [], f"pages not listed in docs/index.md: {unlisted}"
    assert "](docs/index.md)" in README


# --- links ---------------------------------------------------------------------------------

def _links(text: str) -> list[str]:
    prose = _without_code(text)
    prose = re.sub(r"``.+?``|`[^`\n]+`", "", prose)  # code spans are not links
    return re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", prose)


@pytest.mark.parametrize("page", MARKDOWN_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_to_existing_files_and_headings(page):
    broken = []
    for link in _links(page.read_text()):
        if re.match(r"[a-z]+:", link):  # https:, mailto:
            continue
        path, _, fragment = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{link} (no such file)")
        elif fragment and target.suffix == ".md" and fragment not in _anchors(target.read_text()):
            broken.append(f"{link} (no such heading)")
    assert broken == [], f"broken links in {page.relative_to(ROOT)}: {broken}"
