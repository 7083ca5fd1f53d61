"""A kubeconfig user's exec credential plugin (``users[].user.exec``, what EKS's ``aws eks
get-token``, GKE's ``gke-gcloud-auth-plugin`` and ``kubelogin`` are): run the command, read the
``ExecCredential`` it prints, and use its bearer token until its ``expirationTimestamp``, as
client-go does. Only tokens: a plugin that answers with a client certificate is refused in one
line (the TLS context is made once, when the client is).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
TIMEOUT = 60.0  # seconds a plugin may take (a browser login takes longer: that is interactive)
EARLY = 30.0  # seconds before its expiry a token is renewed, so no request carries a stale one


class ExecPluginError(Exception):
    """The plugin could not give a token: one line naming it and why."""


@dataclass(frozen=True)
class ExecPlugin:
    where: str  # "<kubeconfig>: user <name>", for errors
    api_version: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    install_hint: str = ""
    _cache: dict[str, tuple[str, float | None]] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )
    _lock: threading.Lock = field(
        default_factory=threading.Lock, compare=False, hash=False, repr=False
    )

    def due(self) -> bool:
        """Whether ``token()`` would run the plugin (no token yet, or it expires soon)."""
        cached = self._cache.get("token")
        return cached is None or (cached[1] is not None and time.time() >= cached[1] - EARLY)

    def token(self) -> str:
        """The plugin's token, run again only when the last one expires."""
        with self._lock:
            if not self.due():
                return self._cache["token"][0]
            token, expires = self._run()
            self._cache["token"] = (token, expires)
            return token

    def _run(self) -> tuple[str, float | None]:
        info = {"apiVersion": self.api_version, "kind": "ExecCredential"}
        info["spec"] = {"interactive": False}  # type: ignore[assignment]
        env = {**os.environ, **dict(self.env), "KUBERNETES_EXEC_INFO": json.dumps(info)}
        name = f"{self.where}: exec plugin {self.command!r}"
        try:
            done = subprocess.run(
                [self.command, *self.args],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                check=False,
            )
        except FileNotFoundError:
            hint = f": {self.install_hint.strip()}" if self.install_hint.strip() else ""
            raise ExecPluginError(f"{name} is not installed{hint}") from None
        except subprocess.TimeoutExpired:
            raise ExecPluginError(f"{name} did not answer in {TIMEOUT:.0f}s") from None
        except OSError as err:
            raise ExecPluginError(f"{name} cannot run: {err.strerror or err}") from None
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise ExecPluginError(f"{name} failed (exit {done.returncode}): {last}")
        return _token(name, self.api_version, done.stdout)


def _token(name: str, api_version: str, printed: str) -> tuple[str, float | None]:
    try:
        credential = json.loads(printed)
    except ValueError:
        raise ExecPluginError(f"{name} printed no ExecCredential JSON") from None
    if not isinstance(credential, dict) or credential.get("kind") != "ExecCredential":
        raise ExecPluginError(f"{name} printed no ExecCredential")
    if credential.get("apiVersion") != api_version:
        raise ExecPluginError(
            f"{name} answered {credential.get('apiVersion')!r}, not the {api_version!r} asked for"
        )
    status = credential.get("status") or {}
    token = status.get("token")
    if not token:
        if status.get("clientCertificateData"):
            raise ExecPluginError(
                f"{name} gave a client certificate, which is not supported: only tokens"
            )
        raise ExecPluginError(f"{name} gave no token")
    expires = status.get("expirationTimestamp")
    if not expires:
        return str(token), None
    try:
        return str(token), datetime.fromisoformat(expires.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise ExecPluginError(f"{name}: bad expirationTimestamp {expires!r}") from None


def from_kubeconfig(where: str, spec: object, base: Path) -> ExecPlugin:
    """The plugin a kubeconfig user's ``exec`` section names (a relative command with a path
    separator is relative to ``base``, the kubeconfig's directory, as client-go has it);
    ExecPluginError when it is not one this client can run."""
    if not isinstance(spec, dict) or not spec.get("command"):
        raise ExecPluginError(f"{where}: exec has no command")
    api_version = spec.get("apiVersion")
    if api_version not in API_VERSIONS:
        raise ExecPluginError(
            f"{where}: exec apiVersion {api_version!r} is not one of {', '.join(API_VERSIONS)}"
        )
    if spec.get("interactiveMode") == "Always":
        raise ExecPluginError(
            f"{where}: the exec plugin wants a terminal (interactiveMode: Always): run it once "
            "through kubectl to log in, or pass a token"
        )
    env = tuple(
        (str(item.get("name")), str(item.get("value", "")))
        for item in spec.get("env") or ()
        if isinstance(item, dict) and item.get("name")
    )
    command = str(spec["command"])
    if os.sep in command and not os.path.isabs(command):
        command = str(base / command)
    return ExecPlugin(
        where,
        api_version,
        command,
        tuple(str(arg) for arg in spec.get("args") or ()),
        env,
        str(spec.get("installHint") or ""),
    )
