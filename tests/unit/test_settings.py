"""`ansible-operator run` flags and environment: defaults, values, aliases, every error."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from ansible_operator.core.watches import GVK
from ansible_operator.runner import prepare_input_dir
from ansible_operator.runtime.config.flags import build_run_settings, parse_run_args
from ansible_operator.runtime.config.settings import (
    Ansible,
    Api,
    Election,
    Logging,
    Proxy,
    Reconcile,
    RunSettings,
    Serving,
    SettingsError,
    Watching,
    default_max_concurrent_reconciles,
)

MEMCACHED = GVK("cache.example.com", "v1alpha1", "Memcached")
SECRET = GVK("", "v1", "Secret")
DASHED = GVK("my-group.example.com", "v1", "Thing")
DEPRECATED_OPERATOR_NAME = (
    "Environment variable OPERATOR_NAME has been deprecated, use --leader-election-id instead."
)


def settings(*argv: str, **env: str) -> RunSettings:
    return build_run_settings(list(argv), env)


def test_defaults() -> None:
    s = settings()
    assert s == RunSettings(
        watching=Watching(watches_file="./watches.yaml", watch_namespaces=(), resync_rate=2.0),
        api=Api(kubeconfig="", startup_timeout=None),
        reconcile=Reconcile(
            reconcile_period=36000.0,
            max_concurrent_reconciles=default_max_concurrent_reconciles(),
        ),
        ansible=Ansible(
            runner="warm",
            ansible_verbosity=2,
            ansible_roles_path="",
            ansible_collections_path="",
            ansible_args="",
            ansible_run_timeout=None,
            graceful_shutdown_timeout=30.0,
        ),
        proxy=Proxy(proxy_port=8888, inject_owner_ref=True),
        serving=Serving(
            metrics_bind_address=":8443",
            health_probe_bind_address=":6789",
            metrics_secure=False,
            metrics_require_rbac=False,
            metrics_cert_dir="",
            enable_http2=False,
        ),
        election=Election(
            leader_elect=False,
            leader_election_id="",
            leader_election_namespace="",
            leader_elect_lease_duration=15.0,
            leader_elect_renew_deadline=10.0,
            shards=0,
        ),
        logging=Logging(
            zap_devel=False,
            zap_encoder=None,
            zap_log_level=None,
            zap_stacktrace_level=None,
            zap_time_encoding=None,
            ansible_log_events="Tasks",
            ansible_debug_logs=False,
        ),
        warnings=(),
    )


def attribute_of(settings: RunSettings, path: str) -> Any:
    """A setting by its path in the groups: `"election.leader_elect"`."""
    group, name = path.split(".")
    return getattr(getattr(settings, group), name)


def test_default_workers_is_positive() -> None:
    assert default_max_concurrent_reconciles() >= 1


@pytest.mark.parametrize(
    ("argv", "attribute", "value"),
    [
        (["--watches-file=/opt/w.yaml"], "watching.watches_file", "/opt/w.yaml"),
        (["--watches-file", "/opt/w.yaml"], "watching.watches_file", "/opt/w.yaml"),
        (["--inject-owner-ref=false"], "proxy.inject_owner_ref", False),
        (["--inject-owner-ref=0"], "proxy.inject_owner_ref", False),
        (["--inject-owner-ref=F"], "proxy.inject_owner_ref", False),
        (["--inject-owner-ref"], "proxy.inject_owner_ref", True),
        (["--ansible-verbosity=5"], "ansible.ansible_verbosity", 5),
        (["--ansible-verbosity", "0"], "ansible.ansible_verbosity", 0),
        (["--ansible-verbosity=12"], "ansible.ansible_verbosity", 12),  # no range check on the flag
        (["--ansible-roles-path=/roles:/more"], "ansible.ansible_roles_path", "/roles:/more"),
        (["--ansible-collections-path=/colls"], "ansible.ansible_collections_path", "/colls"),
        (["--ansible-args=--check"], "ansible.ansible_args", "--check"),
        (["--ansible-args", "-e x=1"], "ansible.ansible_args", "-e x=1"),
        (["--reconcile-period=1m"], "reconcile.reconcile_period", 60.0),
        (["--reconcile-period", "0"], "reconcile.reconcile_period", 0.0),
        (["--max-concurrent-reconciles=8"], "reconcile.max_concurrent_reconciles", 8),
        (["--max-concurrent-reconciles=0x10"], "reconcile.max_concurrent_reconciles", 16),
        (["--metrics-bind-address=:9090"], "serving.metrics_bind_address", ":9090"),
        (["--metrics-bind-address=0"], "serving.metrics_bind_address", "0"),
        (["--health-probe-bind-address=:8081"], "serving.health_probe_bind_address", ":8081"),
        (["--leader-elect"], "election.leader_elect", True),
        (["--leader-elect=true"], "election.leader_elect", True),
        (["--leader-elect=TRUE"], "election.leader_elect", True),
        (
            ["--leader-election-id=memcached-operator"],
            "election.leader_election_id",
            "memcached-operator",
        ),
        (["--leader-election-namespace=ops"], "election.leader_election_namespace", "ops"),
        (["--leader-elect-lease-duration=30s"], "election.leader_elect_lease_duration", 30.0),
        (["--leader-elect-renew-deadline=20s"], "election.leader_elect_renew_deadline", 20.0),
        (["--graceful-shutdown-timeout=1m"], "ansible.graceful_shutdown_timeout", 60.0),
        (["--proxy-port=9999"], "proxy.proxy_port", 9999),
        (["--proxy-port=0"], "proxy.proxy_port", 0),
        (["--enable-http2=false"], "serving.enable_http2", False),
        (["--metrics-secure=false"], "serving.metrics_secure", False),
        (["--metrics-secure"], "serving.metrics_secure", True),
        (["--metrics-secure", "--metrics-require-rbac"], "serving.metrics_require_rbac", True),
        (["--metrics-secure", "--metrics-cert-dir=/certs"], "serving.metrics_cert_dir", "/certs"),
        (["--ansible-run-timeout=10m"], "ansible.ansible_run_timeout", 600.0),
        (["--resync-rate=0.5"], "watching.resync_rate", 0.5),
        ([], "ansible.runner", "warm"),  # ours by default; upstream's way on request
        (["--runner=cold"], "ansible.runner", "cold"),
        (["--resync-rate=20"], "watching.resync_rate", 20.0),
        (["--ansible-run-timeout=0s"], "ansible.ansible_run_timeout", None),
        (["--zap-devel"], "logging.zap_devel", True),
        (["--zap-encoder=console"], "logging.zap_encoder", "console"),
        (["--zap-encoder=JSON"], "logging.zap_encoder", "json"),
        (["--zap-log-level=debug"], "logging.zap_log_level", "debug"),
        (["--zap-log-level=Error"], "logging.zap_log_level", "error"),
        (["--zap-log-level=3"], "logging.zap_log_level", "3"),
        (["--zap-stacktrace-level=panic"], "logging.zap_stacktrace_level", "panic"),
        (["--zap-time-encoding=rfc3339nano"], "logging.zap_time_encoding", "rfc3339nano"),
        (["--zap-time-encoding=ISO8601"], "logging.zap_time_encoding", "iso8601"),
        # The last occurrence wins, as in pflag.
        (["--proxy-port=1", "--proxy-port=2"], "proxy.proxy_port", 2),
        # The deprecated, ignored lock flag is accepted.
        (["--leader-elect-resource-lock=leases"], "election.leader_elect", False),
    ],
)
def test_flag_values(argv: list[str], attribute: str, value: Any) -> None:
    assert attribute_of(settings(*argv), attribute) == value


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--nope"], "unknown flag: --nope"),
        (["--nope=1"], "unknown flag: --nope"),
        (["--kubeconfg=/x"], "unknown flag: --kubeconfg (did you mean --kubeconfig?)"),
        # no abbreviations
        (["--watches"], "unknown flag: --watches (did you mean --watches-file?)"),
        (["-v"], "unknown shorthand flag: 'v' in -v"),
        (["-zap-devel"], "unknown shorthand flag: 'z' in -zap-devel"),
        (["---x"], "bad flag syntax: ---x"),
        (["--=x"], "bad flag syntax: --=x"),
        (["--watches-file"], "flag needs an argument: --watches-file"),
        (["--leader-elect", "--proxy-port"], "flag needs an argument: --proxy-port"),
        (
            ["--reconcile-period=1d"],
            'invalid argument "1d" for "--reconcile-period" flag: '
            'time: unknown unit "d" in duration "1d"',
        ),
        (
            ["--reconcile-period", "10"],
            'invalid argument "10" for "--reconcile-period" flag: '
            'time: missing unit in duration "10"',
        ),
        (
            ["--graceful-shutdown-timeout=x"],
            'invalid argument "x" for "--graceful-shutdown-timeout" flag: '
            'time: invalid duration "x"',
        ),
        (
            ["--max-concurrent-reconciles=two"],
            'invalid argument "two" for "--max-concurrent-reconciles" flag: '
            'strconv.ParseInt: parsing "two": invalid syntax',
        ),
        (
            ["--ansible-verbosity=1.5"],
            'invalid argument "1.5" for "--ansible-verbosity" flag: '
            'strconv.ParseInt: parsing "1.5": invalid syntax',
        ),
        (
            ["--inject-owner-ref=maybe"],
            'invalid argument "maybe" for "--inject-owner-ref" flag: '
            'strconv.ParseBool: parsing "maybe": invalid syntax',
        ),
        (
            ["--leader-elect=yes"],
            'invalid argument "yes" for "--leader-elect" flag: '
            'strconv.ParseBool: parsing "yes": invalid syntax',
        ),
        (
            ["--proxy-port=70000"],
            'invalid argument "70000" for "--proxy-port" flag: port must be between 0 and 65535',
        ),
        (
            ["--ansible-run-timeout=-1s"],
            'invalid argument "-1s" for "--ansible-run-timeout" flag: must not be negative',
        ),
        (
            ["--resync-rate=0"],
            'invalid argument "0" for "--resync-rate" flag: '
            "must be a positive number of runs per second",
        ),
        (
            ["--resync-rate=-1"],
            'invalid argument "-1" for "--resync-rate" flag: '
            "must be a positive number of runs per second",
        ),
        (
            ["--resync-rate=fast"],
            'invalid argument "fast" for "--resync-rate" flag: not a number',
        ),
        (
            ["--zap-encoder=text"],
            'invalid argument "text" for "--zap-encoder" flag: invalid encoder value "text"',
        ),
        (
            ["--zap-log-level=warn"],
            'invalid argument "warn" for "--zap-log-level" flag: invalid log level "warn"',
        ),
        (
            ["--zap-log-level=0"],
            'invalid argument "0" for "--zap-log-level" flag: invalid log level "0"',
        ),
        (
            ["--zap-log-level=-2"],
            'invalid argument "-2" for "--zap-log-level" flag: invalid log level "-2"',
        ),
        (
            ["--zap-stacktrace-level=debug"],
            'invalid argument "debug" for "--zap-stacktrace-level" flag: '
            'invalid stacktrace level "debug"',
        ),
        (
            ["--zap-time-encoding=nano"],
            'invalid argument "nano" for "--zap-time-encoding" flag: '
            'invalid time-encoding value "nano"',
        ),
        (
            ["--metrics-require-rbac"],
            "--metrics-secure flag is required when --metrics-require-rbac is present",
        ),
        (
            ["--metrics-require-rbac", "--metrics-secure=false"],
            "--metrics-secure flag is required when --metrics-require-rbac is present",
        ),
        (["--metrics-cert-dir=/certs"], "--metrics-cert-dir needs --metrics-secure"),
        # Not implemented, so refused rather than accepted and ignored.
        (
            ["--enable-http2"],
            "--enable-http2 is not supported: the metrics and probe endpoints speak HTTP/1.1 only",
        ),
        (
            ["--leader-elect", "--enable-leader-election"],
            "only one of --leader-elect and --enable-leader-election may be set",
        ),
        (
            ["--leader-elect=false", "--enable-leader-election=false"],
            "only one of --leader-elect and --enable-leader-election may be set",
        ),
        (
            ["--runner=hot"],
            'invalid argument "hot" for "--runner" flag: must be warm or cold, not "hot"',
        ),
        (
            ["--metrics-addr=:1", "--metrics-bind-address=:2"],
            "only one of --metrics-addr and --metrics-bind-address may be set",
        ),
    ],
)
def test_errors(argv: list[str], message: str) -> None:
    with pytest.raises(SettingsError) as excinfo:
        settings(*argv)
    assert str(excinfo.value) == message


def test_parse_run_args_exits_1_with_one_line() -> None:
    stderr = io.StringIO()
    with pytest.raises(SystemExit) as excinfo:
        parse_run_args(["--reconcile-period=1d"], {}, stderr=stderr)
    assert excinfo.value.code == 1
    assert stderr.getvalue() == (
        'ansible-operator: error: invalid argument "1d" for "--reconcile-period" flag: '
        'time: unknown unit "d" in duration "1d"\n'
    )


def test_parse_run_args_unknown_flag_exits_1() -> None:
    stderr = io.StringIO()
    with pytest.raises(SystemExit) as excinfo:
        parse_run_args(["--bogus"], {}, stderr=stderr)
    assert excinfo.value.code == 1
    assert stderr.getvalue() == "ansible-operator: error: unknown flag: --bogus\n"


def test_parse_run_args_success() -> None:
    assert parse_run_args(["--proxy-port=1234"], {}).proxy.proxy_port == 1234


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_exits_0(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as excinfo:
        build_run_settings([flag], {})
    assert excinfo.value.code == 0
    out = capsys.readouterr().out
    assert "--watches-file" in out
    assert "--zap-time-encoding" in out


# --- deprecated aliases, positionals ------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "attribute", "value", "warning"),
    [
        (
            ["--metrics-addr=:9000"],
            "serving.metrics_bind_address",
            ":9000",
            "Flag --metrics-addr has been deprecated, use --metrics-bind-address instead",
        ),
        (
            ["--enable-leader-election"],
            "election.leader_elect",
            True,
            "Flag --enable-leader-election has been deprecated, use --leader-elect instead",
        ),
        (
            ["--leader-elect-resource-lock=configmaps"],
            "election.leader_elect",
            False,
            "Flag --leader-elect-resource-lock has been deprecated, This flag is now hardcoded to "
            "'leases', which is the only supported option by client-go",
        ),
    ],
)
def test_deprecated_aliases(argv: list[str], attribute: str, value: Any, warning: str) -> None:
    s = settings(*argv)
    assert attribute_of(s, attribute) == value
    assert s.warnings == (warning,)


def test_bool_flag_does_not_take_the_next_argument() -> None:
    # pflag: "--leader-elect false" is leader-elect=true plus an ignored positional.
    s = settings("--leader-elect", "false")
    assert s.election.leader_elect is True
    assert s.warnings == ("Ignoring positional arguments: false",)


def test_double_dash_ends_flags() -> None:
    s = settings("--proxy-port=1", "--", "--nope", "x")
    assert s.proxy.proxy_port == 1
    assert s.warnings == ("Ignoring positional arguments: --nope x",)


# --- --ansible-args quotes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "cmdline"),
    [
        ("--check", "--check"),
        ("'--check'", "--check"),
        ("'-e a=1 -e b=2'", "-e a=1 -e b=2"),
        ('"--check"', '"--check"'),
        ("''--check''", "'--check'"),  # one pair only, as upstream: not once here and once there
    ],
)
def test_ansible_args_lose_one_pair_of_quotes_on_the_way_to_the_runner(
    raw: str, cmdline: str, tmp_path: Path
) -> None:
    args = settings(f"--ansible-args={raw}").ansible.ansible_args
    assert args == raw  # the flag's value as given
    pdd = prepare_input_dir(
        tmp_path / "pdd", ident="1", extravars={}, kubeconfig="/kc", ansible_args=args, environ={}
    )
    assert (pdd / "env" / "cmdline").read_text() == cmdline


# --- environment ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "namespaces"),
    [
        ("", ()),
        ("default", ("default",)),
        ("a,b", ("a", "b")),
        (" a , ,b ,", ("a", "b")),
        (",", ()),
        ("   ", ()),
    ],
)
def test_watch_namespace(value: str, namespaces: tuple[str, ...]) -> None:
    s = settings(WATCH_NAMESPACE=value)
    assert s.watching.watch_namespaces == namespaces


@pytest.mark.parametrize(
    ("argv", "env", "leader_id", "warnings"),
    [
        ([], {}, "", ()),
        (
            [],
            {"OPERATOR_NAME": "op"},
            "op",
            (DEPRECATED_OPERATOR_NAME,),
        ),
        (
            ["--leader-election-id=flag"],
            {"OPERATOR_NAME": "op"},
            "flag",
            (
                DEPRECATED_OPERATOR_NAME,
                "Ignoring OPERATOR_NAME environment variable since --leader-election-id is set",
            ),
        ),
        # Given explicitly, even empty, the flag wins.
        (
            ["--leader-election-id="],
            {"OPERATOR_NAME": "op"},
            "",
            (
                DEPRECATED_OPERATOR_NAME,
                "Ignoring OPERATOR_NAME environment variable since --leader-election-id is set",
            ),
        ),
    ],
)
def test_operator_name(
    argv: list[str], env: dict[str, str], leader_id: str, warnings: tuple[str, ...]
) -> None:
    s = build_run_settings(argv, env)
    assert s.election.leader_election_id == leader_id
    assert s.warnings == warnings


@pytest.mark.parametrize(
    ("value", "expected", "warning"),
    [
        ("tasks", "Tasks", None),
        ("Tasks", "Tasks", None),
        ("EVERYTHING", "Everything", None),
        ("everything", "Everything", None),
        ("Nothing", "Nothing", None),
        ("", "Tasks", None),
        (
            "all",
            "Tasks",
            "--ansible-log-events flag value 'all' not recognized. "
            "Must be one of: Tasks, Everything, Nothing",
        ),
    ],
)
def test_ansible_log_events(value: str, expected: str, warning: str | None) -> None:
    s = settings(f"--ansible-log-events={value}")
    assert s.logging.ansible_log_events == expected
    assert s.warnings == ((warning,) if warning else ())


@pytest.mark.parametrize(
    ("value", "expected", "warned"),
    [
        (None, False, False),
        ("true", True, False),
        ("TRUE", True, False),
        ("1", True, False),
        ("t", True, False),
        ("false", False, False),
        ("0", False, False),
        ("yes", False, True),
        ("", False, True),
    ],
)
def test_ansible_debug_logs(value: str | None, expected: bool, warned: bool) -> None:
    env = {} if value is None else {"ANSIBLE_DEBUG_LOGS": value}
    s = build_run_settings([], env)
    assert s.logging.ansible_debug_logs is expected
    assert bool(s.warnings) is warned


@pytest.mark.parametrize(
    ("argv", "env", "roles", "collections"),
    [
        ([], {}, None, None),
        ([], {"ANSIBLE_ROLES_PATH": "/env"}, "/env", None),
        (["--ansible-roles-path=/flag"], {"ANSIBLE_ROLES_PATH": "/env"}, "/flag", None),
        (["--ansible-roles-path="], {"ANSIBLE_ROLES_PATH": "/env"}, "/env", None),
        (["--ansible-collections-path=/c"], {}, None, "/c"),
    ],
)
def test_ansible_environ(
    argv: list[str], env: dict[str, str], roles: str | None, collections: str | None
) -> None:
    result = build_run_settings(argv, {"PATH": "/bin", **env}).ansible_environ()
    assert result.get("ANSIBLE_ROLES_PATH") == roles
    assert result.get("ANSIBLE_COLLECTIONS_PATH") == collections
    assert result["PATH"] == "/bin"


def test_environ_defaults_to_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WATCH_NAMESPACE", "from-process")
    assert build_run_settings([]).watching.watch_namespaces == ("from-process",)


# --- per-kind environment overrides -------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "gvk", "expected"),
    [
        ({}, MEMCACHED, 4),
        ({"MAX_CONCURRENT_RECONCILES_MEMCACHED_CACHE_EXAMPLE_COM": "9"}, MEMCACHED, 9),
        ({"WORKER_MEMCACHED_CACHE_EXAMPLE_COM": "7"}, MEMCACHED, 7),
        # The current name beats the deprecated one, even when it is invalid.
        (
            {
                "MAX_CONCURRENT_RECONCILES_MEMCACHED_CACHE_EXAMPLE_COM": "3",
                "WORKER_MEMCACHED_CACHE_EXAMPLE_COM": "7",
            },
            MEMCACHED,
            3,
        ),
        (
            {
                "MAX_CONCURRENT_RECONCILES_MEMCACHED_CACHE_EXAMPLE_COM": "x",
                "WORKER_MEMCACHED_CACHE_EXAMPLE_COM": "7",
            },
            MEMCACHED,
            4,
        ),
        ({"MAX_CONCURRENT_RECONCILES_MEMCACHED_CACHE_EXAMPLE_COM": "0"}, MEMCACHED, 4),
        ({"MAX_CONCURRENT_RECONCILES_MEMCACHED_CACHE_EXAMPLE_COM": "-2"}, MEMCACHED, 4),
        ({"MAX_CONCURRENT_RECONCILES_MEMCACHED_CACHE_EXAMPLE_COM": "2.5"}, MEMCACHED, 4),
        ({"MAX_CONCURRENT_RECONCILES_MEMCACHED_CACHE_EXAMPLE_COM": ""}, MEMCACHED, 4),
        # Names are case-sensitive environment variables.
        ({"max_concurrent_reconciles_memcached_cache_example_com": "9"}, MEMCACHED, 4),
        # The core group leaves a trailing underscore; "-" is kept.
        ({"MAX_CONCURRENT_RECONCILES_SECRET_": "6"}, SECRET, 6),
        ({"MAX_CONCURRENT_RECONCILES_SECRET": "6"}, SECRET, 4),
        ({"MAX_CONCURRENT_RECONCILES_THING_MY-GROUP_EXAMPLE_COM": "5"}, DASHED, 5),
        # Another kind's variable does not apply.
        ({"MAX_CONCURRENT_RECONCILES_SECRET_": "6"}, MEMCACHED, 4),
    ],
)
def test_max_concurrent_reconciles_for(env: dict[str, str], gvk: GVK, expected: int) -> None:
    s = build_run_settings(["--max-concurrent-reconciles=4"], env)
    assert s.max_concurrent_reconciles_for(gvk) == expected


def test_max_concurrent_reconciles_flag_below_one_means_one() -> None:
    assert settings("--max-concurrent-reconciles=0").max_concurrent_reconciles_for(MEMCACHED) == 1


@pytest.mark.parametrize(
    ("env", "gvk", "expected"),
    [
        ({}, MEMCACHED, 2),
        ({"ANSIBLE_VERBOSITY_MEMCACHED_CACHE_EXAMPLE_COM": "0"}, MEMCACHED, 0),
        ({"ANSIBLE_VERBOSITY_MEMCACHED_CACHE_EXAMPLE_COM": "7"}, MEMCACHED, 7),
        ({"ANSIBLE_VERBOSITY_MEMCACHED_CACHE_EXAMPLE_COM": "8"}, MEMCACHED, 2),
        ({"ANSIBLE_VERBOSITY_MEMCACHED_CACHE_EXAMPLE_COM": "-1"}, MEMCACHED, 2),
        ({"ANSIBLE_VERBOSITY_MEMCACHED_CACHE_EXAMPLE_COM": "vv"}, MEMCACHED, 2),
        ({"ANSIBLE_VERBOSITY_SECRET_": "4"}, SECRET, 4),
        ({"ANSIBLE_VERBOSITY": "4"}, MEMCACHED, 2),  # the plain variable is Ansible's own
    ],
)
def test_ansible_verbosity_for(env: dict[str, str], gvk: GVK, expected: int) -> None:
    assert build_run_settings([], env).ansible_verbosity_for(gvk) == expected


@pytest.mark.parametrize(
    ("env", "messages"),
    [
        ({}, []),
        ({"MAX_CONCURRENT_RECONCILES_MEMCACHED_CACHE_EXAMPLE_COM": "3"}, []),
        (
            {"WORKER_MEMCACHED_CACHE_EXAMPLE_COM": "3"},
            [
                "Environment variable WORKER_MEMCACHED_CACHE_EXAMPLE_COM is deprecated, "
                "use MAX_CONCURRENT_RECONCILES_MEMCACHED_CACHE_EXAMPLE_COM instead"
            ],
        ),
        (
            {"MAX_CONCURRENT_RECONCILES_MEMCACHED_CACHE_EXAMPLE_COM": "many"},
            [
                "Could not parse environment variable "
                "MAX_CONCURRENT_RECONCILES_MEMCACHED_CACHE_EXAMPLE_COM='many' as an integer"
            ],
        ),
        (
            {"MAX_CONCURRENT_RECONCILES_MEMCACHED_CACHE_EXAMPLE_COM": "0"},
            ["Value 0 not valid. Using default 4"],
        ),
        (
            {"ANSIBLE_VERBOSITY_MEMCACHED_CACHE_EXAMPLE_COM": "9"},
            ["Value 9 not valid. Using default 2"],
        ),
        (
            {"ANSIBLE_VERBOSITY_MEMCACHED_CACHE_EXAMPLE_COM": "x"},
            [
                "Could not parse environment variable "
                "ANSIBLE_VERBOSITY_MEMCACHED_CACHE_EXAMPLE_COM='x' as an integer"
            ],
        ),
    ],
)
def test_env_messages_for(env: dict[str, str], messages: list[str]) -> None:
    s = build_run_settings(["--max-concurrent-reconciles=4"], env)
    assert s.env_messages_for(MEMCACHED) == messages


def test_help_shows_each_default_as_pflag_prints_it_and_the_overriding_variables(capsys):
    with pytest.raises(SystemExit) as exit_:
        parse_run_args(["--help"], environ={})
    assert exit_.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for expected in (
        "Path to the watches file to use (default ./watches.yaml)",
        "Default reconcile period for controllers (default 10h0m0s)",
        "unless this flag is false (default true)",
        "(default 30s)",  # --graceful-shutdown-timeout
        "[environment: MAX_CONCURRENT_RECONCILES_<KIND>_<GROUP>]",
        "[environment: ANSIBLE_VERBOSITY_<KIND>_<GROUP>]",
        "[environment: OPERATOR_NAME, when the flag is not given]",
    ):
        assert expected in text, expected


def test_shards_auto_a_count_and_what_is_refused() -> None:
    assert build_run_settings([]).election.shards == 0
    assert build_run_settings(["--shards", "auto"]).election.shards == 32
    assert build_run_settings(["--shards=8"]).election.shards == 8
    for bad in ("0", "257", "-1", "many", ""):
        with pytest.raises(SettingsError, match='"--shards" flag: expected auto or a number'):
            build_run_settings([f"--shards={bad}"] if bad else ["--shards="])
    with pytest.raises(SettingsError, match="--shards and --leader-elect exclude each other"):
        build_run_settings(["--shards=auto", "--leader-elect"])
