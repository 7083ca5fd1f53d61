"""The README's quickstart, every command of it, as a new user runs it: in a copy of this
repository's sources, with nothing installed but a Python 3.12+, a private HOME and a clean
environment; `pip install '.[molecule]'` into a fresh virtualenv, then init, new-api, the edit,
generate crds, make run, make molecule, make image and make deploy, on the test cluster. The
project's own README then installs the runtime from the same place (pip resolves its line).

Three things are done for the user, each for a reason: the editor step writes a role that makes
a ConfigMap, its argument spec, defaults and the molecule test's assertions (as test_init_project
does);
`make run`, which runs until Ctrl-C, gets its Ctrl-C once every sample is Ready; and the
domain is one of the test's own, so the kind's CRD cannot be the example memcached's on the
shared cluster. The cluster is the test's (KUBECONFIG: "your own cluster"); the control-plane
binaries and the image store are the machine's cache, so nothing is built twice.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from kubernetes import client

from ansible_operator.core import ansible_cores
from ansible_operator.devcluster import binaries, image_command

from .crds import remove_crds

pytestmark = [pytest.mark.e2e, pytest.mark.long]

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = re.compile(r"<!-- quickstart[^>]*-->\n```sh\n(.*?)```", re.DOTALL)

ROLE_TASKS = """\
---
- name: A ConfigMap with the message
  kubernetes.core.k8s:
    definition:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: "{{ ansible_operator_meta.name }}-message"
        namespace: "{{ ansible_operator_meta.namespace }}"
      data:
        message: "{{ message }}"
"""

ARGUMENT_SPECS = """\
---
argument_specs:
  main:
    short_description: A Memcached that says something.
    options:
      message:
        type: str
        default: hello
        description: What the ConfigMap says.
"""

TEST_TASKS = """\
---
- name: The sample's ConfigMap says the default message
  ansible.builtin.assert:
    that:
      - >-
        lookup('kubernetes.core.k8s', kind='ConfigMap', namespace=test_namespace,
        resource_name='memcached-sample-message').data.message == 'hello'
  retries: 60
  delay: 1
  until: >-
    lookup('kubernetes.core.k8s', kind='ConfigMap', namespace=test_namespace,
    resource_name='memcached-sample-message') | length > 0
"""


def quickstart() -> list[str]:
    """The quickstart's commands: `\\`-continued lines joined, comments and blank lines out."""
    found = QUICKSTART.search((REPO / "README.md").read_text(encoding="utf-8"))
    assert found, "README.md has no <!-- quickstart --> sh block"
    lines = (re.sub(r"\s+# .*$", "", line).strip() for line in found.group(1).splitlines())
    return [
        " ".join(line.split())
        for line in "\n".join(lines).replace("\\\n", " ").splitlines()
        if line
    ]


def edit() -> str:
    """What the user writes at the `$EDITOR` step, as shell."""
    files = {
        "roles/memcached/meta/argument_specs.yml": ARGUMENT_SPECS,
        "roles/memcached/defaults/main.yml": "---\nmessage: hello\n",
        "roles/memcached/tasks/main.yml": ROLE_TASKS,
        "molecule/memcached/tasks/memcached_test.yml": TEST_TASKS,
    }
    return "\n".join(f"cat > {name} <<'EOF'\n{text}EOF" for name, text in files.items())


def until_successful(command: str) -> str:
    """`make run` in the foreground until every sample is Ready, then Ctrl-C (SIGINT to
    its process group), as a user does; its output kept in run.log and shown."""
    return f"""\
set -m
{command} > run.log 2>&1 &
run=$!
for _ in $(seq 600); do
  grep -q 'every sample is Ready' run.log && break
  kill -0 $run 2>/dev/null || break
  sleep 1
done
kill -INT -- -$run 2>/dev/null || true
wait $run || status=$?
set +m
cat run.log
grep -q 'every sample is Ready' run.log
grep -q "^cluster: \\$KUBECONFIG " run.log
[ "${{status:-0}}" -eq 0 ] || [ "${{status:-0}}" -eq 130 ]
"""


def python312() -> Path:
    """The Python these tests run on (3.12 or newer, as the package), outside any virtualenv."""
    return Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"


