# The operator image: the Python runtime, Ansible and the collections the roles need, with the
# project's watches.yaml, roles and playbooks in /opt/ansible (the Go ansible-operator's layout).
#   docker build -t <registry>/<name>:<tag> .
#   cd config/manager && kustomize edit set image controller=<registry>/<name>:<tag>
ARG PYTHON_IMAGE=docker.io/library/python:3.11-slim-bookworm

# ---- builder: the package and its dependencies (ansible-core, kubernetes.core) in a virtualenv --
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
COPY pyproject.toml ./
COPY operator/ operator/
# ansible-core 2.18 (the `ansible` 11 that pyproject.toml pins) by default, as upstream's image;
# ANSIBLE installs another `ansible` over it, for example --build-arg ANSIBLE='ansible>=12,<13'
# for ansible-core 2.19 (see docs/ansible-core-2.19.md). pip names the pin it overrides.
ARG ANSIBLE=""
RUN pip install . \
    && if [ -n "$ANSIBLE" ]; then pip install "$ANSIBLE"; fi \
    && ansible-operator version \
    && mkdir -p /opt/ansible/collections
# The `ansible` package bundles about fifty collections (500 MiB); keep those requirements.yml
# names (kubernetes.core). A project whose roles need a collection that package lacks adds, in a
# networked build: RUN ansible-galaxy collection install -r requirements.yml -p /opt/ansible/collections
COPY requirements.yml ./
RUN set -eu; cd /opt/venv/lib/python3*/site-packages/ansible_collections; \
    keep="$(sed -n 's/^ *- name: *\([a-z0-9_]*\)\.\([a-z0-9_]*\).*/\1\/\2/p' /src/requirements.yml)"; \
    for dir in */*/; do \
      name="$(echo "${dir%/}" | sed 's/-[^/]*\.info$//')"; \
      echo "$keep" | grep -qx "$name" || rm -rf "$dir"; \
    done; \
    find . -mindepth 1 -maxdepth 1 -type d -empty -delete

# ---- runtime: non-root, nothing to build with ---------------------------------------------------
FROM ${PYTHON_IMAGE}
# tini reaps the processes Ansible leaves behind (the operator is PID 1 otherwise)
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 1001 --gid 0 --home-dir /opt/ansible --no-create-home \
        --shell /usr/sbin/nologin ansible
ENV HOME=/opt/ansible \
    LANG=C.UTF-8 \
    ANSIBLE_HOME=/tmp/ansible \
    PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    ANSIBLE_GATHERING=explicit \
    ANSIBLE_ROLES_PATH=/opt/ansible/roles \
    ANSIBLE_COLLECTIONS_PATH=/opt/ansible/collections \
    ANSIBLE_LOCAL_TEMP=/tmp/ansible/local \
    ANSIBLE_REMOTE_TEMP=/tmp/ansible/remote
COPY --from=builder /opt/venv /opt/venv
COPY --from=builder /opt/ansible/collections /opt/ansible/collections
COPY collections/ansible_collections/operator_sdk/ /opt/ansible/collections/ansible_collections/operator_sdk/
COPY requirements.yml watches.yaml /opt/ansible/
COPY roles/ /opt/ansible/roles/
COPY playbooks/ /opt/ansible/playbooks/
# The root filesystem may be read-only (config/manager): /tmp is an emptyDir there.
USER 1001
WORKDIR /opt/ansible
ENTRYPOINT ["/usr/bin/tini", "--", "ansible-operator", "run", "--watches-file=./watches.yaml"]
