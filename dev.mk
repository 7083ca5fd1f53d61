# This repository's own targets and settings, beside the Makefile that `ansible-operator init`
# writes into every project (the Makefile includes this file first). Two commands do everything
# on a fresh machine: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The Makefile's targets run the operator from this repository's virtualenv, made on first use.
ANSIBLE_OPERATOR := $(BIN)/ansible-operator
OPERATOR_DEPS := $(STAMP)
# `make image` puts the wheel of this source tree (not of an installed runtime) into dist/, and
# the Dockerfile installs that version from there.
VERSION := $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' pyproject.toml)
RUNTIME_WHEEL := $(BIN)/pip wheel --quiet --no-deps --wheel-dir dist .
override IMAGE_BUILD_ARGS += --build-arg OPERATOR_PACKAGE=ansible-operator-py==$(VERSION)
PYTEST_ARGS ?=

.PHONY: lint unit e2e venv cluster-up cluster-down cluster-status binaries clean image-test bench soak \
	venv-ansible-core-2.19 e2e-ansible-core-2.19

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)  ## the virtualenv with the package (editable) and the test tools

binaries: $(STAMP)  ## build (or find) the control-plane binaries
	$(ANSIBLE_OPERATOR) dev-cluster build

cluster-up: $(STAMP)  ## start the local cluster
	$(ANSIBLE_OPERATOR) dev-cluster up

cluster-down: $(STAMP)  ## stop the local cluster
	$(ANSIBLE_OPERATOR) dev-cluster down

cluster-status: $(STAMP)  ## is the local cluster up
	$(ANSIBLE_OPERATOR) dev-cluster status

# The roles and playbooks here are the examples; the in-repo collection and the tests' roles are
# the repository's own, hence the extra paths and the galaxy exceptions (no Galaxy repository).
ANSIBLE_LINT_EXTRA := --exclude tests/ --exclude operator/ --exclude bench/ \
	--exclude .venv-ansible-core-2.19/ -x 'galaxy[no-repository],galaxy[no-changelog]'
lint: $(STAMP)  ## ruff, mypy, layers, CRDs, Dockerfile, yamllint, ansible-lint
	$(BIN)/ruff check operator tests bench
	$(BIN)/ruff format --check operator tests bench
	$(BIN)/mypy
	$(BIN)/mypy bench/operator_bench.py bench/figures.py bench/plot.py bench/processes.py \
		bench/warm_run_costs.py bench/exit_report/sitecustomize.py
	cd operator && ../$(BIN)/lint-imports --config ../pyproject.toml  # layers import only downward
	MYPYPATH=operator $(BIN)/mypy --explicit-package-bases --namespace-packages \
		-p ansible_collections.operator_sdk.util
	$(ANSIBLE_OPERATOR) generate crds --check  # the CRDs in config/crd/bases match the roles
	$(BIN)/pytest -q tests/unit/test_dockerfile.py  # the Dockerfile's essentials, before a build
	$(BIN)/yamllint --strict roles playbooks operator/ansible_collections molecule config tests/e2e/roles \
		watches.yaml requirements.yml .yamllint .ansible-lint \
		bench/roles bench/watches.yaml bench/trivial-crd.yaml
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/ansible-lint $(ANSIBLE_LINT_EXTRA) \
		roles playbooks operator/ansible_collections molecule  # .ansible-lint: what, why

unit: $(STAMP)  ## the unit tests
	$(BIN)/pytest tests/unit tests/runner $(PYTEST_ARGS)

