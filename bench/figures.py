"""The bench's figures from its raw samples, and the record it leaves: pure, no clock, no I/O
except `write_record`.

Raw samples are kept per ansible-core and runner mode (one value per round, or one per run for
the figures taken once); the summary turns them into the figures of issue 14 (median and p95
over rounds, runs per second, memory, idle CPU, first Successful after a restart), the ratio of
each mode to the cold runner of the same core, the upstream way, and (issue 22) each core's
throughput as a fraction of the first core's in the same mode: is a newer core's warm runner as
fast as the default's.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BASELINE = "cold"


@dataclass(frozen=True)
class Figure:
    key: str
    label: str
    unit: str
    better: str  # "lower" or "higher"


FIGURES = (
    Figure("one_trivial_median_s", "one trivial CR: create → Successful, median", "s", "lower"),
    Figure("one_trivial_p95_s", "one trivial CR: create → Successful, p95", "s", "lower"),
    Figure("trivial_burst_s", "{trivial_burst} trivial CRs at once → all Successful", "s", "lower"),
    Figure("trivial_burst_runs_per_s", "{trivial_burst} trivial CRs at once", "runs/s", "higher"),
    Figure(
        "memcached_burst_s",
        "{memcached_burst} memcached CRs at once → all Successful",
        "s",
        "lower",
    ),
    Figure(
        "memcached_burst_runs_per_s", "{memcached_burst} memcached CRs at once", "runs/s", "higher"
    ),
    Figure(
        "rest_rss_mib", "memory at rest, {at_rest_crs} CRs: RSS of all processes", "MiB", "lower"
    ),
    Figure(
        "rest_pss_mib", "memory at rest, {at_rest_crs} CRs: PSS of all processes", "MiB", "lower"
    ),
    Figure("rest_processes", "processes at rest", "", "lower"),
    Figure(
        "rest_idle_cpu_percent",
        "idle CPU at rest, {at_rest_crs} CRs, over {idle_seconds} s",
        "% of a core",
        "lower",
    ),
    Figure(
        "restart_first_successful_s",
        "restart with {at_rest_crs} CRs: start → a new CR Successful",
        "s",
        "lower",
    ),
)


def median(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("no samples")
    return float(statistics.median(values))


def p95(values: Sequence[float]) -> float:
    """Nearest-rank 95th percentile: with fewer than 20 samples, the largest."""
    if not values:
        raise ValueError("no samples")
    ordered = sorted(values)
    return float(ordered[math.ceil(0.95 * len(ordered)) - 1])


def summarise_mode(raw: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, float]:
    """One mode's figures from its raw samples; a figure whose samples are missing is left out."""
    out: dict[str, float] = {}
    latencies = raw.get("one_trivial_s") or []
    if latencies:
        out["one_trivial_median_s"] = median(latencies)
        out["one_trivial_p95_s"] = p95(latencies)
    for name, size in (
        ("trivial_burst", settings["trivial_burst"]),
        ("memcached_burst", settings["memcached_burst"]),
    ):
        times = raw.get(f"{name}_s") or []
        if times:
            out[f"{name}_s"] = median(times)
            out[f"{name}_runs_per_s"] = median([size / t for t in times])
    for key in ("rest_rss_mib", "rest_pss_mib", "rest_processes", "rest_idle_cpu_percent"):
        if raw.get(key) is not None:
            out[key] = float(raw[key])
    restarts = raw.get("restart_first_successful_s") or []
    if restarts:
        out["restart_first_successful_s"] = median(restarts)
    return out


