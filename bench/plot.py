"""The bench's PNG: one panel per figure, one bar per runner mode, each bar labelled with its
value (and, beside cold, its ratio to cold)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench import figures


def plot(record: Mapping[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    summary: Mapping[str, Mapping[str, float]] = record["summary"]
    modes = list(summary)
    shown = [f for f in figures.FIGURES if any(f.key in summary[m] for m in modes)]
    columns = 3
    rows = -(-len(shown) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.0 * rows), squeeze=False)
    colours = ["#9e9e9e", "#1f77b4", "#ff7f0e", "#2ca02c"]
    for ax, figure in zip(axes.flat, shown, strict=False):
        values = [summary[m].get(figure.key, 0.0) for m in modes]
        bars = ax.bar(modes, values, color=colours[: len(modes)])
        for mode, bar, value in zip(modes, bars, values, strict=True):
            ratio = record["ratios_to_cold"].get(mode, {}).get(figure.key)
            label = f"{value:.3g}" + (f"\n{ratio:.2f}x cold" if ratio is not None else "")
            ax.annotate(label, (bar.get_x() + bar.get_width() / 2, value), ha="center", va="bottom")
        title = figure.label.format(**record["settings"])
        ax.set_title(title, fontsize=8, wrap=True)
        ax.set_ylabel(figure.unit + (" (lower is better)" if figure.better == "lower" else ""))
        ax.margins(y=0.3)
    for ax in list(axes.flat)[len(shown) :]:
        ax.axis("off")
    fig.suptitle(f"make bench, {record['started'][:16]} UTC")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
