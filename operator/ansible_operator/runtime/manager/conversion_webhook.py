"""The conversion webhook: ``/convert`` on HTTPS, answering the API server's ConversionReviews.

When a watched kind's role declares other served versions (``meta/conversion.yml``), the API
server calls this endpoint to convert its objects between them (apiextensions.k8s.io/v1
``ConversionReview``), and ``core.conversion`` does the work. The certificate is ``tls.crt`` and
``tls.key`` from ``--webhook-cert-dir`` when they are there (cert-manager's, whose CA injector
fills the CRD's ``caBundle``); otherwise the operator makes its own, for the Service the CRD
names and for loopback, and writes its CA into each CRD's ``conversion.webhook.clientConfig``
itself (which needs ``patch`` on those CRDs). Bound to a loopback address, the API server can
only be on this machine (the local cluster), so the CRD is pointed at this server's URL rather
than its Service; while another operator's URL answers it is left alone, and the operator
looks again every ``KEEP_INTERVAL`` seconds, taking the CRD over when that one has stopped.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import logging
import ssl
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web
from cryptography import x509
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from ansible_operator.core import KindConversion, Watch, convert, watched_versions
from ansible_operator.kube import ApiError, KubeClient, Unreachable
from ansible_operator.project import RoleApiError, load_conversion
from ansible_operator.runtime.observe.metrics import is_loopback, parse_bind_address
from ansible_operator.runtime.observe.metrics_tls import CERT_NAME, KEY_NAME, self_signed_pair
from ansible_operator.runtime.observe.recorder import EventRecorder

log = logging.getLogger("conversion")

KEEP_INTERVAL = 10.0
RENEW_BEFORE = datetime.timedelta(days=30)  # a shared certificate this close to its end is renewed
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
REVIEW_API_VERSION = "apiextensions.k8s.io/v1"
SERVICE_ANNOTATION = "conversion.ansible-operator.io/service"  # what a loopback URL replaced


# The largest request body read: the API server sends one review per object it reads at
# another version, and one for a whole list; 16 MiB holds a list of several thousand CRs.
# Larger requests are refused (413) before they are read.
MAX_REVIEW_BYTES = 16 * 2**20


ANNOTATION_IGNORED = "ConversionAnnotationIgnored"  # the Event's reason
REPORTED_SIZE = 10_000  # objects whose ignored annotation was reported, kept to report once


class WebhookError(Exception):
    """The webhook cannot start; one line."""


class MalformedReview(ValueError):
    """A request that is not a ConversionReview as the API server sends one: 400."""


def default_cert_dir() -> Path:
    """controller-runtime's webhook certificate directory."""
    return Path(tempfile.gettempdir()) / "k8s-webhook-server" / "serving-certs"


def review_response(
    review: Any,
    conversions: Mapping[tuple[str, str], KindConversion],
    ignored: list[tuple[dict[str, Any], str]] | None = None,
) -> dict:
    """The ConversionReview answering `review`: every object converted, or a Failure saying
    why (the API server then fails the request that needed it, with that message).
    MalformedReview when `review` is not shaped as the API server sends one. A conversion
    annotation an object's version cannot hold is left out, and the object and why added to
    `ignored`."""
    request = review.get("request") if isinstance(review, dict) else None
    if not isinstance(request, dict):
        raise MalformedReview("no request")
    uid, desired, objects = (request.get(k) for k in ("uid", "desiredAPIVersion", "objects"))
    if not isinstance(uid, str) or not isinstance(desired, str) or "/" not in desired:
        raise MalformedReview("request.uid and request.desiredAPIVersion (group/version) expected")
    if not isinstance(objects, list) or not all(
        isinstance(obj, dict) and isinstance(obj.get("kind"), str) for obj in objects
    ):
        raise MalformedReview("request.objects must be a list of objects with a kind")
    group, _, version = desired.rpartition("/")
    converted = []
    try:
        for obj in objects:
            conversion = conversions.get((group, obj["kind"]))
            if conversion is None:
                raise ValueError(f"{obj['kind']}.{group} has no conversion here")
            notes: list[str] = []
            converted.append(convert(obj, version, conversion, notes))
            if ignored is not None:
                ignored += [(obj, note) for note in notes]
    except ValueError as err:
        result: dict[str, Any] = {"status": "Failure", "message": str(err)}
        response: dict[str, Any] = {"uid": uid, "result": result}
    else:
        response = {"uid": uid, "result": {"status": "Success"}, "convertedObjects": converted}
    return {"apiVersion": REVIEW_API_VERSION, "kind": "ConversionReview", "response": response}


