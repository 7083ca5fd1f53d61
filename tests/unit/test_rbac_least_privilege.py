"""config/rbac grants the operator's ServiceAccount what it uses, and nothing else.

The need is derived, not restated: from watches.yaml (each watched kind, its finalizer, its
blacklist, its related resources), from the example roles (every task's module, the kinds its
arguments and templates name, and the requests that module sends) and from the runtime's own
requests, each named with the code of the package that sends it (checked to still be there, so
a runtime that stops sending a request fails here until its rule goes too). Then each Role and
ClusterRole bound to the ServiceAccount must grant exactly its share of that need: a rule added
beyond it fails, and so does a task whose requests no rule covers. docs/security.md explains
the rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "operator/ansible_operator"
RBAC = REPO / "config/rbac"
WATCHES: list[dict[str, Any]] = yaml.safe_load((REPO / "watches.yaml").read_text())

Grant = tuple[str, str, str]  # (API group, resource or resource/subresource, verb)

# The Roles and ClusterRoles config/rbac binds to the operator's ServiceAccount.
MANAGER = "manager-role"  # the runtime's and the roles' work on the watched namespaces
LEADER_ELECTION = "leader-election-role"  # in the operator's own namespace
METRICS_AUTH = "metrics-auth-role"  # checking who scrapes /metrics
WEBHOOK_CERTIFICATE = "webhook-certificate-role"  # the conversion webhook's shared certificate
SERVICE_ACCOUNT = "controller-manager"

# Kinds the roles name that are not the repository's CRDs: their group and resource.
BUILTIN_KINDS = {
    ("v1", "ConfigMap"): ("", "configmaps"),
    ("v1", "Event"): ("", "events"),
    ("v1", "PersistentVolumeClaim"): ("", "persistentvolumeclaims"),
    ("v1", "Pod"): ("", "pods"),
    ("v1", "Secret"): ("", "secrets"),
    ("v1", "Service"): ("", "services"),
    ("apps/v1", "Deployment"): ("apps", "deployments"),
    ("apps/v1", "StatefulSet"): ("apps", "statefulsets"),
    ("batch/v1", "Job"): ("batch", "jobs"),
}
# Modules that send no request to the API server: requeue_after tells the operator through
# its result, osdk_metric posts to the operator's own user-metrics endpoint.
NO_API = {"operator_sdk.util.requeue_after", "operator_sdk.util.osdk_metric"}


class Need:
    """A request the runtime sends, and where in the package it is sent."""

    def __init__(self, group: str, resource: str, verb: str, module: str, code: str) -> None:
        self.grant: Grant = (group, resource, verb)
        self.module = module
        self.code = code

    def __repr__(self) -> str:
        return f"{'/'.join(self.grant)} ({self.module})"


_CRDS = ("apiextensions.k8s.io", "customresourcedefinitions")
_WEBHOOK = "runtime/manager/conversion_webhook.py"
# The runtime's requests on each watched kind; "{}" is the kind's resource.
PER_KIND = [
    Need("", "{}", "get", "runtime/control/reconciler.py", "await self.client.get(resource.path("),
    # One informer per watched kind: it lists, then watches.
    Need("", "{}", "list", "kube/informer.py", "list_pages(self._client, path"),
    Need("", "{}", "watch", "kube/informer.py", "stream = self._client.watch("),
    Need(
        "",
        "{}/status",
        "update",
        "runtime/control/status.py",
        'client.request("PUT", path + "/status"',
    ),
]
# ... on a kind whose watch has a finalizer: added and removed with a JSON patch.
PER_FINALIZER = [
    Need("", "{}", "patch", "runtime/control/finalizers.py", '"PATCH", path, body=ops'),
]
# ... on each kind a role writes (not blacklisted): the dependent watches list and watch it.
PER_DEPENDENT = [
    Need("", "{}", "list", "runtime/control/dependents.py", "return self._sources.kind(kind.gvk"),
    Need("", "{}", "watch", "runtime/control/dependents.py", "return self._sources.kind(kind.gvk"),
]
# ... on each kind a watch's relatedResources name: their informers list and watch it.
PER_RELATED = [
    Need("", "{}", "list", "runtime/control/related.py", "informer = self._sources.kind("),
    Need("", "{}", "watch", "runtime/control/related.py", "informer = self._sources.kind("),
]
MANAGER_RUNTIME = [
    # the conversion webhook: the CRDs it converts for, and their client configuration
    Need(*_CRDS, "list", _WEBHOOK, "found = await self.client.get(CRD_PATH)"),
    Need(*_CRDS, "get", _WEBHOOK, 'self.client.get(f"{CRD_PATH}/{crd_name}")'),
    Need(*_CRDS, "patch", _WEBHOOK, '"PATCH", f"{CRD_PATH}/{crd_name}",'),
    # Warning and Normal Events on the CRs
    Need(
        "",
        "events",
        "create",
        "runtime/observe/recorder.py",
        'request("POST", f"/api/v1/namespaces/',
    ),
]
LEASES = ("coordination.k8s.io", "leases")
LEADER_ELECTION_RUNTIME = [
    Need(*LEASES, "get", "runtime/manager/leader.py", "self._client.get(self._path)"),
    Need(*LEASES, "list", "runtime/manager/shards.py", "lease_collection(self.config.namespace)"),
    Need(*LEASES, "watch", "runtime/manager/leader.py", "informer = Informer("),
    Need(*LEASES, "create", "runtime/manager/leader.py", 'request("POST", self._collection'),
    Need(*LEASES, "update", "runtime/manager/leader.py", 'request("PUT", self._path'),
    Need(*LEASES, "delete", "runtime/manager/leader.py", 'request("DELETE", self._path'),
]
_SECRETS = ("", "secrets")
WEBHOOK_CERTIFICATE_RUNTIME = [
    Need(*_SECRETS, "get", _WEBHOOK, 'await self.client.get(f"{path}/{name}")'),
    Need(*_SECRETS, "create", _WEBHOOK, 'await self.client.request("POST", path, body=body)'),
    Need(*_SECRETS, "update", _WEBHOOK, 'self.client.request("PUT", f"{path}/{name}", body=body)'),
]
METRICS_AUTH_RUNTIME = [
    Need(
        "authentication.k8s.io",
        "tokenreviews",
        "create",
        "kube/reviews.py",
        '"/apis/authentication.k8s.io/v1/tokenreviews"',
    ),
    Need(
        "authorization.k8s.io",
        "subjectaccessreviews",
        "create",
        "kube/reviews.py",
        '"/apis/authorization.k8s.io/v1/subjectaccessreviews"',
    ),
]


# -- what the roles send -------------------------------------------------------------------------


def crd_resources() -> dict[tuple[str, str], tuple[str, str]]:
    """(apiVersion, kind) → (group, plural) of every CRD in config/crd/bases."""
    found = {}
    for path in sorted((REPO / "config/crd/bases").glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())["spec"]
        for version in spec["versions"]:
            api_version = f"{spec['group']}/{version['name']}"
            found[(api_version, spec["names"]["kind"])] = (spec["group"], spec["names"]["plural"])
    return found


def resource_of(api_version: Any, kind: Any, where: str) -> tuple[str, str]:
    """The group and resource of a kind a task names; a kind this test does not know fails."""
    if not isinstance(api_version, str) or not isinstance(kind, str) or "{{" in api_version + kind:
        pytest.fail(f"{where}: apiVersion and kind must be literal to be checked against RBAC")
    key = (api_version, kind)
    known = {**BUILTIN_KINDS, **crd_resources()}
    if key not in known:
        pytest.fail(f"{where}: {kind} ({api_version}) is unknown here: add it to BUILTIN_KINDS")
    return known[key]


def tasks_of(items: Any) -> Iterator[dict[str, Any]]:
    """Every task of a task list, blocks entered."""
    for task in items or []:
        yield task
        for section in ("block", "rescue", "always"):
            yield from tasks_of(task.get(section))


def template_kinds(path: Path) -> list[tuple[Any, Any]]:
    """(apiVersion, kind) of each document of a manifest template, read from its top-level
    lines (the template is Jinja, not YAML, until Ansible renders it)."""
    kinds: list[tuple[Any, Any]] = []
    for document in re.split(r"(?m)^---\s*$", path.read_text()):
        api_version = re.search(r"(?m)^apiVersion:\s*(\S+)\s*$", document)
        kind = re.search(r"(?m)^kind:\s*(\S+)\s*$", document)
        if api_version and kind:
            kinds.append((api_version.group(1), kind.group(1)))
    return kinds


def k8s_objects(args: dict[str, Any], role: Path, where: str) -> list[tuple[str, str]]:
    """The (group, resource) of each object a kubernetes.core.k8s task names."""
    if "template" in args:
        template = args["template"]
        name = template["path"] if isinstance(template, dict) else template
        kinds = template_kinds(role / "templates" / name)
    elif "definition" in args:
        definition = args["definition"]
        documents = definition if isinstance(definition, list) else [definition]
        kinds = [(d.get("apiVersion"), d.get("kind")) for d in documents]
    else:
        kinds = [(args.get("api_version", "v1"), args.get("kind"))]
    if not kinds:
        pytest.fail(f"{where}: no object found in the task")
    return [resource_of(api_version, kind, where) for api_version, kind in kinds]


def role_requests(role: Path, blacklist: set[tuple[str, str]]) -> tuple[set[Grant], set[Grant]]:
    """What the role's tasks send through the proxy, and what the operator's dependent watches
    then need for the kinds it writes: (role's requests, dependent watches' requests)."""
    sent: set[Grant] = set()
    written: set[tuple[str, str]] = set()
    for path in sorted((role / "tasks").glob("*.yml")):
        for task in tasks_of(yaml.safe_load(path.read_text())):
            modules = [key for key in task if "." in key]
            if not modules:
                continue
            module, args = modules[0], task[modules[0]] or {}
            where = f"{path.relative_to(REPO)}: {task.get('name', module)}"
            if module.startswith("ansible.builtin.") or module in NO_API:
                continue
            if module == "kubernetes.core.k8s":
                # kubernetes.core reads the object, then creates it or patches it (apply too;
                # force replaces it); state: absent reads it, then deletes it.
                if args.get("state") == "absent":
                    verbs = {"get", "delete"}
                else:
                    verbs = {"get", "create", "update" if args.get("force") else "patch"}
                for group, resource in k8s_objects(args, role, where):
                    sent |= {(group, resource, verb) for verb in verbs}
                    if args.get("state") != "absent":
                        written.add((group, resource))
            elif module == "kubernetes.core.k8s_info":
                api_version = args.get("api_version", "v1")
                group, resource = resource_of(api_version, args.get("kind"), where)
                # by name a get, else a list (its `wait` polls with the same request)
                sent.add((group, resource, "get" if args.get("name") else "list"))
            elif module == "operator_sdk.util.k8s_status":
                # reads the object, then merge-patches /status (force: replaces it)
                group, resource = resource_of(args.get("api_version"), args.get("kind"), where)
                verb = "update" if args.get("force") or args.get("replace") else "patch"
                sent |= {(group, resource, "get"), (group, f"{resource}/status", verb)}
            elif module == "operator_sdk.util.k8s_event":
                # reads the Event by name, then creates or patches it (state: absent deletes
                # it), and reads the object it is about
                absent = args.get("state") == "absent"
                verbs = {"get", "delete"} if absent else {"get", "create", "patch"}
                sent |= {("", "events", verb) for verb in verbs}
                involved = args.get("involvedObject")
                if involved and not absent:
                    kind = resource_of(involved.get("apiVersion"), involved.get("kind"), where)
                    sent.add((*kind, "get"))
            else:
                pytest.fail(f"{where}: {module} is unknown here: say which requests it sends")
    watched = {(g, r, need.grant[2]) for g, r in written - blacklist for need in PER_DEPENDENT}
    return sent, watched


def watch_roles(watch: dict[str, Any]) -> list[Path]:
    assert "playbook" not in watch, "teach this test to follow a playbook to its roles"
    roles = [REPO / "roles" / watch["role"]]
    if (watch.get("finalizer") or {}).get("role"):
        roles.append(REPO / "roles" / watch["finalizer"]["role"])
    return roles


def manager_need() -> set[Grant]:
    need = {n.grant for n in MANAGER_RUNTIME}
    for watch in WATCHES:
        api_version = f"{watch['group']}/{watch['version']}"
        group, plural = resource_of(api_version, watch["kind"], "watches.yaml")
        per_kind = PER_KIND + (PER_FINALIZER if watch.get("finalizer") else [])
        need |= {(group, n.grant[1].format(plural), n.grant[2]) for n in per_kind}
        blacklist = {
            resource_of(f"{b['group']}/{b['version']}".lstrip("/"), b["kind"], "blacklist")
            for b in watch.get("blacklist") or []
        }
        for role in watch_roles(watch):
            sent, watched = role_requests(role, blacklist)
            need |= sent | watched
        for related in watch.get("relatedResources") or []:
            api_version = f"{related.get('group') or ''}/{related['version']}".lstrip("/")
            group, plural = resource_of(api_version, related["kind"], "relatedResources")
            need |= {(group, plural, n.grant[2]) for n in PER_RELATED}
    return need


# -- what config/rbac grants ---------------------------------------------------------------------


def rbac_documents() -> list[dict[str, Any]]:
    return [
        doc
        for path in sorted(RBAC.glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if isinstance(doc, dict) and doc.get("kind")
    ]


def roles_by_name() -> dict[str, dict[str, Any]]:
    return {
        d["metadata"]["name"]: d for d in rbac_documents() if d["kind"] in ("Role", "ClusterRole")
    }


def granted(role: dict[str, Any]) -> set[Grant]:
    """Every (group, resource, verb) a Role's rules grant; "*" stays "*", so it is never needed."""
    return {
        (group, resource, verb)
        for rule in role.get("rules") or []
        for group in rule.get("apiGroups") or []
        for resource in rule.get("resources") or []
        for verb in rule["verbs"]
    }


