# Two commands do everything on a fresh machine: `make run` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
OPERATOR := $(BIN)/ansible-operator
PYTEST_ARGS ?=

.PHONY: run test lint unit e2e molecule venv cluster-up cluster-down cluster-status binaries clean \
	image image-test docker-build docker-push deploy undeploy bench \
	venv-ansible-core-2.19 e2e-ansible-core-2.19

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

# `make run`: `ansible-operator dev run` (operator/ansible_operator/dev/run.py): the local cluster,
# the CRDs and the sample CRs in $(RUN_NAMESPACE), then the operator in the foreground until
# Ctrl-C, on free ports that it prints. The cluster stays up (`make cluster-down`).
RUN_NAMESPACE ?= default
run: $(STAMP)  ## the local cluster, and the operator with the example CRs
	$(OPERATOR) dev run --namespace=$(RUN_NAMESPACE)

lint: $(STAMP)
	$(BIN)/ruff check operator tests bench
	$(BIN)/ruff format --check operator tests bench
	$(BIN)/mypy
	$(BIN)/mypy bench/operator_bench.py bench/figures.py bench/plot.py bench/processes.py  # make bench
	cd operator && ../$(BIN)/lint-imports --config ../pyproject.toml  # layers import only downward
	MYPYPATH=operator $(BIN)/mypy --explicit-package-bases --namespace-packages \
		-p ansible_collections.operator_sdk.util
	$(OPERATOR) generate crds --check  # the CRDs in config/crd/bases match the roles
	$(BIN)/pytest -q tests/unit/test_dockerfile.py  # the Dockerfile's essentials, before a build
	$(BIN)/yamllint --strict roles playbooks operator/ansible_collections molecule config tests/e2e/roles \
		watches.yaml requirements.yml .yamllint .ansible-lint bench/roles bench/watches.yaml bench/trivial-crd.yaml
	PATH="$(CURDIR)/$(BIN):$$PATH" \
		$(BIN)/ansible-lint roles playbooks operator/ansible_collections molecule  # .ansible-lint: what, why

unit: $(STAMP)
	$(BIN)/pytest tests/unit tests/runner $(PYTEST_ARGS)

# `make molecule`: `ansible-operator dev molecule` (operator/ansible_operator/dev/molecule.py): one
# scenario per role (molecule/<role>/), MOLECULE_JOBS at a time, on a private cluster unless
# ANSIBLE_OPERATOR_TEST_KUBECONFIG names a running one.
SCENARIO ?=
MOLECULE_JOBS ?= 2
molecule: $(STAMP)  ## molecule test of every role, or of one: make molecule SCENARIO=nginx
	$(OPERATOR) dev molecule --jobs=$(MOLECULE_JOBS) $(SCENARIO)

# ansible-core 2.19 (the `ansible` 12 package), a supported choice beside the 2.18 default: a
# second virtualenv with the package installed as in $(VENV), then ansible 12 installed over the
# ansible 11 that pyproject.toml pins. pip lets no extra loosen a pin of the base dependencies,
# so this override is the one way to get 2.19 beside an unchanged default; pip reports the pin it
# overrides, once, and nothing else differs. The Dockerfile does the same with its ANSIBLE
# build argument. `make e2e-ansible-core-2.19` runs the runtime's e2e tests that cover
# variables, status, requeue, finalizers, dependents, the example roles, the util collection,
# the scaffold and the 2.19 failure messages on it.
VENV_2_19 := .venv-ansible-core-2.19
ANSIBLE_2_19 := ansible>=12,<13
E2E_2_19 ?= tests/e2e/test_reconcile.py tests/e2e/test_dependents.py \
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

e2e: $(STAMP)
	$(OPERATOR) dev-cluster build
	$(BIN)/pytest tests/e2e $(PYTEST_ARGS)

# `make bench`: bench/operator_bench.py (run from the repository root), the operator as a real process with each runner mode,
# rounds interleaved, on the cluster ANSIBLE_OPERATOR_TEST_KUBECONFIG names, else a private one.
# About 15 min on 2 CPUs; writes bench/results/<stamp>.json and .png, and latest.md/latest.png.
BENCH_STAMP := $(VENV)/.bench-installed
BENCH_ARGS ?=
$(BENCH_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,bench]'
	touch $@

bench: $(BENCH_STAMP)  ## warm and cold runners side by side (bench/results/latest.md)
	$(BIN)/python -m bench.operator_bench $(BENCH_ARGS)

# The image, with podman in place of a Docker engine (installed on first use, as root, from
# Debian's packages); its store is private (~/.cache/ansible-operator/podman).
IMG ?= controller:latest
image: $(STAMP)  ## build the operator image: make image IMG=registry.example.com/op:0.1.0
	$(OPERATOR) dev-image build --tag $(IMG)

docker-build: image  ## operator-sdk's name for `make image` (podman underneath)

docker-push: $(STAMP)  ## push $(IMG) to its registry
	$(OPERATOR) dev-image podman -- push $(IMG)

deploy: $(STAMP)  ## apply config/default with $(IMG) to $$KUBECONFIG's cluster, else the local one
	$(OPERATOR) dev-image deploy --tag $(IMG)

undeploy: $(STAMP)  ## delete what `make deploy` applied
	$(OPERATOR) dev-image undeploy --tag $(IMG)

image-test: $(STAMP)  ## build the image and run the operator from it, in-cluster style
	$(OPERATOR) dev-cluster build
	$(BIN)/pytest tests/image $(PYTEST_ARGS)

test: lint unit e2e molecule image-test  ## lint, unit, end-to-end, molecule and image tests

# Stops the cluster with the virtualenv's command when there is one; never builds it to do so.
clean:
	$(if $(wildcard $(OPERATOR)),$(OPERATOR) dev-cluster down)
	rm -rf $(VENV)
