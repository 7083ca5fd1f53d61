"""Where the operator's API credentials come from, in upstream's order.

``--kubeconfig`` (``run``'s flag, which upstream's binary takes from controller-runtime) first,
then ``KUBECONFIG``, then the in-cluster ServiceAccount, then ``~/.kube/config``, as
controller-runtime's ``config.GetConfig()`` does.
The result is one plain ``Credentials`` value shared by the operator's client (and so its
watches) and the kubeconfig handed to each Ansible run.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import yaml

from ansible_operator.kube.exec_plugin import ExecPlugin, ExecPluginError
from ansible_operator.kube.exec_plugin import from_kubeconfig as exec_from_kubeconfig

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class ConfigError(Exception):
    """No usable credentials; the message says which file and what is wrong."""


@dataclass(frozen=True)
class Credentials:
    server: str
    ca_data: bytes | None = None  # PEM
    insecure: bool = False
    token: str | None = None
    token_file: Path | None = None  # re-read on use: projected tokens rotate
    cert_data: bytes | None = None  # PEM client certificate
    key_data: bytes | None = None  # PEM client key
    username: str | None = None
    password: str | None = None
    namespace: str | None = None
    exec_plugin: ExecPlugin | None = None  # run for a token when one is due

    def bearer_token(self) -> str | None:
        """The token to send, if any; ExecPluginError when the exec plugin gives none."""
        if self.exec_plugin is not None:
            return self.exec_plugin.token()
        if self.token_file is not None:
            return self.token_file.read_text().strip()
        return self.token

    @cached_property
    def tls(self) -> ssl.SSLContext | bool:
        """The TLS context for the API server (False over plain HTTP): made at first use, once
        for everything these credentials serve (the client, the runs' proxy). ssl.SSLError or
        OSError when the CA or the client certificate cannot be loaded."""
        if not self.server.startswith("https"):
            return False
        if self.insecure:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif self.ca_data:
            ctx = ssl.create_default_context(cadata=self.ca_data.decode())
        else:
            ctx = ssl.create_default_context()
        if self.cert_data and self.key_data:
            # ssl can only load a client certificate from files: written privately, then removed.
            with tempfile.TemporaryDirectory(prefix="ansible-operator-tls-") as tmp:
                cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
                for path, data in ((cert, self.cert_data), (key, self.key_data)):
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
                    with os.fdopen(fd, "wb") as f:
                        f.write(data)
                ctx.load_cert_chain(str(cert), str(key))
        return ctx


def load(environ: Mapping[str, str] | None = None, kubeconfig: str = "") -> Credentials:
    """The credentials: `kubeconfig` (controller-runtime's --kubeconfig flag) when given, then
    the order above."""
    env = os.environ if environ is None else environ
    if kubeconfig:
        if not Path(kubeconfig).is_file():
            raise ConfigError(f"--kubeconfig={kubeconfig}: no such file")
        return from_kubeconfig(Path(kubeconfig))
    if env.get("KUBECONFIG"):
        # Like client-go, take the first existing file of a path list.
        for part in env["KUBECONFIG"].split(os.pathsep):
            if part and Path(part).exists():
                return from_kubeconfig(Path(part))
        raise ConfigError(f"KUBECONFIG={env['KUBECONFIG']}: no such file")
    token = SERVICE_ACCOUNT_DIR / "token"
    if env.get("KUBERNETES_SERVICE_HOST") and token.exists():
        return in_cluster(env)
    default = Path.home() / ".kube" / "config"
    if default.exists():
        return from_kubeconfig(default)
    if env.get("KUBERNETES_SERVICE_HOST"):
        raise ConfigError(
            f"no Kubernetes credentials: in a Pod (KUBERNETES_SERVICE_HOST is set) but {token} "
            "does not exist: is a ServiceAccount token mounted (automountServiceAccountToken)?"
        )
    raise ConfigError(
        "no Kubernetes credentials: set KUBECONFIG, run in a Pod with a ServiceAccount, "
        "or create ~/.kube/config"
    )


def in_cluster(env: Mapping[str, str]) -> Credentials:
    host, port = env["KUBERNETES_SERVICE_HOST"], env.get("KUBERNETES_SERVICE_PORT", "443")
    if ":" in host:
        host = f"[{host}]"
    namespace_file = SERVICE_ACCOUNT_DIR / "namespace"
    token_file, ca_file = SERVICE_ACCOUNT_DIR / "token", SERVICE_ACCOUNT_DIR / "ca.crt"
    try:
        if not token_file.read_text().strip():
            raise ConfigError(f"{token_file}: the ServiceAccount token is empty")
        ca_data = ca_file.read_bytes()
    except OSError as err:
        raise ConfigError(f"{err.filename}: cannot read: {err.strerror}") from err
    if b"-----BEGIN CERTIFICATE-----" not in ca_data:
        raise ConfigError(f"{ca_file}: not a PEM certificate")
    return Credentials(
        server=f"https://{host}:{port}",
        ca_data=ca_data,
        token_file=token_file,
        namespace=namespace_file.read_text().strip() if namespace_file.exists() else None,
    )


def _data(where: Path, section: dict, key: str) -> bytes | None:
    if section.get(f"{key}-data"):
        return base64.b64decode(section[f"{key}-data"])
    if section.get(key):
        path = Path(section[key])
        if not path.is_absolute():
            path = where.parent / path
        try:
            return path.read_bytes()
        except OSError as err:
            raise ConfigError(f"{where}: cannot read {key} {path}: {err.strerror}") from err
    return None


def from_kubeconfig(path: Path) -> Credentials:
    try:
        config = yaml.safe_load(path.read_text()) or {}
    except OSError as err:
        raise ConfigError(f"{path}: cannot read: {err.strerror or err}") from err
    except yaml.YAMLError as err:  # one line, not the parser's dump
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(err, "problem", None) or "invalid YAML"
        raise ConfigError(f"{where}: not a valid kubeconfig: {problem}") from err
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: not a valid kubeconfig: a mapping was expected")

    def named(section: str, name: str) -> dict:
        for item in config.get(section) or []:
            if item.get("name") == name:
                return item.get(section[:-1]) or {}
        raise ConfigError(f"{path}: {section[:-1]} {name!r} is not defined")

    context_name = config.get("current-context")
    if not context_name:
        raise ConfigError(f"{path}: no current-context")
    context = named("contexts", context_name)
    cluster = named("clusters", context.get("cluster", ""))
    user = named("users", context.get("user", "")) if context.get("user") else {}
    if not cluster.get("server"):
        raise ConfigError(f"{path}: cluster {context.get('cluster')!r} has no server")
    if "auth-provider" in user:
        raise ConfigError(
            f"{path}: user {context.get('user')!r} needs an auth-provider plugin (gone from "
            "kubectl since 1.26), which is not supported; use an exec plugin, a token or a "
            "client certificate"
        )
    plugin = None
    if "exec" in user:
        try:
            plugin = exec_from_kubeconfig(
                f"{path}: user {context.get('user')!r}", user["exec"], path.parent
            )
        except ExecPluginError as err:
            raise ConfigError(str(err)) from None
    token_file = Path(user["tokenFile"]) if user.get("tokenFile") else None
    return Credentials(
        server=cluster["server"].rstrip("/"),
        ca_data=_data(path, cluster, "certificate-authority"),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        token=user.get("token"),
        token_file=token_file,
        cert_data=_data(path, user, "client-certificate"),
        key_data=_data(path, user, "client-key"),
        username=user.get("username"),
        password=user.get("password"),
        namespace=context.get("namespace"),
        exec_plugin=plugin,
    )
