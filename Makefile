# The template's own checks, and through them the library's. `make test` is what CI runs
# (through .ci/run): the template's lint, then tests/ (the library's suites in its own
# virtualenvs, every combination baked, two projects' full `make test`).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
LIBRARY := library

.DEFAULT_GOAL := help
.PHONY: help install lint library test demo demo-delta bake clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

install: $(VENV)/.installed ## create .venv with the template's pinned tooling and the library

$(VENV)/.installed: pyproject.toml $(LIBRARY)/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade 'pip>=25.1'
	$(BIN)/python -m pip install --quiet --group dev
	$(BIN)/python -m pip install --quiet -c $(LIBRARY)/constraints.txt -e '$(LIBRARY)[testing,postgres,plot,delta]'
	@touch $@

lint: install ## ruff and mypy over the hooks and the template's tests
	$(BIN)/ruff check hooks tests pyspark_kafka_upgrade_jinja.py
	$(BIN)/ruff format --check hooks tests pyspark_kafka_upgrade_jinja.py
	$(BIN)/mypy

library: ## the library's own lint, unit and integration suites (library/.venv, real Kafka)
	$(MAKE) -C $(LIBRARY) test

# Two workers: the library's own suite in one, the other suites in the other (their
# xdist_group marks); the short tests go to whichever is free.
PYTEST_WORKERS ?= 2

test: lint ## the library at both ends of the Spark range, then every combination baked and checked
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup

demo: ## an upgrade on a local Kafka with the library's reference pipeline (the default project), checked event by event
	$(MAKE) -C $(LIBRARY) demo

demo-delta: ## the same upgrade into one Delta table (sink_format = "delta"), and the table's history
	$(MAKE) -C $(LIBRARY) demo DEMO_ARGS="--sink delta $(DEMO_ARGS)"

bake: install ## bake the default project into build/ to look at it
	rm -rf build && $(BIN)/cookiecutter . --no-input -o build
	@echo "baked into build/$$(ls build)"

clean: ## remove the virtualenvs and baked projects
	rm -rf $(VENV) build
	$(MAKE) -C $(LIBRARY) clean
