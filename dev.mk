# This repository's own targets and settings, beside the Makefile that `ansible-operator init`
# writes into every project (the Makefile includes this file first). Two commands do everything
# on a fresh machine: `make run` and `make test`.
# Python 3.12 or newer (ansible-core 2.20 and 2.21 need it on the controller): PYTHON when given,
# else the first that runs and is 3.12+ of python3, python3.12, python3.13, python3.14 on PATH and
# pyenv's versions (a pyenv shim of a version that is not selected refuses to run: each is tried).
ifeq ($(origin PYTHON),undefined)
PYTHON := $(shell for python in python3 python3.12 python3.13 python3.14 \
	"$${PYENV_ROOT:-$$HOME/.pyenv}"/versions/3.*/bin/python3; do \
	"$$python" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null \
	&& { command -v "$$python"; break; }; done)
endif
PYTHON_VERSION := $(if $(PYTHON),$(shell $(PYTHON) -c \
	'import sys; sys.version_info >= (3, 12) and print("%d.%d" % sys.version_info[:2])' 2>/dev/null))
NEED_PYTHON = $(if $(PYTHON_VERSION),,$(error no Python 3.12 or newer found (PYTHON=$(PYTHON)): \
	install one, or name it: make PYTHON=/path/to/python3.12))
# One virtualenv per Python version, so that a new Python never replaces one in use; `.venv` is a
# link to the latest made (an older, real `.venv` directory is left alone: remove it to get the
# link).
VENV := .venv-py$(PYTHON_VERSION)
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LINK_VENV = if [ ! -e .venv ] || [ -L .venv ]; then ln -sfn $(VENV) .venv; fi
# The Makefile's targets run the operator from this repository's virtualenv, made on first use,
# with this tree's modules compiled (bytecode, below).
ANSIBLE_OPERATOR := $(BIN)/ansible-operator
OPERATOR_DEPS := $(STAMP) bytecode
# The four ansible-cores, each tested (below); 2.18 is this repository's default, as upstream's
# image (pyproject.toml allows any of them; each virtualenv and image here names its own).
DEFAULT_CORE := 2.18
CORES := 2.18 2.19 2.20 2.21
ANSIBLE_FOR_2.18 := ansible>=11,<12
ANSIBLE_FOR_2.19 := ansible>=12,<13
ANSIBLE_FOR_2.20 := ansible>=13,<14
ANSIBLE_FOR_2.21 := ansible>=14,<15
# `make image` puts the wheel of this source tree (not of an installed runtime) into dist/, and
# the Dockerfile installs that version from there, with the default core's `ansible` unless
# IMAGE_BUILD_ARGS names another (--build-arg ANSIBLE='ansible>=14,<15': the last one given wins).
VERSION := $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' pyproject.toml)
RUNTIME_WHEEL := $(BIN)/pip wheel --quiet --no-deps --wheel-dir dist .
override IMAGE_BUILD_ARGS := --build-arg ANSIBLE='$(ANSIBLE_FOR_$(DEFAULT_CORE))' \
	$(IMAGE_BUILD_ARGS) --build-arg OPERATOR_PACKAGE=ansible-operator-py==$(VERSION)
PYTEST_ARGS ?=

.PHONY: lint lint-python lint-ansible unit runner e2e venv bytecode cluster-up cluster-down cluster-status binaries clean image-test bench soak

# uv (from PyPI, into the virtualenv) installs the packages: about 30 s where pip took 3-5 min.
# Unlike pip it writes no bytecode unless asked, and where PYTHONDONTWRITEBYTECODE is set (as on
# CI's machine) Python never writes it either: every process then compiled each module it
# imported, ansible-core's included, about 0.5 CPU-s each time, and the tests start thousands of
# them (operators, ansible-playbook, molecule). So the packages are compiled once installed
# (COMPILE_PACKAGES), but for the collections the `ansible` package bundles and no role here
# uses: two thirds of its modules, never imported (the image drops them too); and this tree's
# modules before each use (bytecode).
UV := $(BIN)/uv
UV_INSTALL = $(UV) pip install --quiet
COMPILE_PACKAGES = -m compileall -q -j 0 -x '/ansible_collections/(?!kubernetes/core/|operator_sdk/)'
$(STAMP): pyproject.toml
	$(NEED_PYTHON)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet uv
	echo '$(ANSIBLE_FOR_$(DEFAULT_CORE))' > $(VENV)/ansible-override.txt
	$(UV_INSTALL) --python $(BIN)/python -e '.[test]' --override $(VENV)/ansible-override.txt
	$(BIN)/python $(COMPILE_PACKAGES) $(VENV)/lib
	touch $(STAMP)
	@$(LINK_VENV)

venv: $(STAMP)  ## the virtualenv with the package (editable) and the test tools
	@$(LINK_VENV)

# This tree's modules compiled where Python looks for them (__pycache__, ignored by git); a
# module compiled already and unchanged is skipped, so it takes a few milliseconds.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q operator

binaries: $(OPERATOR_DEPS)  ## build (or find) the control-plane binaries
	$(ANSIBLE_OPERATOR) dev-cluster build