def ratios(summary: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """Each other mode's figures divided by the baseline's (`cold`), where both have one."""
    base = summary.get(BASELINE)
    if base is None:
        return {}
    found: dict[str, dict[str, float]] = {}
    for mode, values in summary.items():
        if mode == BASELINE:
            continue
        found[mode] = {k: v / base[k] for k, v in values.items() if base.get(k)}
    return found


ACROSS_CORES = ("trivial_burst_runs_per_s", "memcached_burst_runs_per_s", "one_trivial_median_s")
"""The figures compared between cores: the two bursts' throughput and a single CR's latency."""


def to_reference(
    summary: Mapping[str, Mapping[str, Mapping[str, float]]], reference: str
) -> dict[str, dict[str, dict[str, float]]]:
    """Each other core's `ACROSS_CORES` figures divided by the reference core's, mode by mode."""
    base = summary.get(reference, {})
    found: dict[str, dict[str, dict[str, float]]] = {}
    for core, modes in summary.items():
        if core == reference:
            continue
        found[core] = {
            mode: {
                k: values[k] / base[mode][k]
                for k in ACROSS_CORES
                if k in values and base.get(mode, {}).get(k)
            }
            for mode, values in modes.items()
        }
    return found


def build_record(
    *,
    started: str,
    machine: Mapping[str, Any],
    settings: Mapping[str, Any],
    raw: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """The record of a run whose `raw` samples are by core, then mode; the first core is the
    one the others are compared with."""
    summary = {
        core: {mode: summarise_mode(samples, settings) for mode, samples in modes.items()}
        for core, modes in raw.items()
    }
    reference = next(iter(raw), "")
    return {
        "started": started,
        "machine": dict(machine),
        "settings": dict(settings),
        "raw": {core: {m: dict(s) for m, s in modes.items()} for core, modes in raw.items()},
        "summary": summary,
        "ratios_to_cold": {core: ratios(modes) for core, modes in summary.items()},
        "reference_core": reference,
        "ratios_to_reference_core": to_reference(summary, reference),
    }


def _number(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"


def markdown_table(record: Mapping[str, Any], core: str) -> str:
    """One core's figures as a markdown table: one column per mode, then each mode's ratio to
    cold."""
    settings = record["settings"]
    summary: Mapping[str, Mapping[str, float]] = record["summary"][core]
    to_cold: Mapping[str, Mapping[str, float]] = record["ratios_to_cold"][core]
    modes = list(summary)
    header = ["figure", *modes, *(f"{m}/{BASELINE}" for m in to_cold)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for figure in FIGURES:
        if not any(figure.key in summary[m] for m in modes):
            continue
        unit = f" ({figure.unit})" if figure.unit else ""
        cells = [figure.label.format(**settings) + unit]
        cells += [
            _number(summary[m][figure.key]) if figure.key in summary[m] else "-" for m in modes
        ]
        for mode in to_cold:
            ratio = to_cold[mode].get(figure.key)
            cells.append("-" if ratio is None else f"{ratio:.2f}x")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def cores_table(record: Mapping[str, Any], mode: str = "warm") -> str:
    """Every core's bursts side by side: runs/s of each mode, `mode`'s ratio to cold, and
    `mode`'s runs/s as a fraction of the reference core's."""
    settings, reference = record["settings"], record["reference_core"]
    summary: Mapping[str, Mapping[str, Mapping[str, float]]] = record["summary"]
    modes = list(summary[reference])
    header = ["ansible-core"]
    for figure in FIGURES:
        if figure.key not in ACROSS_CORES[:2]:
            continue
        label = figure.label.format(**settings)
        header += [f"{label}: {m} (runs/s)" for m in modes]
        header += [f"{mode}/{BASELINE}", f"{mode}: of {reference}'s"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for core, by_mode in summary.items():
        cells = [core]
        for key in ACROSS_CORES[:2]:
            cells += [_number(by_mode[m][key]) if key in by_mode.get(m, {}) else "-" for m in modes]
            to_cold = record["ratios_to_cold"][core].get(mode, {}).get(key)
            cells.append("-" if to_cold is None else f"{to_cold:.2f}x")
            if core == reference:
                cells.append("100%")
            else:
                fraction = record["ratios_to_reference_core"][core].get(mode, {}).get(key)
                cells.append("-" if fraction is None else f"{fraction:.0%}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def latest_markdown(record: Mapping[str, Any], name: str) -> str:
    """`latest.md`: what was run, on what, the cores side by side, then the reference core's
    figures."""
    settings, machine = record["settings"], record["machine"]
    reference = record["reference_core"]
    versions = machine.get("ansible_core", {})
    cores = ", ".join(f"{c} ({versions[c]})" if c in versions else c for c in record["summary"])
    rounds = f"{settings['rounds']} round" + ("s" if settings["rounds"] != 1 else "")
    return (
        f"`make bench` of {record['started'][:16].replace('T', ' ')} UTC ({name}): ansible-core "
        f"{cores}; modes {', '.join(settings['modes'])}, {rounds} of "
        f"{settings['singles']} single CRs, {settings['workers']} workers; {machine['cpus']} "
        f"CPUs, load average {machine['load_average_at_start'][0]:.1f} at the start\n\n"
        f"Each core's bursts:\n\n{cores_table(record)}\n"
        f"Every figure on ansible-core {reference}:\n\n{markdown_table(record, reference)}"
    )


def write_record(record: Mapping[str, Any], directory: Path, stamp: str) -> Path:
    """`<stamp>.json` under ``directory``; returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{stamp}.json"
    path.write_text(json.dumps(record, indent=2, sort_keys=False) + "\n")
    return path
