"""The supported ansible-cores (core/ansible_cores): one table, and the operator's start says,
once, when the runs' core is past its end of life."""

from __future__ import annotations

import datetime
import logging

import pytest
from prometheus_client import generate_latest

from ansible_operator.core import ansible_cores
from ansible_operator.runner import versions
from ansible_operator.runtime.manager import operator as manager

from .test_runnables import operator


def test_the_table_is_oldest_first_with_the_default_first_and_the_refusal_from_it() -> None:
    releases = [core.release for core in ansible_cores.CORES]
    assert releases == sorted(releases) and len(set(releases)) == len(releases)
    assert ansible_cores.DEFAULT.release == (2, 18)  # upstream's image's
    assert ansible_cores.NEWEST is ansible_cores.CORES[-1]
    assert versions.MINIMUM_CORE == (2, 18)
    assert versions.SUPPORTED_RANGE == (
        "ansible-core 2.18, 2.19, 2.20 or 2.21 (2.18 is the default, as upstream's image)"
    )
    assert ansible_cores.find((2, 17)) is None
    assert ansible_cores.find((2, 21)) is ansible_cores.NEWEST


@pytest.mark.parametrize(
    ("day", "ended"),
    [
        (datetime.date(2026, 10, 31), False),
        (datetime.date(2026, 11, 1), True),  # the schedule's month: no fix from then on
        (datetime.date(2027, 1, 15), True),
    ],
)
def test_a_core_is_past_its_end_of_life_from_its_month_on(day, ended) -> None:
    core = ansible_cores.find((2, 18))
    assert core is not None
    assert core.end_of_life_text == "November 2026" and core.end_of_life_month == "2026-11"
    assert core.past_end_of_life(day) is ended


@pytest.mark.parametrize(
    ("core", "day", "said"),
    [
        ("2.18.19", datetime.date(2026, 11, 28), True),
        ("2.18.19", datetime.date(2026, 10, 1), False),
        ("2.21.3", datetime.date(2026, 11, 28), False),
    ],
)
def test_the_start_says_once_when_the_runs_core_is_past_its_end_of_life(
    core, day, said, monkeypatch, caplog: pytest.LogCaptureFixture
) -> None:
    now = datetime.datetime.combine(day, datetime.time(12), tzinfo=datetime.UTC)
    monkeypatch.setattr(manager, "utc_now", lambda: now)
    op = operator(probed=True)  # the probe has not answered: nothing said yet
    with caplog.at_level(logging.WARNING):
        op._ansible_found(versions.AnsibleVersions(core=core, runner="2.4.3", playbook="/x"))
    lines = [r.getMessage() for r in caplog.records if "end of life" in r.getMessage()]
    metrics = generate_latest(op.metrics.registry).decode()
    if said:
        assert lines == [
            "ansible-core 2.18.19 reached its end of life in November 2026 (ansible-core's "
            "maintenance schedule): no more fixes, security fixes included. Run the roles on "
            "ansible-core 2.21: the image's build argument ANSIBLE='ansible>=14,<15', after "
            "checking them against docs/ansible-core-versions.md"
        ]
        assert 'ansible_core_end_of_life="2026-11"' in metrics
    else:
        assert lines == []
        assert 'ansible_core_end_of_life=""' in metrics