def compare(name: str, need: set[Grant]) -> None:
    grants = granted(roles_by_name()[name])
    extra = sorted(grants - need)
    missing = sorted(need - grants)
    assert not extra, f"{name} grants what nothing uses: {extra}"
    assert not missing, f"{name} lacks what is used: {missing}"


def test_the_runtime_still_sends_each_request_its_rules_are_for():
    needs = [*PER_KIND, *PER_FINALIZER, *PER_DEPENDENT, *PER_RELATED, *MANAGER_RUNTIME]
    needs += [*LEADER_ELECTION_RUNTIME, *METRICS_AUTH_RUNTIME, *WEBHOOK_CERTIFICATE_RUNTIME]
    for need in needs:
        source = " ".join((PACKAGE / need.module).read_text().split())
        assert need.code in source, f"{need}: `{need.code}` is gone; is the rule still needed?"


def test_the_manager_role_grants_what_the_runtime_and_the_roles_use():
    compare(MANAGER, manager_need())


def test_the_leader_election_role_grants_what_the_leases_use():
    compare(LEADER_ELECTION, {n.grant for n in LEADER_ELECTION_RUNTIME})


def test_the_webhook_certificate_role_grants_its_secret():
    compare(WEBHOOK_CERTIFICATE, {n.grant for n in WEBHOOK_CERTIFICATE_RUNTIME})
    # the Secret the webhook names after its Service, as config/default names that Service
    prefix = yaml.safe_load((REPO / "config/default/kustomization.yaml").read_text())["namePrefix"]
    service = yaml.safe_load((REPO / "config/webhook/service.yaml").read_text())["metadata"]["name"]
    named = [r for r in roles_by_name()[WEBHOOK_CERTIFICATE]["rules"] if "get" in r["verbs"]]
    assert [r.get("resourceNames") for r in named] == [[f"{prefix}{service}-cert"]]


