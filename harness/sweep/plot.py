"""comparison.png: each family's gate deltas (default: all-row nDCG@10) with their 95% intervals.

One panel per family, arms down the side, corpora side by side (one marker colour each).
matplotlib loads only when a plot is drawn, on the Agg backend. The PNG carries no
Software/date metadata, so the same comparison gives the same bytes with one matplotlib
and FreeType build; another version may rasterise differently.
"""

from __future__ import annotations

import io
from typing import Any

_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")


class PlotUnavailable(Exception):
    """matplotlib is not installed; the comparison is written without a plot."""


def _series(family: dict[str, Any], corpus: str, gate: dict[str, Any]) -> list[tuple[str, float, float, float] | None]:
    out: list[tuple[str, float, float, float] | None] = []
    for entry in family["arms"]:
        cell = next((c for c in entry["cells"] if (c["corpus"], c["query_class"], c["measure"])
                     == (corpus, gate["query_class"], gate["measure"])), None)
        if cell is None:
            out.append(None)
            continue
        # The interval belongs to the paired mean (matched queries), so the marker does too; it
        # equals the row delta whenever both arms scored the same queries.
        centre = cell["mean_paired_delta"] if cell["mean_paired_delta"] is not None else cell["delta"]
        low, high = cell["ci"] if cell["ci"] is not None else (centre, centre)
        out.append((entry["arm"], centre, min(low, centre), max(high, centre)))
    return out


def render_png(comparison: dict[str, Any]) -> bytes:
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise PlotUnavailable("matplotlib is not installed (pip install 'matplotlib>=3.8,<4')") from e

    families = [f for f in comparison["families"] if f["arms"]]
    corpora: list[str] = comparison["corpora"]
    with matplotlib.rc_context({"svg.hashsalt": "ragsweep", "font.size": 8, "figure.dpi": 100}):
        heights = [max(1.5, 0.32 * len(f["arms"]) + 0.9) for f in families] or [1.5]
        fig, axes = plt.subplots(len(heights), 1, figsize=(7.5, sum(heights)),
                                 gridspec_kw={"height_ratios": heights}, squeeze=False)
        if not families:
            axes[0][0].text(0.5, 0.5, "no arm was measured", ha="center", va="center")
            axes[0][0].set_axis_off()
        for ax, family in zip((row[0] for row in axes), families, strict=False):
            names = [e["arm"] if e["status"] == "complete" else f"{e['arm']} ({e['status']})"
                     for e in family["arms"]]
            width = 0.7 / max(1, len(corpora))
            for k, corpus in enumerate(corpora):
                labelled = False
                for i, point in enumerate(_series(family, corpus, comparison["gate"])):
                    if point is None:
                        continue
                    _, delta, low, high = point
                    y = i - 0.35 + width * (k + 0.5)
                    ax.errorbar([delta], [y], xerr=[[delta - low], [high - delta]], fmt="o", ms=3.5,
                                color=_COLOURS[k % len(_COLOURS)], capsize=2, lw=1,
                                label=None if labelled else corpus)
                    labelled = True
            ax.axvline(0.0, color="#555555", lw=0.8)
            ax.set_yticks(range(len(names)))
            ax.set_yticklabels(names)
            ax.set_ylim(len(names) - 0.5, -0.5)  # first arm on top, every row inside the frame
            gate = comparison["gate"]
            ax.set_title(f"{family['name']}: Δ {gate['measure']} ({gate['query_class']}) vs {family['control']}, "
                         "95% CI", loc="left")
            if ax.get_legend_handles_labels()[1]:
                ax.legend(loc="lower right", frameon=False)
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", metadata={"Software": None})
        plt.close(fig)
    return buffer.getvalue()