cluster-up: $(OPERATOR_DEPS)  ## start the local cluster
	$(ANSIBLE_OPERATOR) dev-cluster up

cluster-down: $(OPERATOR_DEPS)  ## stop the local cluster
	$(ANSIBLE_OPERATOR) dev-cluster down

cluster-status: $(OPERATOR_DEPS)  ## is the local cluster up
	$(ANSIBLE_OPERATOR) dev-cluster status

# The roles and playbooks here are the examples; the in-repo collection and the tests' roles are
# the repository's own, hence the extra paths and the galaxy exceptions (no Galaxy repository).
ANSIBLE_LINT_EXTRA := --exclude tests/ --exclude operator/ --exclude bench/ \
	$(foreach dir,$(wildcard .venv?*),--exclude $(dir)/) -x 'galaxy[no-repository],galaxy[no-changelog]'
# Two lanes, one per core here: the Python checks (mypy's two runs take most of it) and the
# Ansible ones (ansible-lint); each lane's output together.
lint: $(OPERATOR_DEPS)  ## ruff, mypy, layers, CRDs, Dockerfile, yamllint, ansible-lint
	$(MAKE) --no-print-directory -j2 --output-sync=target lint-python lint-ansible

lint-python: $(OPERATOR_DEPS)
	$(BIN)/ruff check operator tests bench
	$(BIN)/ruff format --check operator tests bench
	$(BIN)/mypy
	$(BIN)/mypy bench/operator_bench.py bench/figures.py bench/plot.py bench/processes.py \
		bench/warm_run_costs.py bench/spec_limits_memory.py bench/launch.py bench/exit_report/sitecustomize.py
	cd operator && ../$(BIN)/lint-imports ../pyproject.toml  # layers import only downward
	$(BIN)/python tests/public_names.py  # other layers only through the names their __init__ lists
	MYPYPATH=operator $(BIN)/mypy --explicit-package-bases --namespace-packages \
		-p ansible_collections.operator_sdk.util
	$(ANSIBLE_OPERATOR) generate crds --check  # the CRDs in config/crd/bases match the roles
	$(BIN)/pytest -q tests/unit/test_dockerfile.py  # the Dockerfile's essentials, before a build

lint-ansible: $(OPERATOR_DEPS)
	$(BIN)/yamllint --strict roles playbooks operator/ansible_collections molecule config tests/e2e/roles \
		watches.yaml requirements.yml .yamllint .ansible-lint \
		bench/roles bench/watches.yaml bench/trivial-crd.yaml
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/ansible-lint $(ANSIBLE_LINT_EXTRA) \
		roles playbooks operator/ansible_collections molecule  # .ansible-lint: what, why

unit: $(OPERATOR_DEPS)  ## the unit tests (no cluster, no Ansible run: the fast loop)
	$(BIN)/pytest tests/unit $(call workers,$(UNIT_WORKERS)) $(PYTEST_ARGS)

runner: $(OPERATOR_DEPS)  ## the runner tests: real ansible-runner runs, cold and warm (no cluster)
	$(BIN)/pytest tests/runner $(call workers,$(RUNNER_WORKERS)) $(PYTEST_ARGS)

# The four ansible-cores (CORES, above), each tested (`.ci/run`): 2.18 (the `ansible` 11 package)
# is the default, as upstream's image; 2.19, 2.20 and 2.21 (`ansible` 12, 13, 14) each have a
# virtualenv of their own beside $(VENV), made as $(VENV) is but with their `ansible` (uv's
# --override: one resolution, that pin in place of pyproject.toml's range). The Dockerfile's
# ANSIBLE build argument chooses the image's. A test whose outcome depends on the
# core is marked `ansible_core` (tests/conftest.py, which also refuses Ansible to unmarked unit
# tests); the per-core targets run those alone, every other test runs once, in `make test`.
# For a core C of $(CORES):
#   make venv-ansible-core-C   its virtualenv ($(VENV) for the default)
#   make unit-ansible-core-C   the unit and runner tests marked ansible_core, on it
#   make e2e-ansible-core-C    the e2e tests marked ansible_core, on it: variables, status,
#                              requeue, finalizers, dependents, the example roles, the util
#                              collection, the scaffold and the messages for the new rules of 2.19+
core_venv = $(if $(filter $(DEFAULT_CORE),$1),$(VENV),$(VENV)-ansible-core-$1)
.PRECIOUS: $(VENV)-ansible-core-%/.installed  # a made virtualenv, not an intermediate file

$(VENV)-ansible-core-%/.installed: pyproject.toml $(STAMP)
	$(if $(ANSIBLE_FOR_$*),,$(error no ansible-core $* here: choose one of $(CORES)))
	$(PYTHON) -m venv $(@D)
	echo '$(ANSIBLE_FOR_$*)' > $(@D)/ansible-override.txt
	$(UV_INSTALL) --python $(@D)/bin/python -e '.[test]' --override $(@D)/ansible-override.txt
	$(@D)/bin/python $(COMPILE_PACKAGES) $(@D)/lib
	touch $@

