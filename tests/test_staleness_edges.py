"""The last staleness edges, on real histories: deleted whole files whose content lives on,
blocks now in several identical copies, and blocks re-indented by the commit that moved
their file (docs/staleness.md, "Copies, splits and renames with a reformat").

Each test commits real code (Python, Go, JavaScript) in a temporary repository and judges
one memory with :func:`gitmem.staleness.verdicts.check`.
"""

from __future__ import annotations

from pathlib import Path

from gitmem.record.models import Status
from tests.conftest import commit_file, git
from tests.test_staleness import head, history, learn, verdict


def _indent(text: str, prefix: str = "    ") -> str:
    return "".join(prefix + line if line.strip() else line for line in text.splitlines(True))


def _rename_target(repo: Path, path: str) -> str | None:
    """Where the rename detection verify uses takes ``path`` from HEAD~1 to HEAD."""
    return history(repo).renamed_path(git(repo, "rev-parse", "HEAD~1").strip(), head(repo), path)


def _commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return head(repo)[:7]


GO_UTIL = """package util

func Double(v int) int {
\treturn v * 2
}

func Triple(v int) int {
\treturn v * 3
}
"""

PY_UTILS = '''import re
import datetime


def slugify(text):
    """Lower-case ASCII words joined by dashes."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return "-".join(words)


def parse_date(value):
    """The date of an ISO datetime."""
    dt = datetime.datetime.fromisoformat(value)
    return dt.date()
'''

PY_TEXT = '''import re


def slugify(text):
    """Lower-case ASCII words joined by dashes."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return "-".join(words)
'''

PY_DATES = '''import datetime


def parse_date(value):
    """The date of an ISO datetime."""
    dt = datetime.datetime.fromisoformat(value)
    return dt.date()
'''

JS_TOTAL = """export function total(prices, taxRate) {
  const sum = prices.reduce((a, b) => a + b, 0);
  return sum * (1 + taxRate);
}
"""


# -- 1. a deleted whole file whose content lives on -----------------------------------------


def test_a_whole_file_copied_before_its_deletion_follows_the_copy_as_a_whole_file(empty_repo):
    repo = empty_repo
    commit_file(repo, "util.go", GO_UTIL, "util")
    commit_file(repo, "legacy/util.go", GO_UTIL, "vendored copy")
    memory = learn(repo, "util.go")
    git(repo, "rm", "-q", "util.go")
    deleter = _commit_all(repo, "drop the original")
    v = verdict(repo, memory)
    assert (v.status, v.reason) == (Status.FRESH, f"moved to legacy/util.go in {deleter}")
    assert v.new_context_ref == "legacy/util.go"  # a whole-file anchor stays one


def test_a_whole_file_moved_over_an_existing_file_follows_it(empty_repo):
    # git pairs renames only with added files: a file written over another is a modification
    repo = empty_repo
    commit_file(repo, "src/total.js", JS_TOTAL, "total")
    commit_file(repo, "src/index.js", "export * from './total.js';\n", "index")
    memory = learn(repo, "src/total.js")
    git(repo, "rm", "-q", "src/total.js")
    (repo / "src/index.js").write_text(JS_TOTAL)
    sha = _commit_all(repo, "inline total into index")
    v = verdict(repo, memory)
    assert (v.status, v.reason, v.new_context_ref) == (
        Status.FRESH, f"moved to src/index.js in {sha}", "src/index.js")


def test_a_whole_file_in_two_whole_copies_follows_the_first_by_path(empty_repo):
    repo = empty_repo
    commit_file(repo, "util.go", GO_UTIL, "util")
    commit_file(repo, "b/util.go", GO_UTIL, "copy b")
    commit_file(repo, "a/util.go", GO_UTIL, "copy a")
    memory = learn(repo, "util.go")
    git(repo, "rm", "-q", "util.go")
    sha = _commit_all(repo, "drop the original")
    v = verdict(repo, memory)
    assert v.status is Status.FRESH and v.new_context_ref == "a/util.go"
    assert v.reason == f"moved to a/util.go in {sha} (nearest of 2 copies, also at b/util.go)"


