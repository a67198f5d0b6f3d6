# Every target creates (or reuses) a local virtual environment in .venv and
# installs what it needs, so a fresh machine needs only python3 and git.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench bench-verify bench-recall bench-repositories bench-tur-import bench-history snapshots venv clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/python fixtures/demo.py

test: $(STAMP)
	$(BIN)/ruff check gitmem tui tests bench fixtures
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n 2

lint: $(STAMP)
	$(BIN)/ruff check gitmem tui tests bench fixtures

bench: $(STAMP)
	$(BIN)/python bench/bench_scale.py
	$(BIN)/python bench/bench_mcp.py
	$(BIN)/python bench/bench_tui.py

bench-verify: $(STAMP)
	$(BIN)/python bench/bench_verify.py

bench-recall: $(STAMP)
	$(BIN)/python bench/bench_recall.py

bench-repositories: $(STAMP)
	$(BIN)/python bench/bench_repositories.py

bench-tur-import: $(STAMP)
	$(BIN)/python bench/bench_tur_import.py

# BEFORE=DIR: also measure the code checked out in DIR (git worktree add --detach DIR REV).
bench-history: $(STAMP)
	$(BIN)/python bench/bench_history.py $(if $(BEFORE),--before $(BEFORE))

snapshots: $(STAMP)
	$(BIN)/python -m pytest -q tests/tui/test_snapshots.py --snapshot-update

clean:
	rm -rf $(VENV) build *.egg-info
