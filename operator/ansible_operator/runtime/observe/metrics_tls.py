"""The metrics endpoint's TLS certificate with ``--metrics-secure``, as controller-runtime finds it.

The certificate and key are ``tls.crt`` and ``tls.key`` in ``--metrics-cert-dir`` (by default
``<temp-dir>/k8s-metrics-server/serving-certs``, controller-runtime's). When the default
directory has no pair, a self-signed certificate for ``localhost``/``127.0.0.1`` is generated at
start, as controller-runtime does: scrapes are encrypted, and Prometheus skips verification. A
directory named on the command line must hold the pair: a missing file there is an error, not a
silent fallback. A pair from files is re-read when they change (``reload_if_changed``, polled
by the endpoint), as controller-runtime's certificate watcher does, so a rotated certificate
(cert-manager, a renewed Secret) is served without a restart; each check is counted
(``reads``, and ``read_errors`` for a pair that could not be loaded), as controller-runtime's
watcher counts its reads in ``certwatcher_read_certificate_total``. HTTP/2 is not offered
(``--enable-http2`` is refused), so ALPN says http/1.1.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CERT_NAME = "tls.crt"
KEY_NAME = "tls.key"
RELOAD_INTERVAL = 10.0  # seconds between checks for a changed pair, as controller-runtime's


class MetricsCertError(Exception):
    """The metrics certificate cannot be used; one line naming the file."""


def default_cert_dir() -> Path:
    return Path(tempfile.gettempdir()) / "k8s-metrics-server" / "serving-certs"


@dataclass
class ServingTLS:
    """The endpoint's TLS context, and the files it was loaded from (None: self-signed)."""

    context: ssl.SSLContext
    source: str  # the directory, or "self-signed"
    files: tuple[Path, Path] | None = None
    reads: int = 0  # checks of the pair on disk: at start, then each reload_if_changed
    read_errors: int = 0  # checks that found a pair that could not be loaded
    _loaded: tuple[tuple[int, int], ...] = field(default=(), repr=False)

    def reload_if_changed(self) -> bool:
        """Load the pair again if either file changed since it was loaded; True if it did.
        MetricsCertError if the new pair cannot be used (the old one stays in service)."""
        if self.files is None:
            return False
        self.reads += 1
        stamps = _stamps(self.files)
        if stamps == self._loaded:
            return False
        try:
            # Checked on a scratch context first: a failed load can leave a context half-changed.
            _load(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), *self.files)
        except MetricsCertError:
            self.read_errors += 1
            raise
        _load(self.context, *self.files)
        self._loaded = stamps
        return True


def _stamps(files: tuple[Path, Path]) -> tuple[tuple[int, int], ...]:
    try:
        return tuple((s.st_mtime_ns, s.st_size) for s in (f.stat() for f in files))
    except OSError:
        return ()


def serving_context(cert_dir: str) -> ServingTLS:
    """The server TLS context for ``--metrics-cert-dir``'s value ("" for the default
    directory, where a missing pair means a self-signed certificate)."""
    directory = Path(cert_dir) if cert_dir else default_cert_dir()
    cert, key = directory / CERT_NAME, directory / KEY_NAME
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])
    if cert.exists() and key.exists():
        tls = ServingTLS(context, str(directory), (cert, key))
        tls.reload_if_changed()
        return tls
    if cert_dir:
        missing = cert if not cert.exists() else key
        raise MetricsCertError(f"--metrics-cert-dir: {missing} does not exist")
    cert_pem, key_pem = self_signed_pair()
    with tempfile.TemporaryDirectory(prefix="metrics-cert-") as scratch:
        cert, key = Path(scratch) / CERT_NAME, Path(scratch) / KEY_NAME
        cert.write_bytes(cert_pem)
        key.write_bytes(key_pem)
        _load(context, cert, key)
    return ServingTLS(context, "self-signed")


def _load(context: ssl.SSLContext, cert: Path, key: Path) -> None:
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as err:
        raise MetricsCertError(
            f"cannot load the metrics certificate {cert} with key {key}: {err}"
        ) from None


def self_signed_pair(host: str = "localhost", names: Sequence[str] = ()) -> tuple[bytes, bytes]:
    """A PEM certificate and key for ``host``, 127.0.0.1 and ``names``, valid for a year (its
    own CA: a client trusts it by having it, as the API server does a webhook's caBundle)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}@{int(time.time())}")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName(host),
                    *(x509.DNSName(name) for name in names),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem
