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

unit: $(STAMP)
	$(BIN)/pytest tests/unit tests/runner $(PYTEST_ARGS)

e2e: $(STAMP)
	$(OPERATOR) dev-cluster build
	$(BIN)/pytest tests/e2e $(PYTEST_ARGS)

test: lint unit e2e  ## lint, unit and end-to-end tests

clean: cluster-down
	rm -rf $(VENV)