def test_the_metrics_auth_role_grants_the_two_reviews():
    compare(METRICS_AUTH, {n.grant for n in METRICS_AUTH_RUNTIME})


def test_the_service_account_is_bound_to_those_roles_only():
    bound = set()
    for doc in rbac_documents():
        if doc["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            subjects = {(s["kind"], s["name"]) for s in doc["subjects"]}
            if ("ServiceAccount", SERVICE_ACCOUNT) in subjects:
                bound.add(doc["roleRef"]["name"])
    assert bound == {MANAGER, LEADER_ELECTION, METRICS_AUTH, WEBHOOK_CERTIFICATE}


def test_the_metrics_reader_role_reads_metrics_only():
    role = roles_by_name()["metrics-reader"]
    assert role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


def test_the_runs_reader_role_reads_run_records_only():
    role = roles_by_name()["runs-reader"]
    assert role["rules"] == [{"nonResourceURLs": ["/runs", "/runs/*"], "verbs": ["get"]}]


@pytest.mark.parametrize("path", sorted(RBAC.glob("*.yaml")), ids=lambda p: p.name)
def test_every_rule_says_why(path):
    """Each rule is directly under a comment that gives its reason."""
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^\s*- (apiGroups|nonResourceURLs):", line):
            above = lines[i - 1].strip()
            assert above.startswith("#"), f"{path.name}:{i + 1}: a rule without its reason"