# Parallel workers (pytest-xdist): UNIT_WORKERS for the unit layers, E2E_WORKERS for the e2e
# layer, each e2e worker with a private cluster of its own (tests/e2e/cluster.py: one per
# worker) and a test module's tests together (--dist loadfile: its fixtures are set up once;
# modules marked `long` first). 1 runs them in pytest's own process, one at a time. The unit
# tests take 1 min 42 s on 2 workers here; the runner tests (RUNNER_WORKERS, also the per-core
# stages) wait on their processes as much as they compute, and took half the time on 2 workers
# as on one (docs/contributing.md). The e2e layer was CPU-bound while every Python process
# compiled its modules (3 and 4 workers took as long as one); with bytecode its tests mostly wait
# (faults, leases, runs), and 2 workers took 18 min 21 s where one took 25 min 53 s. On a bigger
# machine, `make e2e E2E_WORKERS=4`.
UNIT_WORKERS ?= 2
RUNNER_WORKERS ?= 2
E2E_WORKERS ?= 2
workers = $(if $(filter 1,$1),-p no:xdist,-n $1 --dist loadfile)

.SECONDEXPANSION:
venv-ansible-core-%: $$(call core_venv,$$*)/.installed ;

unit-ansible-core-%: $$(call core_venv,$$*)/.installed bytecode
	$(call core_venv,$*)/bin/pytest tests/unit tests/runner -m ansible_core \
		$(call workers,$(RUNNER_WORKERS)) $(PYTEST_ARGS)

e2e-ansible-core-%: $$(call core_venv,$$*)/.installed bytecode
	$(call core_venv,$*)/bin/ansible-operator dev-cluster build
	$(call core_venv,$*)/bin/python -m tests.e2e.tools  # promtool, the bundle validator, kstatus-check
	$(call core_venv,$*)/bin/pytest tests/e2e -m ansible_core $(call workers,$(E2E_WORKERS)) \
		$(PYTEST_ARGS)

e2e: $(OPERATOR_DEPS)  ## the end-to-end tests on the local cluster
	$(ANSIBLE_OPERATOR) dev-cluster build --real-node  # and the real node's kubelet, DNS...
	$(BIN)/python -m tests.e2e.tools  # promtool, the bundle validator, kstatus-check
	$(BIN)/pytest tests/e2e $(call workers,$(E2E_WORKERS)) $(PYTEST_ARGS)

# `make bench`: bench/operator_bench.py (run from the repository root), the operator as a real
# process with each runner mode on each core of BENCH_CORES (from its virtualenv, made if missing),
# rounds interleaved, on the cluster ANSIBLE_OPERATOR_TEST_KUBECONFIG names, else a private one.
# About 15 min per core on 2 idle CPUs (BENCH_CORES='2.18 2.21' for fewer); writes
# bench/results/<stamp>.json and .png, and latest.md/latest.png.
BENCH_STAMP := $(VENV)/.bench-installed
BENCH_ARGS ?=
BENCH_CORES ?= $(CORES)
$(BENCH_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,bench]'
	touch $@

bench: $(BENCH_STAMP) bytecode $(foreach core,$(BENCH_CORES),$(call core_venv,$(core))/.installed)  ## warm and cold runners on each core side by side (bench/results/latest.md)
	$(BIN)/python -m bench.operator_bench --cores='$(BENCH_CORES)' $(BENCH_ARGS)

# `make soak`: the fault suite of issue 13 (tests/soak/suite.py), outside `make test`: SOAK_N CRs
# on a private cluster of its own, SOAK_DURATION seconds of seeded random faults (SIGKILL and
# SIGTERM of the operator, the API server and etcd frozen, spec changes, deletions), then the end
# state checked; it prints the counts and the time to converge, and fails on any violation.
# SOAK_SEED repeats a run. tests/e2e/test_soak.py is its short version.
SOAK_N ?= 200
SOAK_DURATION ?= 600
SOAK_SEED ?=
soak: $(OPERATOR_DEPS)  ## the fault suite: make soak SOAK_N=200 SOAK_DURATION=600 [SOAK_SEED=...]
	$(ANSIBLE_OPERATOR) dev-cluster build
	$(BIN)/python -m tests.soak --n=$(SOAK_N) --duration=$(SOAK_DURATION) $(if $(SOAK_SEED),--seed=$(SOAK_SEED))

image-test: $(OPERATOR_DEPS)  ## build the image and run the operator from it, in-cluster style
	$(ANSIBLE_OPERATOR) dev-cluster build --real-node  # it also runs as a Pod on a real node
	$(BIN)/pytest tests/image $(PYTEST_ARGS)

# `make test` here: lint, unit, runner, end-to-end, molecule and image tests, in this order (the
# Makefile's own `test` runs the molecule scenarios).
test: lint unit runner e2e molecule image-test

# Stops the cluster with the virtualenv's command when there is one; never builds it to do so.
clean:  ## stop the local cluster, remove the virtualenvs of this Python
	$(if $(wildcard $(ANSIBLE_OPERATOR)),$(ANSIBLE_OPERATOR) dev-cluster down)
	rm -rf $(VENV) $(VENV)-ansible-core-*
	if [ -L .venv ]; then rm .venv; fi
