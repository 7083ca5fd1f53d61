"""Reaching the operator's run records (``/runs`` on its metrics server) for ``ansible-operator
runs``: one operator at a URL, or every replica of one in a cluster, merged.

In a cluster the operator's Pods are found by their label (``control-plane:
controller-manager``, as config/manager puts it) with the user's own kubeconfig, and each
replica's metrics port is reached through a port-forward (``kube.portforward``, what ``kubectl
port-forward`` does), so the user needs ``list`` on ``pods`` and ``create`` on
``pods/portforward``. A Pod started with ``--metrics-require-rbac`` is sent a bearer token, the
one given or the kubeconfig's own, and the operator asks the API server whether it may read the
runs; a client certificate cannot be passed on. Each replica keeps its own runs; a run says
which replica ran it. Every failure is a ``RunsError``: one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp

from ansible_operator.gocompat import parse_bool
from ansible_operator.kube import ApiError, KubeClient, Unreachable, portforward, reason

METRICS_PORT_NAME = "metrics"
# Connections to each replica at once: a command asks a path per kind, and through a
# port-forward every connection is a WebSocket through the API server to the kubelet, so a few
# kept alive carry them all.
CONNECTIONS_PER_REPLICA = 4


class RunsError(Exception):
    """Why the run records cannot be read: one line for the user."""


class NotFound(RunsError):
    """The operator does not know what was asked for (404)."""


class Unauthorized(RunsError):
    """The operator wants a bearer token the API server accepts (401)."""


Get = Callable[[str], Awaitable[Any]]


@dataclass(frozen=True)
class Replica:
    """One operator process: how to GET a path of its metrics server as JSON (a failure says
    which replica it is)."""

    get: Get


Reach = Callable[[], AbstractAsyncContextManager[Sequence[Replica]]]  # the replicas, found


def replica_session() -> aiohttp.ClientSession:
    """The HTTP session a command asks the replicas with."""
    return aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=30),
        connector=aiohttp.TCPConnector(limit=0, limit_per_host=CONNECTIONS_PER_REPLICA),
    )


def _refusal(where: str, status: int, text: str, path: str) -> RunsError:
    text = text.strip()
    if status == 404:
        return NotFound(f"{where}: {text or 'not found'}")
    if status == 401:
        return Unauthorized(
            f"{where} requires a bearer token that the API server accepts "
            "(--metrics-require-rbac): pass --token"
        )
    if status == 403:
        return RunsError(
            f"{where} refused: {text}: GET {path} needs the runs-reader ClusterRole "
            "(config/rbac/runs_reader_role.yaml) bound to you, or get on the CR"
        )
    return RunsError(f"{where}: GET {path}: {status} {text}")


def _json(where: str, path: str, payload: Any) -> Any:
    if isinstance(payload, str):
        try:
            return json.loads(payload)
        except ValueError:
            raise RunsError(f"{where}: GET {path} did not answer JSON: {payload[:80]!r}") from None
    return payload


def url_replica(
    url: str,
    session: aiohttp.ClientSession,
    *,
    token: str | None,
    insecure: bool,
    where: str | None = None,
) -> Replica:
    """The operator whose metrics server is at ``url`` (``http(s)://host:port``), named
    ``where`` in errors (default: the URL)."""
    base = url.rstrip("/")
    reach = where or f"the operator at {base}"
    where = where or base
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    tls: ssl.SSLContext | bool = True
    if insecure:
        tls = ssl.create_default_context()
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE

    async def get(path: str) -> Any:
        try:
            async with session.get(base + path, headers=headers, ssl=tls) as resp:
                text = await resp.text(errors="replace")
                if resp.status >= 400:
                    raise _refusal(where, resp.status, _error_text(text), path)
        except aiohttp.ClientConnectorCertificateError as err:
            raise RunsError(
                f"{where}: the certificate is not trusted ({err.certificate_error}); the "
                "operator's own is self-signed: --insecure-skip-tls-verify"
            ) from None
        except (TimeoutError, aiohttp.ClientError) as err:
            raise RunsError(f"cannot reach {reach}: {reason(err)}") from None
        return _json(where, path, text)

    return Replica(get)


def _error_text(text: str) -> str:
    """The ``error`` of the API's JSON error body, else the text itself."""
    try:
        body = json.loads(text)
    except ValueError:
        return text
    return str(body.get("error", text)) if isinstance(body, dict) else text


@dataclass(frozen=True)
class Endpoint:
    """Where a Pod serves its metrics, as its container's args say."""

    scheme: str  # https with --metrics-secure
    port: int
    guarded: bool  # --metrics-require-rbac: it wants a bearer token


def metrics_endpoint(pod: dict[str, Any]) -> Endpoint | None:
    """The metrics server of a Pod: the container port named ``metrics`` of the container that
    has one, and what that container's args say of it."""
    for container in (pod.get("spec") or {}).get("containers") or ():
        for port in container.get("ports") or ():
            if port.get("name") == METRICS_PORT_NAME and port.get("containerPort"):
                args = container.get("args") or ()
                return Endpoint(
                    "https" if _flag(args, "metrics-secure") else "http",
                    int(port["containerPort"]),
                    _flag(args, "metrics-require-rbac"),
                )
    return None


def _flag(args: Iterable[str], flag: str) -> bool:
    """A boolean flag's value in ``args`` (the last one given; false when absent or bad)."""
    value = False
    for arg in args:
        name, sep, text = arg.lstrip("-").partition("=")
        if name == flag:
            try:
                value = parse_bool(text) if sep else True
            except ValueError:
                value = False
    return value


@contextlib.asynccontextmanager
async def cluster_replicas(
    client: KubeClient, namespace: str, selector: str, *, token: str | None
) -> AsyncIterator[list[Replica]]:
    """The running Pods labelled ``selector`` in ``namespace``, each reached through a
    port-forward while the context lasts; RunsError when there are none. A Pod with
    ``--metrics-require-rbac`` is sent ``token``, else the kubeconfig's bearer token."""
    where = f"namespace {namespace}"
    try:
        pods = await client.get(
            f"/api/v1/namespaces/{quote(namespace)}/pods", {"labelSelector": selector}
        )
    except ApiError as err:
        raise RunsError(f"cannot list the operator's Pods in {where}: {err}") from None
    except Unreachable as err:
        raise RunsError(f"cannot reach the API server: {err}") from None
    running: list[tuple[str, Endpoint]] = []
    skipped = []
    for pod in pods.get("items") or ():
        name = pod["metadata"]["name"]
        endpoint = metrics_endpoint(pod)
        if (pod.get("status") or {}).get("phase") != "Running" or endpoint is None:
            skipped.append(name)
        else:
            running.append((name, endpoint))
    if not running:
        why = (
            f" (not running, or no container port named {METRICS_PORT_NAME}: {', '.join(skipped)})"
            if skipped
            else ""
        )
        raise RunsError(
            f"no operator Pod labelled {selector} in {where}{why}: "
            "is it deployed there? (--operator-namespace, --selector)"
        )
    bearer = token or client.creds.bearer_token()
    async with contextlib.AsyncExitStack() as stack:
        session = await stack.enter_async_context(replica_session())
        replicas = []
        for name, endpoint in running:
            forward = await stack.enter_async_context(
                portforward.forward(client, namespace, name, endpoint.port)
            )
            replicas.append(
                _forwarded(name, forward, endpoint, session, bearer if endpoint.guarded else None)
            )
        yield replicas


def _forwarded(
    pod: str,
    forward: portforward.Forward,
    endpoint: Endpoint,
    session: aiohttp.ClientSession,
    token: str | None,
) -> Replica:
    """The replica in ``pod``, through ``forward``: the operator's own certificate is not
    checked (it is self-signed; the API server carries the connection to the Pod)."""
    where = f"the operator's Pod {pod}"
    through = url_replica(
        f"{endpoint.scheme}://127.0.0.1:{forward.port}",
        session,
        token=token,
        insecure=True,
        where=where,
    )

    async def get(path: str) -> Any:
        try:
            return await through.get(path)
        except Unauthorized:
            if token is not None:
                raise
            raise RunsError(
                f"{where} requires a bearer token (--metrics-require-rbac), and your kubeconfig "
                "has none to pass on (a client certificate cannot be): pass --token, say from "
                "`kubectl create token` of a ServiceAccount bound to runs-reader"
            ) from None
        except NotFound:
            raise
        except RunsError:
            if forward.failure is None:
                raise
            raise RunsError(f"cannot port-forward to {where}: {forward.failure}") from None

    return Replica(get)


# -- what the runs API says, merged over the replicas ----------------------------------------


@dataclass(frozen=True)
class Kind:
    api_version: str
    kind: str

    @property
    def path(self) -> str:
        group, _, version = self.api_version.rpartition("/")
        return f"/runs/{quote(group)}/{quote(version)}/{quote(self.kind)}"

    def matches(self, word: str) -> bool:
        """``Memcached``, ``memcached`` or ``memcached.cache.example.com``."""
        group = self.api_version.rpartition("/")[0]
        word = word.lower()
        return word in (self.kind.lower(), f"{self.kind}.{group}".lower())


@dataclass(frozen=True)
class Resource:
    kind: Kind
    namespace: str  # "" for a cluster-scoped CR
    name: str

    @property
    def path(self) -> str:
        return f"{self.kind.path}/{quote(self.namespace or '_')}/{quote(self.name)}"

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind.kind} {where}{self.name}"


