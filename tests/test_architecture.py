"""The layering rules, checked on the source: who may import pygit2, read os.environ, or load UI."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GITMEM = ROOT / "gitmem"

#: Only the store package talks to git through pygit2.
PYGIT2_ALLOWED = {"gitmem/store"}
#: Only configuration and the CLI read the environment (gitcli only passes it on to git,
#: with GIT_OBJECT_DIRECTORY or GIT_TERMINAL_PROMPT added).
ENVIRON_ALLOWED = {"gitmem/config/__init__.py", "gitmem/cli/__init__.py", "gitmem/store/gitcli.py"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_only_the_store_imports_pygit2():
    offenders = [
        _rel(p) for p in GITMEM.rglob("*.py")
        if "pygit2" in _imports(p) and not any(_rel(p).startswith(a) for a in PYGIT2_ALLOWED)
    ]
    assert offenders == [], f"pygit2 imported outside {sorted(PYGIT2_ALLOWED)}: {offenders}"


def _full_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_store_never_imports_the_cache():
    """The cache sits above the store: the store is handed its object memo (``store.memo``)."""
    offenders = [
        _rel(p) for p in (GITMEM / "store").rglob("*.py")
        if any(n == "gitmem.cache" or n.startswith("gitmem.cache.") for n in _full_imports(p))
        or "gitmem.cache" in p.read_text()
    ]
    assert offenders == [], f"gitmem/store imports gitmem.cache: {offenders}"


def test_only_config_and_cli_read_the_environment():
    offenders = []
    for p in GITMEM.rglob("*.py"):
        if _rel(p) in ENVIRON_ALLOWED:
            continue
        if "os.environ" in p.read_text() or "getenv(" in p.read_text():
            offenders.append(_rel(p))
    assert offenders == [], f"os.environ read outside {sorted(ENVIRON_ALLOWED)}: {offenders}"


#: tui/editor.py runs the user's $EDITOR (the `o` key), never git.
TUI_SUBPROCESS_ALLOWED = {"tui/editor.py"}


def test_the_tui_reaches_git_only_through_the_facade():
    offenders = [_rel(p) for p in (ROOT / "tui").rglob("*.py")
                 if "pygit2" in _imports(p)
                 or ("subprocess" in _imports(p) and _rel(p) not in TUI_SUBPROCESS_ALLOWED)]
    assert offenders == [], offenders


def test_the_core_never_imports_the_tui_or_textual():
    offenders = [
        _rel(p) for p in GITMEM.rglob("*.py")
        if {"textual", "tui", "rich"} & _imports(p) and _rel(p) != "gitmem/cli/tui_cmds.py"
        # Rich (which Textual brings) draws the CLI's progress bars, imported when one is drawn.
        and not (_rel(p) == "gitmem/cli/progress.py" and _imports(p) & {"textual", "tui"} == set())
    ]
    assert offenders == [], offenders


def _loaded_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys; print('\\n'.join(sys.modules))"],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )
    return set(out.stdout.split())


def test_import_gitmem_and_tur_help_load_no_heavy_modules():
    heavy = {"textual", "tiktoken", "watchfiles", "ruamel", "detect_secrets", "bm25s", "numpy", "mcp"}
    assert heavy & _loaded_after("import gitmem") == set()
    loaded = _loaded_after(
        "from gitmem.cli import main\n"
        "import contextlib, io\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--help'])"
    )
    assert heavy & loaded == set()
    assert "pygit2" not in loaded
    version = _loaded_after(
        "from gitmem.cli import main\n"
        "import contextlib, io\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--version'])"
    )
    assert heavy & version == set()


#: The surfaces over the library: each imports only the facade and the errors.
SURFACES = {"gitmem/cli": "gitmem.cli", "gitmem/watch/__init__.py": "gitmem.watch",
            "gitmem/mcp/server.py": "gitmem.mcp.server", "tui": "tui"}
#: What a surface may import of gitmem besides its own package: the facade, the errors, and the
#: leaf modules of plain names (enums and format names, defaults, the version, text escaping),
#: which the command line needs to build its parser without loading the facade.
SURFACE_ALLOWED = {"gitmem.api", "gitmem.errors", "gitmem.vocabulary", "gitmem.defaults",
                   "gitmem.version", "gitmem.text"}
#: The CLI also runs the watcher, the TUI and the MCP server.
SURFACE_EXTRA = {"gitmem.cli": {"gitmem.watch", "tui.make_app", "gitmem.mcp.server"}}


def _module_imports(path: Path) -> set[str]:
    """Full names of the modules ``path`` imports (``from gitmem import x`` gives ``gitmem.x``)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module in ("gitmem", "tui"):
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
            else:
                names.add(node.module)
    return names


def _surface_files():
    for rel, package in SURFACES.items():
        base = ROOT / rel
        for p in ([base] if base.is_file() else sorted(base.rglob("*.py"))):
            yield p, package


def test_surfaces_import_only_the_facade_and_the_errors():
    offenders = []
    for path, package in _surface_files():
        allowed = SURFACE_ALLOWED | SURFACE_EXTRA.get(package, set())
        for name in _module_imports(path):
            if name.split(".")[0] not in ("gitmem", "tui") or name == "gitmem.__version__":
                continue
            if name in allowed or name == package or name.startswith(package + "."):
                continue
            offenders.append(f"{_rel(path)}: {name}")
    assert offenders == [], offenders


def test_surfaces_never_reach_past_the_facade_into_the_store():
    offenders = [_rel(p) for p, _ in _surface_files() if ".store." in p.read_text()
                 or "RecordCache" in p.read_text()]
    assert offenders == [], offenders


def test_the_facade_is_composed_not_mixed_in():
    from gitmem.api import Gitmem

    assert Gitmem.__bases__ == (object,)
    assert not list(GITMEM.glob("facade_*.py"))