@pytest.mark.timeout(3600)  # a virtualenv with ansible and molecule, a run, a scenario, an image
def test_every_quickstart_command_works(cluster, tmp_path):
    commands = quickstart()
    domain = f"q{uuid.uuid4().hex[:8]}.example.com"
    checkout = tmp_path / "ansible-operator"
    checkout.mkdir()
    shutil.copy(REPO / "pyproject.toml", checkout)
    shutil.copy(REPO / "README.md", checkout)
    shutil.copytree(
        REPO / "operator",
        checkout / "operator",
        ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"),
    )
    home = tmp_path / "home"
    home.mkdir()
    python_bin = tmp_path / "python-bin"
    python_bin.mkdir()
    python = python312()
    (python_bin / "python3.12").symlink_to(python)
    env = {
        "PATH": f"{python_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "ANSIBLE_NOCOLOR": "1",
        "KUBECONFIG": str(cluster.kubeconfig),
        "ANSIBLE_OPERATOR_TEST_KUBECONFIG": str(cluster.kubeconfig),
        "ANSIBLE_OPERATOR_CACHE_DIR": str(binaries.cache_root()),
        "TEST_OPERATOR_NAMESPACE": f"quick-{uuid.uuid4().hex[:8]}",
    }
    script = ["set -euo pipefail", f"cd {shlex.quote(str(checkout))}"]
    for command in commands:
        command = command.replace("--domain example.com", f"--domain {domain}")
        script.append(f"printf '%s\\n' {shlex.quote('$ ' + command)}")
        if command.startswith("$EDITOR "):
            script.append(edit())
        elif command.split()[:2] == ["make", "run"]:
            script.append(until_successful(command))
        else:
            script.append(command)
        script.append("printf '(%s s in)\\n' $SECONDS")  # each command's time, for a slow one
    project = checkout.parent / "memcached-operator"
    try:
        done = subprocess.run(
            ["bash", "-c", "\n".join(script)],
            env=env,
            capture_output=True,
            text=True,
            timeout=3500,
        )
        print(done.stdout[-30000:], done.stderr[-10000:])
        assert done.returncode == 0, f"a quickstart command failed: {done.stderr[-3000:]}"
        for command in commands:
            assert f"$ {command.replace('--domain example.com', f'--domain {domain}')}" in (
                done.stdout
            ), "every command ran"
        assert "[molecule] passed: memcached" in done.stdout
        # make deploy on a cluster where no container runs says so (issue 39, until Pods run)
        assert image_command.NO_CONTAINER_RUNS in done.stderr
        with cluster.api_client() as api_client:
            apps = client.AppsV1Api(api_client)
            deployment = apps.read_namespaced_deployment(
                "memcached-operator-controller-manager", "memcached-operator-system"
            )
            (container,) = deployment.spec.template.spec.containers
            assert container.image == "registry.example.com/memcached-operator:0.1.0"
        # The project's README installs the runtime the same way: from where pip got it.
        readme = (project / "README.md").read_text(encoding="utf-8")
        (line,) = [line for line in readme.splitlines() if line.startswith("pip install ")]
        requirement = f"ansible-operator-py[molecule] @ {checkout.as_uri()}"
        newest = ansible_cores.NEWEST
        assert line == f"pip install '{requirement}' '{newest.package}'"
        # A new project's core is the newest: the quickstart's virtualenv (make run, molecule)
        # and the image the project's Dockerfile built.
        ansible_operator = str(home / ".venvs/ansible-operator/bin/ansible-operator")
        in_image = ["dev-image", "podman", "--", "run", "--rm", "--entrypoint=ansible-operator",
                    "registry.example.com/memcached-operator:0.1.0"]  # fmt: skip
        for where in ([], in_image):
            version = subprocess.run(
                [ansible_operator, *where, "version"],
                env=env, capture_output=True, text=True, timeout=300, check=True,
            ).stdout  # fmt: skip
            assert f'ansible-core version: "{newest.name}.' in version, (where, version)
        pip = home / ".venvs/ansible-operator/bin/pip"
        resolved = subprocess.run(
            [str(pip), "install", "--dry-run", "--no-deps", "--quiet", requirement, newest.package],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert resolved.returncode == 0, resolved.stderr
    finally:
        if (project / "Makefile").exists():
            subprocess.run(
                ["bash", "-c", ". ~/.venvs/ansible-operator/bin/activate && make undeploy "
                 "IMG=registry.example.com/memcached-operator:0.1.0"],
                cwd=project, env=env, capture_output=True, text=True, timeout=300,
            )  # fmt: skip
        with cluster.api_client() as api_client:
            remove_crds(api_client, [f"memcacheds.cache.{domain}"])
