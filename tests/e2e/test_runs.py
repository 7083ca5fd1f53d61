"""The run records' consumers against a real operator on the local cluster (issue 26, item 2):
``ansible-operator runs`` (list, show, --output json, --follow) at the operator's URL and
through port-forwards with two replicas merged, what works with ``--metrics-require-rbac``
(the kubeconfig's own token, --token, a client certificate), and the runs page in headless
Chromium (Debian's ``chromium`` and ``chromium-driver``, driven by Selenium), on the operator's
port, a screenshot of each view kept in ``build/test-artifacts/runs-page/``; and that without
``--metrics-require-rbac`` nothing of them is served beyond loopback, ``kubectl proxy`` included.

The operators run on this machine, not in Pods: kwok plays the kubelet. A Pod object labelled
as config/manager labels the operator's stands for each: kwok's PortForward object of its name
sends a port-forward to the operator's metrics port, and its status's IP, set to this machine's
address, lets the API server's Pod proxy reach that port too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import select
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
import yaml
from kubernetes import client

from ansible_operator.devcluster import binaries
from ansible_operator.devcluster.processes import free_ports
from ansible_operator.kube import KubeClient, load_credentials, portforward

from .cluster import fresh_namespace
from .crds import GROUP, VERSION, install_crds, kind_crd
from .operators import STRUCTURED_LOG, Operator
from .rbac import account_binding
from .resources import new_cr, wait_condition
from .waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.long]

KIND, PLURAL = "Stepper", "steppers"
CLI = Path(sys.executable).parent / "ansible-operator"
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "build" / "test-artifacts" / "runs-page"
FAILED_MESSAGE = "port 11211 is taken"
RED = "rgb(211, 47, 47)"  # .bar.failed in runtime/runs_page.html.j2


@pytest.fixture(scope="module")
def steppers(cluster) -> None:
    with cluster.api_client() as api_client:
        install_crds(api_client, [kind_crd(KIND)])


def runs(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), "runs", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def runs_json(*args: str) -> dict:
    done = runs(*args, "--output", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def host_address() -> str:
    """This machine's address that is not loopback: the API server proxies to no loopback
    Pod IP ("address not allowed")."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: only the route is looked up
        address = probe.getsockname()[0]
    assert not address.startswith("127."), "this machine needs a non-loopback IPv4 address"
    return address


def start(operator: Operator, *args: str, bind: str = "127.0.0.1") -> str:
    """Start ``operator`` running the stepper role for Steppers; its metrics server's URL."""
    metrics_port, probe_port = free_ports(2)
    operator.write_watches([{"kind": KIND, "role": "stepper"}])
    operator.start(
        f"--metrics-bind-address={bind}:{metrics_port}",
        f"--health-probe-bind-address=127.0.0.1:{probe_port}",
        *args,
    )
    scheme = "https" if "--metrics-secure" in args else "http"
    return f"{scheme}://127.0.0.1:{metrics_port}"


def make_stepper(crs, namespace: str, name: str, **spec) -> None:
    body = new_cr(KIND, name, {"seconds": 0.5, "broken": False, "portNumber": 11211, **spec})
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)


def failed_then_fixed(crs, namespace: str, url: str, name: str = "web") -> list[dict]:
    """A Stepper whose first run fails, then (its spec mended) one that succeeds; its runs,
    newest first."""
    make_stepper(crs, namespace, name, broken=True)
    of_it = ["--url", url, f"{KIND}/{name}", "-n", namespace]

    def failed() -> bool:
        listed = runs(*of_it, "-o", "json")
        return listed.returncode == 0 and any(
            run["outcome"] == "Failed" for run in json.loads(listed.stdout)["runs"]
        )

    wait_until(failed, what=f"a failed run of {name}", timeout=180)
    crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, name, {"spec": {"broken": False}}
    )
    wait_condition(crs, namespace, KIND, name, "Successful")

    def ended() -> list[dict] | None:
        found = runs_json(*of_it)["runs"]
        return found if found and found[0]["outcome"] != "Running" else None

    return wait_until(ended, what=f"the last run of {name} to end")