def test_a_whole_file_inside_a_bigger_file_follows_it_as_a_range(empty_repo):
    repo = empty_repo
    commit_file(repo, "util.go", GO_UTIL, "util")
    memory = learn(repo, "util.go")
    git(repo, "rm", "-q", "util.go")
    more = "".join(f"\nfunc F{i}() int {{ return {i} }}\n" for i in range(30))
    commit_file(repo, "all.go", GO_UTIL + more, "merge util into all.go")
    v = verdict(repo, memory)
    assert v.status is Status.FRESH and v.new_context_ref == "all.go#L1-L9"


def test_a_python_file_split_in_two_follows_the_part_that_holds_most_of_it(empty_repo):
    repo = empty_repo
    commit_file(repo, "app/utils.py", PY_UTILS, "utils")
    memory = learn(repo, "app/utils.py")
    git(repo, "rm", "-q", "app/utils.py")
    (repo / "app/utils").mkdir(parents=True)
    (repo / "app/utils/text.py").write_text(PY_TEXT)
    (repo / "app/utils/dates.py").write_text(PY_DATES)
    sha = _commit_all(repo, "split utils")
    v = verdict(repo, memory)
    assert v.status is Status.FRESH
    # 5 of the 10 non-blank lines each: the tie goes to the file the rename detection paired
    # utils.py with (libgit2 pairs dates.py; git's own -M, text.py)
    assert _rename_target(repo, "app/utils.py") == "app/utils/dates.py"
    assert v.reason == f"moved to app/utils/dates.py in {sha} (split, also in app/utils/text.py)"
    assert v.new_context_ref == "app/utils/dates.py"


def test_a_go_file_split_that_git_calls_a_rename_follows_the_rename_target_on_a_tie(empty_repo):
    repo = empty_repo
    commit_file(repo, "util.go", GO_UTIL, "util")
    memory = learn(repo, "util.go")
    git(repo, "rm", "-q", "util.go")
    (repo / "triple.go").write_text("package util\n\nfunc Triple(v int) int {\n\treturn v * 3\n}\n")
    (repo / "double.go").write_text("package util\n\nfunc Double(v int) int {\n\treturn v * 2\n}\n")
    sha = _commit_all(repo, "one file per function")
    target = _rename_target(repo, "util.go")  # git pairs util.go with one of the parts
    assert target in {"double.go", "triple.go"}
    v = verdict(repo, memory)
    other = ({"double.go", "triple.go"} - {target}).pop()
    assert (v.status, v.new_context_ref) == (Status.FRESH, target)
    assert v.reason == f"moved to {target} in {sha} (split, also in {other})"


def test_a_split_with_an_edited_part_stays_stale_as_deleted(empty_repo):
    repo = empty_repo
    commit_file(repo, "app/utils.py", PY_UTILS, "utils")
    memory = learn(repo, "app/utils.py")
    git(repo, "rm", "-q", "app/utils.py")
    (repo / "app/utils").mkdir(parents=True)
    (repo / "app/utils/text.py").write_text(PY_TEXT)
    (repo / "app/utils/dates.py").write_text(PY_DATES.replace("return dt.date()", "return dt"))
    sha = _commit_all(repo, "split utils and change parse_date")
    v = verdict(repo, memory)
    assert v.status is Status.STALE and v.new_context_ref is None
    # git pairs utils.py with a part, so the reason is that of a renamed file that changed
    assert "R051\tapp/utils.py\tapp/utils/text.py" in git(repo, "diff", "-M", "--name-status",
                                                          "HEAD~1", "HEAD")
    assert v.reason == f"changed in {sha}"


def test_a_deleted_whole_file_found_nowhere_stays_stale_naming_the_deleting_commit(empty_repo):
    repo = empty_repo
    commit_file(repo, "util.go", GO_UTIL, "util")
    commit_file(repo, "half.go", "package util\n\nfunc Double(v int) int {\n\treturn v * 2\n}\n")
    memory = learn(repo, "util.go")  # half of it is in half.go too, and stays there
    git(repo, "rm", "-q", "util.go")
    sha = _commit_all(repo, "drop util.go")
    v = verdict(repo, memory)
    assert (v.status, v.reason) == (Status.STALE, f"deleted in {sha}")


