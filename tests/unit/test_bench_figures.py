"""`make bench`'s pure parts: the statistics, the figures per mode, the ratios to the cold
runner, the markdown table and the JSON record."""

from __future__ import annotations

import json

import pytest
from bench import figures

SETTINGS = {"trivial_burst": 30, "memcached_burst": 20, "at_rest_crs": 1000, "idle_seconds": 20}


@pytest.mark.parametrize(
    ("values", "median", "p95"),
    [
        ([1.0], 1.0, 1.0),
        ([3.0, 1.0, 2.0], 2.0, 3.0),  # fewer than 20 samples: p95 is the largest
        ([4.0, 1.0, 3.0, 2.0], 2.5, 4.0),
        ([float(i) for i in range(1, 21)], 10.5, 19.0),
        ([float(i) for i in range(1, 101)], 50.5, 95.0),
    ],
)
def test_median_and_nearest_rank_p95(values, median, p95):
    assert figures.median(values) == median
    assert figures.p95(values) == p95


def test_no_samples_is_an_error_not_a_zero():
    with pytest.raises(ValueError):
        figures.median([])
    with pytest.raises(ValueError):
        figures.p95([])


def raw(scale: float) -> dict:
    return {
        "one_trivial_s": [0.8 * scale, 0.9 * scale, 1.0 * scale],
        "trivial_burst_s": [12.0 * scale, 15.0 * scale],
        "memcached_burst_s": [40.0 * scale],
        "restart_first_successful_s": [6.0 * scale],
        "rest_rss_mib": 80.0 * scale,
        "rest_pss_mib": 60.0 * scale,
        "rest_processes": 1,
        "rest_idle_cpu_percent": 0.5,
    }


def test_a_mode_summary_takes_medians_and_turns_bursts_into_runs_per_second():
    summary = figures.summarise_mode(raw(1.0), SETTINGS)
    assert summary["one_trivial_median_s"] == 0.9
    assert summary["one_trivial_p95_s"] == 1.0
    assert summary["trivial_burst_s"] == 13.5
    assert summary["trivial_burst_runs_per_s"] == pytest.approx((30 / 12 + 30 / 15) / 2)
    assert summary["memcached_burst_runs_per_s"] == 0.5
    assert summary["rest_rss_mib"] == 80.0 and summary["rest_processes"] == 1.0


def test_missing_samples_leave_their_figures_out():
    summary = figures.summarise_mode({"trivial_burst_s": [10.0]}, SETTINGS)
    assert set(summary) == {"trivial_burst_s", "trivial_burst_runs_per_s"}


def test_the_record_compares_every_mode_to_cold_and_the_table_shows_it(tmp_path):
    record = figures.build_record(
        started="2026-11-23T20:00:00+00:00",
        machine={"cpus": 2},
        settings=SETTINGS,
        raw={"2.18": {"cold": raw(1.0), "warm": raw(0.25)}},
    )
    warm = record["ratios_to_cold"]["2.18"]["warm"]
    assert warm["one_trivial_median_s"] == pytest.approx(0.25)
    assert warm["memcached_burst_runs_per_s"] == pytest.approx(4.0)
    assert warm["rest_idle_cpu_percent"] == 1.0
    assert "cold" not in record["ratios_to_cold"]["2.18"]

    table = figures.markdown_table(record, "2.18").splitlines()
    assert table[0] == "| figure | cold | warm | warm/cold |"
    row = next(line for line in table if line.startswith("| 20 memcached CRs at once (runs/s)"))
    assert row == "| 20 memcached CRs at once (runs/s) | 0.5 | 2 | 4.00x |"
    assert any(line.startswith("| memory at rest, 1000 CRs: PSS") for line in table)

    path = figures.write_record(record, tmp_path / "results", "20261123T200000Z")
    assert path.name == "20261123T200000Z.json"
    assert json.loads(path.read_text()) == record


def test_each_core_is_compared_with_its_own_cold_runner_and_with_the_first_cores():
    record = figures.build_record(
        started="t",
        machine={},
        settings=SETTINGS,
        raw={
            "2.18": {"cold": raw(1.0), "warm": raw(0.25)},
            "2.21": {"cold": raw(2.0), "warm": raw(0.5)},  # twice as slow in both modes
        },
    )
    assert record["reference_core"] == "2.18"
    assert record["ratios_to_cold"]["2.21"]["warm"]["memcached_burst_runs_per_s"] == (
        pytest.approx(4.0)
    )
    newer = record["ratios_to_reference_core"]["2.21"]["warm"]
    assert newer["memcached_burst_runs_per_s"] == pytest.approx(0.5)
    assert newer["trivial_burst_runs_per_s"] == pytest.approx(0.5)
    assert newer["one_trivial_median_s"] == pytest.approx(2.0)
    assert set(newer) == set(figures.ACROSS_CORES), "memory at rest is not compared across cores"
    assert "2.18" not in record["ratios_to_reference_core"]

    table = figures.cores_table(record).splitlines()
    assert table[0] == (
        "| ansible-core | 30 trivial CRs at once: cold (runs/s) | 30 trivial CRs at once: warm "
        "(runs/s) | warm/cold | warm: of 2.18's | 20 memcached CRs at once: cold (runs/s) | "
        "20 memcached CRs at once: warm (runs/s) | warm/cold | warm: of 2.18's |"
    )
    assert table[2] == "| 2.18 | 2.25 | 9 | 4.00x | 100% | 0.5 | 2 | 4.00x | 100% |"
    assert table[3] == "| 2.21 | 1.12 | 4.5 | 4.00x | 50% | 0.25 | 1 | 4.00x | 50% |"


def test_without_a_cold_run_there_are_no_ratios():
    record = figures.build_record(
        started="t", machine={}, settings=SETTINGS, raw={"2.18": {"warm": raw(1.0)}}
    )
    assert record["ratios_to_cold"] == {"2.18": {}}
    assert figures.markdown_table(record, "2.18").splitlines()[0] == "| figure | warm |"


def test_latest_markdown_says_what_ran_on_what_before_the_tables():
    settings = {**SETTINGS, "modes": ["cold", "warm"], "rounds": 3, "singles": 3, "workers": 2}
    record = figures.build_record(
        started="2026-11-23T20:00:00.123+00:00",
        machine={
            "cpus": 2,
            "load_average_at_start": [1.25, 1.0, 0.5],
            "ansible_core": {"2.18": "2.18.6", "2.21": "2.21.5"},
        },
        settings=settings,
        raw={"2.18": {"cold": raw(1.0), "warm": raw(0.5)}, "2.21": {"warm": raw(0.5)}},
    )
    text = figures.latest_markdown(record, "20261123T200000Z.json")
    first, blank = text.splitlines()[:2]
    assert first == (
        "`make bench` of 2026-11-23 20:00 UTC (20261123T200000Z.json): ansible-core 2.18 "
        "(2.18.6), 2.21 (2.21.5); modes cold, warm, 3 rounds of 3 single CRs, 2 workers; "
        "2 CPUs, load average 1.2 at the start"
    )
    assert blank == ""
    assert text.endswith(figures.cores_table(record) + "\nEvery figure on ansible-core 2.18:\n\n"
                         + figures.markdown_table(record, "2.18"))  # fmt: skip