def api(url: str, path: str) -> dict:
    with urllib.request.urlopen(url + path, timeout=30) as resp:
        return json.loads(resp.read())


# -- the command at the operator's URL --------------------------------------------------------


def test_runs_lists_and_shows_runs(operator, crs, namespace, steppers):
    url = start(operator)
    history = failed_then_fixed(crs, namespace, url)
    newest, oldest = history[0], history[-1]
    assert newest["outcome"] == "Succeeded"
    assert (oldest["outcome"], oldest["trigger"]["reason"]) == ("Failed", "Created")
    mended = [run for run in history if run["trigger"]["reason"] == "SpecChanged"]
    assert [run["outcome"] for run in mended] == ["Succeeded"]
    failed_id = oldest["id"]

    listed = runs("--url", url, "-n", namespace)  # other tests' CRs are elsewhere
    assert listed.returncode == 0, listed.stderr
    header, *lines = listed.stdout.splitlines()
    assert header.split()[:3] == ["STARTED", "REPLICA", "CR"]
    assert len(lines) == len(history)
    assert [line.split()[-1] for line in lines] == [run["id"] for run in history]
    assert all(f"{KIND} {namespace}/web" in line for line in lines)
    assert "Succeeded" in lines[0]
    assert "  Created  " in lines[-1] and "  Failed  " in lines[-1]
    spec_changed = lines[history.index(mended[0])]
    assert "  SpecChanged  " in spec_changed and "  Succeeded  " in spec_changed
    assert all(f"  {run['replica']}  " in line for line, run in zip(lines, history, strict=True))

    shown = runs("--url", url, "show", f"{KIND}/web", failed_id[:12], "-n", namespace)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout.splitlines()
    assert text[0] == f"{KIND} {namespace}/web  run {failed_id}  replica {oldest['replica']}"
    assert f"outcome   Failed: {FAILED_MESSAGE}" in text
    bars = [line for line in text if "█" in line]
    names = [line[2 + 40 :].split(maxsplit=2)[2] for line in bars]  # after the 40-column bar
    assert names == ["Read the spec", "Take a while", "Check the port"]
    offsets = [len(line[2:]) - len(line[2:].lstrip()) for line in bars]
    assert offsets == sorted(offsets) and offsets[2] > offsets[0]  # placed by their start
    assert bars[2].startswith("✗") and not bars[0].startswith("✗")
    assert text[text.index(bars[2]) + 1].strip() == FAILED_MESSAGE

    record = runs_json("--url", url, "show", f"{KIND}/web", failed_id, "-n", namespace)
    group_version_kind = f"/runs/{GROUP}/{VERSION}/{KIND}/{namespace}/web/{failed_id}"
    assert record == api(url, group_version_kind)
    statuses = [(task["name"], task["status"]) for task in record["tasks"]]
    assert statuses == [
        ("Read the spec", "ok"),
        ("Take a while", "changed"),
        ("Check the port", "failed"),
    ]
    newest_shown = runs_json("--url", url, "show", f"{KIND}/web", "-n", namespace)
    assert newest_shown["id"] == newest["id"] and newest_shown["outcome"] == "Succeeded"

    missing = runs("--url", url, "show", f"{KIND}/nobody", "-n", namespace)
    assert missing.returncode == 1
    assert missing.stderr == (
        f"ansible-operator runs: no run records of 'nobody' in namespace {namespace}\n"
    )


def test_runs_follows_a_running_run(operator, crs, namespace, steppers):
    url = start(operator)
    make_stepper(crs, namespace, "slow", seconds=8)

    def running_a_while() -> bool:
        listed = runs("--url", url, f"{KIND}/slow", "-n", namespace, "-o", "json")
        if listed.returncode != 0:
            return False
        found = json.loads(listed.stdout)["runs"]
        return bool(found) and found[0]["outcome"] == "Running"

    wait_until(running_a_while, what="the slow run to start", timeout=180, every=0.2)
    followed = runs("--url", url, "show", f"{KIND}/slow", "-n", namespace, "--follow")
    assert followed.returncode == 0, followed.stderr
    renders = followed.stdout.split(f"{KIND} {namespace}/slow  run ")
    assert len(renders) >= 3  # "" before the first, then one drawing per change
    assert "running for" in renders[1]
    assert "outcome   Running" in renders[1]
    assert "outcome   Succeeded" in renders[-1]
    bars = [line for line in renders[-1].splitlines() if "█" in line]
    assert len(bars) == 4 and not any(line.startswith("✗") for line in bars)