async def answering(
    replicas: Sequence[Replica],
) -> tuple[list[Replica], dict[Kind, set[Resource]], list[RunsError]]:
    """The replicas that answer ``GET /runs``, every CR they have run records of (by kind), and
    why the others did not answer; the first of those raised when none did."""
    answers = await asyncio.gather(
        *(replica.get("/runs") for replica in replicas), return_exceptions=True
    )
    found: dict[Kind, set[Resource]] = {}
    answered, failures = [], []
    for replica, answer in zip(replicas, answers, strict=True):
        if isinstance(answer, RunsError):
            failures.append(answer)
            continue
        if isinstance(answer, BaseException):
            raise answer
        answered.append(replica)
        for entry in answer.get("kinds") or ():
            kind = Kind(entry["apiVersion"], entry["kind"])
            known = found.setdefault(kind, set())
            for item in entry.get("resources") or ():
                known.add(Resource(kind, item.get("namespace") or "", item["name"]))
    if not answered:
        raise failures[0]
    return answered, found, failures


def resolve_kind(known: Iterable[Kind], word: str) -> Kind:
    matching = [kind for kind in known if kind.matches(word)]
    if len(matching) == 1:
        return matching[0]
    if matching:
        names = ", ".join(sorted(f"{k.kind}.{k.api_version}" for k in matching))
        raise RunsError(f"{word!r} names several kinds ({names}): say KIND.GROUP")
    names = ", ".join(sorted(kind.kind for kind in known)) or "none yet"
    raise RunsError(f"no run records of a kind {word!r} (kinds with runs: {names})")