class ConversionWebhook:
    """The HTTPS server and the CRDs' client configuration it needs."""

    def __init__(
        self,
        conversions: Sequence[KindConversion],
        *,
        client: KubeClient,
        at: tuple[str, int],  # where it listens (webhook_address)
        cert_dir: str,  # "": controller-runtime's default, where a missing pair means our own
        registry: CollectorRegistry,
    ) -> None:
        self.conversions = {(c.group, c.kind): c for c in conversions}
        self.client = client
        self.host, self.port = at
        self.cert_dir = cert_dir
        self.ca_pem: bytes | None = None  # None: the certificate is not ours (cert-manager's)
        self._runner: web.AppRunner | None = None
        self._keeping: asyncio.Task[None] | None = None
        self._crd_names: list[str] = []
        self._source = ""
        self._one_review = asyncio.Semaphore(1)
        self._events = EventRecorder(client, clock=lambda: datetime.datetime.now(datetime.UTC))
        self._reported: set[tuple[str, str, str]] = set()
        self.reviews = Counter(
            "ansible_operator_conversion_reviews",
            "ConversionReviews answered, by kind and result (Success or Failure).",
            ["kind", "result"],
            registry=registry,
        )
        self.seconds = Histogram(
            "ansible_operator_conversion_review_seconds",
            "Time to answer one ConversionReview.",
            registry=registry,
        )
        self.panics = Counter(
            "controller_runtime_webhook_panics",
            "Requests whose handling raised (a bug): answered 500, logged with the traceback.",
            registry=registry,
        )
        self.certificate = Gauge(
            "ansible_operator_conversion_certificate",
            "1 for where the webhook's certificate comes from: mounted (--webhook-cert-dir), "
            "shared (a Secret every replica serves), own (this replica's alone).",
            ["source"],
            registry=registry,
        )

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def url(self) -> str:
        return f"https://{'127.0.0.1' if self.loopback else self.host}:{self.port}/convert"

    async def start(self) -> None:
        try:
            crds = {key: await self._crd(c) for key, c in self.conversions.items()}
        except ApiError as err:
            if err.status != 403:
                raise WebhookError(f"conversion webhook: cannot read the CRDs: {err}") from None
            # Not allowed (rules bound in a namespace): served with a mounted certificate,
            # whose CA someone else injects (cert-manager), or with one of ours for loopback.
            log.warning(
                f"Conversion webhook: cannot read the CRDs, so cannot point them here: {err}"
            )
            crds = {}
        context = await self._tls(list(crds.values()))
        app = web.Application(client_max_size=MAX_REVIEW_BYTES)
        app.router.add_post("/convert", self._convert)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=context)
        try:
            await site.start()
        except OSError as err:
            await self._runner.cleanup()
            raise WebhookError(
                f"conversion webhook: cannot listen on {self.host}:{self.port}: {err.strerror}"
            ) from None
        if self.port == 0:
            self.port = int(self._runner.addresses[0][1])
        log.info("Serving conversion", extra={"url": self.url(), "certificate": self._source})
        self._crd_names = [str(crd["metadata"]["name"]) for crd in crds.values()]
        for name in self._crd_names:
            try:
                await self._keep(name)
            except ApiError as err:  # not allowed: the CRD's CA is someone else's to inject
                log.warning(f"Conversion webhook: cannot point the CRD {name} here: {err}")
        if self.ca_pem is not None and self.loopback:
            self._keeping = asyncio.create_task(self._keep_all())

    async def stop(self) -> None:
        if self._keeping is not None:
            self._keeping.cancel()
        await self._give_back()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _crd(self, conversion: KindConversion) -> dict[str, Any]:
        name = f"{conversion.kind}.{conversion.group}"
        found = await self.client.get(CRD_PATH)
        for crd in found.get("items") or []:
            spec = crd.get("spec") or {}
            if (
                spec.get("group") == conversion.group
                and (spec.get("names") or {}).get("kind") == conversion.kind
            ):
                strategy = (spec.get("conversion") or {}).get("strategy")
                if strategy != "Webhook":
                    raise WebhookError(
                        f"the CRD of {name} has conversion strategy {strategy or 'None'}, not "
                        f"Webhook: run 'ansible-operator generate crds' and apply it"
                    )
                return dict(crd)
        raise WebhookError(f"{name}: no CRD in the cluster (apply config/crd first)")

    async def _tls(self, crds: Sequence[Mapping[str, Any]]) -> ssl.SSLContext:
        directory = Path(self.cert_dir) if self.cert_dir else default_cert_dir()
        cert, key = directory / CERT_NAME, directory / KEY_NAME
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        if cert.exists() and key.exists():
            self._source = str(directory)
            self.certificate.labels("mounted").set(1)
        elif self.cert_dir:
            missing = cert if not cert.exists() else key
            raise WebhookError(f"--webhook-cert-dir: {missing} does not exist")
        else:
            services = [
                service
                for service in (_client_config(crd).get("service") for crd in crds)
                if service and service.get("name") and service.get("namespace")
            ]
            names = [f"{s['name']}.{s['namespace']}.svc" for s in services]
            if services and not self.loopback:
                cert_pem, key_pem = await self._shared_pair(services[0], names)
            else:  # loopback: the API server calls this process's own URL
                cert_pem, key_pem = self_signed_pair("localhost", names=names)
                self._source = "self-signed"
                self.certificate.labels("own").set(1)
            self.ca_pem = cert_pem
            scratch = tempfile.TemporaryDirectory(prefix="webhook-cert-")
            with scratch:
                cert, key = Path(scratch.name) / CERT_NAME, Path(scratch.name) / KEY_NAME
                cert.write_bytes(cert_pem)
                key.write_bytes(key_pem)
                context.load_cert_chain(cert, key)
            return context
        try:
            context.load_cert_chain(cert, key)
        except (OSError, ssl.SSLError) as err:
            raise WebhookError(f"cannot load the webhook certificate {cert}: {err}") from None
        return context

    async def _shared_pair(
        self, service: Mapping[str, Any], names: Sequence[str]
    ) -> tuple[bytes, bytes]:
        """The certificate every replica behind ``service`` serves: made by the first to start
        and kept in the Secret ``<service>-cert`` beside the Service (the CRD holds one CA, so
        replicas with a certificate each would fail the reviews the others' CA does not sign).
        Renewed by the first replica to start within RENEW_BEFORE of its end. Without the
        rights, this replica serves its own, said once and in the metric."""
        namespace, name = str(service["namespace"]), f"{service['name']}-cert"
        path = f"/api/v1/namespaces/{namespace}/secrets"
        try:
            for _ in range(3):  # a create or renewal raced by another replica: read it again
                try:
                    secret: dict[str, Any] | None = await self.client.get(f"{path}/{name}")
                except ApiError as err:
                    if err.status != 404:
                        raise
                    secret = None
                pair = _pair_of(secret)
                if pair is not None and not _expiring(pair[0]):
                    self._source = f"Secret {namespace}/{name}"
                    self.certificate.labels("shared").set(1)
                    return pair
                cert_pem, key_pem = self_signed_pair("localhost", names=names)
                body: dict[str, Any] = {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "type": "kubernetes.io/tls",
                    "metadata": {"name": name, "namespace": namespace},
                    "data": {
                        CERT_NAME: base64.b64encode(cert_pem).decode(),
                        KEY_NAME: base64.b64encode(key_pem).decode(),
                    },
                }
                try:
                    if secret is None:
                        await self.client.request("POST", path, body=body)
                    else:  # renewal, only over the version read
                        version = secret["metadata"]["resourceVersion"]
                        body["metadata"]["resourceVersion"] = version
                        await self.client.request("PUT", f"{path}/{name}", body=body)
                except ApiError as err:
                    if err.status == 409:
                        continue
                    raise
                self._source = f"Secret {namespace}/{name}"
                self.certificate.labels("shared").set(1)
                return cert_pem, key_pem
            raise ApiError(409, "Conflict", f"the Secret {namespace}/{name} kept changing")
        except (ApiError, Unreachable) as err:
            log.warning(
                f"Conversion webhook: cannot keep its certificate in the Secret {namespace}/{name}"
                f" ({err}), so this replica serves one of its own: with several replicas, the "
                "API server trusts only the last one's; mount one at --webhook-cert-dir"
            )
            self._source = "self-signed"
            self.certificate.labels("own").set(1)
            return self_signed_pair("localhost", names=names)

    async def _keep_all(self) -> None:
        while True:
            await asyncio.sleep(KEEP_INTERVAL)
            for name in self._crd_names:
                try:
                    await self._keep(name)
                except (ApiError, Unreachable) as err:
                    log.warning(f"Conversion webhook: cannot check the CRD: {err}")

    async def _keep(self, crd_name: str) -> None:
        """Point the CRD's webhook at this server when it is our certificate: the CA bundle,
        and on loopback the URL, unless another operator's URL answers there. The Service
        reference a URL replaces is kept in the annotation SERVICE_ANNOTATION, and put back
        when this operator stops, so that `kubectl apply` of the CRD keeps working."""
        if self.ca_pem is None:
            return
        crd = await self.client.get(f"{CRD_PATH}/{crd_name}")
        current = _client_config(crd)
        ours: dict[str, Any] = {"caBundle": base64.b64encode(self.ca_pem).decode()}
        if self.loopback:
            ours["url"] = self.url()
        elif "service" in current:
            ours["service"] = current["service"]
        if current == ours:
            return
        if self.loopback and current.get("url") and await _answers(current):
            return
        patch: dict[str, Any] = {"spec": {"conversion": {"webhook": {"clientConfig": ours}}}}
        if "service" in current and "service" not in ours:
            ours["service"] = None
            kept = json.dumps(current["service"], sort_keys=True)
            patch["metadata"] = {"annotations": {SERVICE_ANNOTATION: kept}}
        if "url" in current and "url" not in ours:
            ours["url"] = None
        await self._patch(crd_name, patch)
        log.info("CRD's conversion webhook set", extra={"crd": crd_name, **_shown(ours)})

    async def _give_back(self) -> None:
        """The Service reference back in the CRDs whose webhook is still this server's URL."""
        for name in self._crd_names if self.loopback and self.ca_pem is not None else ():
            try:
                crd = await self.client.get(f"{CRD_PATH}/{name}")
                kept = (crd["metadata"].get("annotations") or {}).get(SERVICE_ANNOTATION)
                if _client_config(crd).get("url") != self.url() or not kept:
                    continue
                config = {"service": json.loads(kept), "url": None, "caBundle": None}
                patch = {
                    "metadata": {"annotations": {SERVICE_ANNOTATION: None}},
                    "spec": {"conversion": {"webhook": {"clientConfig": config}}},
                }
                await self._patch(name, patch)
            except (ApiError, Unreachable, ValueError) as err:
                log.warning(f"Conversion webhook: the CRD {name} keeps this operator's URL: {err}")

    async def _patch(self, crd_name: str, patch: Mapping[str, Any]) -> None:
        await self.client.request(
            "PATCH",
            f"{CRD_PATH}/{crd_name}",
            body=patch,
            content_type="application/merge-patch+json",
        )

    async def _convert(self, request: web.Request) -> web.Response:
        """A review answered; anything else that reaches the port is untrusted: a body that is
        not a ConversionReview is a 400, and the metrics' labels are the watched kinds only.
        One review is decoded and converted at a time, in a thread: its memory is bounded
        (about ten times its body, MAX_REVIEW_BYTES at most) and the event loop goes on."""
        started = time.monotonic()
        body = await request.read()  # past MAX_REVIEW_BYTES aiohttp answers 413 itself
        async with self._one_review:
            try:
                outcome, answer = await asyncio.to_thread(self._answer, body)
            except (ValueError, RecursionError) as err:  # JSON's errors are ValueErrors too
                return web.Response(status=400, text=f"bad ConversionReview: {str(err)[:200]}")
            except Exception:
                self.panics.inc()
                log.exception("Conversion webhook: a request's handling raised")
                return web.Response(status=500, text="internal error")
        for obj, note in outcome["ignored"]:
            await self._report_ignored(obj, note)
        result = outcome["response"]["result"]
        for kind in outcome["kinds"] or {""}:
            self.reviews.labels(kind, result["status"]).inc()
        if result["status"] != "Success":
            log.warning(f"Conversion failed: {result['message'][:500]}")
        self.seconds.observe(time.monotonic() - started)
        return web.Response(body=answer, content_type="application/json")

    def _answer(self, body: bytes) -> tuple[dict[str, Any], bytes]:
        """The answer to `body` as JSON, with what the metrics need of it: its response and the
        watched kinds it names ("" for any other)."""
        review = json.loads(body)
        ignored: list[tuple[dict[str, Any], str]] = []
        answer = review_response(review, self.conversions, ignored)
        group = review["request"]["desiredAPIVersion"].rpartition("/")[0]
        kinds = {
            obj["kind"] if (group, obj["kind"]) in self.conversions else ""
            for obj in review["request"]["objects"]
        }
        outcome = {"response": answer["response"], "kinds": kinds, "ignored": ignored}
        return outcome, json.dumps(answer).encode()

    async def _report_ignored(self, obj: dict[str, Any], note: str) -> None:
        """A log line and a Warning Event on the object, once per version of it: the API server
        converts the same object at each read."""
        meta = obj.get("metadata") or {}
        seen = (str(meta.get("uid")), str(meta.get("resourceVersion")), note)
        if seen in self._reported:
            return
        if len(self._reported) >= REPORTED_SIZE:
            self._reported.clear()
        self._reported.add(seen)
        where = f"{meta.get('namespace') or ''}/{meta.get('name')}".lstrip("/")
        log.warning(f"Conversion of {obj.get('kind')} {where}: {note}")
        if isinstance(meta.get("name"), str):
            await self._events.post(obj, type_="Warning", reason=ANNOTATION_IGNORED, message=note)