# -- through the API server -------------------------------------------------------------------


def operator_pod(cluster, core, namespace: str, name: str, port: int, args: list[str]) -> None:
    """A Pod object standing for an operator replica on this machine (see the docstring)."""
    pod = {
        "metadata": {"name": name, "labels": {"control-plane": "controller-manager"}},
        "spec": {
            "containers": [
                {
                    "name": "manager",
                    "image": "controller:latest",
                    "args": args,
                    "ports": [{"name": "metrics", "containerPort": port}],
                }
            ],
        },
    }
    core.create_namespaced_pod(namespace, pod)
    wait_until(
        lambda: core.read_namespaced_pod(name, namespace).status.phase == "Running",
        what=f"Pod {name} Running",
    )
    address = host_address()
    core.patch_namespaced_pod_status(
        name,
        namespace,
        [
            {"op": "replace", "path": "/status/podIP", "value": address},
            {"op": "replace", "path": "/status/podIPs", "value": [{"ip": address}]},
        ],
    )
    forward = {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "PortForward",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"forwards": [{"ports": [port], "target": {"address": "127.0.0.1", "port": port}}]},
    }
    with cluster.api_client() as api_client:
        client.CustomObjectsApi(api_client).create_namespaced_custom_object(
            "kwok.x-k8s.io", "v1alpha1", namespace, "portforwards", forward
        )
    scheme = "https" if "--metrics-secure" in args else "http"
    wait_until(
        lambda: asyncio.run(forwarded_answer(cluster, namespace, name, port, scheme)),
        what=f"a port-forward to Pod {name} to reach its operator",
    )


async def forwarded_answer(cluster, namespace: str, pod: str, port: int, scheme: str) -> bool:
    """Whether an HTTP request through a port-forward to ``pod`` gets an answer (any status:
    kwok may not have seen its PortForward object yet)."""
    kube = KubeClient(load_credentials(kubeconfig=str(cluster.kubeconfig)))
    try:
        async with (
            portforward.forward(kube, namespace, pod, port) as forward,
            aiohttp.ClientSession() as session,
        ):
            try:
                async with session.get(f"{scheme}://127.0.0.1:{forward.port}/", ssl=False):
                    return True
            except aiohttp.ClientError:
                return False
    finally:
        await kube.close()


def test_runs_of_every_replica_through_port_forwards(
    operator, cluster, crs, core, namespace, steppers, tmp_path
):
    url_a = start(operator)
    with fresh_namespace(cluster) as other:
        second = Operator(tmp_path / "second", cluster.kubeconfig, [other])
        (tmp_path / "second").mkdir()
        try:
            url_b = start(second)
            make_stepper(crs, namespace, "alpha")
            make_stepper(crs, other, "beta")
            wait_condition(crs, namespace, KIND, "alpha", "Successful")
            wait_condition(crs, other, KIND, "beta", "Successful")
            for url, port_of in ((url_a, "op-a"), (url_b, "op-b")):
                operator_pod(cluster, core, namespace, port_of, int(url.rsplit(":", 1)[1]), [])
            kubeconfig = ["--kubeconfig", str(cluster.kubeconfig)]
            where = [*kubeconfig, "--operator-namespace", namespace]

            ours = {namespace, other}  # the runs of other tests' CRs are elsewhere
            merged = [run for run in runs_json(*where)["runs"] if run["namespace"] in ours]
            each = [
                run["id"]
                for url in (url_a, url_b)
                for run in runs_json("--url", url)["runs"]
                if run["namespace"] in ours
            ]
            ids = [run["id"] for run in merged]
            assert len(ids) == len(set(ids)) and set(ids) == set(each)  # each run once
            assert {(run["namespace"], run["name"]) for run in merged} == {
                (namespace, "alpha"),
                (other, "beta"),
            }
            assert [run["started"] for run in merged] == sorted(
                (run["started"] for run in merged), reverse=True
            )
            listed = runs(*where, KIND)
            assert listed.returncode == 0, listed.stderr
            assert f"{namespace}/alpha" in listed.stdout and f"{other}/beta" in listed.stdout
            shown = runs(*where, "show", f"{KIND}/beta", "-n", other)
            assert shown.returncode == 0, shown.stderr
            assert shown.stdout.startswith(f"{KIND} {other}/beta  run ")

            nowhere = runs(*kubeconfig, "--operator-namespace", other)
            assert nowhere.returncode == 1
            assert nowhere.stderr.startswith(
                "ansible-operator runs: no operator Pod labelled control-plane=controller-manager "
                f"in namespace {other}"
            )
        finally:
            second.stop()
            second.print_log()


