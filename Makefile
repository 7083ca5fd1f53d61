# Two commands do everything on a fresh machine: `make run` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
OPERATOR := $(BIN)/ansible-operator
PYTEST_ARGS ?=

.PHONY: run test lint unit e2e molecule venv cluster-up cluster-down cluster-status binaries clean \
	image image-test docker-build docker-push deploy undeploy \
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

# `make run`: the local cluster, the CRDs and the sample CRs in $(RUN_NAMESPACE), then the operator in
# the foreground with the repository's watches.yaml and console logs, until Ctrl-C. A banner says
# when every sample has reached Successful (samples kept from an earlier run may be Successful
# already; the operator reconciles them again anyway). The cluster stays up (`make cluster-down`).
RUN_NAMESPACE ?= default
KUBECTL = $(shell $(BIN)/python -c 'from ansible_operator.devcluster import binaries; print(binaries.find()["kubectl"])')
run: cluster-up  ## the local cluster, and the operator with the example CRs
	@set -euo pipefail; \
	kubeconfig="$$($(OPERATOR) dev-cluster kubeconfig)"; \
	kubectl=("$(KUBECTL)" --kubeconfig="$$kubeconfig"); \
	"$${kubectl[@]}" apply -k config/crd; \
	"$${kubectl[@]}" wait --for=condition=Established --timeout=60s -f config/crd/bases >/dev/null; \
	kept=$$("$${kubectl[@]}" get -k config/samples -n $(RUN_NAMESPACE) -o name --ignore-not-found | wc -l); \
	"$${kubectl[@]}" apply -k config/samples -n $(RUN_NAMESPACE); \
	samples=$$("$${kubectl[@]}" get -k config/samples -n $(RUN_NAMESPACE) -o name | tr '\n' ' '); \
	echo; \
	echo "export KUBECONFIG=$$kubeconfig"; \
	echo "Starting the operator (watches.yaml, namespace $(RUN_NAMESPACE)); Ctrl-C stops it."; \
	echo "Then: make cluster-down stops the cluster."; \
	echo; \
	( start=$$SECONDS; \
	  if met="$$("$${kubectl[@]}" wait --for=condition=Successful --timeout=600s -n $(RUN_NAMESPACE) $$samples)"; then \
	    if [ "$$kept" -gt 0 ]; then echo "==== every sample is Successful ($$kept kept from an earlier run) ===="; \
	    else echo "==== every sample is Successful, $$((SECONDS - start)) s after the operator started ===="; fi; \
	    echo "$$met"; \
	    echo "==== kubectl get -k config/samples -n $(RUN_NAMESPACE) shows them ===="; \
	  else echo "==== not every sample reached Successful within 600 s ===="; fi ) & \
	waiter=$$!; \
	tmp="$$(mktemp -d "$${TMPDIR:-/tmp}/ansible-operator-run.XXXXXX")"; \
	KUBECONFIG="$$kubeconfig" WATCH_NAMESPACE=$(RUN_NAMESPACE) TMPDIR="$$tmp" \
	ANSIBLE_GATHERING=explicit ANSIBLE_ROLES_PATH="$(CURDIR)/roles" \
	ANSIBLE_COLLECTIONS_PATH="$(CURDIR)/collections" \
	$(OPERATOR) run --zap-encoder=console --watches-file=./watches.yaml \
	  --metrics-bind-address=127.0.0.1:8443 --health-probe-bind-address=127.0.0.1:6789 \
	  || status=$$?; \
	kill "$$waiter" 2>/dev/null || true; \
	rm -rf "$$tmp"; \
	exit $${status:-0}

lint: $(STAMP)
	$(BIN)/ruff check operator tests collections
	$(BIN)/ruff format --check operator tests collections
	$(BIN)/mypy
	cd operator && ../$(BIN)/lint-imports --config ../pyproject.toml  # layers import only downward
	MYPYPATH=collections $(BIN)/mypy --explicit-package-bases --namespace-packages \
		-p ansible_collections.operator_sdk.util
	$(OPERATOR) generate crds --check  # the CRDs in config/crd/bases match the roles
	$(BIN)/pytest -q tests/unit/test_dockerfile.py  # the Dockerfile's essentials, before a build
	$(BIN)/yamllint --strict roles playbooks collections molecule config tests/e2e/roles \
		watches.yaml requirements.yml .yamllint .ansible-lint
	PATH="$(CURDIR)/$(BIN):$$PATH" ANSIBLE_COLLECTIONS_PATH="$(CURDIR)/collections" \
		$(BIN)/ansible-lint roles playbooks collections molecule  # .ansible-lint says what and why

unit: $(STAMP)
	$(BIN)/pytest tests/unit tests/runner $(PYTEST_ARGS)

# One molecule scenario per role (molecule/<role>/), each against a local cluster with the operator
# running: a private cluster for the whole target, started and stopped here, unless
# ANSIBLE_OPERATOR_TEST_KUBECONFIG names one that is already running. Scenarios are independent
# (a namespace, an operator and ports of their own), so MOLECULE_JOBS of them run at a time; then
# each one's output goes to a file, printed in full when it fails and kept when any fails.
SCENARIO ?= $(patsubst molecule/%/molecule.yml,%,$(wildcard molecule/*/molecule.yml))
MOLECULE_JOBS ?= 2
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
	scenarios=($(SCENARIO)); \
	if [ $${#scenarios[@]} -eq 1 ] || [ "$(MOLECULE_JOBS)" -le 1 ]; then \
	  failed=(); \
	  for scenario in "$${scenarios[@]}"; do \
	    start=$$SECONDS; \
	    molecule test --scenario-name "$$scenario" || failed+=("$$scenario"); \
	    echo "[molecule] $$scenario: $$((SECONDS - start)) s"; \
	  done; \
	  if [ $${#failed[@]} -gt 0 ]; then echo "[molecule] failed: $${failed[*]}"; exit 1; fi; \
	else \
	  logs="$$(mktemp -d "$${TMPDIR:-/tmp}/molecule-logs.XXXXXX")"; \
	  echo "[molecule] $${scenarios[*]}, $(MOLECULE_JOBS) at a time; output in $$logs"; \
	  printf '%s\n' "$${scenarios[@]}" | xargs -P "$(MOLECULE_JOBS)" -I{} bash -c ' \
	    start=$$SECONDS; log="$$0/{}.log"; \
	    if molecule test --scenario-name {} > "$$log" 2>&1; then result=passed; \
	    else result=FAILED; cat "$$log"; fi; \
	    echo "[molecule] {}: $$result in $$((SECONDS - start)) s"; [ $$result = passed ]' "$$logs" \
	  || { echo "[molecule] failed; output in $$logs"; exit 1; }; \
	  rm -rf "$$logs"; \
	fi; \
	echo "[molecule] passed: $${scenarios[*]}"

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

clean: cluster-down
	rm -rf $(VENV)
