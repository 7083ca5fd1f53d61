"""`ansible-operator run` settings: upstream's flags and environment variables, parsed up front.

Flags, defaults, deprecated aliases and error wording are upstream's (pflag and the zap flags;
we add `--ansible-run-timeout`), and any error is one line with exit status 1, as with cobra.
Arguments are first tokenised by pflag's rules into `--flag=value` form and then given to
argparse, so a value starting with `-` is never taken for a flag.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, TextIO

from ansible_operator.core.shards import DEFAULT_SHARDS, MAX_SHARDS
from ansible_operator.core.watches import GVK
from ansible_operator.gocompat.durations import format_go_duration, parse_go_duration
from ansible_operator.gocompat.strconv import atoi, parse_bool, parse_int, quote

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


def _duration(text: str) -> float:
    return parse_go_duration(text)


def _non_negative_duration(text: str) -> float:
    seconds = parse_go_duration(text)
    if seconds < 0:
        raise ValueError("must not be negative")
    return seconds


_DURATION_PARSERS = (_duration, _non_negative_duration)


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


# --- the flag table ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Flag:
    name: str
    parse: Callable[[str], Any] | None  # None for booleans
    default: Any
    help: str
    deprecated: str | None = None
    environment: str | None = None  # the variable that overrides it, as --help says

    def shown_default(self, default: Any) -> str | None:
        """The default as pflag prints it (`10h0m0s`, `true`), or None when there is none."""
        if default is None or default == "":
            return None
        if self.is_bool:
            return "true" if default else "false"
        if self.parse in _DURATION_PARSERS:
            return format_go_duration(default)
        return str(default)

    @property
    def is_bool(self) -> bool:
        return self.parse is None


def _flags() -> tuple[_Flag, ...]:
    return (
        _Flag("watches-file", str, "./watches.yaml", "Path to the watches file to use"),
        _Flag(
            "kubeconfig",
            str,
            "",
            "Path to a kubeconfig. Only required if out-of-cluster; else KUBECONFIG, the "
            "in-cluster ServiceAccount, then ~/.kube/config.",
        ),
        _Flag(
            "inject-owner-ref",
            None,
            True,
            "The ansible operator will inject owner references unless this flag is false",
        ),
        _Flag(
            "ansible-verbosity",
            parse_int,
            2,
            "Ansible verbosity. Overridden by environment variable.",
            environment="ANSIBLE_VERBOSITY_<KIND>_<GROUP>",
        ),
        _Flag(
            "ansible-roles-path",
            str,
            "",
            "Ansible Roles Path. If unset, roles are assumed to be in {{CWD}}/roles.",
        ),
        _Flag(
            "ansible-collections-path",
            str,
            "",
            "Path to installed Ansible Collections. If set, collections should be located in "
            "{{value}}/ansible_collections/. If unset, collections are assumed to be in "
            "~/.ansible/collections or /usr/share/ansible/collections.",
        ),
        _Flag(
            "ansible-args",
            str,
            "",
            "Ansible args. Allows user to specify arbitrary arguments for ansible-based operators.",
        ),
        _Flag(
            "reconcile-period",
            _duration,
            10 * 3600.0,
            "Default reconcile period for controllers",
        ),
        _Flag(
            "max-concurrent-reconciles",
            parse_int,
            None,  # filled in at parse time: CPUs available to this process
            "Maximum number of concurrent reconciles for controllers. Overridden by environment "
            "variable.",
            environment="MAX_CONCURRENT_RECONCILES_<KIND>_<GROUP>",
        ),
        _Flag(
            "resync-rate",
            _positive_rate,
            2.0,
            "Runs per second, per watched kind, at which objects already Successful at their "
            "generation are re-run after a start (drift repair); new and changed objects go "
            "first, unlimited.",
        ),
        _Flag(
            "metrics-addr",
            str,
            ":8443",
            "The address the metric endpoint binds to",
            deprecated="use --metrics-bind-address instead",
        ),
        _Flag("metrics-bind-address", str, ":8443", "The address the metric endpoint binds to"),
        _Flag(
            "health-probe-bind-address",
            str,
            ":6789",
            "The address the probe endpoint binds to.",
        ),
        _Flag(
            "enable-leader-election",
            None,
            False,
            "Enable leader election for controller manager. Enabling this will ensure there is "
            "only one active controller manager.",
            deprecated="use --leader-elect instead",
        ),
        _Flag(
            "leader-elect",
            None,
            False,
            "Enable leader election for controller manager. Enabling this will ensure there is "
            "only one active controller manager.",
        ),
        _Flag(
            "leader-election-id",
            str,
            "",
            "Name of the Lease that holds the leader lock (with --shards, the prefix of the "
            "shards' Leases).",
            environment="OPERATOR_NAME, when the flag is not given",
        ),
        _Flag(
            "leader-election-namespace",
            str,
            "",
            "Namespace in which to create the leader election Lease (required if running "
            "locally with leader election enabled).",
        ),
        _Flag(
            "leader-elect-resource-lock",
            str,
            "configmapsleases",
            "The type of resource object that is used for locking during leader election. "
            "Ignored: always 'leases'.",
            deprecated=(
                "This flag is now hardcoded to 'leases', which is the only supported option by "
                "client-go"
            ),
        ),
        _Flag(
            "leader-elect-lease-duration",
            _duration,
            15.0,
            "LeaseDuration is the duration that non-leader candidates will wait to force "
            "acquire leadership. This is measured against time of last observed ack. "
            "Default is 15 seconds.",
        ),
        _Flag(
            "leader-elect-renew-deadline",
            _duration,
            10.0,
            "RenewDeadline is the duration that the acting controlplane will retry refreshing "
            "leadership before giving up. Default is 10 seconds.",
        ),
        _Flag(
            "shards",
            str,
            "",
            "Share the work between all replicas instead of electing one: 'auto' (32 virtual "
            "shards) or the number of virtual shards (1-256, the same on every replica). "
            "Not with --leader-elect. The Leases are named after --leader-election-id.",
        ),
        _Flag(
            "startup-timeout",
            _non_negative_duration,
            0.0,
            "How long to wait at start for the API server to answer (Go duration, e.g. 2m); "
            "past it the operator exits with status 1. 0 waits as long as it takes.",
        ),
        _Flag(
            "graceful-shutdown-timeout",
            _duration,
            30.0,
            "The amount of time that will be spent waiting for runners to gracefully exit.",
        ),
        _Flag(
            "ansible-log-events",
            str,
            "tasks",
            "Ansible log events. The log level for console logging. This flag can be set to "
            "either Nothing, Tasks, or Everything.",
        ),
        _Flag("proxy-port", _port, 8888, "Ansible proxy server port. Defaults to 8888."),
        _Flag(
            "enable-http2",
            None,
            False,
            "Refused when true: the metrics and probe endpoints speak HTTP/1.1 only (upstream's "
            "flag, accepted as false).",
        ),
        _Flag("metrics-secure", None, False, "enables secure serving of the metrics endpoint"),
        _Flag(
            "metrics-cert-dir",
            str,
            "",
            "Directory with the metrics endpoint's certificate (tls.crt) and key (tls.key), "
            "with --metrics-secure. Defaults to <temp-dir>/k8s-metrics-server/serving-certs; "
            "when that has no pair, a self-signed certificate is generated at start.",
        ),
        _Flag(
            "webhook-bind-address",
            str,
            ":9443",
            "The address the conversion webhook (HTTPS, /convert) binds to, when a watched role "
            "declares other versions in meta/conversion.yml. On a loopback address the CRDs are "
            "pointed at this operator's URL (a cluster on this machine).",
        ),
        _Flag(
            "webhook-cert-dir",
            str,
            "",
            "Directory with the conversion webhook's certificate (tls.crt) and key (tls.key), "
            "such as cert-manager's. Defaults to <temp-dir>/k8s-webhook-server/serving-certs; "
            "when that has no pair, the operator makes its own and writes its CA into the CRDs.",
        ),
        _Flag(
            "metrics-require-rbac",
            None,
            False,
            "enables protection of the metrics endpoint with RBAC-based authn/authz.",
        ),
        _Flag(
            "ansible-run-timeout",
            _non_negative_duration,
            0.0,
            "Maximum duration of one Ansible run (Go duration, e.g. 10m); 0 means no limit. "
            "A watch's runTimeout overrides it.",
        ),
        _Flag(
            "runner",
            _choice(RUNNERS, "must be warm or cold, not {}"),
            "warm",
            "How Ansible runs start: warm (forks of a process that has already imported "
            "ansible-runner and the Kubernetes client; module tasks on localhost run in forks "
            "too) or cold (a new ansible-runner process per run, as upstream).",
        ),
        _Flag(
            "zap-devel",
            None,
            False,
            "Development Mode defaults(encoder=consoleEncoder,logLevel=Debug,"
            "stackTraceLevel=Warn). Production Mode defaults(encoder=jsonEncoder,"
            "logLevel=Info,stackTraceLevel=Error)",
        ),
        _Flag(
            "zap-encoder",
            _choice(("json", "console"), "invalid encoder value {}"),
            None,
            "Zap log encoding (one of 'json' or 'console')",
        ),
        _Flag(
            "zap-log-level",
            _zap_log_level,
            None,
            "Zap Level to configure the verbosity of logging. Can be one of 'debug', 'info', "
            "'error', or any integer value > 0 which corresponds to custom debug levels of "
            "increasing verbosity",
        ),
        _Flag(
            "zap-stacktrace-level",
            _choice(("info", "error", "panic"), "invalid stacktrace level {}"),
            None,
            "Zap Level at and above which stacktraces are captured (one of 'info', 'error', "
            "'panic'). Defaults to 'error', or 'warn' with --zap-devel.",
        ),
        _Flag(
            "zap-time-encoding",
            _choice(
                ("epoch", "millis", "nanos", "iso8601", "rfc3339", "rfc3339nano"),
                "invalid time-encoding value {}",
            ),
            None,
            "Zap time encoding (one of 'epoch', 'millis', 'nano', 'iso8601', 'rfc3339' or "
            "'rfc3339nano'), in UTC. Defaults to 'iso8601' (with milliseconds).",
        ),
    )


_FLAGS = _flags()
_BY_NAME = {flag.name: flag for flag in _FLAGS}


def flag_names() -> list[str]:
    """Every flag `run` takes, without the dashes (for shell completion)."""
    return [flag.name for flag in _FLAGS]


# Upstream's boolean flags that we accept only as false, since nothing here implements them.
_REFUSED = {
    "enable-http2": "the metrics and probe endpoints speak HTTP/1.1 only",
}


# --- settings --------------------------------------------------------------------------------


def _env_suffix(gvk: GVK) -> str:
    """`<KIND>_<GROUP>` upper-cased with `.` → `_` (`-` kept; the core group leaves a `_`)."""
    return f"{gvk.kind}_{gvk.group}".upper().replace(".", "_")


@dataclass(frozen=True)
class RunSettings:
    """Everything `ansible-operator run` was told, flags and environment, already validated."""

    watches_file: str = "./watches.yaml"
    kubeconfig: str = ""  # "": KUBECONFIG, in-cluster, ~/.kube/config
    inject_owner_ref: bool = True
    ansible_verbosity: int = 2
    ansible_roles_path: str = ""
    ansible_collections_path: str = ""
    ansible_args: str = ""  # as given; the runner's input dir strips one pair of quotes
    reconcile_period: float = 10 * 3600.0  # seconds
    max_concurrent_reconciles: int = 1
    resync_rate: float = 2.0  # runs/s per kind, for objects already Successful at a start
    metrics_bind_address: str = ":8443"
    health_probe_bind_address: str = ":6789"
    leader_elect: bool = False
    leader_election_id: str = ""
    leader_election_namespace: str = ""
    leader_elect_lease_duration: float = 15.0
    leader_elect_renew_deadline: float = 10.0
    shards: int = 0  # virtual shards with --shards; 0: no sharding
    startup_timeout: float | None = None  # seconds; None waits for the API server for ever
    graceful_shutdown_timeout: float = 30.0
    ansible_log_events: str = "Tasks"  # Tasks, Everything or Nothing
    proxy_port: int = 8888
    enable_http2: bool = False
    metrics_secure: bool = False
    metrics_require_rbac: bool = False
    metrics_cert_dir: str = ""  # "": controller-runtime's default directory
    webhook_bind_address: str = ":9443"
    webhook_cert_dir: str = ""  # "": controller-runtime's default directory
    ansible_run_timeout: float | None = None  # seconds; None means no limit
    runner: str = "warm"  # one of RUNNERS
    zap_devel: bool = False
    zap_encoder: str | None = None  # json or console; None: by zap_devel
    zap_log_level: str | None = None  # debug, info, error, or a positive integer as text
    zap_stacktrace_level: str | None = None
    zap_time_encoding: str | None = None
    watch_namespaces: tuple[str, ...] = ()  # empty means all namespaces
    ansible_debug_logs: bool = False
    # Deprecations, ignored arguments and unrecognised values, for the caller to log.
    warnings: tuple[str, ...] = ()
    environ: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def watches_all_namespaces(self) -> bool:
        return not self.watch_namespaces

    def ansible_environ(self) -> dict[str, str]:
        """The environment with `--ansible-roles-path`/`--ansible-collections-path` exported as
        `ANSIBLE_ROLES_PATH`/`ANSIBLE_COLLECTIONS_PATH` when set, as upstream does before loading
        watches.yaml; pass it to `load_watches` and to ansible-runner."""
        env = dict(self.environ)
        if self.ansible_roles_path:
            env["ANSIBLE_ROLES_PATH"] = self.ansible_roles_path
        if self.ansible_collections_path:
            env["ANSIBLE_COLLECTIONS_PATH"] = self.ansible_collections_path
        return env

    def _env_int(self, name: str) -> tuple[int | None, str | None]:
        raw = self.environ.get(name)
        if raw is None:
            return None, None
        try:
            return atoi(raw), None
        except ValueError:
            return None, f"Could not parse environment variable {name}={raw!r} as an integer"

    def _max_concurrent(self, gvk: GVK) -> tuple[int, list[str]]:
        default = max(1, self.max_concurrent_reconciles)
        current = f"MAX_CONCURRENT_RECONCILES_{_env_suffix(gvk)}"
        legacy = f"WORKER_{_env_suffix(gvk)}"
        notes: list[str] = []
        if current in self.environ:
            value, note = self._env_int(current)
        elif legacy in self.environ:
            notes.append(f"Environment variable {legacy} is deprecated, use {current} instead")
            value, note = self._env_int(legacy)
        else:
            return default, notes
        if note:
            notes.append(note)
        if value is None:
            return default, notes
        if value <= 0:
            notes.append(f"Value {value} not valid. Using default {default}")
            return default, notes
        return value, notes

    def max_concurrent_reconciles_for(self, gvk: GVK) -> int:
        """Workers for one kind: `MAX_CONCURRENT_RECONCILES_<KIND>_<GROUP>`, else the
        deprecated `WORKER_<KIND>_<GROUP>`, else `--max-concurrent-reconciles`."""
        return self._max_concurrent(gvk)[0]

    def ansible_verbosity_for(self, gvk: GVK) -> int:
        """`ANSIBLE_VERBOSITY_<KIND>_<GROUP>` if it is 0..7, else `--ansible-verbosity`."""
        value, _ = self._env_int(f"ANSIBLE_VERBOSITY_{_env_suffix(gvk)}")
        if value is None or not 0 <= value <= MAX_ANSIBLE_VERBOSITY:
            return self.ansible_verbosity
        return value

    def env_messages_for(self, gvk: GVK) -> list[str]:
        """What to log about this kind's environment overrides (deprecated or bad values)."""
        notes = self._max_concurrent(gvk)[1]
        name = f"ANSIBLE_VERBOSITY_{_env_suffix(gvk)}"
        value, note = self._env_int(name)
        if note:
            notes.append(note)
        elif value is not None and not 0 <= value <= MAX_ANSIBLE_VERBOSITY:
            notes.append(f"Value {value} not valid. Using default {self.ansible_verbosity}")
        return notes


