"""A kubeconfig user's exec credential plugin: run, its token cached until it expires, its
failures one line each (kube/exec_plugin.py, through kube/config.py)."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from ansible_operator.kube import ConfigError, KubeClient, Unreachable, auth_headers, config
from ansible_operator.kube.exec_plugin import ExecPluginError

V1 = "client.authentication.k8s.io/v1"

# A plugin: records each call (its KUBERNETES_EXEC_INFO and PLUGIN_SAYS) in calls.jsonl, then
# prints the answer file's text, or fails with exit 3 when there is none.
PLUGIN = """\
import json, os, pathlib, sys
here = pathlib.Path(sys.argv[1])
with (here / "calls.jsonl").open("a") as calls:
    calls.write(json.dumps({"info": json.loads(os.environ["KUBERNETES_EXEC_INFO"]),
                            "says": os.environ.get("PLUGIN_SAYS")}) + "\\n")
answer = here / "answer.json"
if not answer.exists():
    print("token expired: log in again", file=sys.stderr)
    sys.exit(3)
print(answer.read_text())
"""


def kubeconfig(tmp_path: Path, user: dict) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    (tmp_path / "plugin.py").write_text(PLUGIN)
    return tmp_path


def answer(where: Path, token: str | None = "t-1", expires: datetime | None = None, **extra):
    status: dict = {**({"token": token} if token else {}), **extra}
    if expires is not None:
        status["expirationTimestamp"] = expires.strftime("%Y-%m-%dT%H:%M:%SZ")
    (where / "answer.json").write_text(
        json.dumps({"apiVersion": V1, "kind": "ExecCredential", "status": status})
    )


def calls(where: Path) -> list[dict]:
    text = (where / "calls.jsonl").read_text() if (where / "calls.jsonl").exists() else ""
    return [json.loads(line) for line in text.splitlines()]


def exec_user(where: Path, **more) -> dict:
    return {
        "exec": {
            "apiVersion": V1,
            "command": sys.executable,
            "args": [str(where / "plugin.py"), str(where)],
            "env": [{"name": "PLUGIN_SAYS", "value": "hello"}],
            **more,
        }
    }


def test_the_token_is_the_plugins_and_kept_until_it_expires(plugin):
    answer(plugin, "t-1", datetime.now(UTC) + timedelta(hours=1))
    creds = config.from_kubeconfig(kubeconfig(plugin, exec_user(plugin)))
    assert auth_headers(creds) == {"Authorization": "Bearer t-1"}
    assert creds.bearer_token() == "t-1"
    made = calls(plugin)
    assert len(made) == 1  # the second ask was answered from the cache
    assert made[0]["says"] == "hello"
    assert made[0]["info"] == {
        "apiVersion": V1,
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }


def test_an_expired_token_is_asked_for_again(plugin):
    answer(plugin, "t-1", datetime.now(UTC) + timedelta(seconds=5))  # within the early margin
    creds = config.from_kubeconfig(kubeconfig(plugin, exec_user(plugin)))
    assert creds.bearer_token() == "t-1"
    answer(plugin, "t-2", datetime.now(UTC) + timedelta(hours=1))
    assert creds.bearer_token() == "t-2"
    assert creds.bearer_token() == "t-2"
    assert len(calls(plugin)) == 2


def test_a_failing_plugin_is_one_line_and_unreachable_for_a_client(plugin):
    creds = config.from_kubeconfig(kubeconfig(plugin, exec_user(plugin)))
    with pytest.raises(ExecPluginError) as err:
        creds.bearer_token()
    assert str(err.value) == (
        f"{plugin / 'kubeconfig'}: user 'u': exec plugin {sys.executable!r} failed (exit 3): "
        "token expired: log in again"
    )
    with pytest.raises(Unreachable, match="token expired: log in again"):
        auth_headers(creds)


def test_a_client_request_without_a_token_is_unreachable(plugin):
    async def ask() -> None:
        client = KubeClient(config.from_kubeconfig(kubeconfig(plugin, exec_user(plugin))))
        try:
            await client.get("/version")
        finally:
            await client.close()

    with pytest.raises(Unreachable, match=r"failed \(exit 3\)"):
        asyncio.run(ask())


@pytest.mark.parametrize(
    ("status", "error"),
    [
        ({"clientCertificateData": "x", "clientKeyData": "y"}, "gave a client certificate"),
        ({}, "gave no token"),
        ({"token": "t", "expirationTimestamp": "soon"}, "bad expirationTimestamp 'soon'"),
    ],
)
def test_answers_without_a_usable_token(plugin, status, error):
    (plugin / "answer.json").write_text(
        json.dumps({"apiVersion": V1, "kind": "ExecCredential", "status": status})
    )
    creds = config.from_kubeconfig(kubeconfig(plugin, exec_user(plugin)))
    with pytest.raises(ExecPluginError, match=error):
        creds.bearer_token()


def test_an_answer_of_another_version_or_no_json(plugin):
    (plugin / "answer.json").write_text(
        json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential"})
    )
    creds = config.from_kubeconfig(kubeconfig(plugin, exec_user(plugin)))
    with pytest.raises(
        ExecPluginError, match=r"not the 'client\.authentication\.k8s\.io/v1' asked"
    ):
        creds.bearer_token()
    (plugin / "answer.json").write_text("Please log in")
    creds = config.from_kubeconfig(kubeconfig(plugin, exec_user(plugin)))
    with pytest.raises(ExecPluginError, match="printed no ExecCredential JSON"):
        creds.bearer_token()


def test_a_missing_command_says_how_to_install_it(tmp_path):
    user = {
        "exec": {
            "apiVersion": V1,
            "command": "gke-gcloud-auth-plugin-not-here",
            "installHint": "Install gke-gcloud-auth-plugin for use with kubectl",
        }
    }
    creds = config.from_kubeconfig(kubeconfig(tmp_path, user))
    with pytest.raises(ExecPluginError) as err:
        creds.bearer_token()
    assert str(err.value).endswith(
        "exec plugin 'gke-gcloud-auth-plugin-not-here' is not installed: "
        "Install gke-gcloud-auth-plugin for use with kubectl"
    )


def test_a_relative_command_is_the_kubeconfigs_neighbour(tmp_path):
    user = {"exec": {"apiVersion": V1, "command": "./bin/plugin"}}
    creds = config.from_kubeconfig(kubeconfig(tmp_path, user))
    assert creds.exec_plugin is not None
    assert creds.exec_plugin.command == str(tmp_path / "bin" / "plugin")


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ({"apiVersion": V1}, "exec has no command"),
        ({"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "x"}, "is not one of"),
        ({"apiVersion": V1, "command": "x", "interactiveMode": "Always"}, "wants a terminal"),
    ],
)
def test_exec_sections_this_client_cannot_run_are_refused_at_load(tmp_path, spec, error):
    with pytest.raises(ConfigError, match=error):
        config.from_kubeconfig(kubeconfig(tmp_path, {"exec": spec}))


def test_an_auth_provider_is_refused_at_load(tmp_path):
    with pytest.raises(ConfigError, match="auth-provider plugin"):
        config.from_kubeconfig(kubeconfig(tmp_path, {"auth-provider": {"name": "gcp"}}))


def test_a_client_runs_a_due_plugin_off_its_event_loop(plugin, monkeypatch):
    answer(plugin, "t-1", datetime.now(UTC) + timedelta(hours=1))
    user = exec_user(plugin)
    path = kubeconfig(plugin, user)
    creds = config.from_kubeconfig(path)
    assert creds.exec_plugin is not None and creds.exec_plugin.due()
    threads = []
    run = type(creds.exec_plugin)._run

    def recording(self):
        threads.append(threading.current_thread())
        return run(self)

    monkeypatch.setattr(type(creds.exec_plugin), "_run", recording)

    async def ask() -> None:
        client = KubeClient(creds)  # the server is a port nobody listens on
        try:
            for _ in range(2):
                with pytest.raises(Unreachable):
                    await client.get("/version")
        finally:
            await client.close()

    asyncio.run(ask())
    assert len(threads) == 1 and threads[0] is not threading.main_thread()
    assert not creds.exec_plugin.due()
