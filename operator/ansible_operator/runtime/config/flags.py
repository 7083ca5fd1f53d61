"""`ansible-operator run`'s command line: upstream's flags and environment variables, parsed up
front into `settings.RunSettings`.

`--help`, the defaults, the environment overrides and the copy into the settings all come from
each field's declaration (`settings`). The command line is read by pflag's rules
(`gocompat.pflag`); flags, defaults, deprecations and error wording are upstream's (pflag and
the zap flags; we add a few, marked in their help), and any error is one line with exit status
1, as with cobra.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from ansible_operator.gocompat import (
    FlagError,
    quote,
    tokenise,
)
from ansible_operator.runtime.config.settings import (
    GROUPS,
    PROG,
    EnvVar,
    Flag,
    RunSettings,
    SettingsError,
)

# Upstream's deprecated flag that does nothing any more: accepted, with its warning.
_LOCK_FLAG = "leader-elect-resource-lock"
_LOCK_DEPRECATION = (
    "This flag is now hardcoded to 'leases', which is the only supported option by client-go"
)
_LOCK_HELP = (
    "The type of resource object that is used for locking during leader election. Ignored: "
    "always 'leases'."
)

# Pairs of flags that set one setting, of which one may be given.
_EXCLUSIVE = (
    ("leader-elect", "enable-leader-election"),
    ("metrics-addr", "metrics-bind-address"),
)


def _flag_table() -> dict[str, tuple[str, str, Flag]]:
    """Every flag name → (group, field, flag), deprecated aliases first, in --help's order."""
    table: dict[str, tuple[str, str, Flag]] = {}
    for group_name, cls in GROUPS:
        for setting in dataclasses.fields(cls):
            flag = setting.metadata.get("flag")
            if flag is not None:
                for name in (*flag.aliases, setting.name.replace("_", "-")):
                    table[name] = (group_name, setting.name, flag)
    return table


_TABLE = _flag_table()


def flag_names() -> list[str]:
    """Every flag `run` takes, without the dashes (for shell completion)."""
    return [*_TABLE, _LOCK_FLAG]


# --- parsing ---------------------------------------------------------------------------------


def _help(defaults: RunSettings) -> str:
    parser = argparse.ArgumentParser(
        prog=f"{PROG} run",
        description="Run the operator",
        epilog="examples:\n"
        "  ansible-operator run\n"
        "  WATCH_NAMESPACE=demo ansible-operator run --watches-file=./watches.yaml "
        "--zap-log-level=debug\n"
        "  ansible-operator run --leader-elect --metrics-bind-address=:8443",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for name, (group, setting, flag) in _TABLE.items():
        default = getattr(getattr(defaults, group), setting)
        parser.add_argument(
            f"--{name}",
            metavar="BOOL" if flag.go_type == "bool" else "VALUE",
            help=flag.help_text(default, flag.aliases.get(name)),
        )
    parser.add_argument(
        f"--{_LOCK_FLAG}",
        metavar="VALUE",
        help=f"{_LOCK_HELP} (deprecated: {_LOCK_DEPRECATION}) (default configmapsleases)",
    )
    return parser.format_help()


def build_run_settings(
    argv: Sequence[str], environ: Mapping[str, str] | None = None
) -> RunSettings:
    """Parse `run`'s arguments and environment; raise SettingsError with a one-line message.

    `--help` prints usage and raises SystemExit(0).
    """
    env = dict(os.environ if environ is None else environ)
    defaults = RunSettings()
    flags = {name: flag.go_type == "bool" for name, (_, _, flag) in _TABLE.items()}
    try:
        tokens = tokenise(argv, {**flags, _LOCK_FLAG: False})
    except FlagError as e:
        raise SettingsError(str(e)) from None
    if tokens.help:
        print(_help(defaults), end="")
        raise SystemExit(0)

    given = [name for name, _ in tokens.values]
    warnings: list[str] = []
    values: dict[tuple[str, str], Any] = {}
    for name, text in tokens.values:
        if name == _LOCK_FLAG:
            continue
        group, setting, flag = _TABLE[name]
        try:
            values[group, setting] = flag.value(text)
        except ValueError as e:
            if not flag.lenient:
                raise SettingsError(
                    f"invalid argument {quote(text)} for {quote('--' + name)} flag: {e}"
                ) from None
            warnings.append(f"--{name} flag value '{text}' {e}")
            values.pop((group, setting), None)

    for pair in _EXCLUSIVE:
        if set(pair) <= set(given):
            raise SettingsError(f"only one of --{pair[0]} and --{pair[1]} may be set")
    for name in given:
        deprecation = _LOCK_DEPRECATION if name == _LOCK_FLAG else _TABLE[name][2].aliases.get(name)
        warning = f"Flag --{name} has been deprecated, {deprecation}"
        if deprecation and warning not in warnings:
            warnings.append(warning)
    if tokens.positionals:
        warnings.append(f"Ignoring positional arguments: {' '.join(tokens.positionals)}")

    groups = {name: _group(cls, name, values, env, warnings) for name, cls in GROUPS}
    settings = RunSettings(**groups, warnings=tuple(warnings), environ=env)
    _check(settings)
    return settings


def _group(
    cls: Any,
    group_name: str,
    values: Mapping[tuple[str, str], Any],
    env: Mapping[str, str],
    warnings: list[str],
) -> Any:
    """One group of settings: the flags given, else the environment, else the defaults."""
    changes: dict[str, Any] = {}
    for setting in dataclasses.fields(cls):
        given = (group_name, setting.name) in values
        flag: Flag | None = setting.metadata.get("flag")
        variable = flag.deprecated_environment if flag is not None else None
        if variable and variable in env:
            flag_name = setting.name.replace("_", "-")
            warnings.append(
                f"Environment variable {variable} has been deprecated, use --{flag_name} instead."
            )
            if given:
                warnings.append(
                    f"Ignoring {variable} environment variable since --{flag_name} is set"
                )
            else:
                changes[setting.name] = env[variable]
        var: EnvVar | None = setting.metadata.get("env")
        if given:
            changes[setting.name] = values[group_name, setting.name]
        elif var is not None and var.name in env:
            try:
                changes[setting.name] = var.parse(env[var.name])
            except ValueError:
                warnings.append(var.bad)
    return cls(**changes)


def _check(settings: RunSettings) -> None:
    """What no single flag can say: combinations, and what is refused rather than ignored."""
    serving = settings.serving
    if serving.metrics_require_rbac and not serving.metrics_secure:
        raise SettingsError(
            "--metrics-secure flag is required when --metrics-require-rbac is present"
        )
    if serving.metrics_cert_dir and not serving.metrics_secure:
        raise SettingsError("--metrics-cert-dir needs --metrics-secure")
    if serving.enable_http2:
        raise SettingsError(
            "--enable-http2 is not supported: the metrics and probe endpoints speak HTTP/1.1 only"
        )
    if settings.election.shards and settings.election.leader_elect:
        raise SettingsError(
            "--shards and --leader-elect exclude each other: with --shards every replica is "
            "active and each CR has one owner; remove --leader-elect"
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