# ansible-core 2.19 (the `ansible` 12 package), a supported choice beside the 2.18 default: a
# second virtualenv with the package installed as in $(VENV), then ansible 12 installed over the
# ansible 11 that pyproject.toml pins. pip lets no extra loosen a pin of the base dependencies,
# so this override is the one way to get 2.19 beside an unchanged default; pip reports the pin it
# overrides, once, and nothing else differs. The Dockerfile does the same with its ANSIBLE
# build argument. `make e2e-ansible-core-2.19` runs the warm runner's tests and the
# runtime's e2e tests that cover variables, status, requeue, finalizers, dependents, the example
# roles, the util collection, the scaffold and the 2.19 failure messages on it.
VENV_2_19 := .venv-ansible-core-2.19
ANSIBLE_2_19 := ansible>=12,<13
E2E_2_19 ?= tests/runner/test_warm_runner.py tests/e2e/test_reconcile.py tests/e2e/test_dependents.py \
	tests/e2e/test_util_modules.py tests/e2e/test_samples.py tests/e2e/test_new_api.py \
	tests/e2e/test_ansible_core_rules.py
$(VENV_2_19)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV_2_19)
	$(VENV_2_19)/bin/pip install --quiet --upgrade pip
	$(VENV_2_19)/bin/pip install --quiet -e '.[test]'
	$(VENV_2_19)/bin/pip install --quiet '$(ANSIBLE_2_19)'
	touch $@

venv-ansible-core-2.19: $(VENV_2_19)/.installed

e2e-ansible-core-2.19: $(VENV_2_19)/.installed  ## the runtime's e2e layer on ansible-core 2.19
	$(VENV_2_19)/bin/ansible-operator dev-cluster build
	$(VENV_2_19)/bin/pytest $(E2E_2_19) $(PYTEST_ARGS)

e2e: $(STAMP)  ## the end-to-end tests on the local cluster
	$(ANSIBLE_OPERATOR) dev-cluster build
	$(BIN)/pytest tests/e2e $(PYTEST_ARGS)

# `make bench`: bench/operator_bench.py (run from the repository root), the operator as a real
# process with each runner mode, rounds interleaved, on the cluster ANSIBLE_OPERATOR_TEST_KUBECONFIG
# names, else a private one. About 15 min on 2 CPUs; writes bench/results/<stamp>.json and .png,
# and latest.md/latest.png.
BENCH_STAMP := $(VENV)/.bench-installed
BENCH_ARGS ?=
$(BENCH_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,bench]'
	touch $@

bench: $(BENCH_STAMP)  ## warm and cold runners side by side (bench/results/latest.md)
	$(BIN)/python -m bench.operator_bench $(BENCH_ARGS)

# `make soak`: the fault suite of issue 13 (tests/soak/suite.py), outside `make test`: SOAK_N CRs
# on a private cluster of its own, SOAK_DURATION seconds of seeded random faults (SIGKILL and
# SIGTERM of the operator, the API server and etcd frozen, spec changes, deletions), then the end
# state checked; it prints the counts and the time to converge, and fails on any violation.
# SOAK_SEED repeats a run. tests/e2e/test_soak.py is its short version.
SOAK_N ?= 200
SOAK_DURATION ?= 600
SOAK_SEED ?=
soak: $(STAMP)  ## the fault suite: make soak SOAK_N=200 SOAK_DURATION=600 [SOAK_SEED=...]
	$(ANSIBLE_OPERATOR) dev-cluster build
	$(BIN)/python -m tests.soak --n=$(SOAK_N) --duration=$(SOAK_DURATION) $(if $(SOAK_SEED),--seed=$(SOAK_SEED))

image-test: $(STAMP)  ## build the image and run the operator from it, in-cluster style
	$(ANSIBLE_OPERATOR) dev-cluster build
	$(BIN)/pytest tests/image $(PYTEST_ARGS)

# `make test` here: lint, unit, end-to-end, molecule and image tests, in this order (the
# Makefile's own `test` runs the molecule scenarios).
test: lint unit e2e molecule image-test

# Stops the cluster with the virtualenv's command when there is one; never builds it to do so.
clean:  ## stop the local cluster, remove the virtualenv
	$(if $(wildcard $(ANSIBLE_OPERATOR)),$(ANSIBLE_OPERATOR) dev-cluster down)
	rm -rf $(VENV)
