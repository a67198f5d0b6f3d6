"""The layering rules, checked on the source: who may import pygit2, read os.environ, load UI, or
change the interpreter (``sys.modules``, a module's class, the garbage collector)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GITMEM = ROOT / "gitmem"

#: Only the store package talks to git through pygit2.
PYGIT2_ALLOWED = {"gitmem/store"}
#: Only configuration and the CLI read the environment (gitcli only passes it on to git,
#: with GIT_OBJECT_DIRECTORY or GIT_TERMINAL_PROMPT added).
ENVIRON_ALLOWED = {"gitmem/config/__init__.py", "gitmem/config/personal.py", "gitmem/cli/__init__.py",
                   "gitmem/cli/process.py", "gitmem/store/gitcli.py"}


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


#: The one place that sets the garbage collector: the entry point, which owns the process
#: (``tur`` at exit, ``tur mcp`` once per tip).
GC_ALLOWED = {"gitmem/cli/process.py"}


def _interpreter_edits(path: Path) -> list[str]:
    """What ``path`` does to the interpreter that is not a library's to do, as ``"line: what"``.

    ``sys.modules[...] = ...`` (a stand-in for another package), ``x.__class__ = ...`` (a
    module or object turned into something else) and any use of the ``gc`` module.
    """
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Subscript) and ast.unparse(target.value) == "sys.modules":
                    found.append(f"{node.lineno}: sys.modules[...] assigned")
                elif isinstance(target, ast.Attribute) and target.attr == "__class__":
                    found.append(f"{node.lineno}: __class__ assigned")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if "gc" in names:
                found.append(f"{node.lineno}: imports gc")
    return found


def test_no_module_stands_in_for_another_and_no_class_is_swapped():
    offenders = {_rel(p): edits for p in [*GITMEM.rglob("*.py"), *(ROOT / "tui").rglob("*.py")]
                 if (edits := [e for e in _interpreter_edits(p) if "gc" not in e])}
    assert offenders == {}, offenders


def test_only_the_entry_point_touches_the_garbage_collector():
    users = {_rel(p) for p in [*GITMEM.rglob("*.py"), *(ROOT / "tui").rglob("*.py")]
             if any("imports gc" in e for e in _interpreter_edits(p))}
    assert users <= GC_ALLOWED, f"gc used outside {sorted(GC_ALLOWED)}: {sorted(users - GC_ALLOWED)}"


def test_the_interpreter_scan_sees_what_it_looks_for(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import gc, sys\nsys.modules['x'] = sys\nsys.__class__ = type(sys)\n")
    assert _interpreter_edits(probe) == ["1: imports gc", "2: sys.modules[...] assigned",
                                         "3: __class__ assigned"]


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
            "gitmem/mcp": "gitmem.mcp", "tui": "tui"}
#: What a surface may import of gitmem besides its own package: the facade, the errors, and the
#: leaf modules of plain names (enums and format names, defaults, the version, text escaping),
#: which the command line needs to build its parser without loading the facade.
SURFACE_ALLOWED = {"gitmem.api", "gitmem.errors", "gitmem.vocabulary", "gitmem.defaults",
                   "gitmem.version", "gitmem.text"}
#: The CLI also runs the watcher, the TUI, the MCP server and its HTTP server (tur serve).
SURFACE_EXTRA = {"gitmem.cli": {"gitmem.watch", "tui.make_app", "gitmem.mcp.server", "gitmem.mcp.http"}}


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


# -- the layers, checked on the import graph ------------------------------------------------

#: What may sit directly in gitmem/: the leaf names every layer may import, the package's own
#: entry points (``__init__`` re-exports the facade lazily, ``__main__`` runs the CLI), and packages.
TOP_LEVEL_MODULES = {"__init__.py", "__main__.py", "errors.py", "version.py", "vocabulary.py",
                     "defaults.py", "text.py"}

#: Each package's layer, bottom (0) to top: a package imports only packages of its own layer or
#: below. Read off the real import graph (tests/test_import_cycles.import_graph, which counts
#: lazy and type-checking imports too); docs/architecture.md draws the same table.
LAYERS: dict[str, int] = {
    # 0: leaf names
    "gitmem.errors": 0, "gitmem.version": 0, "gitmem.vocabulary": 0, "gitmem.defaults": 0,
    "gitmem.text": 0,
    "gitmem.record": 1,  # the record and its pure rules: no I/O, no YAML
    "gitmem.codec": 2,  # YAML <-> record
    "gitmem.config": 3,  # .tur/config.yaml and the plain settings
    "gitmem.store": 4,  # the only code that touches git
    # 5: the algorithms, none of which imports another
    "gitmem.staleness": 5, "gitmem.context": 5, "gitmem.sharing": 5, "gitmem.importers": 5,
    "gitmem.harness": 5,
    "gitmem.cache": 6,  # above the algorithms: it stores their payloads (recall index, tokens)
    "gitmem.api": 7, "gitmem": 7,  # the facade; `gitmem/__init__.py` re-exports it
    # 8: the surfaces
    "gitmem.cli": 8, "gitmem.mcp": 8, "gitmem.watch": 8, "tui": 8, "gitmem.__main__": 8,
}

def _package_of(module: str) -> str:
    """``gitmem.store.refs`` -> ``gitmem.store``; a top-level module or ``tui.*`` is its own entry."""
    parts = module.split(".")
    if parts[0] == "tui":
        return "tui"
    return ".".join(parts[:2])


def _package_edges() -> dict[tuple[str, str], list[str]]:
    from tests.test_import_cycles import import_graph

    _, edges = import_graph()
    found: dict[tuple[str, str], list[str]] = {}
    for source, target, where in edges:
        pair = (_package_of(source), _package_of(target))
        if pair[0] != pair[1]:
            found.setdefault(pair, []).append(where)
    return found


def test_the_top_of_gitmem_holds_only_the_leaf_names_and_packages():
    stray = sorted(p.name for p in GITMEM.glob("*.py") if p.name not in TOP_LEVEL_MODULES)
    assert stray == [], f"modules directly in gitmem/ (put each in the package of its layer): {stray}"
    packages = {f"gitmem.{p.name}" for p in GITMEM.iterdir() if (p / "__init__.py").is_file()}
    unplaced = sorted(packages - set(LAYERS))
    assert unplaced == [], f"packages with no layer in LAYERS (and docs/architecture.md): {unplaced}"


def test_each_package_imports_only_its_own_layer_or_below():
    upward = sorted(
        f"{source} ({LAYERS[source]}) -> {target} ({LAYERS[target]}): {', '.join(sorted(where)[:3])}"
        for (source, target), where in _package_edges().items()
        if LAYERS[target] > LAYERS[source]
    )
    assert upward == [], "imports from a lower layer to a higher one:\n" + "\n".join(upward)


#: No module is longer than this many lines: past it, a module holds more than one job.
MAX_MODULE_LINES = 900


def _long_modules() -> set[str]:
    return {_rel(p) for base in (GITMEM, ROOT / "tui") for p in base.rglob("*.py")
            if len(p.read_text().splitlines()) > MAX_MODULE_LINES}


def test_no_module_is_over_900_lines():
    too_long = sorted(_long_modules())
    assert too_long == [], f"modules over {MAX_MODULE_LINES} lines (split them along their jobs): {too_long}"


#: Modules that serve names through a PEP 562 ``__getattr__`` table, and the table's name.
#: (``gitmem/cache/__init__.py`` has one too; the cache rewrite owns it.)
#: Each serving module maps to (the module holding its table, the table's name).
LAZY_TABLES = {"gitmem/api/__init__.py": ("gitmem/api/names.py", "LAZY"),
               "gitmem/api/results.py": ("gitmem/api/results.py", "_ELSEWHERE")}


def _type_checking_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in ast.walk(node):
                if isinstance(stmt, ast.ImportFrom):
                    names.update(a.asname or a.name for a in stmt.names)
    return names


@pytest.mark.parametrize(("module", "table"), sorted(LAZY_TABLES.items()))
def test_every_lazily_served_name_is_imported_for_the_type_checker(module, table):
    table_module, table_name = table
    tree = ast.parse((ROOT / module).read_text())
    holder = ast.parse((ROOT / table_module).read_text())
    served = next(_table_keys(n.value) for n in holder.body if isinstance(n, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == table_name for t in n.targets))
    missing = served - _type_checking_names(tree)
    assert not missing, f"{module}: lazy names mypy would see as Any: {sorted(missing)}"


def test_the_package_serves_its_names_typed_too():
    tree = ast.parse((GITMEM / "__init__.py").read_text())
    exported = set(ast.literal_eval(next(n.value for n in tree.body if isinstance(n, ast.Assign)
                                         and ast.unparse(n.targets[0]) == "__all__")))
    assert exported - {"__version__"} <= _type_checking_names(tree)


def _table_keys(node: ast.expr) -> set[str]:
    """The string keys of a dict display, ``**{name: ... for name in (...)}`` parts included."""
    keys: set[str] = set()
    assert isinstance(node, ast.Dict)
    for key, value in zip(node.keys, node.values, strict=True):
        if key is not None:
            keys.add(ast.literal_eval(key))
        elif isinstance(value, ast.DictComp):
            keys.update(ast.literal_eval(value.generators[0].iter))
    return keys
