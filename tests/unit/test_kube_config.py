"""In-cluster credentials: what a Pod has mounted, and one line when it is not usable."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_operator.kube import config

PEM = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
IN_A_POD = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}


@pytest.fixture
def mounted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ServiceAccount mount: token, ca.crt and namespace, as the kubelet writes them."""
    (tmp_path / "token").write_text("a-token\n")
    (tmp_path / "ca.crt").write_bytes(PEM)
    (tmp_path / "namespace").write_text("ops\n")
    monkeypatch.setattr(config, "SERVICE_ACCOUNT_DIR", tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.kube/config to fall back on
    return tmp_path


def test_a_pods_service_account_is_used(mounted):
    creds = config.load(IN_A_POD)
    assert creds.server == "https://10.0.0.1:443"
    assert creds.bearer_token() == "a-token"
    assert creds.ca_data == PEM
    assert creds.namespace == "ops"


def test_a_missing_token_names_the_mount(mounted):
    (mounted / "token").unlink()
    with pytest.raises(config.ConfigError, match="token does not exist: is a ServiceAccount"):
        config.load(IN_A_POD)


def test_an_unreadable_token_is_one_line(mounted):
    (mounted / "token").unlink()
    (mounted / "token").mkdir()  # root reads any file: a directory stands for an unreadable one
    with pytest.raises(config.ConfigError) as err:
        config.load(IN_A_POD)
    assert str(err.value) == f"{mounted / 'token'}: cannot read: Is a directory"


def test_an_empty_token_and_a_ca_that_is_not_pem_are_one_line_each(mounted):
    (mounted / "token").write_text("\n")
    with pytest.raises(config.ConfigError, match="the ServiceAccount token is empty"):
        config.load(IN_A_POD)
    (mounted / "token").write_text("a-token")
    (mounted / "ca.crt").write_text("not a certificate")
    with pytest.raises(config.ConfigError, match=r"ca\.crt: not a PEM certificate"):
        config.load(IN_A_POD)
