"""The bench's PNG: one panel per figure, a group of bars per ansible-core, one bar per runner
mode, each bar labelled with its value (and, beside cold, its ratio to the same core's cold)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench import figures

COLOURS = ["#9e9e9e", "#1f77b4", "#ff7f0e", "#2ca02c"]


def plot(record: Mapping[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    summary: Mapping[str, Mapping[str, Mapping[str, float]]] = record["summary"]
    cores = list(summary)
    modes = list(summary[cores[0]])
    shown = [
        f for f in figures.FIGURES if any(f.key in summary[c][m] for c in cores for m in modes)
    ]
    columns = 3
    rows = -(-len(shown) // columns)
    width = 0.8 / len(modes)
    fig, axes = plt.subplots(
        rows, columns, figsize=(max(4.2, 1.4 * len(cores)) * columns, 3.2 * rows), squeeze=False
    )
    for ax, figure in zip(axes.flat, shown, strict=False):
        for index, mode in enumerate(modes):
            places = [c + (index - (len(modes) - 1) / 2) * width for c in range(len(cores))]
            values = [summary[c][mode].get(figure.key, 0.0) for c in cores]
            bars = ax.bar(places, values, width, label=mode, color=COLOURS[index % len(COLOURS)])
            for core, bar, value in zip(cores, bars, values, strict=True):
                ratio = record["ratios_to_cold"][core].get(mode, {}).get(figure.key)
                label = f"{value:.3g}" + (f"\n{ratio:.2f}x" if ratio is not None else "")
                ax.annotate(
                    label,
                    (bar.get_x() + bar.get_width() / 2, value),
                    ha="center",
                    va="bottom",
                    fontsize=7,
                )
        ax.set_xticks(range(len(cores)), [f"core {c}" for c in cores])
        ax.set_title(figure.label.format(**record["settings"]), fontsize=8, wrap=True)
        ax.set_ylabel(figure.unit + (" (lower is better)" if figure.better == "lower" else ""))
        ax.margins(y=0.35)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(shown) :]:
        ax.axis("off")
    fig.suptitle(f"make bench, {record['started'][:16]} UTC (ratios: to the core's cold runner)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