def test_a_renamed_whole_file_with_code_added_is_stale_not_a_split(empty_repo):
    repo = empty_repo
    commit_file(repo, "util.go", GO_UTIL, "util")
    memory = learn(repo, "util.go")
    git(repo, "mv", "util.go", "math.go")
    (repo / "math.go").write_text(GO_UTIL + "\nfunc Half(v int) int {\n\treturn v / 2\n}\n")
    sha = _commit_all(repo, "rename and add Half")
    v = verdict(repo, memory)
    assert (v.status, v.reason) == (Status.STALE, f"changed in {sha}")


# -- 2. a block now in several identical copies ------------------------------------------------

BLOCK = "def shared_helper(value):\n    return value * 2\n"


def test_two_copies_in_the_same_file_re_anchor_to_the_one_nearest_the_predicted_line(empty_repo):
    repo = empty_repo
    commit_file(repo, "s.py", "x = 1\n" + BLOCK + "y = 2\nz = 3\n", "one")
    memory = learn(repo, "s.py#L2-L3")
    # the block leaves lines 2-3 (the diff puts them at line 2); copies at 5-6 and 8-9
    commit_file(repo, "s.py", "x = 1\nq = 0\ny = 2\nz = 3\n" + BLOCK + "w = 1\n" + BLOCK, "two")
    v = verdict(repo, memory)
    assert (v.status, v.new_context_ref) == (Status.FRESH, "s.py#L5-L6")
    assert v.reason == "nearest of 2 copies, also at s.py#L8-L9"


def test_three_copies_in_the_same_file_re_anchor_to_the_middle_one_when_it_is_nearest(empty_repo):
    repo = empty_repo
    top = [f"a{i} = {i}\n" for i in range(10)]
    tail = "".join(f"t{i} = {i}\n" for i in range(10))
    commit_file(repo, "s.py", "".join(top) + BLOCK + tail, "one")
    memory = learn(repo, "s.py#L11-L12")
    # the block's place (lines 11-12) now holds `q = 0`, at line 15; copies at 1, 9 and 26
    new = BLOCK + "".join(top[:6]) + BLOCK + "".join(top[6:]) + "q = 0\n" + tail + BLOCK
    commit_file(repo, "s.py", new, "three")
    starts = [i + 1 for i, line in enumerate(new.splitlines()) if line.startswith("def shared")]
    assert starts == [1, 9, 26]
    v = verdict(repo, memory)
    assert (v.status, v.new_context_ref) == (Status.FRESH, "s.py#L9-L10")
    assert v.reason == "nearest of 3 copies, also at s.py#L1-L2, s.py#L26-L27"
    assert verdict(repo, memory) == v  # the same answer every time


def test_a_copy_in_the_successor_file_wins_over_a_nearer_one_elsewhere(empty_repo):
    repo = empty_repo
    commit_file(repo, "pkg/a.py", "x = 1\n" + BLOCK + "".join(f"c{i} = {i}\n" for i in range(30)))
    memory = learn(repo, "pkg/a.py#L2-L3")
    git(repo, "mv", "pkg/a.py", "pkg/b.py")
    body = "x = 1\n" + "".join(f"c{i} = {i}\n" for i in range(30)) + BLOCK
    (repo / "pkg/b.py").write_text(body)
    (repo / "pkg/other.py").write_text("y = 1\n" + BLOCK)
    sha = _commit_all(repo, "rename; the helper goes to the end, and into other.py")
    v = verdict(repo, memory)
    assert v.status is Status.FRESH
    assert v.new_context_ref == "pkg/b.py#L32-L33"  # not other.py#L2-L3, nearer by line
    assert v.reason == f"renamed from pkg/a.py in {sha}"


GO_BLOCK = "func retry(n int) int {\n\tfor i := 0; i < n; i++ {\n\t\twait(i)\n\t}\n\treturn n\n}\n"


def test_two_copies_in_other_go_files_re_anchor_to_the_nearest_then_by_path(empty_repo):
    repo = empty_repo
    commit_file(repo, "helpers.go", "package app\n\n" + GO_BLOCK, "helpers")
    memory = learn(repo, "helpers.go#L3-L8")
    (repo / "helpers.go").write_text("package app\n")
    (repo / "tasks.go").write_text("package app\n\n" + GO_BLOCK)
    (repo / "jobs.go").write_text("package app\n\n" + GO_BLOCK)
    sha = _commit_all(repo, "jobs and tasks get their own copy")
    v = verdict(repo, memory)
    # both copies start at line 3, where the diff puts the block: path order decides
    assert (v.status, v.new_context_ref) == (Status.FRESH, "jobs.go#L3-L8")
    assert v.reason == f"moved to jobs.go#L3-L8 in {sha} (nearest of 2 copies, also at tasks.go#L3-L8)"


