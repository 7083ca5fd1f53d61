"""The manager's wiring: a controller and its informers per watch, dependents reaching their
owners' controllers, the path flags and the user metrics URL reaching runs, all without a
cluster (an in-memory API server and a scripted runner stand in)."""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from ansible_operator.core.watches import GVK, Watch
from ansible_operator.kube.client import ResourceInfo
from ansible_operator.kube.config import Credentials
from ansible_operator.runner.versions import AnsibleVersions
from ansible_operator.runtime.config.flags import build_run_settings
from ansible_operator.runtime.control.controller import Controller
from ansible_operator.runtime.control.reconcile import Request
from ansible_operator.runtime.manager.operator import Inputs, Operator, StartupError, prepare
from ansible_operator.runtime.observe import user_metrics
from tests.unit.fake_api import FakeApi
from tests.unit.fake_runner import ScriptedRunner, succeeded

THINGS = ResourceInfo("test.example.com", "v1", "Thing", "things", True)
GADGETS = ResourceInfo("test.example.com", "v1", "Gadget", "gadgets", True)
THING = Watch(gvk=GVK("test.example.com", "v1", "Thing"), role="/roles/thing")
GADGET = Watch(gvk=GVK("test.example.com", "v1", "Gadget"), role="/roles/gadget")
ROOT = Path(__file__).resolve().parents[2]
CREDS = Credentials(server="https://127.0.0.1:1", insecure=True)


def make_operator(
    api: FakeApi, runner: ScriptedRunner | None, *argv: str, namespaces: str = ""
) -> Operator:
    settings = build_run_settings(
        ["--metrics-bind-address=0", "--health-probe-bind-address=0", *argv],
        {"PATH": os.environ.get("PATH", ""), "WATCH_NAMESPACE": namespaces},
    )
    ansible = AnsibleVersions(core="2.18.6", runner="2.4.1", playbook="/x") if runner else None
    return Operator(
        Inputs(settings, [THING, GADGET], CREDS),
        client=api,  # type: ignore[arg-type]
        runner=runner,
        ansible=ansible,
    )


def api_with_thing() -> FakeApi:
    api = FakeApi(THINGS, GADGETS)
    api.create(
        THINGS,
        {
            "apiVersion": "test.example.com/v1",
            "kind": "Thing",
            "metadata": {"name": "a", "namespace": "ns"},
            "spec": {},
        },
    )
    return api


async def process_one(controller: Controller) -> None:
    key = await controller.queue.get()
    try:
        await controller._process(key)
    finally:
        controller.queue.done(key)


def test_each_watch_gets_a_controller_fed_by_an_informer_per_namespace() -> None:
    op = make_operator(FakeApi(THINGS, GADGETS), ScriptedRunner([]), namespaces="a,b")
    assert [c.watch for c in op.controllers] == [THING, GADGET]
    assert [(i.gvk, i.namespace) for i in op.informers] == [
        (THING.gvk, "a"),
        (THING.gvk, "b"),
        (GADGET.gvk, "a"),
        (GADGET.gvk, "b"),
    ]
    op.informers[2]._handler("ADDED", {"metadata": {"name": "x", "namespace": "a"}})
    thing, gadget = op.controllers
    assert (len(thing.queue), len(gadget.queue)) == (0, 1)
    everywhere = make_operator(FakeApi(THINGS, GADGETS), ScriptedRunner([]))
    assert [i.namespace for i in everywhere.informers] == [None, None]


def test_a_dependent_change_before_the_first_list_reconciles_its_owner() -> None:
    # No informer has listed yet: the owner kind is found by discovery, not from an event.
    api = api_with_thing()
    runner = ScriptedRunner([succeeded()])
    op = make_operator(api, runner)
    thing = op.controllers[0]

    op.dependents.owners[THING.gvk].enqueue(Request(("ns", "a")))
    assert len(thing.queue) == 1
    asyncio.run(process_one(thing))

    assert len(runner.requests) == 1
    conditions = api.get_object(THINGS, "ns", "a")["status"]["conditions"]
    assert {c["type"]: c["status"] for c in conditions}["Successful"] == "True"


