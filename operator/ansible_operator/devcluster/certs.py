"""Certificates for the local control plane, generated in Python.

One ECDSA P-256 CA signs the API server's serving certificate and an admin client certificate
(``O=system:masters``) that every component and the tests use; a separate key signs
ServiceAccount tokens. Everything is written once per cluster into its state directory.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)
API_SERVER_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
API_SERVER_IPS = ("127.0.0.1", "::1", "10.0.0.1")  # 10.0.0.1: first IP of the service CIDR


@dataclass(frozen=True)
class ClusterCerts:
    """Paths of the PEM files a cluster needs, all inside one directory."""

    directory: Path

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def serving_cert(self) -> Path:
        return self.directory / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.directory / "apiserver.key"

    @property
    def admin_cert(self) -> Path:
        return self.directory / "admin.crt"

    @property
    def admin_key(self) -> Path:
        return self.directory / "admin.key"

    @property
    def service_account_key(self) -> Path:
        return self.directory / "sa.key"

    @property
    def service_account_public_key(self) -> Path:
        return self.directory / "sa.pub"

    def exist(self) -> bool:
        paths = (self.ca_cert, self.serving_cert, self.admin_cert, self.service_account_key)
        return all(p.exists() for p in paths)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    # SEC1 ("EC PRIVATE KEY"): the one form every component's key loader accepts.
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    path.write_bytes(pem)
    path.chmod(0o600)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attrs)


def _builder(subject: x509.Name, issuer: x509.Name, public_key: object) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)  # type: ignore[arg-type]
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
    )


def generate(directory: Path) -> ClusterCerts:
    """Write a fresh CA, serving, admin and ServiceAccount key set into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    certs = ClusterCerts(directory)

    ca_key = _new_key()
    ca_name = _name("ansible-operator-dev-cluster-ca")
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        # Key identifiers: Python 3.13's default verification (VERIFY_X509_STRICT) refuses a
        # chain whose certificates lack them ("Missing Authority Key Identifier").
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    _write_key(certs.ca_key, ca_key)
    _write_cert(certs.ca_cert, ca_cert)

    def leaf(subject: x509.Name, usage: x509.ObjectIdentifier, sans: list[x509.GeneralName]):
        key = _new_key()
        builder = (
            _builder(subject, ca_name, key.public_key())
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
            )
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return key, builder.sign(ca_key, hashes.SHA256())

    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in API_SERVER_NAMES]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in API_SERVER_IPS]
    key, cert = leaf(_name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH, sans)
    _write_key(certs.serving_key, key)
    _write_cert(certs.serving_cert, cert)

    key, cert = leaf(_name("admin", "system:masters"), ExtendedKeyUsageOID.CLIENT_AUTH, [])
    _write_key(certs.admin_key, key)
    _write_cert(certs.admin_cert, cert)

    sa_key = _new_key()
    _write_key(certs.service_account_key, sa_key)
    certs.service_account_public_key.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return certs