def _pair_of(secret: Mapping[str, Any] | None) -> tuple[bytes, bytes] | None:
    data = (secret or {}).get("data") or {}
    try:
        return base64.b64decode(data[CERT_NAME]), base64.b64decode(data[KEY_NAME])
    except (KeyError, ValueError, TypeError):
        return None


def _expiring(cert_pem: bytes) -> bool:
    """Whether a certificate ends within RENEW_BEFORE (or cannot be read)."""
    try:
        ends = x509.load_pem_x509_certificate(cert_pem).not_valid_after_utc
    except ValueError:
        return True
    return ends - datetime.datetime.now(datetime.UTC) < RENEW_BEFORE


def _client_config(crd: Mapping[str, Any]) -> dict[str, Any]:
    spec = crd.get("spec") or {}
    webhook = (spec.get("conversion") or {}).get("webhook") or {}
    return dict(webhook.get("clientConfig") or {})


def _shown(config: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k != "caBundle"}


async def _answers(config: Mapping[str, Any]) -> bool:
    """Whether the URL in a CRD's client configuration completes a TLS handshake with its CA."""
    url = urlsplit(str(config["url"]))
    try:
        ca = base64.b64decode(config.get("caBundle") or "").decode()
        context = ssl.create_default_context(cadata=ca) if ca else ssl.create_default_context()
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(url.hostname, url.port or 443, ssl=context), timeout=2
        )
    except (OSError, ssl.SSLError, TimeoutError, ValueError):
        return False
    writer.close()
    return True


def webhook_address(
    bind_address: str, conversions: Sequence[KindConversion]
) -> tuple[str, int] | None:
    """Where the webhook listens (--webhook-bind-address), None when no kind converts; a
    conversion that the flag turns off is refused."""
    try:
        at = parse_bind_address(bind_address)
    except ValueError as err:
        raise WebhookError(f"--webhook-bind-address: {err}") from None
    if not conversions:
        return None
    if at is None:
        kinds = ", ".join(f"{c.kind}.{c.group}" for c in conversions)
        raise WebhookError(
            f"--webhook-bind-address=0, but {kinds} declare(s) a conversion that the API "
            "server calls this operator for"
        )
    return at


def select_watches(watches: Sequence[Watch]) -> tuple[list[Watch], list[KindConversion]]:
    """The watches the operator runs, one per kind, and the conversions their roles declare.

    A kind listed at several versions is watched at the highest only (the storage version
    `generate crds` writes), said once in the log: every served version shows every CR, so
    two watches would run two roles for each (upstream's ansible-operator-plugins #154). A kind
    whose role declares a conversion has one watch, its hub; more is refused in one line."""
    chosen = watched_versions([(w.gvk.group, w.gvk.version, w.gvk.kind) for w in watches])
    kept = [w for w in watches if chosen[(w.gvk.group, w.gvk.kind)] == w.gvk.version]
    for watch in watches:
        if watch not in kept:
            log.warning(
                f"Not watching {watch.gvk}: {watch.gvk.kind} is watched at "
                f"{chosen[(watch.gvk.group, watch.gvk.kind)]}, which shows every "
                f"{watch.gvk.kind} (one role per CR); its role {watch.ansible_path} does not run"
            )
    conversions = []
    for watch in kept:
        try:
            declared = load_conversion(watch, Path(watch.role)) if watch.role else None
        except RoleApiError as err:
            raise WebhookError(str(err)) from None
        if declared is None:
            continue
        kind = (watch.gvk.group, watch.gvk.kind)
        if sum((w.gvk.group, w.gvk.kind) == kind for w in watches) > 1:
            raise WebhookError(
                f"{declared.source}: {watch.gvk.kind} declares its other versions there, and "
                "watches.yaml watches it at other versions too: keep one watch, of the "
                "version the role is written for"
            )
        conversions.append(declared)
    return kept, conversions