# --- parsing ---------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        match = re.match(r"^argument [^:]+: (invalid argument .*)$", message)
        raise SettingsError(match.group(1) if match else message)


def _converter(flag: _Flag) -> Callable[[str], Any]:
    parse = flag.parse or parse_bool

    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(
                f"invalid argument {quote(text)} for {quote('--' + flag.name)} flag: {e}"
            ) from None

    return convert


def _build_parser(max_workers: int) -> argparse.ArgumentParser:
    parser = _Parser(
        prog=f"{PROG} run",
        description="Run the operator",
        epilog="examples:\n"
        "  ansible-operator run\n"
        "  WATCH_NAMESPACE=demo ansible-operator run --watches-file=./watches.yaml "
        "--zap-log-level=debug\n"
        "  ansible-operator run --leader-elect --metrics-bind-address=:8443",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
        add_help=True,
    )
    for flag in _FLAGS:
        default = max_workers if flag.name == "max-concurrent-reconciles" else flag.default
        help_text = flag.help + (f" (deprecated: {flag.deprecated})" if flag.deprecated else "")
        shown = flag.shown_default(default)
        help_text += f" (default {shown})" if shown is not None else ""
        help_text += f" [environment: {flag.environment}]" if flag.environment else ""
        parser.add_argument(
            f"--{flag.name}",
            dest=flag.name.replace("-", "_"),
            type=_converter(flag),
            default=default,
            metavar="BOOL" if flag.is_bool else "VALUE",
            help=help_text,
        )
    return parser


