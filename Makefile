# The template's own checks. `make test` is what CI runs (through .ci/run).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.DEFAULT_GOAL := help
.PHONY: help install lint test demo bake clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

install: $(VENV)/.installed ## create .venv with the template's pinned tooling

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade 'pip>=25.1'
	$(BIN)/python -m pip install --quiet --group dev
	@touch $@

lint: install ## ruff and mypy over the hooks and the template's tests
	$(BIN)/ruff check hooks tests pyspark_kafka_upgrade_jinja.py
	$(BIN)/ruff format --check hooks tests pyspark_kafka_upgrade_jinja.py
	$(BIN)/mypy

test: lint ## bake every combination and run each generated project's checks
	$(BIN)/pytest

demo: bake ## bake the default project and run its guided upgrade demo on a local Kafka
	cd build/$$(ls build) && $(MAKE) demo

bake: install ## bake the default project into build/ to look at it
	rm -rf build && $(BIN)/cookiecutter . --no-input -o build
	@echo "baked into build/$$(ls build)"

clean: ## remove the virtualenv and baked projects
	rm -rf $(VENV) build
