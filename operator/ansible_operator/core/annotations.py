"""The CR annotations upstream reads, parsed: reconcile period, artifacts to keep, verbosity; and
ours: hold (plan, do not apply).

Each parser takes the object's annotations and the value to fall back on, and returns
``(value, problem)``: a bad annotation never raises, it gives the fallback and a message in
upstream's wording for the caller to report (the reconcile period as a status condition, the
others in the log). Values are parsed with Go's rules, as upstream does.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible_operator.gocompat import atoi, parse_bool, parse_go_duration

RECONCILE_PERIOD_ANNOTATION = "ansible.sdk.operatorframework.io/reconcile-period"
MAX_RUNNER_ARTIFACTS_ANNOTATION = "ansible.sdk.operatorframework.io/max-runner-artifacts"
VERBOSITY_ANNOTATION = "ansible.sdk.operatorframework.io/verbosity"
HOLD_ANNOTATION = "ansible.sdk.operatorframework.io/hold"  # ours: plan, do not apply

MAX_VERBOSITY = 7

Annotations = Mapping[str, str] | None


def reconcile_period(
    annotations: Annotations, watch_period: float | None, flag_period: float
) -> tuple[float | None, str | None]:
    """The periodic requeue for one CR: annotation, else the watch's period, else the flag.

    Returns `(seconds, None)`, or `(None, None)` when periodic requeue is off (a period of zero
    or less, e.g. the annotation `"0s"`). A bad annotation returns the watch/flag period and
    upstream's message `Unable to parse reconcile period annotation: <err>`.
    """
    fallback = watch_period if watch_period else flag_period
    fallback_delay = fallback if fallback > 0 else None
    raw = (annotations or {}).get(RECONCILE_PERIOD_ANNOTATION)
    if raw is None:
        return fallback_delay, None
    try:
        period = parse_go_duration(str(raw))
    except ValueError as e:
        return fallback_delay, f"Unable to parse reconcile period annotation: {e}"
    return (period if period > 0 else None), None


def max_runner_artifacts(annotations: Annotations, watch_value: int) -> tuple[int, str | None]:
    """`--rotate-artifacts` for one CR: the annotation if it is an integer (0 keeps all)."""
    raw = (annotations or {}).get(MAX_RUNNER_ARTIFACTS_ANNOTATION)
    if raw is None:
        return watch_value, None
    try:
        return atoi(str(raw)), None
    except ValueError as e:
        return watch_value, f"Invalid max runner artifact annotation: {e}"


def verbosity(annotations: Annotations, default: int) -> tuple[int, str | None]:
    """Ansible verbosity for one CR: the annotation if it is an integer, else `default`.

    Upstream has no range check; here a value outside 0..7 is clamped (with a message), so a
    CR cannot make the operator build an absurd `-vvvv...` argument.
    """
    raw = (annotations or {}).get(VERBOSITY_ANNOTATION)
    if raw is None:
        return default, None
    try:
        value = atoi(str(raw))
    except ValueError as e:
        return default, f"Invalid ansible verbosity annotation: {e}"
    if value < 0:
        return 0, f"Ansible verbosity annotation {value} is below 0; using 0"
    if value > MAX_VERBOSITY:
        return (
            MAX_VERBOSITY,
            f"Ansible verbosity annotation {value} is above {MAX_VERBOSITY}; using {MAX_VERBOSITY}",
        )
    return value, None


def log_verbosity(annotations: Annotations, ansible_verbosity_env: str | None) -> int:
    """As upstream's event log handler: the verbosity annotation when present, else the
    `ANSIBLE_VERBOSITY` environment value, else 0 (not `--ansible-verbosity`). Above 0, task
    stdout goes to the log."""
    if VERBOSITY_ANNOTATION in (annotations or {}):
        return verbosity(annotations, 0)[0]
    try:
        return atoi(ansible_verbosity_env or "0")
    except ValueError:
        return 0


def hold(annotations: Annotations, watch_hold: bool) -> tuple[bool, str | None]:
    """Whether a CR is held for review (its runs planned, not applied): the hold annotation,
    ``"true"`` or ``"false"`` as Go parses a bool, else the watch's ``hold``. A bad value holds
    the CR (a typo must not apply what someone meant to review) and says why."""
    raw = (annotations or {}).get(HOLD_ANNOTATION)
    if raw is None:
        return watch_hold, None
    try:
        return parse_bool(str(raw)), None
    except ValueError as e:
        return True, f"Invalid hold annotation (the CR is held): {e}"
