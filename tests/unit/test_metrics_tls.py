"""Where the metrics certificate comes from with --metrics-secure: controller-runtime's
directory and file names, a self-signed one when the default directory has none, an error when
a named directory lacks them. Checked by a real TLS handshake in memory."""

from __future__ import annotations

import ssl

import pytest
from cryptography import x509

from ansible_operator.runtime.observe import metrics_tls
from ansible_operator.runtime.observe.metrics_tls import (
    MetricsCertError,
    self_signed_pair,
    serving_context,
)


def served_certificate(server: ssl.SSLContext, trust: bytes | None = None) -> x509.Certificate:
    """The certificate a client sees in a handshake with ``server``, verified against ``trust``
    (or unverified)."""
    client = ssl.create_default_context()
    if trust is None:
        client.check_hostname = False
        client.verify_mode = ssl.CERT_NONE
    else:
        client.load_verify_locations(cadata=trust.decode())
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    tls_client = client.wrap_bio(c_in, c_out, server_hostname="localhost")
    tls_server = server.wrap_bio(s_in, s_out, server_side=True)
    done: set[int] = set()
    for _ in range(10):
        for i, (side, outgoing, incoming) in enumerate(
            ((tls_client, c_out, s_in), (tls_server, s_out, c_in))
        ):
            try:
                side.do_handshake()
                done.add(i)
            except ssl.SSLWantReadError:
                pass
            incoming.write(outgoing.read())
        if len(done) == 2:
            break
    der = tls_client.getpeercert(binary_form=True)
    assert der is not None
    assert tls_client.selected_alpn_protocol() in (None, "http/1.1")
    return x509.load_der_x509_certificate(der)


@pytest.fixture
def default_dir(tmp_path, monkeypatch):
    where = tmp_path / "k8s-metrics-server" / "serving-certs"
    monkeypatch.setattr(metrics_tls, "default_cert_dir", lambda: where)
    return where


def test_without_certificates_one_is_self_signed_for_localhost(default_dir):
    tls = serving_context("")
    assert tls.source == "self-signed" and tls.files is None
    cert = served_certificate(tls.context)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert not default_dir.exists()  # nothing written where a mounted pair would go


def test_the_default_directory_pair_is_used(default_dir):
    default_dir.mkdir(parents=True)
    cert_pem, key_pem = self_signed_pair()
    (default_dir / "tls.crt").write_bytes(cert_pem)
    (default_dir / "tls.key").write_bytes(key_pem)
    tls = serving_context("")
    assert tls.source == str(default_dir)
    assert served_certificate(tls.context, trust=cert_pem) == x509.load_pem_x509_certificate(
        cert_pem
    )


def test_a_named_directory_pair_is_used(tmp_path, default_dir):
    cert_pem, key_pem = self_signed_pair()
    (tmp_path / "tls.crt").write_bytes(cert_pem)
    (tmp_path / "tls.key").write_bytes(key_pem)
    tls = serving_context(str(tmp_path))
    assert tls.source == str(tmp_path)
    assert served_certificate(tls.context, trust=cert_pem) == x509.load_pem_x509_certificate(
        cert_pem
    )


def test_a_named_directory_without_the_key_is_an_error(tmp_path, default_dir):
    cert_pem, _ = self_signed_pair()
    (tmp_path / "tls.crt").write_bytes(cert_pem)
    with pytest.raises(MetricsCertError, match=f"--metrics-cert-dir: {tmp_path}/tls.key does not"):
        serving_context(str(tmp_path))


def test_a_key_that_does_not_match_is_an_error(tmp_path, default_dir):
    cert_pem, _ = self_signed_pair()
    _, other_key = self_signed_pair()
    (tmp_path / "tls.crt").write_bytes(cert_pem)
    (tmp_path / "tls.key").write_bytes(other_key)
    with pytest.raises(MetricsCertError, match="cannot load the metrics certificate"):
        serving_context(str(tmp_path))


def test_a_changed_pair_is_served_after_a_reload_and_a_bad_one_is_not(tmp_path, default_dir):
    first_cert, first_key = self_signed_pair()
    (tmp_path / "tls.crt").write_bytes(first_cert)
    (tmp_path / "tls.key").write_bytes(first_key)
    tls = serving_context(str(tmp_path))
    assert tls.reload_if_changed() is False  # nothing changed

    second_cert, second_key = self_signed_pair()
    (tmp_path / "tls.crt").write_bytes(second_cert)
    (tmp_path / "tls.key").write_bytes(second_key)
    assert tls.reload_if_changed() is True
    assert served_certificate(tls.context) == x509.load_pem_x509_certificate(second_cert)

    third_cert, _ = self_signed_pair()
    (tmp_path / "tls.crt").write_bytes(third_cert)  # half-rotated: the key does not match
    with pytest.raises(MetricsCertError):
        tls.reload_if_changed()
    assert served_certificate(tls.context) == x509.load_pem_x509_certificate(second_cert)
    # Every check counts as a read (the one at start too), as controller-runtime's polls do.
    assert (tls.reads, tls.read_errors) == (4, 1)
