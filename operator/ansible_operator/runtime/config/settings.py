"""`ansible-operator run` settings: what the operator was told, grouped by concern
(`RunSettings.watching`, `.reconcile`, `.ansible`, ...), each field declaring its flag: upstream's
name (the field's, with dashes), Go type, help text, default, deprecated aliases and the
environment variables that override it (per kind too). The command line is read from these
declarations by `flags`; the rest of the runtime reads the settings only.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ansible_operator.core import DEFAULT_SHARDS, GVK, MAX_SHARDS
from ansible_operator.gocompat import (
    atoi,
    format_go_duration,
    parse_bool,
    parse_go_duration,
    parse_int,
    quote,
)

PROG = "ansible-operator"
LOG_EVENTS = ("Tasks", "Everything", "Nothing")
MAX_ANSIBLE_VERBOSITY = 7
RUNNERS = ("warm", "cold")


class SettingsError(ValueError):
    """A bad command line or environment; `str()` is the one-line message."""


def default_max_concurrent_reconciles() -> int:
    """CPUs this process may run on (respects affinity/cpusets, unlike upstream's NumCPU)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


# --- Go value parsers ------------------------------------------------------------------------


def _non_negative_duration(text: str) -> float:
    seconds = parse_go_duration(text)
    if seconds < 0:
        raise ValueError("must not be negative")
    return seconds


def _optional_duration(text: str) -> float | None:
    """A non-negative duration where 0 means "none"."""
    return _non_negative_duration(text) or None


def _positive_rate(text: str) -> float:
    try:
        rate = float(text)
    except ValueError:
        raise ValueError("not a number") from None
    if not rate > 0 or rate == float("inf"):
        raise ValueError("must be a positive number of runs per second")
    return rate


def _port(text: str) -> int:
    port = parse_int(text)
    if not 0 <= port <= 65535:
        raise ValueError("port must be between 0 and 65535")
    return port


def _choice(values: Sequence[str], message: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text.lower() not in values:
            raise ValueError(message.format(quote(text)))
        return text.lower()

    return parse


def _zap_log_level(text: str) -> str:
    lowered = text.lower()
    if lowered in ("debug", "info", "error"):
        return lowered
    try:
        level = atoi(text)
    except ValueError:
        level = 0
    if level > 0:
        return str(level)
    raise ValueError(f"invalid log level {quote(text)}")


def _shards(text: str) -> int:
    """ "auto" or a number of virtual shards."""
    if text == "auto":
        return DEFAULT_SHARDS
    if text.isdigit() and 1 <= int(text) <= MAX_SHARDS:
        return int(text)
    raise ValueError(f"expected auto or a number of shards from 1 to {MAX_SHARDS}")


def _log_events(text: str) -> str:
    for choice in LOG_EVENTS:
        if text.lower() == choice.lower():
            return choice
    if text:
        raise ValueError("not recognized. Must be one of: Tasks, Everything, Nothing")
    return "Tasks"


def _non_negative_int(text: str) -> int:
    number = parse_int(text)
    if number < 0:
        raise ValueError("must not be negative")
    return number


_BINARY_UNITS = {"": 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}


def _bytes(text: str) -> int:
    """A size as Kubernetes writes it in binary units: 512Mi, 1Gi, 65536."""
    digits = text.rstrip("KMGi")
    unit = text[len(digits) :]
    if not digits.isdigit() or unit not in _BINARY_UNITS:
        raise ValueError("expected a size such as 100Mi, 1Gi or a number of bytes")
    return int(digits) * _BINARY_UNITS[unit]


def _namespaces(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


# --- flag metadata ---------------------------------------------------------------------------

# pflag's value types: how a value is read, and how --help shows a default.
_GO_TYPES: dict[str, tuple[Callable[[str], Any], Callable[[Any], str | None]]] = {
    "string": (str, lambda value: str(value) if value else None),
    "bool": (parse_bool, lambda value: "true" if value else "false"),
    "int": (parse_int, str),
    "float64": (float, str),
    "duration": (parse_go_duration, lambda seconds: format_go_duration(seconds or 0.0)),
}


@dataclass(frozen=True)
class PerKind:
    """A per-kind environment override, `<VARIABLE>_<KIND>_<GROUP>`, of an integer flag."""

    variable: str
    low: int  # values below, or above `high`, fall back to the flag's value
    high: int | None = None
    deprecated: str | None = None  # an older variable, read when the current one is not set
    floor: int | None = None  # the flag's value, as a fallback, is at least this


@dataclass(frozen=True)
class Flag:
    """What a settings field's flag is: its type, help, and what else sets it."""

    go_type: str
    help: str
    parse: Callable[[str], Any] | None = None  # None: the Go type's own parser
    aliases: Mapping[str, str] = field(default_factory=dict)  # deprecated name → its message
    lenient: bool = False  # a bad value is a warning and the default, not an error
    per_kind: PerKind | None = None
    deprecated_environment: str | None = None  # a deprecated variable that sets it when not given
    shown_default: str | None = None  # the default as upstream's --help shows it, if it differs

    def value(self, text: str) -> Any:
        return (self.parse or _GO_TYPES[self.go_type][0])(text)

    def shown(self, default: Any) -> str | None:
        """The default as pflag prints it (`10h0m0s`, `true`), or None when there is none."""
        if self.shown_default is not None:
            return self.shown_default
        if default is None and self.go_type != "duration":
            return None
        return _GO_TYPES[self.go_type][1](default)

    def help_text(self, default: Any, deprecated: str | None = None) -> str:
        text = self.help + (f" (deprecated: {deprecated})" if deprecated else "")
        shown = self.shown(default)
        text += f" (default {shown})" if shown is not None else ""
        if self.per_kind:
            text += f" [environment: {self.per_kind.variable}_<KIND>_<GROUP>]"
        if self.deprecated_environment:
            text += f" [environment: {self.deprecated_environment}, when the flag is not given]"
        return text


@dataclass(frozen=True)
class EnvVar:
    """A setting only the environment gives."""

    name: str
    parse: Callable[[str], Any]
    bad: str  # the warning for a value `parse` refuses (the default is kept)


def _flag(
    default: Any,
    help: str,
    *,
    default_factory: Callable[[], Any] | None = None,
    **options: Any,
) -> Any:
    """A settings field with its flag (`options`: the rest of `Flag`)."""
    metadata = {"flag": Flag(help=help, **options)}
    if default_factory is not None:
        return field(default_factory=default_factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def _env(name: str, default: Any, parse: Callable[[str], Any], bad: str = "") -> Any:
    return field(default=default, metadata={"env": EnvVar(name, parse, bad)})


# --- the settings, by concern ------------------------------------------------------------------


@dataclass(frozen=True)
class Watching:
    """What is watched: the watches file, the namespaces, and the re-runs after a start."""

    watches_file: str = _flag("./watches.yaml", "Path to the watches file to use", go_type="string")
    watch_namespaces: tuple[str, ...] = _env("WATCH_NAMESPACE", (), _namespaces)  # (): all
    resync_rate: float = _flag(
        2.0,
        "Runs per second, per watched kind, at which objects already Successful at their "
        "generation are re-run after a start (drift repair); new and changed objects go first, "
        "unlimited.",
        go_type="float64",
        parse=_positive_rate,
    )


@dataclass(frozen=True)
class Api:
    """How the API server is reached."""

    kubeconfig: str = _flag(
        "",
        "Path to a kubeconfig. Only required if out-of-cluster; else KUBECONFIG, the in-cluster "
        "ServiceAccount, then ~/.kube/config.",
        go_type="string",
    )
    startup_timeout: float | None = _flag(  # seconds; None waits for the API server for ever
        None,
        "How long to wait at start for the API server to answer (Go duration, e.g. 2m); past it "
        "the operator exits with status 1. 0 waits as long as it takes.",
        go_type="duration",
        parse=_optional_duration,
    )


@dataclass(frozen=True)
class Reconcile:
    """When and how many reconciles run."""

    reconcile_period: float = _flag(
        10 * 3600.0, "Default reconcile period for controllers", go_type="duration"
    )
    max_concurrent_reconciles: int = _flag(
        None,
        "Maximum number of concurrent reconciles for controllers. Overridden by environment "
        "variable.",
        go_type="int",
        per_kind=PerKind("MAX_CONCURRENT_RECONCILES", low=1, deprecated="WORKER", floor=1),
        default_factory=default_max_concurrent_reconciles,
    )
    kstatus_conditions: bool = _flag(
        True,
        "Write kstatus's conditions (Reconciling, Stalled, Ready) and status.observedGeneration "
        "beside Running, Successful and Failure, for Argo CD, Flux and kubectl wait; a watch's "
        "kstatusConditions wins",
        go_type="bool",
    )


@dataclass(frozen=True)
class Runs:
    """The record of every run (runs/history.py), served under /runs on the metrics endpoint."""

    run_history: int = _flag(
        20,
        "Runs recorded per custom resource, with their trigger, tasks and output, on the "
        "operator's disk beside the runner's artifacts (0: none)",
        go_type="int",
        parse=_non_negative_int,
    )
    run_history_size: int = _flag(
        100 << 20,
        "Disk the run records of all custom resources may use; the oldest go first",
        go_type="string",
        parse=_bytes,
        shown_default="100Mi",
    )


@dataclass(frozen=True)
class Ansible:
    """How Ansible runs: the runner, its paths, arguments, verbosity and time limits."""

    runner: str = _flag(
        "warm",
        "How Ansible runs start: warm (forks of a process that has already imported "
        "ansible-runner and the Kubernetes client; module tasks on localhost run in forks too) "
        "or cold (a new ansible-runner process per run, as upstream).",
        go_type="string",
        parse=_choice(RUNNERS, "must be warm or cold, not {}"),
    )
    ansible_verbosity: int = _flag(
        2,
        "Ansible verbosity. Overridden by environment variable.",
        go_type="int",
        per_kind=PerKind("ANSIBLE_VERBOSITY", low=0, high=MAX_ANSIBLE_VERBOSITY),
    )
    ansible_roles_path: str = _flag(
        "",
        "Ansible Roles Path. If unset, roles are assumed to be in {{CWD}}/roles.",
        go_type="string",
    )
    ansible_collections_path: str = _flag(
        "",
        "Path to installed Ansible Collections. If set, collections should be located in "
        "{{value}}/ansible_collections/. If unset, collections are assumed to be in "
        "~/.ansible/collections or /usr/share/ansible/collections.",
        go_type="string",
    )
    ansible_args: str = _flag(  # as given; the runner's input dir strips one pair of quotes
        "",
        "Ansible args. Allows user to specify arbitrary arguments for ansible-based operators.",
        go_type="string",
    )
    ansible_run_timeout: float | None = _flag(  # seconds; None means no limit
        None,
        "Maximum duration of one Ansible run (Go duration, e.g. 10m); 0 means no limit. A "
        "watch's runTimeout overrides it.",
        go_type="duration",
        parse=_optional_duration,
    )
    graceful_shutdown_timeout: float = _flag(
        30.0,
        "The amount of time that will be spent waiting for runners to gracefully exit.",
        go_type="duration",
    )


@dataclass(frozen=True)
class Proxy:
    """The API proxy the runs talk through."""

    proxy_port: int = _flag(
        8888, "Ansible proxy server port. Defaults to 8888.", go_type="int", parse=_port
    )
    inject_owner_ref: bool = _flag(
        True,
        "The ansible operator will inject owner references unless this flag is false",
        go_type="bool",
    )


@dataclass(frozen=True)
class Serving:
    """The metrics and probe endpoints."""

    metrics_bind_address: str = _flag(
        ":8443",
        "The address the metric endpoint binds to",
        go_type="string",
        aliases={"metrics-addr": "use --metrics-bind-address instead"},
    )
    health_probe_bind_address: str = _flag(
        ":6789", "The address the probe endpoint binds to.", go_type="string"
    )
    metrics_secure: bool = _flag(
        False, "enables secure serving of the metrics endpoint", go_type="bool"
    )
    metrics_require_rbac: bool = _flag(
        False,
        "enables protection of the metrics endpoint with RBAC-based authn/authz.",
        go_type="bool",
    )
    metrics_cert_dir: str = _flag(  # "": controller-runtime's default directory
        "",
        "Directory with the metrics endpoint's certificate (tls.crt) and key (tls.key), with "
        "--metrics-secure. Defaults to <temp-dir>/k8s-metrics-server/serving-certs; when that "
        "has no pair, a self-signed certificate is generated at start.",
        go_type="string",
    )
    enable_http2: bool = _flag(
        False,
        "Refused when true: the metrics and probe endpoints speak HTTP/1.1 only (upstream's "
        "flag, accepted as false).",
        go_type="bool",
    )
    webhook_bind_address: str = _flag(
        ":9443",
        "The address the conversion webhook (HTTPS, /convert) binds to, when a watched role "
        "declares other versions in meta/conversion.yml. On a loopback address the CRDs are "
        "pointed at this operator's URL (a cluster on this machine).",
        go_type="string",
    )
    webhook_cert_dir: str = _flag(  # "": controller-runtime's default directory
        "",
        "Directory with the conversion webhook's certificate (tls.crt) and key (tls.key), such "
        "as cert-manager's. Defaults to <temp-dir>/k8s-webhook-server/serving-certs; when that "
        "has no pair, the operator makes its own and writes its CA into the CRDs.",
        go_type="string",
    )


@dataclass(frozen=True)
class Election:
    """Who is active: one leader on a Lease, or every replica on its shards."""

    leader_elect: bool = _flag(
        False,
        "Enable leader election for controller manager. Enabling this will ensure there is only "
        "one active controller manager.",
        go_type="bool",
        aliases={"enable-leader-election": "use --leader-elect instead"},
    )
    leader_election_id: str = _flag(
        "",
        "Name of the Lease that holds the leader lock (with --shards, the prefix of the shards' "
        "Leases).",
        go_type="string",
        deprecated_environment="OPERATOR_NAME",
    )
    leader_election_namespace: str = _flag(
        "",
        "Namespace in which to create the leader election Lease (required if running locally "
        "with leader election enabled).",
        go_type="string",
    )
    leader_elect_lease_duration: float = _flag(
        15.0,
        "LeaseDuration is the duration that non-leader candidates will wait to force acquire "
        "leadership. This is measured against time of last observed ack. Default is 15 seconds.",
        go_type="duration",
    )
    leader_elect_renew_deadline: float = _flag(
        10.0,
        "RenewDeadline is the duration that the acting controlplane will retry refreshing "
        "leadership before giving up. Default is 10 seconds.",
        go_type="duration",
    )
    shards: int = _flag(  # virtual shards with --shards; 0: no sharding
        0,
        "Share the work between all replicas instead of electing one: 'auto' (32 virtual shards) "
        "or the number of virtual shards (1-256, the same on every replica). Not with "
        "--leader-elect. The Leases are named after --leader-election-id.",
        go_type="string",
        parse=_shards,
    )


@dataclass(frozen=True)
class Logging:
    """The operator's log (zap's flags) and what it shows of runs."""

    zap_devel: bool = _flag(
        False,
        "Development Mode defaults(encoder=consoleEncoder,logLevel=Debug,stackTraceLevel=Warn). "
        "Production Mode defaults(encoder=jsonEncoder,logLevel=Info,stackTraceLevel=Error)",
        go_type="bool",
    )
    zap_encoder: str | None = _flag(  # json or console; None: by zap_devel
        None,
        "Zap log encoding (one of 'json' or 'console')",
        go_type="string",
        parse=_choice(("json", "console"), "invalid encoder value {}"),
    )
    zap_log_level: str | None = _flag(  # debug, info, error, or a positive integer as text
        None,
        "Zap Level to configure the verbosity of logging. Can be one of 'debug', 'info', "
        "'error', or any integer value > 0 which corresponds to custom debug levels of "
        "increasing verbosity",
        go_type="string",
        parse=_zap_log_level,
    )
    zap_stacktrace_level: str | None = _flag(
        None,
        "Zap Level at and above which stacktraces are captured (one of 'info', 'error', "
        "'panic'). Defaults to 'error', or 'warn' with --zap-devel.",
        go_type="string",
        parse=_choice(("info", "error", "panic"), "invalid stacktrace level {}"),
    )
    zap_time_encoding: str | None = _flag(
        None,
        "Zap time encoding (one of 'epoch', 'millis', 'nano', 'iso8601', 'rfc3339' or "
        "'rfc3339nano'), in UTC. Defaults to 'iso8601' (with milliseconds).",
        go_type="string",
        parse=_choice(
            ("epoch", "millis", "nanos", "iso8601", "rfc3339", "rfc3339nano"),
            "invalid time-encoding value {}",
        ),
    )
    ansible_log_events: str = _flag(  # Tasks, Everything or Nothing
        "Tasks",
        "Ansible log events. The log level for console logging. This flag can be set to either "
        "Nothing, Tasks, or Everything.",
        go_type="string",
        parse=_log_events,
        lenient=True,
        shown_default="tasks",
    )
    ansible_debug_logs: bool = _env(
        "ANSIBLE_DEBUG_LOGS",
        False,
        parse_bool,
        "Could not parse environment variable ANSIBLE_DEBUG_LOGS as a boolean; using default "
        "value false",
    )


@dataclass(frozen=True)
class RunSettings:
    """Everything `ansible-operator run` was told, flags and environment, already validated."""

    watching: Watching = field(default_factory=Watching)
    api: Api = field(default_factory=Api)
    reconcile: Reconcile = field(default_factory=Reconcile)
    ansible: Ansible = field(default_factory=Ansible)
    runs: Runs = field(default_factory=Runs)
    proxy: Proxy = field(default_factory=Proxy)
    serving: Serving = field(default_factory=Serving)
    election: Election = field(default_factory=Election)
    logging: Logging = field(default_factory=Logging)
    # Deprecations, ignored arguments and unrecognised values, for the caller to log.
    warnings: tuple[str, ...] = ()
    environ: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    def ansible_environ(self) -> dict[str, str]:
        """The environment with `--ansible-roles-path`/`--ansible-collections-path` exported as
        `ANSIBLE_ROLES_PATH`/`ANSIBLE_COLLECTIONS_PATH` when set, as upstream does before loading
        watches.yaml; pass it to `load_watches` and to ansible-runner."""
        env = dict(self.environ)
        if self.ansible.ansible_roles_path:
            env["ANSIBLE_ROLES_PATH"] = self.ansible.ansible_roles_path
        if self.ansible.ansible_collections_path:
            env["ANSIBLE_COLLECTIONS_PATH"] = self.ansible.ansible_collections_path
        return env

    def max_concurrent_reconciles_for(self, gvk: GVK) -> int:
        """Workers for one kind: `MAX_CONCURRENT_RECONCILES_<KIND>_<GROUP>`, else the
        deprecated `WORKER_<KIND>_<GROUP>`, else `--max-concurrent-reconciles`."""
        return self._per_kind(self.reconcile, "max_concurrent_reconciles", gvk)[0]

    def ansible_verbosity_for(self, gvk: GVK) -> int:
        """`ANSIBLE_VERBOSITY_<KIND>_<GROUP>` if it is 0..7, else `--ansible-verbosity`."""
        return self._per_kind(self.ansible, "ansible_verbosity", gvk)[0]

    def env_messages_for(self, gvk: GVK) -> list[str]:
        """What to log about this kind's environment overrides (deprecated or bad values)."""
        notes: list[str] = []
        for name, _ in GROUPS:
            group = getattr(self, name)
            for setting in dataclasses.fields(group):
                flag = setting.metadata.get("flag")
                if flag is not None and flag.per_kind is not None:
                    notes += self._per_kind(group, setting.name, gvk)[1]
        return notes

    def _per_kind(self, group: Any, name: str, gvk: GVK) -> tuple[int, list[str]]:
        """The value for one kind, and what to say about the variables that gave it."""
        setting = next(f for f in dataclasses.fields(group) if f.name == name)
        per_kind: PerKind = setting.metadata["flag"].per_kind
        value: int = getattr(group, name)
        fallback = value if per_kind.floor is None else max(per_kind.floor, value)
        suffix = f"{gvk.kind}_{gvk.group}".upper().replace(".", "_")  # "-" kept; core: a "_"
        current = f"{per_kind.variable}_{suffix}"
        legacy = f"{per_kind.deprecated}_{suffix}" if per_kind.deprecated else None
        notes: list[str] = []
        if current in self.environ:
            variable = current
        elif legacy and legacy in self.environ:
            notes.append(f"Environment variable {legacy} is deprecated, use {current} instead")
            variable = legacy
        else:
            return fallback, notes
        raw = self.environ[variable]
        try:
            given = atoi(raw)
        except ValueError:
            notes.append(f"Could not parse environment variable {variable}={raw!r} as an integer")
            return fallback, notes
        if given < per_kind.low or (per_kind.high is not None and given > per_kind.high):
            notes.append(f"Value {given} not valid. Using default {fallback}")
            return fallback, notes
        return given, notes


# Each group's name in RunSettings, and its class.
GROUPS: tuple[tuple[str, Any], ...] = tuple(
    (group.name, group.default_factory)
    for group in dataclasses.fields(RunSettings)
    if group.name not in ("warnings", "environ")
)
