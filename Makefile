# ansible-operator: an Ansible operator (ansible-operator init). `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help
# dev.mk, when there is one, holds this directory's own targets and settings (read first, so
# that it can set the variables below).
-include dev.mk
# The ansible-operator command, from the virtualenv ansible-operator-py is installed in.
ANSIBLE_OPERATOR ?= ansible-operator
# What every target that runs $(ANSIBLE_OPERATOR) needs first (nothing: it is installed).
OPERATOR_DEPS ?=
IMG ?= controller:latest

.PHONY: help run test molecule crds image docker-build docker-push deploy undeploy bundle

help:  ## these targets
	@grep -hE '^[a-zA-Z0-9_.-]+:.*## ' $(MAKEFILE_LIST) \
		| sed -E 's/^([^:]+):.*## (.*)/\1\t\2/' | sort | awk -F'\t' '{printf "%-22s %s\n", $$1, $$2}'

# `make run`: the local cluster, the CRDs and the sample CRs in $(RUN_NAMESPACE), then the
# operator in the foreground until Ctrl-C, on free ports that it prints. The cluster stays up
# (`ansible-operator dev-cluster down` stops it).
RUN_NAMESPACE ?= default
run: $(OPERATOR_DEPS)  ## the local cluster, and the operator with the sample CRs
	$(ANSIBLE_OPERATOR) dev run --namespace=$(RUN_NAMESPACE)

# `make molecule`: one scenario per role (molecule/<role>/), MOLECULE_JOBS at a time, on a
# private cluster unless ANSIBLE_OPERATOR_TEST_KUBECONFIG names a running one.
SCENARIO ?=
MOLECULE_JOBS ?= 2
molecule: $(OPERATOR_DEPS)  ## molecule test of every role, or of one: make molecule SCENARIO=<role>
	$(ANSIBLE_OPERATOR) dev molecule --jobs=$(MOLECULE_JOBS) $(SCENARIO)

crds: $(OPERATOR_DEPS)  ## write config/crd/bases from the roles' meta/argument_specs.yml
	$(ANSIBLE_OPERATOR) generate crds

test: molecule  ## the tests: the molecule scenarios

# The image, with podman in place of a Docker engine (installed on first use, as root); its
# store is private (~/.cache/ansible-operator/podman). The runtime goes in as the wheel of the
# installed ansible-operator-py, written to $(RUNTIME_WHEEL_DIR) first (empty: not written).
RUNTIME_WHEEL_DIR ?= dist
image: $(OPERATOR_DEPS)  ## build the operator image: make image IMG=registry.example.com/op:0.1.0
	$(if $(RUNTIME_WHEEL_DIR),$(ANSIBLE_OPERATOR) dev-image wheel --output $(RUNTIME_WHEEL_DIR))
	$(ANSIBLE_OPERATOR) dev-image build --tag $(IMG)

docker-build: image  ## operator-sdk's name for `make image` (podman underneath)

docker-push: $(OPERATOR_DEPS)  ## push $(IMG) to its registry
	$(ANSIBLE_OPERATOR) dev-image podman -- push $(IMG)

deploy: $(OPERATOR_DEPS)  ## apply config/default with $(IMG) to $$KUBECONFIG's cluster, else the local one
	$(ANSIBLE_OPERATOR) dev-image deploy --tag $(IMG)

undeploy: $(OPERATOR_DEPS)  ## delete what `make deploy` applied
	$(ANSIBLE_OPERATOR) dev-image undeploy --tag $(IMG)

# `make bundle`: everything `make deploy` applies, in one file to `kubectl apply -f` elsewhere
# (kubebuilder's build-installer; OLM bundles are not made).
BUNDLE ?= dist/install.yaml
bundle: $(OPERATOR_DEPS)  ## config/default with $(IMG), in one file: $(BUNDLE)
	$(ANSIBLE_OPERATOR) dev-image bundle --tag $(IMG) --output $(BUNDLE)