def test_three_copies_in_other_javascript_files_re_anchor_to_the_nearest_line(empty_repo):
    repo = empty_repo
    commit_file(repo, "src/cart.js", "import x from 'x';\n\n\n" + JS_TOTAL, "cart")
    memory = learn(repo, "src/cart.js#L4-L7")
    commit_file(repo, "src/cart.js", "import x from 'x';\n")
    # the diff puts the deleted lines after line 1, at line 2
    (repo / "src/a.js").write_text(JS_TOTAL)  # line 1: one away
    (repo / "src/b.js").write_text("// b\n\n\n\n\n\n\n\n" + JS_TOTAL)  # line 9
    (repo / "src/c.js").write_text("// c\n" + JS_TOTAL)  # line 2: the nearest
    _commit_all(repo, "three copies")
    v = verdict(repo, memory)
    assert v.status is Status.FRESH and v.new_context_ref == "src/c.js#L2-L5"
    assert "nearest of 3 copies, also at src/a.js#L1-L4, src/b.js#L9-L12" in v.reason


def test_an_exact_copy_wins_over_a_nearer_reformatted_one(empty_repo):
    repo = empty_repo
    commit_file(repo, "src/cart.js", "import x from 'x';\n" + JS_TOTAL, "cart")
    memory = learn(repo, "src/cart.js#L2-L5")
    (repo / "src/cart.js").write_text("import x from 'x';\n")
    (repo / "src/near.js").write_text("// near\n" + JS_TOTAL.replace("  ", "    "))  # line 2
    (repo / "src/far.js").write_text("// far\n" * 20 + JS_TOTAL)  # line 21
    sha = _commit_all(repo, "two copies, one re-indented")
    v = verdict(repo, memory)
    assert (v.status, v.new_context_ref) == (Status.FRESH, "src/far.js#L21-L24")
    assert v.reason == (f"moved to src/far.js#L21-L24 in {sha} "
                        "(nearest of 2 copies, also at src/near.js#L2-L5)")


def test_an_edit_in_place_is_stale_though_copies_of_the_old_block_were_already_there(empty_repo):
    repo = empty_repo
    commit_file(repo, "s.py", BLOCK + "a = 1\n" + BLOCK + "b = 2\n" + BLOCK, "three copies")
    memory = learn(repo, "s.py#L4-L5")
    sha = commit_file(repo, "s.py", BLOCK + "a = 1\n" + BLOCK.replace("* 2", "* 3") + "b = 2\n"
                      + BLOCK, "edit the middle one")[:7]
    v = verdict(repo, memory)
    assert (v.status, v.reason) == (Status.STALE, f"line 5 changed in {sha}")


def test_an_edit_in_place_is_stale_though_one_sibling_copy_was_already_there(empty_repo):
    repo = empty_repo
    commit_file(repo, "s.go", "package s\n\n" + GO_BLOCK + "\n" + GO_BLOCK, "two copies")
    memory = learn(repo, "s.go#L3-L8")
    sha = commit_file(repo, "s.go", "package s\n\n" + GO_BLOCK.replace("wait(i)", "sleep(i)")
                      + "\n" + GO_BLOCK, "edit the first")[:7]
    v = verdict(repo, memory)
    assert (v.status, v.reason) == (Status.STALE, f"line 5 changed in {sha}")


# -- 3. re-indented in the commit that moved its file ---------------------------------------------

REST_PY = "".join(f"SETTING_{i} = {i}\n" for i in range(30))
PY_FUNCS = "def double(value):\n    return value * 2\n\n\ndef triple(value):\n    return value * 3\n"


def test_a_python_block_re_indented_by_the_rename_is_followed_as_a_reformat(empty_repo):
    repo = empty_repo
    commit_file(repo, "a.py", REST_PY + PY_FUNCS, "a")
    memory = learn(repo, "a.py#L31-L32")
    git(repo, "rm", "-q", "a.py")
    (repo / "lib").mkdir()
    (repo / "lib/b.py").write_text(REST_PY + "class Helpers:\n" + _indent(PY_FUNCS))
    sha = _commit_all(repo, "move to lib/b.py, into a class")
    v = verdict(repo, memory)
    assert (v.status, v.new_context_ref) == (Status.FRESH, "lib/b.py#L32-L33")
    assert v.reason == f"renamed from a.py in {sha}; reformatted in {sha}"


