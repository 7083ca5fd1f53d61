# Two commands do everything on a fresh machine: `make run` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
OPERATOR := $(BIN)/ansible-operator
PYTEST_ARGS ?=

.PHONY: run test lint unit e2e molecule venv cluster-up cluster-down cluster-status binaries clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

binaries: $(STAMP)  ## build (or find) the control-plane binaries
	$(OPERATOR) dev-cluster build

cluster-up: $(STAMP)
	$(OPERATOR) dev-cluster up

cluster-down: $(STAMP)
	$(OPERATOR) dev-cluster down

cluster-status: $(STAMP)
	$(OPERATOR) dev-cluster status

run: cluster-up  ## the local cluster, and the operator with the example CRs
	$(OPERATOR) dev-cluster status
	@echo "export KUBECONFIG=$$($(OPERATOR) dev-cluster kubeconfig)"

lint: $(STAMP)
	$(BIN)/ruff check operator tests collections
	$(BIN)/ruff format --check operator tests collections
	$(BIN)/mypy
	MYPYPATH=collections $(BIN)/mypy --explicit-package-bases --namespace-packages \
		-p ansible_collections.operator_sdk.util
	$(OPERATOR) generate crds --check  # the CRDs in config/crd/bases match the roles
	$(BIN)/pytest -q tests/unit/test_dockerfile.py  # no image builder here: the Dockerfile's essentials

unit: $(STAMP)
	$(BIN)/pytest tests/unit tests/runner $(PYTEST_ARGS)

# One molecule scenario per role (molecule/<role>/), each against a local cluster with the operator
# running: a private cluster for the whole target, started and stopped here, unless
# ANSIBLE_OPERATOR_TEST_KUBECONFIG names one that is already running.
SCENARIO ?= $(patsubst molecule/%/molecule.yml,%,$(wildcard molecule/*/molecule.yml))
molecule: $(STAMP)  ## molecule test of every role, or of one: make molecule SCENARIO=nginx
	@set -euo pipefail; \
	kubeconfig="$${ANSIBLE_OPERATOR_TEST_KUBECONFIG:-}"; \
	if [ -z "$$kubeconfig" ]; then \
	  state="$$(mktemp -d "$${TMPDIR:-/tmp}/molecule-cluster.XXXXXX")"; \
	  trap '$(OPERATOR) dev-cluster down --state-dir "'"$$state"'"; rm -rf "'"$$state"'"' EXIT; \
	  $(OPERATOR) dev-cluster up --state-dir "$$state"; \
	  kubeconfig="$$($(OPERATOR) dev-cluster kubeconfig --state-dir "$$state")"; \
	fi; \
	export K8S_AUTH_KUBECONFIG="$$kubeconfig" PATH="$(CURDIR)/$(BIN):$$PATH"; \
	failed=(); \
	for scenario in $(SCENARIO); do \
	  start=$$SECONDS; \
	  molecule test --scenario-name "$$scenario" || failed+=("$$scenario"); \
	  echo "[molecule] $$scenario: $$((SECONDS - start)) s"; \
	done; \
	if [ $${#failed[@]} -gt 0 ]; then echo "[molecule] failed: $${failed[*]}"; exit 1; fi; \
	echo "[molecule] passed: $(SCENARIO)"

e2e: $(STAMP)
	$(OPERATOR) dev-cluster build
	$(BIN)/pytest tests/e2e $(PYTEST_ARGS)

test: lint unit e2e molecule  ## lint, unit, end-to-end and molecule tests

clean: cluster-down
	rm -rf $(VENV)
