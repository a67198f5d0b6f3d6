"""``tur import --from-tur``: a store written by the real Tur package, imported in one commit.

The store is built once per module by the package itself (see tests/tur_package.py) in a
temporary HOME, then copied for each test, so every test reads the format as Tur writes it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gitmem.api import Gitmem
from tests.test_cli import assert_one_line_error, memory_ref, tur
from tests.tur_package import TUR_VERSION, RealTur, git_env, hash_of

AUTH_V1 = "".join(f"auth line {i}\n" for i in range(1, 11))
AUTH_V2 = AUTH_V1.replace("auth line 3\n", "auth line 3, rewritten\n")


def _git(cwd: Path, env: dict[str, str], *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict:
    """A project and a HOME with a Tur store holding every kind of memory the package makes.

    After Tur learned them, ``src/auth.py`` line 3 changed in a new commit, so the anchored
    memory is stale for gitmem's verify.
    """
    root = tmp_path_factory.mktemp("tur-world")
    project, home, other = root / "project", root / "home", root / "other"
    for d in (project, home, other):
        d.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Test User\n\temail = test@example.com\n")
    env = git_env(home)
    for repo in (project, other):
        _git(repo, env, "init", "-q", "-b", "main")
    (project / "src").mkdir()
    (project / "src" / "auth.py").write_text(AUTH_V1)
    _git(project, env, "add", ".")
    _git(project, env, "commit", "-q", "-m", "auth")
    (other / "x.txt").write_text("x\n")
    _git(other, env, "add", ".")
    _git(other, env, "commit", "-q", "-m", "elsewhere")

    real = RealTur(project, home)
    assert real.version() == TUR_VERSION
    persona = real.init_persona("Ariel", "To safeguard reality")
    batch = [
        {"type": "fact", "content": "Auth tokens are signed with RS256", "context_ref": "src/auth.py#L2-L4",
         "tags": ["auth"]},
        {"type": "fact", "content": "Tokens expire after 15 minutes"},
        {"type": "event", "content": "Moved the auth module to src/"},
        {"type": "preference", "scope": "user", "content": "The team prefers small pull requests"},
        {"type": "axiom", "scope": "universal", "content": "Never store plaintext passwords"},
        {"type": "insight", "content": "Retries hide flaky network calls", "confidence": 0.7},
        {"type": "fact", "content": "The cache lives in Redis"},
        {"type": "fact", "content": 'The staging db password = "hunter2hunter2" in settings'},
        {"type": "core", "scope": "persona", "content": "We value honest answers over fast ones"},
        {"type": "fact", "content": "The deploy key lives in the vault"},
    ]
    hashes = dict(zip(["anchored", "old", "event", "preference", "axiom", "subsumed", "archived",
                       "secret", "core", "redacted"], real.learn_many(batch), strict=True))
    hashes["new"] = real.learn("Tokens expire after 60 minutes", "--type", "fact",
                               "--supersedes", hashes["old"], "--allow-conflict")
    hashes["elsewhere"] = real.learn("Use ruff for linting", "--type", "insight", "--scope", "universal",
                                     cwd=other)
    real.archive(hashes["archived"])
    real.subsume(hashes["subsumed"])
    real.redact(hashes["redacted"], "leaked a path")
    real.run("wake")  # opens a session, which a note needs
    real.run("note", "write", "Stopped halfway through the token refactor")
    (project / "src" / "auth.py").write_text(AUTH_V2)
    _git(project, env, "commit", "-qam", "auth: rewrite line 3")
    return {"root": root, "hashes": hashes, "persona": persona, "files": len(real.memory_files())}


@pytest.fixture
def tur_world(world, tmp_path, isolated_env) -> dict:
    """A copy of the world for one test: ``project`` (the repository) and ``home`` (its HOME)."""
    copy = tmp_path / "world"
    shutil.copytree(world["root"], copy, symlinks=True)
    return {**world, "project": copy / "project", "home": copy / "home", "store": copy / "home" / ".tur"}


def _import(w: dict, *args: str):
    return tur(w["project"], "import", "--from-tur", "--home", str(w["store"]), *args)


def _record(repo: Path, token: str) -> dict:
    return yaml.safe_load(tur(repo, "show", token).out.split("\n# commits", 1)[0])


def test_the_installed_package_is_the_pinned_version(world):
    import importlib.metadata

    assert importlib.metadata.version("tur") == TUR_VERSION


def test_a_real_tur_store_imports_in_one_commit_with_a_report(tur_world):
    r = _import(tur_world)
    assert r.code == 0, r.err
    repo = tur_world["project"]
    assert subprocess.run(["git", "rev-list", "--count", "refs/tur/memories"], cwd=repo,
                          capture_output=True, text=True).stdout.strip() == "1"
    # The user-level memories (user, universal and persona scopes) and the persona went to the
    # personal store (docs/personal.md); the project's ref holds the rest.
    project_part, personal_part = r.out.split("\nproject:\n")[1], r.out.split("\nproject:\n")[0]
    assert f"read {tur_world['files'] - 4} memory files: 6 active, 1 archive, 1 subsumed" in project_part
    assert "read 4 memory files: 4 active" in personal_part
    assert "memories: 4 new, 0 merged into stored ones, 0 unchanged, 0 folded into a duplicate, " \
           "0 not imported" in personal_part
    assert "persona: imported" in personal_part and "persona: none in the Tur store" in project_part
    assert "1 event (as fact)" in r.out
    assert "  archive: 1 refuted" in r.out
    assert "  subsumed: 1 active" in r.out
    assert "  active: 3 active, 1 superseded, 1 refuted, 1 not imported" in r.out
    assert "memories: 7 new, 0 merged into stored ones, 0 unchanged, 0 folded into a duplicate, " \
           "1 not imported" in r.out
    assert "persona: imported" in r.out
    assert "continuity note (the latest Tur session note): imported" in r.out
    assert "sessions/ (1 files): session notes: the latest is imported" in r.out
    assert "committed " in r.out and " s\n" in r.out
    # The one memory not imported is named on stderr with the reason: a credential, as in learn.
    assert r.err.count("tur: not imported:") == 1
    assert hash_of_secret(tur_world) in r.err and "secret" in r.err


#: The memories of the world in Tur's user-level scopes: ``--home`` puts them in the personal store.
USER_LEVEL = ("preference", "axiom", "core", "elsewhere")


def hash_of_secret(w: dict) -> str:
    return w["hashes"]["secret"]


def test_every_field_and_state_maps_as_documented(tur_world):
    assert _import(tur_world).code == 0
    repo, h = tur_world["project"], tur_world["hashes"]
    event = _record(repo, h["event"])
    assert event["type"] == "fact" and event["tur"]["memory_type"] == "event"
    assert event["decay"]["half_life_days"] == 30.0
    assert event["legacy_id"] == h["event"]
    preference = _record(repo, h["preference"])
    assert preference["scope"] == "universal" and preference["tur"]["scope"] == "user"
    assert preference["decay"]["half_life_days"] == 180.0
    anchored = _record(repo, h["anchored"])
    assert anchored["scope"] == "incarnation" and anchored["tags"] == ["auth"]
    assert anchored["provenance"]["context_ref"] == "src/auth.py#L2-L4"
    assert len(anchored["provenance"]["git_sha"]) == 40  # Tur's 12-hex SHA, expanded
    assert anchored["provenance"]["fingerprint"].startswith("sha256:")
    insight = _record(repo, h["subsumed"])
    assert insight["confidence"] == 0.7 and insight["tur"]["state"] == "subsumed"
    assert insight["decay"]["staleness_status"] == "fresh"
    archived = _record(repo, h["archived"])
    assert archived["refutation"]["reason"] == "archived in Tur (forgotten)"
    assert archived["tur"]["state"] == "archive"
    new, old = _record(repo, h["new"]), _record(repo, h["old"])
    assert {"type": "supersedes", "target": old["id"]} in new["relations"]
    assert old["tur"]["status"] == "superseded"
    redacted = _record(repo, h["redacted"])
    assert redacted["refutation"]["reason"] == "redacted in Tur: leaked a path"
    assert redacted["content"].startswith("[TOMBSTONE: REDACTED") and redacted["tur"]["redacted_at"]
    core = _record(repo, h["core"])
    assert core["type"] == "core" and core["decay"].get("half_life_days") is None
    elsewhere = _record(repo, h["elsewhere"])
    assert elsewhere["decay"]["staleness_status"] == "unanchored"
    assert "not in this repository" in elsewhere["decay"]["reason"]
    assert tur(repo, "persona", "show").out == ""  # the persona is the person's: not on the project's ref
    persona = Gitmem.open(repo).personal.persona_text()
    assert "name: Ariel" in persona and "aleph: To safeguard reality" in persona
    assert "Symmetry — Guardian of Invariance" in persona


def test_every_tur_hash_and_unique_prefix_names_its_memory(tur_world):
    assert _import(tur_world).code == 0
    repo = tur_world["project"]
    project = Gitmem.open(repo)
    for name, memory_hash in tur_world["hashes"].items():
        if name == "secret":
            continue
        gm = project.personal if name in USER_LEVEL else project
        memory = gm.get(memory_hash)
        assert memory_hash in memory.legacy_ids
        assert gm.resolve(memory_hash[:10]) == memory.id
    h = tur_world["hashes"]["anchored"]
    r = tur(repo, "refute", h[:12], "--reason", "RS512 now")
    assert r.code == 0 and r.out.startswith("refuted fact-")
    assert tur(repo, "confidence", h, "0.5").code == 0
    assert tur(repo, "link", tur_world["hashes"]["event"], h, "--type", "supports").code == 0
    assert tur(repo, "verify", h[:8]).code == 0


def test_a_second_run_changes_nothing_and_says_so(tur_world):
    assert _import(tur_world).code == 0
    before = memory_ref(tur_world["project"])
    r = _import(tur_world)
    assert r.code == 0
    assert memory_ref(tur_world["project"]) == before
    assert "0 new, 0 merged into stored ones, 7 unchanged" in r.out
    assert "0 new, 0 merged into stored ones, 4 unchanged" in r.out
    assert "persona: unchanged" in r.out
    assert "continuity note (the latest Tur session note): unchanged" in r.out
    assert "nothing to commit" in r.out


def test_dry_run_prints_the_report_and_writes_nothing(tur_world):
    r = _import(tur_world, "--dry-run")
    assert r.code == 0
    assert "memories: 7 new" in r.out and "memories: 4 new" in r.out
    assert "persona: would be imported" in r.out
    assert "dry run: nothing written" in r.out
    assert memory_ref(tur_world["project"]) == ""


def test_staleness_works_at_once_after_the_import(tur_world):
    assert _import(tur_world).code == 0
    repo, h = tur_world["project"], tur_world["hashes"]
    r = tur(repo, "verify")
    assert r.code == 0
    gm = Gitmem.open(repo)
    assert gm.get(h["anchored"]).status.value == "stale"
    assert "line" in (gm.get(h["anchored"]).decay.reason or "")
    assert gm.get(h["event"]).status.value == "fresh"
    assert gm.personal.get(h["elsewhere"]).status.value == "unanchored"


def test_wake_and_recall_see_imported_memories_and_not_archived_or_superseded_ones(tur_world):
    assert _import(tur_world).code == 0
    repo = tur_world["project"]
    wake = tur(repo, "wake", "--token-budget", "0").out
    assert "Ariel" in wake and "Never store plaintext passwords" in wake
    assert "## Continuity\nStopped halfway through the token refactor\n" in wake
    assert "Tokens expire after 60 minutes" in wake
    assert "Tokens expire after 15 minutes" not in wake
    assert "The cache lives in Redis" not in wake
    assert "Retries hide flaky network calls" in wake  # subsumed with no known superseder: kept


def test_a_memory_already_learned_keeps_its_record_and_gains_the_tur_hash(tur_world):
    repo, h = tur_world["project"], tur_world["hashes"]
    learned = tur(repo, "learn", "Moved the auth module to src/", "--agent", "me")
    assert learned.code == 0
    r = _import(tur_world)
    assert r.code == 0 and "6 new, 1 merged into stored ones" in r.out
    record = _record(repo, h["event"])
    assert record["id"] == learned.out.strip()
    assert record["provenance"]["source_agent"] == "me"
    assert record["legacy_id"] == h["event"]
    assert "tur" not in record


def test_credentials_are_imported_only_when_allowed(tur_world):
    r = _import(tur_world, "--allow-secret")
    assert r.code == 0 and "memories: 8 new" in r.out and r.err == ""


def test_a_file_tur_cannot_map_is_reported_and_the_rest_imported(tur_world):
    real = RealTur(tur_world["project"], tur_world["home"])
    broken = real.file_of(tur_world["hashes"]["event"])
    broken.chmod(0o644)
    broken.write_text(broken.read_text().replace("memory_type: EVENT", "memory_type: DREAM"))
    truncated = broken.with_name(broken.name.replace("event", "fact").replace(hash_of(broken), "ab" * 32))
    truncated.write_text("---\nhash: [unclosed\n---\n\nbody\n")
    r = _import(tur_world, "--allow-secret")
    assert r.code == 0
    failed = [line for line in r.err.splitlines() if line.startswith("tur: not imported:")]
    assert len(failed) == 2
    assert any(str(broken) in line and "unknown memory_type 'DREAM'" in line for line in failed)
    assert any(str(truncated) in line and "bad YAML" in line for line in failed)
    assert "memories: 7 new" in r.out and "2 not imported" in r.out


def test_without_home_only_the_project_store_is_read(tur_world):
    r = tur(tur_world["project"], "import", "--from-tur", "--allow-secret")
    assert r.code == 0, r.err
    assert "Tur store: " in r.out and str(tur_world["store"]) not in r.out
    assert "persona: none in the Tur store" in r.out
    gm = Gitmem.open(tur_world["project"])
    with pytest.raises(Exception, match="no memory"):
        gm.get(tur_world["hashes"]["preference"])  # lives in ~/.tur
    assert gm.get(tur_world["hashes"]["anchored"]).type.value == "fact"


def test_home_defaults_to_the_users_tur_directory(tur_world, isolated_env):
    shutil.copytree(tur_world["store"], isolated_env / ".tur", symlinks=True)
    r = tur(tur_world["project"], "import", "--from-tur", str(tur_world["project"]), "--home", "--dry-run")
    assert r.code == 0, r.err
    assert str(isolated_env / ".tur") in r.out and "persona Ariel" in r.out


def test_several_personas_need_the_active_one_or_a_choice(tur_world):
    real = RealTur(tur_world["project"], tur_world["home"])
    real.init_persona("Bob", "To build")
    real.api("from tur import persona; from tur.memory.storage import MemoryManager\n"
             "from tur.models import Memory, MemoryType\n"
             "p = persona.get_persona_path('Bob')\n"
             "MemoryManager(base_dir=p).save(Memory(type=MemoryType.FACT, content='Bob was here'))\n")
    r = _import(tur_world, "--dry-run")  # `tur wake` made Ariel the project's active persona
    assert r.code == 0 and "persona Ariel" in r.out
    (tur_world["project"] / ".tur" / "state.yaml").unlink()
    r = _import(tur_world)
    assert_one_line_error(r, "several personas", "Ariel", "Bob", "--persona")
    assert memory_ref(tur_world["project"]) == ""
    r = _import(tur_world, "--persona", "bob")
    assert r.code == 0 and "persona Bob" in r.out and "memories: 1 new" in r.out


@pytest.mark.parametrize(("args", "needle"), [
    (("--home",), "--home and --persona go with --from-tur"),
    (("--persona", "x"), "--home and --persona go with --from-tur"),
    ((), "nothing to import"),
    (("some.yaml", "--from-tur"), "not both"),
])
def test_bad_import_options_are_one_line(repo, args, needle):
    r = tur(repo, "import", *args)
    assert_one_line_error(r, needle)
    assert r.code == 2
    assert memory_ref(repo) == ""


def test_a_directory_without_a_tur_store_is_one_line(repo, tmp_path):
    r = tur(repo, "import", "--from-tur", str(tmp_path))
    assert_one_line_error(r, "no Tur store", str(tmp_path))
    assert memory_ref(repo) == ""


def test_memories_of_an_older_tur_stored_as_yaml_models_are_imported(tur_world):
    import tur.models

    legacy = tur.models.Memory(type=tur.models.MemoryType.INSIGHT, content="Old stores were YAML",
                               tags=["old"])
    folder = tur_world["project"] / ".tur" / "personas" / tur_world["persona"] / "memories"
    (folder / f"{legacy.id}.yaml").write_text(yaml.safe_dump(legacy.model_dump(mode="json")))
    r = _import(tur_world)
    assert r.code == 0 and "legacy: 1 active" in r.out
    record = _record(tur_world["project"], legacy.id[:10])
    assert record["type"] == "insight" and record["tags"] == ["old"] and record["legacy_id"] == legacy.id


def test_a_home_directory_that_does_not_exist_is_one_line(tur_world, tmp_path):
    r = tur(tur_world["project"], "import", "--from-tur", "--home", str(tmp_path / "nowhere"))
    assert_one_line_error(r, "no Tur home store", "nowhere")
    assert memory_ref(tur_world["project"]) == ""


def test_front_matter_is_read_as_tur_reads_it_yaml_1_1(tmp_path, monkeypatch):
    # A 12-hex SHA such as 1234567e8901 is a float to a YAML 1.2 reader, a string to Tur's.
    from tur.memory.storage import MemoryManager
    from tur.models import Memory as TurMemory
    from tur.models import MemoryDecay, MemoryProvenance, MemoryScope, MemoryType

    from gitmem.importers import tur_store

    monkeypatch.setenv("TUR_RUNTIME_DIR", str(tmp_path / "runtime"))  # Tur's lock files
    persona_dir = tmp_path / "proj" / ".tur" / "personas" / "p1"
    MemoryManager(base_dir=persona_dir, local_base_dir=persona_dir).save(TurMemory(
        type=MemoryType.FACT, scope=MemoryScope.INCARNATION, content="The SHA looks like a float",
        provenance=MemoryProvenance(git_sha="1234567e8901", context_ref="https://example.com/doc"),
        decay=MemoryDecay(half_life_days=14.0)))
    store = tur_store.find_store(tmp_path / "proj")
    assert "git_sha: 1234567e8901\n" in store.files[0].path.read_text()
    nowhere = tur_store.RepoView(None, "", lambda sha: None, lambda sha, path: None)
    converted = tur_store.convert(store.files[0], nowhere)
    assert converted.memory.provenance.git_sha == "1234567e8901"
    assert converted.memory.model_extra["tur"]["context_ref"] == "https://example.com/doc"
    assert converted.anchor == "commit not in this repository"
    assert converted.memory.status.value == "unanchored"


@pytest.mark.parametrize("field", ["tags", "source_agent", "context_ref"])
def test_a_credential_in_any_field_of_a_tur_memory_is_not_imported(tur_world, field):
    key = "AKIA" + "Z3MPLE7QW4RT2XYB"
    files = [p for root in (tur_world["project"] / ".tur", tur_world["store"])
             for p in root.glob("personas/*/memories/*/*.md")]
    target = next(p for p in files if "small pull requests" in p.read_text())
    _, front, body = target.read_text().split("---\n", 2)
    data = yaml.safe_load(front)
    if field == "tags":
        data["tags"] = ["aws", f"key {key}"]
    else:
        data.setdefault("provenance", {})[field] = f"ci-{key}"
    target.write_text("---\n" + yaml.safe_dump(data, sort_keys=False) + "---\n" + body)
    r = _import(tur_world)
    assert r.code == 0, r.err
    assert r.err.count("tur: not imported:") == 2  # the credential in content, and this one
    line = next(line for line in r.err.splitlines() if target.name in line)
    assert "AWS Access Key" in line and "looks like it contains a secret" in line and key not in line
    history = subprocess.run(["git", "log", "-p", "refs/tur/memories"], cwd=tur_world["project"],
                             capture_output=True, text=True, check=True).stdout
    assert key not in history and "small pull requests" not in history


def test_home_in_json_is_one_object_with_the_personal_and_the_project_parts(tur_world):
    import json

    r = _import(tur_world, "--format", "json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert set(out) == {"personal", "project"}
    assert len(out["personal"]["imported"]) == 4 and len(out["project"]["imported"]) == 7