def test_runs_get_the_user_metrics_url_while_the_server_listens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(user_metrics.ADDRESS_ENV, "127.0.0.1:0")
    api = api_with_thing()
    runner = ScriptedRunner([succeeded()])
    op = make_operator(api, runner)

    async def scenario() -> str:
        await op.user_metrics_server.start()
        try:
            op.controllers[0].enqueue(Request(("ns", "a")))
            await process_one(op.controllers[0])
            return op.user_metrics_server.url
        finally:
            await op.user_metrics_server.stop()

    url = asyncio.run(scenario())
    assert runner.requests[0].extra_env == {user_metrics.URL_ENV: url}
    assert user_metrics.URL_ENV not in os.environ


def test_the_path_flags_reach_every_run_without_touching_os_environ(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANSIBLE_ROLES_PATH", raising=False)
    op = make_operator(
        FakeApi(), None, "--ansible-roles-path=/flag/roles", "--ansible-collections-path=/c"
    )
    assert op.runner.environ["ANSIBLE_ROLES_PATH"] == "/flag/roles"  # type: ignore[attr-defined]
    assert op.runner.environ["ANSIBLE_COLLECTIONS_PATH"] == "/c"  # type: ignore[attr-defined]
    assert "ANSIBLE_ROLES_PATH" not in os.environ


@pytest.fixture
def root_logging() -> Iterator[None]:
    """`prepare` configures the process's logging; put it back for the other tests."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_watches_find_roles_on_the_roles_path_flag_without_os_environ(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, root_logging: None
) -> None:
    monkeypatch.delenv("ANSIBLE_ROLES_PATH", raising=False)
    project(tmp_path, monkeypatch, roles=tmp_path / "elsewhere")

    watches = prepare([f"--ansible-roles-path={tmp_path / 'elsewhere'}"]).watches

    assert watches[0].role == str(tmp_path / "elsewhere" / "thing")
    assert "ANSIBLE_ROLES_PATH" not in os.environ


def project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, roles: Path, user: dict | None = None
) -> None:
    """A watches.yaml of one kind whose role is under ``roles``, and a kubeconfig whose user is
    ``user`` (a token by default), in the working directory."""
    monkeypatch.chdir(tmp_path)
    (roles / "thing" / "tasks").mkdir(parents=True)
    (tmp_path / "watches.yaml").write_text(
        yaml.safe_dump(
            [{"group": "test.example.com", "version": "v1", "kind": "Thing", "role": "thing"}]
        )
    )
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": user or {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(kubeconfig))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))


def test_a_client_certificate_that_is_not_one_is_refused_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, root_logging: None
) -> None:
    not_pem = base64.b64encode(b"not a certificate").decode()
    user = {"client-certificate-data": not_pem, "client-key-data": not_pem}
    project(tmp_path, monkeypatch, roles=tmp_path / "roles", user=user)
    with pytest.raises(StartupError, match="CA or client certificate cannot be loaded"):
        prepare([f"--ansible-roles-path={tmp_path / 'roles'}"])


def test_a_conversion_with_the_webhook_turned_off_is_refused_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, root_logging: None
) -> None:
    project(tmp_path, monkeypatch, roles=tmp_path / "roles")
    (tmp_path / "roles" / "thing" / "meta").mkdir()
    for spec in ("conversion.yml", "argument_specs.yml"):  # the nginx example's kind and role
        shutil.copy(ROOT / "roles/nginx/meta" / spec, tmp_path / "roles/thing/meta")
    watch = {"group": "operator.example.com", "version": "v1alpha2", "kind": "NginxOperator"}
    (tmp_path / "watches.yaml").write_text(yaml.safe_dump([{**watch, "role": "thing"}]))
    roles = f"--ansible-roles-path={tmp_path / 'roles'}"
    assert prepare([roles]).webhook_at == ("0.0.0.0", 9443)  # its default
    with pytest.raises(StartupError, match="--webhook-bind-address=0, but NginxOperator"):
        prepare([roles, "--webhook-bind-address=0"])