def resolve_resource(known: Iterable[Resource], name: str, namespace: str | None) -> Resource:
    matching = [
        r for r in known if r.name == name and (namespace is None or r.namespace == namespace)
    ]
    if len(matching) == 1:
        return matching[0]
    if matching:
        spaces = ", ".join(sorted(r.namespace for r in matching))
        raise RunsError(f"{name!r} is in several namespaces ({spaces}): pass -n NAMESPACE")
    where = f" in namespace {namespace}" if namespace else ""
    raise RunsError(f"no run records of {name!r}{where}")


def freshness(run: Mapping[str, Any]) -> tuple[str, bool, bool]:
    """Which of two runs, or two replicas' copies of one run, says more: the later start, then
    the copy that has ended, then a running one over one a replica read from a shared disk
    mid-run (it reads a record that never ended as ``Interrupted``)."""
    return str(run["started"]), run.get("ended") is not None, run.get("outcome") == "Running"


def merged_kinds(overviews: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``kinds`` of several replicas' ``GET /runs`` answers as one, in a replica's order
    (by apiVersion and kind, each's CRs by namespace and name): every CR any replica has runs
    of, with the freshest of their last runs."""
    found: dict[tuple[str, str], dict[tuple[str, str], dict[str, Any]]] = {}
    for overview in overviews:
        for entry in overview.get("kinds") or ():
            known = found.setdefault((entry["apiVersion"], entry["kind"]), {})
            for item in entry.get("resources") or ():
                key = (item.get("namespace") or "", item["name"])
                if key not in known or freshness(item["last"]) > freshness(known[key]["last"]):
                    known[key] = item
    return [
        {"apiVersion": api_version, "kind": kind, "resources": [known[k] for k in sorted(known)]}
        for (api_version, kind), known in sorted(found.items())
    ]


def newest_first(summaries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(summaries, key=lambda run: run["started"], reverse=True)


async def summaries(replicas: Sequence[Replica], paths: Iterable[str]) -> list[dict[str, Any]]:
    """The runs each path lists on every replica, merged newest first; a replica that has none
    of a kind or CR (404) adds none."""

    async def ask(replica: Replica, path: str) -> list[dict[str, Any]]:
        try:
            return list((await replica.get(path)).get("runs") or ())
        except NotFound:
            return []

    asked = [ask(replica, path) for path in paths for replica in replicas]
    # Each run once, its freshest copy: replicas sharing a disk (two on one machine) each read
    # its record, one of them perhaps mid-run.
    unique: dict[str, dict[str, Any]] = {}
    for runs in await asyncio.gather(*asked):
        for run in runs:
            known = unique.get(run["id"])
            if known is None or freshness(run) > freshness(known):
                unique[run["id"]] = run
    return newest_first(unique.values())


async def record(
    replicas: Sequence[Replica], resource: Resource, run_id: str | None
) -> dict[str, Any]:
    """One run's record, with its tasks and output: ``run_id`` (a unique prefix will do), or the
    newest of the CR's, from the replica that ran it."""
    runs: list[tuple[Replica, dict[str, Any]]] = []
    for replica in replicas:
        try:
            listed = await replica.get(resource.path)
        except NotFound:
            continue
        runs.extend((replica, run) for run in listed.get("runs") or ())
    runs.sort(key=lambda pair: pair[1]["started"], reverse=True)
    if run_id is not None:
        runs = [pair for pair in runs if str(pair[1]["id"]).startswith(run_id)]
        ids = {str(run["id"]) for _, run in runs}
        if len(ids) > 1 and run_id not in ids:
            raise RunsError(f"run id {run_id!r} matches {len(ids)} runs of {resource}")
        runs = [pair for pair in runs if pair[1]["id"] == run_id] or runs
    if not runs:
        raise RunsError(
            f"run {run_id!r} of {resource} not found" if run_id else f"no run of {resource} yet"
        )
    replica, run = runs[0]
    return dict(await replica.get(f"{resource.path}/{quote(str(run['id']))}"))
