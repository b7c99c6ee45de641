# The template's own checks, and the library's. `make test` is what CI runs (through .ci/run).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
LIBRARY := library
# The proofs the library runs again on the oldest Spark it supports (README, "Versions"):
# the upgrade, its kill trials and negative controls, the plugin's proof, and the parser
# mirror's one-sided test against that Spark's own parser.
OLDEST_PROOFS := tests/integration/test_upgrade.py tests/integration/test_proof_kill_trials.py \
  tests/integration/test_proof_negative_controls.py tests/integration/test_proof_upgrade_kills.py \
  tests/integration/test_proof_harness.py tests/unit/test_event_parser.py

.DEFAULT_GOAL := help
.PHONY: help install lint library library-oldest template test demo bake clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

install: $(VENV)/.installed ## create .venv with the template's pinned tooling and the library

$(VENV)/.installed: pyproject.toml $(LIBRARY)/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade 'pip>=25.1'
	$(BIN)/python -m pip install --quiet --group dev
	$(BIN)/python -m pip install --quiet -c $(LIBRARY)/constraints.txt -e '$(LIBRARY)[testing,postgres]'
	@touch $@

lint: install ## ruff and mypy over the hooks and the template's tests
	$(BIN)/ruff check hooks tests pyspark_kafka_upgrade_jinja.py
	$(BIN)/ruff format --check hooks tests pyspark_kafka_upgrade_jinja.py
	$(BIN)/mypy

library: ## the library's lint, unit and integration suites (its own .venv, real Kafka)
	$(MAKE) -C $(LIBRARY) test

library-oldest: ## the library's proofs on the oldest supported Spark (.venv-oldest)
	$(MAKE) -C $(LIBRARY) install VENV=.venv-oldest CONSTRAINTS=constraints-oldest.txt
	cd $(LIBRARY) && .venv-oldest/bin/pytest $(OLDEST_PROOFS)

template: lint ## bake every combination and run each generated project's checks
	$(BIN)/pytest

test: library library-oldest template ## everything CI runs: the library, then the template

demo: ## play an upgrade on a local Kafka with the library's reference pipeline, checked event by event
	$(MAKE) -C $(LIBRARY) demo

bake: install ## bake the default project into build/ to look at it
	rm -rf build && $(BIN)/cookiecutter . --no-input -o build
	@echo "baked into build/$$(ls build)"

clean: ## remove the virtualenvs and baked projects
	rm -rf $(VENV) build
	$(MAKE) -C $(LIBRARY) clean