def _tokenise(argv: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """pflag's reading of argv: (`--name=value` tokens, flag names given, positionals)."""
    canonical: list[str] = []
    given: list[str] = []
    positionals: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--":
            positionals.extend(argv[i:])
            break
        if arg in ("-h", "--help"):
            canonical.append("--help")
            continue
        if arg.startswith("--"):
            name, has_value, value = arg[2:].partition("=")
            if not name or name.startswith(("-", "=")):
                raise SettingsError(f"bad flag syntax: {arg}")
            flag = _BY_NAME.get(name)
            if flag is None:
                match = difflib.get_close_matches(name, list(_BY_NAME), n=1, cutoff=0.6)
                hint = f" (did you mean --{match[0]}?)" if match else ""
                raise SettingsError(f"unknown flag: --{name}{hint}")
            if not has_value:
                if flag.is_bool:
                    value = "true"
                elif i < len(argv):
                    value = argv[i]
                    i += 1
                else:
                    raise SettingsError(f"flag needs an argument: --{name}")
            canonical.append(f"--{name}={value}")
            given.append(name)
        elif arg.startswith("-") and len(arg) > 1:
            raise SettingsError(f"unknown shorthand flag: {arg[1]!r} in {arg}")
        else:
            positionals.append(arg)
    return canonical, given, positionals


def _namespaces(raw: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def build_run_settings(
    argv: Sequence[str], environ: Mapping[str, str] | None = None
) -> RunSettings:
    """Parse `run`'s arguments and environment; raise SettingsError with a one-line message.

    `--help` prints usage and raises SystemExit(0), as argparse does.
    """
    env = dict(os.environ if environ is None else environ)
    canonical, given, positionals = _tokenise(argv)
    parsed = vars(_build_parser(default_max_concurrent_reconciles()).parse_args(canonical))
    given_set = set(given)
    warnings: list[str] = []

    if parsed["metrics_require_rbac"] and not parsed["metrics_secure"]:
        raise SettingsError(
            "--metrics-secure flag is required when --metrics-require-rbac is present"
        )
    if parsed["metrics_cert_dir"] and not parsed["metrics_secure"]:
        raise SettingsError("--metrics-cert-dir needs --metrics-secure")
    for name, why in _REFUSED.items():
        if parsed[name.replace("-", "_")]:
            raise SettingsError(f"--{name} is not supported: {why}")
    if {"leader-elect", "enable-leader-election"} <= given_set:
        raise SettingsError("only one of --leader-elect and --enable-leader-election may be set")
    if {"metrics-addr", "metrics-bind-address"} <= given_set:
        raise SettingsError("only one of --metrics-addr and --metrics-bind-address may be set")

    for name in given:
        flag = _BY_NAME[name]
        if flag.deprecated:
            warning = f"Flag --{name} has been deprecated, {flag.deprecated}"
            if warning not in warnings:
                warnings.append(warning)
    if positionals:
        warnings.append(f"Ignoring positional arguments: {' '.join(positionals)}")

    # The deprecated aliases share their replacement's setting.
    metrics_address = parsed["metrics_bind_address"]
    if "metrics-addr" in given_set:
        metrics_address = parsed["metrics_addr"]
    leader_elect = parsed["leader_elect"]
    if "enable-leader-election" in given_set:
        leader_elect = parsed["enable_leader_election"]

    leader_election_id = parsed["leader_election_id"]
    if "OPERATOR_NAME" in env:
        warnings.append(
            "Environment variable OPERATOR_NAME has been deprecated, use --leader-election-id "
            "instead."
        )
        if "leader-election-id" in given_set:
            warnings.append(
                "Ignoring OPERATOR_NAME environment variable since --leader-election-id is set"
            )
        elif not leader_election_id:
            leader_election_id = env["OPERATOR_NAME"]

    shards = _shards(parsed["shards"]) if "shards" in given_set else 0
    if shards and leader_elect:
        raise SettingsError(
            "--shards and --leader-elect exclude each other: with --shards every replica is "
            "active and each CR has one owner; remove --leader-elect"
        )

    log_events = "Tasks"
    raw_events = parsed["ansible_log_events"]
    for choice in LOG_EVENTS:
        if raw_events.lower() == choice.lower():
            log_events = choice
            break
    else:
        if raw_events:
            warnings.append(
                f"--ansible-log-events flag value '{raw_events}' not recognized. "
                "Must be one of: Tasks, Everything, Nothing"
            )

    debug_logs = False
    if "ANSIBLE_DEBUG_LOGS" in env:
        try:
            debug_logs = parse_bool(env["ANSIBLE_DEBUG_LOGS"])
        except ValueError:
            warnings.append(
                "Could not parse environment variable ANSIBLE_DEBUG_LOGS as a boolean; "
                "using default value false"
            )

    return RunSettings(
        watches_file=parsed["watches_file"],
        kubeconfig=parsed["kubeconfig"],
        inject_owner_ref=parsed["inject_owner_ref"],
        ansible_verbosity=parsed["ansible_verbosity"],
        ansible_roles_path=parsed["ansible_roles_path"],
        ansible_collections_path=parsed["ansible_collections_path"],
        ansible_args=parsed["ansible_args"],
        reconcile_period=parsed["reconcile_period"],
        max_concurrent_reconciles=parsed["max_concurrent_reconciles"],
        resync_rate=parsed["resync_rate"],
        metrics_bind_address=metrics_address,
        health_probe_bind_address=parsed["health_probe_bind_address"],
        leader_elect=leader_elect,
        leader_election_id=leader_election_id,
        leader_election_namespace=parsed["leader_election_namespace"],
        leader_elect_lease_duration=parsed["leader_elect_lease_duration"],
        leader_elect_renew_deadline=parsed["leader_elect_renew_deadline"],
        shards=shards,
        startup_timeout=parsed["startup_timeout"] or None,
        graceful_shutdown_timeout=parsed["graceful_shutdown_timeout"],
        ansible_log_events=log_events,
        proxy_port=parsed["proxy_port"],
        enable_http2=parsed["enable_http2"],
        metrics_secure=parsed["metrics_secure"],
        metrics_require_rbac=parsed["metrics_require_rbac"],
        metrics_cert_dir=parsed["metrics_cert_dir"],
        webhook_bind_address=parsed["webhook_bind_address"],
        webhook_cert_dir=parsed["webhook_cert_dir"],
        ansible_run_timeout=parsed["ansible_run_timeout"] or None,
        runner=parsed["runner"],
        zap_devel=parsed["zap_devel"],
        zap_encoder=parsed["zap_encoder"],
        zap_log_level=parsed["zap_log_level"],
        zap_stacktrace_level=parsed["zap_stacktrace_level"],
        zap_time_encoding=parsed["zap_time_encoding"],
        watch_namespaces=_namespaces(env.get("WATCH_NAMESPACE", "")),
        ansible_debug_logs=debug_logs,
        warnings=tuple(warnings),
        environ=env,
    )


def _shards(value: str) -> int:
    """``--shards``: "auto" or a number of virtual shards."""
    if value == "auto":
        return DEFAULT_SHARDS
    if value.isdigit() and 1 <= int(value) <= MAX_SHARDS:
        return int(value)
    raise SettingsError(
        f'invalid argument "{value}" for "--shards" flag: expected auto or a number of '
        f"shards from 1 to {MAX_SHARDS}"
    )


def parse_run_args(
    argv: Sequence[str],
    environ: Mapping[str, str] | None = None,
    *,
    stderr: TextIO | None = None,
) -> RunSettings:
    """`build_run_settings`, exiting with status 1 and one line `ansible-operator: error: ...`
    on a bad flag, value or combination (cobra's behaviour)."""
    try:
        return build_run_settings(argv, environ)
    except SettingsError as e:
        print(f"{PROG}: error: {e}", file=stderr if stderr is not None else sys.stderr)
        raise SystemExit(1) from None