@pytest.fixture
def readers(cluster, namespace):
    """Tokens of ServiceAccounts: bound to config/rbac's runs-reader; with no rights; allowed
    to get and list the Steppers of this namespace only."""
    with cluster.api_client() as api_client:
        core, rbac = client.CoreV1Api(api_client), client.RbacAuthorizationV1Api(api_client)
        tokens = []
        for name in ("reader", "stranger", "neighbour"):
            core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
            request = core.create_namespaced_service_account_token(
                name, namespace, {"spec": {"expirationSeconds": 3600}}
            )
            tokens.append(request.status.token)
        role = yaml.safe_load((REPO / "config/rbac/runs_reader_role.yaml").read_text())
        role["metadata"]["name"] = f"runs-reader-{uuid.uuid4().hex[:8]}"
        rbac.create_cluster_role(role)
        name = role["metadata"]["name"]
        rbac.create_cluster_role_binding(
            account_binding(name, "ClusterRole", name, "reader", namespace)
        )
        steppers = {"apiGroups": [GROUP], "resources": [f"{KIND.lower()}s"]}
        rule = {**steppers, "verbs": ["get", "list"]}
        rbac.create_namespaced_role(namespace, {"metadata": {"name": "steppers"}, "rules": [rule]})
        binding = account_binding("steppers", "Role", "steppers", "neighbour", namespace)
        rbac.create_namespaced_role_binding(namespace, binding)
        try:
            yield tokens[0], tokens[1], tokens[2]
        finally:
            rbac.delete_cluster_role_binding(role["metadata"]["name"])
            rbac.delete_cluster_role(role["metadata"]["name"])


def plugin_kubeconfig(cluster, path: Path, token: str) -> Path:
    """The cluster's kubeconfig whose user gets ``token`` from an exec credential plugin (as
    EKS's and GKE's kubeconfigs do) instead of the admin's client certificate."""
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": token},
    }
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    plugin = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": sys.executable,
        "args": ["-c", f"print({json.dumps(json.dumps(credential))})"],
    }
    config["users"] = [{"name": config["users"][0]["name"], "user": {"exec": plugin}}]
    path.write_text(yaml.safe_dump(config))
    return path