def test_a_python_block_re_indented_and_moved_down_by_the_rename_is_followed(empty_repo):
    repo = empty_repo
    commit_file(repo, "a.py", PY_FUNCS + REST_PY, "a")
    memory = learn(repo, "a.py#L1-L2")
    git(repo, "rm", "-q", "a.py")
    (repo / "b.py").write_text(REST_PY + "class Helpers:\n" + _indent(PY_FUNCS))
    sha = _commit_all(repo, "move to b.py; the helpers go into a class at the end")
    v = verdict(repo, memory)
    assert (v.status, v.new_context_ref) == (Status.FRESH, "b.py#L32-L33")
    assert v.reason == f"renamed from a.py in {sha}; reformatted in {sha}"


def test_a_go_block_re_indented_by_the_rename_is_followed_as_a_reformat(empty_repo):
    repo = empty_repo
    rest = "".join(f"var C{i} = {i}\n" for i in range(30))
    commit_file(repo, "util.go", GO_UTIL + rest, "util")
    memory = learn(repo, "util.go#L3-L5")
    (repo / "mathx").mkdir()
    git(repo, "mv", "util.go", "mathx/util.go")
    (repo / "mathx/util.go").write_text(GO_UTIL.replace("\t", "    ") + rest)
    sha = _commit_all(repo, "move into mathx, indent with spaces")
    v = verdict(repo, memory)
    assert (v.status, v.new_context_ref) == (Status.FRESH, "mathx/util.go#L3-L5")
    assert v.reason == f"renamed from util.go in {sha}; reformatted in {sha}"


def test_a_javascript_block_re_indented_into_a_namespace_by_a_rename_to_typescript(empty_repo):
    repo = empty_repo
    rest = "".join(f"export const C{i} = {i};\n" for i in range(30))
    commit_file(repo, "src/total.js", JS_TOTAL + rest, "total")
    memory = learn(repo, "src/total.js#L1-L4")
    git(repo, "rm", "-q", "src/total.js")
    (repo / "src").mkdir()
    (repo / "src/total.ts").write_text(rest + "export namespace Cart {\n" + _indent(JS_TOTAL, "  ")
                                       + "}\n")
    sha = _commit_all(repo, "to TypeScript")
    v = verdict(repo, memory)
    assert (v.status, v.new_context_ref) == (Status.FRESH, "src/total.ts#L32-L35")
    assert v.reason == f"renamed from src/total.js in {sha}; reformatted in {sha}"


def test_a_go_block_changed_by_the_rename_is_stale(empty_repo):
    repo = empty_repo
    rest = "".join(f"var C{i} = {i}\n" for i in range(30))
    commit_file(repo, "util.go", GO_UTIL + rest, "util")
    memory = learn(repo, "util.go#L3-L5")
    git(repo, "mv", "util.go", "math.go")
    (repo / "math.go").write_text(GO_UTIL.replace("\t", "    ").replace("v * 2", "v << 1") + rest)
    sha = _commit_all(repo, "rename, re-indent and change Double")
    v = verdict(repo, memory)
    assert (v.status, v.reason) == (Status.STALE, f"line 4 changed in {sha}")


def test_a_python_block_re_indented_with_a_line_moved_out_of_its_block_by_a_rename_is_stale(
    empty_repo,
):
    repo = empty_repo
    before = "def f(x):\n    if x:\n        log(x)\n        return 1\n    return 2\n"
    after = "def f(x):\n    if x:\n        log(x)\n    return 1\n    return 2\n"
    commit_file(repo, "a.py", before + REST_PY, "a")
    memory = learn(repo, "a.py#L1-L5")
    git(repo, "rm", "-q", "a.py")
    (repo / "b.py").write_text("class A:\n" + _indent(after) + REST_PY)
    _commit_all(repo, "rename, into a class, dedent return")
    v = verdict(repo, memory)
    assert v.status is Status.STALE and v.reason.startswith("lines 1-5 changed in ")