def test_runs_with_metrics_require_rbac(
    operator, cluster, crs, core, namespace, steppers, readers, tmp_path
):
    reader, stranger, neighbour = readers
    secure = ["--metrics-secure", "--metrics-require-rbac"]
    url = start(operator, *secure)
    make_stepper(crs, namespace, "guarded")
    wait_condition(crs, namespace, KIND, "guarded", "Successful")
    operator_pod(cluster, core, namespace, "op-secure", int(url.rsplit(":", 1)[1]), secure)
    where = ["--operator-namespace", namespace]

    # The admin's kubeconfig has a client certificate, which cannot be passed on.
    admin = runs("--kubeconfig", str(cluster.kubeconfig), *where)
    assert admin.returncode == 1
    assert admin.stderr == (
        "ansible-operator runs: the operator's Pod op-secure requires a bearer token "
        "(--metrics-require-rbac), and your kubeconfig has none to pass on (a client "
        "certificate cannot be): pass --token, say from `kubectl create token` of a "
        "ServiceAccount bound to runs-reader\n"
    )
    # Anyone else the API server knows reads the runs of the CRs they may read themselves: the
    # stranger none, the neighbour (get and list on this namespace's Steppers) this one's.
    hidden = runs("--kubeconfig", str(cluster.kubeconfig), *where, "--token", stranger, KIND)
    assert hidden.returncode == 1
    assert hidden.stderr == (
        f"ansible-operator runs: no run records of a kind '{KIND}' (kinds with runs: none yet)\n"
    )
    near = runs("--kubeconfig", str(cluster.kubeconfig), *where, "--token", neighbour, KIND)
    assert near.returncode == 0, near.stderr
    assert f"{namespace}/guarded" in near.stdout
    given = runs("--kubeconfig", str(cluster.kubeconfig), *where, "--token", reader, KIND)
    assert given.returncode == 0, given.stderr
    assert f"{namespace}/guarded" in given.stdout

    # A user whose own kubeconfig gives a token (by an exec plugin here): the reader, allowed
    # to find the operator's Pods and port-forward to them in this namespace, needs no --token.
    kubeconfig = plugin_kubeconfig(cluster, tmp_path / "reader.kubeconfig", reader)
    mine = ["--kubeconfig", str(kubeconfig), *where]
    forbidden = runs(*mine)
    assert forbidden.returncode == 1
    assert forbidden.stderr.startswith(
        f"ansible-operator runs: cannot list the operator's Pods in namespace {namespace}: "
    ), forbidden.stderr
    told: list[str] = []

    def shown_by_mine() -> subprocess.CompletedProcess[str] | None:
        done = runs(*mine, "show", f"{KIND}/guarded", "-n", namespace)
        told.append(done.stderr)
        return done if done.returncode == 0 else None

    forwarder = {
        "metadata": {"name": "operator-runs"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
            {"apiGroups": [""], "resources": ["pods/portforward"], "verbs": ["get", "create"]},
        ],
    }
    with cluster.api_client() as api_client:
        rbac = client.RbacAuthorizationV1Api(api_client)
        rbac.create_namespaced_role(namespace, forwarder)
        binding = account_binding("operator-runs", "Role", "operator-runs", "reader", namespace)
        rbac.create_namespaced_role_binding(namespace, binding)
    try:
        shown = wait_until(shown_by_mine, what="the reader's RBAC to take effect")
    except AssertionError as err:
        raise AssertionError(f"{err}; the command said: {told[-1]}") from None
    assert "outcome   Succeeded" in shown.stdout

    direct = ["--url", url, "--insecure-skip-tls-verify"]
    refused = runs(*direct)
    assert refused.returncode == 1
    assert "requires a bearer token that the API server accepts" in refused.stderr
    # The API itself: one CR's runs need get on that CR.
    one_cr = f"{url}/runs/{GROUP}/{VERSION}/{KIND}/{namespace}/guarded"
    insecure = ssl.create_default_context()
    insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
    for token, status in ((stranger, 403), (neighbour, 200)):
        asked = urllib.request.Request(one_cr, headers={"Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(asked, timeout=30, context=insecure) as resp:
                answered, body = resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            answered, body = err.code, json.loads(err.read())
        assert answered == status
        if status == 403:
            assert body == {
                "error": f"reading the runs of {KIND} {namespace}/guarded needs get on it"
            }
        else:
            assert [run["outcome"] for run in body["runs"]] == ["Succeeded"]
    shown = runs(*direct, "--token", neighbour, "show", f"{KIND}/guarded", "-n", namespace)
    assert shown.returncode == 0, shown.stderr
    assert "outcome   Succeeded" in shown.stdout
    allowed = runs(*direct, "--token", reader, "show", f"{KIND}/guarded", "-n", namespace)
    assert allowed.returncode == 0, allowed.stderr
    assert "outcome   Succeeded" in allowed.stdout


# -- the page, in a real browser --------------------------------------------------------------


@pytest.fixture
def browser():
    """Headless Chromium from Debian's packages, driven by its chromedriver."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver, (
        "the runs page is tested in Debian's Chromium: apt-get install chromium chromium-driver "
        "(.ci/run does)"
    )
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--window-size=1280,900"):
        options.add_argument(argument)
    session = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    try:
        yield session
    finally:
        session.quit()


def browse(browser, page: str, namespace: str, history: list[dict], shots: str) -> None:
    """Load the runs page at ``page``, follow its links from the kinds to the CR's runs to its
    failed run, check what each view shows, and keep a screenshot of each (``shots``-*.png)."""
    from selenium.webdriver.common.by import By

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.get(page)
    rows = [  # the CRs of other tests' operators are on this machine's disk too
        row
        for row in browser.find_elements(By.CSS_SELECTOR, "table.kind tr.resource")
        if row.text.startswith(f"{namespace}/")
    ]
    assert [row.text.split()[:2] for row in rows] == [[f"{namespace}/web", "Succeeded"]]
    assert any(h2.text.startswith(KIND) for h2 in browser.find_elements(By.TAG_NAME, "h2"))
    browser.save_screenshot(str(ARTIFACTS / f"{shots}-kinds.png"))

    rows[0].find_element(By.TAG_NAME, "a").click()
    assert browser.current_url.startswith(page + "?")  # its links stay under the page's path
    runs_rows = browser.find_elements(By.CSS_SELECTOR, "table.runs tr.run")
    assert [row.text.split()[-1] for row in runs_rows] == [run["id"] for run in history]
    browser.save_screenshot(str(ARTIFACTS / f"{shots}-cr.png"))

    failed = history[-1]
    runs_rows[-1].find_element(By.LINK_TEXT, failed["id"]).click()
    assert browser.current_url.startswith(page + "?")
    bars = browser.find_elements(By.CSS_SELECTOR, "svg.timeline rect.bar")
    assert [bar.get_attribute("class") for bar in bars] == ["bar ok", "bar changed", "bar failed"]
    fills = [bar.value_of_css_property("fill") for bar in bars]
    assert fills.count(RED) == 1 and fills[2] == RED
    places = [bar.rect for bar in bars]
    assert places[0]["x"] < places[1]["x"] < places[2]["x"]  # placed by their start
    assert places[1]["width"] > places[0]["width"]  # "Take a while" took longest
    message = browser.find_element(By.CSS_SELECTOR, "pre.failed-message")
    assert message.text == FAILED_MESSAGE
    assert message.rect["y"] > browser.find_element(By.CSS_SELECTOR, "svg.timeline").rect["y"]
    assert FAILED_MESSAGE in browser.find_element(By.CSS_SELECTOR, "pre.output").text
    shot = ARTIFACTS / f"{shots}-run.png"
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    browser.find_element(By.LINK_TEXT, "All kinds").click()
    assert browser.current_url == page
    print(f"screenshots of the runs page: {ARTIFACTS}/{shots}-*.png")


def test_the_runs_page_in_chromium(operator, crs, namespace, steppers, browser):
    url = start(operator)
    history = failed_then_fixed(crs, namespace, url)
    browse(browser, f"{url}/runs/ui", namespace, history, "direct")


def test_without_rbac_the_runs_are_not_served_beyond_loopback_not_even_through_kubectl_proxy(
    operator, cluster, crs, core, namespace, steppers
):
    """Bound to every interface without --metrics-require-rbac, the operator serves /metrics but
    not the run records (a run's output may show task results): not to ``kubectl proxy``'s Pod
    proxy either, which passes no credentials on. It says so once."""
    url = start(operator, *STRUCTURED_LOG, bind="0.0.0.0")
    port = int(url.rsplit(":", 1)[1])
    why = (
        f"Run records are not served on 0.0.0.0:{port}: it is not a loopback address and "
        "--metrics-require-rbac is off, so anyone who reaches it could read them; add "
        "--metrics-require-rbac, or bind the metrics to 127.0.0.1"
    )
    operator_pod(cluster, core, namespace, "op-page", port, [])
    make_stepper(crs, namespace, "web")
    wait_condition(crs, namespace, KIND, "web", "Successful")
    proxy = subprocess.Popen(
        [str(binaries.kubectl()), "--kubeconfig", str(cluster.kubeconfig), "proxy", "--port=0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proxy.stdout is not None
        serving = proxy.stdout.readline()  # "Starting to serve on 127.0.0.1:PORT"
        assert serving.startswith("Starting to serve on "), serving
        where = serving.rsplit(" ", 1)[1].strip()
        pod = f"http://{where}/api/v1/namespaces/{namespace}/pods/http:op-page:{port}/proxy"
        with urllib.request.urlopen(f"{pod}/metrics", timeout=30) as resp:
            assert b"ansible_operator_reconcile_result" in resp.read()
        for path in ("/runs/ui", "/runs", f"/runs/{GROUP}/{VERSION}/{KIND}/{namespace}/web"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(pod + path, timeout=30)
            assert refused.value.code == 404, path
            assert json.loads(refused.value.read()) == {"error": why}
    finally:
        proxy.terminate()
        proxy.wait(timeout=30)
    said = [r for r in operator.records() if str(r.get("msg", "")).startswith("Run records are")]
    assert [r["msg"] for r in said] == [why]


# -- the page of every replica, served by the command (runs ui) -------------------------------


@contextlib.contextmanager
def runs_ui(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``ansible-operator runs ui ARGS`` running; it and its page's URL, from the one line it
    prints. The test stops it and checks how it ended; a test that fails first kills it."""
    ui = subprocess.Popen(
        [str(CLI), "runs", "ui", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert ui.stdout is not None
        ready, _, _ = select.select([ui.stdout], [], [], 120)
        line = ui.stdout.readline() if ready else ""
        serving = re.fullmatch(
            r"Serving the runs page of (\d+) replica\(s\) at (http://127\.0\.0\.1:\d+/runs/ui) "
            r"\(Ctrl-C to stop\)\n",
            line,
        )
        assert serving, f"{line!r}, stderr: {ui.stderr.read() if ui.poll() is not None else ''}"
        assert serving.group(1) == str(len([arg for arg in args if arg == "--url"]))
        yield ui, serving.group(2)
    finally:
        if ui.poll() is None:
            ui.kill()
            ui.wait(30)


def stopped(ui: subprocess.Popen[str], signal_number: int) -> tuple[int, str, str]:
    """Its exit code, the rest of its stdout and its stderr, after ``signal_number``."""
    ui.send_signal(signal_number)
    code = ui.wait(30)
    assert ui.stdout is not None and ui.stderr is not None
    return code, ui.stdout.read(), ui.stderr.read()


def test_runs_ui_merges_every_replica_in_chromium(
    operator, cluster, crs, namespace, steppers, readers, browser, tmp_path
):
    """Two operators, the second guarded by --metrics-require-rbac: ``runs ui`` serves their
    runs merged on one page, each run naming its replica, asking the guarded one with the
    reader's token, where a browser at the operator's own page gets 401."""
    from selenium.webdriver.common.by import By

    reader, *_ = readers
    url_a = start(operator)
    with fresh_namespace(cluster) as other:
        second = Operator(tmp_path / "second", cluster.kubeconfig, [other])
        (tmp_path / "second").mkdir()
        try:
            url_b = start(second, "--metrics-secure", "--metrics-require-rbac")
            make_stepper(crs, namespace, "alpha")
            make_stepper(crs, other, "guarded")
            wait_condition(crs, namespace, KIND, "alpha", "Successful")
            wait_condition(crs, other, KIND, "guarded", "Successful")
            guarded_where = ["--url", url_b, "--insecure-skip-tls-verify", "--token", reader]
            alpha_runs = runs_json("--url", url_a, f"{KIND}/alpha", "-n", namespace)["runs"]
            guarded_runs = runs_json(*guarded_where, f"{KIND}/guarded", "-n", other)["runs"]
            ran_by = {"alpha": alpha_runs[0]["replica"], "guarded": guarded_runs[0]["replica"]}

            # What a browser sends the guarded operator's own page: no bearer token.
            insecure = ssl.create_default_context()
            insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(f"{url_b}/runs/ui", timeout=30, context=insecure)
            assert refused.value.code == 401

            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            both = ["--url", url_a, "--url", url_b, "--insecure-skip-tls-verify"]
            with runs_ui(*both, "--token", reader) as (ui, page):
                browser.get(page)
                header = browser.find_element(By.CSS_SELECTOR, "p.replica").text
                assert header.startswith("The runs of 2 replicas, merged: "), header
                assert not browser.find_elements(By.CSS_SELECTOR, "p.skipped")
                ours = {f"{namespace}/alpha": "alpha", f"{other}/guarded": "guarded"}
                rows = {  # other tests' CRs are on this machine's disk too
                    row.text.split()[0]: row
                    for row in browser.find_elements(By.CSS_SELECTOR, "table.kind tr.resource")
                    if row.text.split()[0] in ours
                }
                assert set(rows) == set(ours)
                for where, row in rows.items():  # CR, outcome, started, replica, ...
                    cells = row.find_elements(By.TAG_NAME, "td")
                    assert cells[1].text == "Succeeded"
                    assert cells[3].text == ran_by[ours[where]]
                browser.save_screenshot(str(ARTIFACTS / "runs-ui-kinds.png"))

                rows[f"{other}/guarded"].find_element(By.TAG_NAME, "a").click()
                assert browser.current_url.startswith(page + "?")
                run_rows = browser.find_elements(By.CSS_SELECTOR, "table.runs tr.run")
                shown = [row.find_elements(By.TAG_NAME, "td") for row in run_rows]
                assert [cells[-1].text for cells in shown] == [r["id"] for r in guarded_runs]
                assert {cells[1].text for cells in shown} == {ran_by["guarded"]}
                browser.save_screenshot(str(ARTIFACTS / "runs-ui-cr.png"))

                newest = guarded_runs[0]
                run_rows[0].find_element(By.LINK_TEXT, newest["id"]).click()
                bars = browser.find_elements(By.CSS_SELECTOR, "svg.timeline rect.bar")
                classes = [bar.get_attribute("class") for bar in bars]
                assert len(classes) == 4 and "bar failed" not in classes, classes
                summary = {
                    row.find_element(By.TAG_NAME, "th").text: row.find_element(By.TAG_NAME, "td")
                    for row in browser.find_elements(By.CSS_SELECTOR, "table.summary tr")
                }
                assert summary["Replica"].text == newest["replica"]
                assert summary["Outcome"].text == "Succeeded"
                shot = ARTIFACTS / "runs-ui-run.png"
                browser.save_screenshot(str(shot))
                assert shot.stat().st_size > 10_000
                browser.find_element(By.LINK_TEXT, "All kinds").click()
                assert browser.current_url == page
                assert stopped(ui, signal.SIGTERM) == (0, "", "")

            # Without the token the guarded operator is skipped, and the page says why.
            with runs_ui(*both) as (ui, page):
                browser.get(page)
                (skipped,) = browser.find_elements(By.CSS_SELECTOR, "p.skipped")
                assert skipped.text == (
                    f"Skipped: {url_b} requires a bearer token that the API server accepts "
                    "(--metrics-require-rbac): pass --token"
                )
                assert browser.find_element(By.CSS_SELECTOR, "p.replica").text.startswith(
                    "The runs of 1 replica, merged: "
                )
                browser.save_screenshot(str(ARTIFACTS / "runs-ui-skipped.png"))
                code, out, err = stopped(ui, signal.SIGINT)
                assert (code, out) == (0, "")
                reason = skipped.text.removeprefix("Skipped: ")
                assert err == f"ansible-operator runs: skipped: {reason}\n"
            print(f"screenshots of runs ui's page: {ARTIFACTS}/runs-ui-*.png")
        finally:
            second.stop()
            second.print_log()
