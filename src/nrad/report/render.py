"""Figures (matplotlib, inline SVG) and the jinja2 template -> one self-contained HTML file.

The figures are static SVG drawn by matplotlib, not plotly: plotly inlines
its JavaScript library (megabytes) into every report, for three charts whose
only interactive use was a hover tooltip.  The SVGs weigh tens of kilobytes
and need no script.
"""

from __future__ import annotations

import io
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from nrad import __version__
from nrad.extras import require
from nrad.io import atomic_path
from nrad.report.data import ReportData


def _fmt(value: Any) -> str:
    if isinstance(value, float | np.floating):
        return f"{value:.2g}" if 0 < abs(value) < 1e-3 else f"{value:.4g}"
    return str(value)


def figures(d: ReportData) -> dict[str, str]:
    """Each figure as an inline ``<svg>`` fragment ("" when it does not apply)."""
    matplotlib = require("matplotlib", "report")

    matplotlib.use("Agg")  # no display: render to files only
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "nrad"  # element ids do not change from run to run

    def svg(fig: Any) -> str:
        buf = io.StringIO()
        # No metadata block (creator, date: the same report twice is the same file).
        no_metadata = dict.fromkeys(("Date", "Creator", "Format", "Type"))
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata=no_metadata)
        plt.close(fig)
        text = buf.getvalue()
        return text[text.index("<svg") :]  # drop the XML prolog: the page is HTML

    def axes(title: str) -> tuple[Any, Any]:
        fig, ax = plt.subplots(figsize=(8, 3.2))
        ax.set_title(title, fontsize=11, loc="left")
        ax.spines[["top", "right"]].set_visible(False)
        return fig, ax

    fig, ax = axes("Anomaly scores")
    ax.hist(d.scores, bins=60, color="#1f77b4", log=True)
    if d.threshold is not None:
        ax.axvline(d.threshold, color="crimson", linestyle="--", label="lowest flagged score")
        ax.legend(frameon=False)
    ax.set_xlabel("anomaly score")
    ax.set_ylabel("rows (log scale)")
    out = {"histogram": svg(fig), "influence": "", "roc": "", "pr": ""}
    if d.influence.size:
        fig, ax = axes("Source influence (blue: pure, grey: noise)")
        order = np.argsort(-d.influence)
        ax.bar([f"s{i}" for i in order], d.influence[order],
               color=["#999" if i in d.noise_sources else "#1f77b4" for i in order])  # fmt: skip
        ax.set_ylabel("mean log column norm")
        out["influence"] = svg(fig)
    if d.labels is not None and 0 < np.sum(d.labels) < len(d.labels):
        from sklearn.metrics import auc, precision_recall_curve, roc_curve

        fpr, tpr, _ = roc_curve(d.labels, d.scores)
        prec, rec, _ = precision_recall_curve(d.labels, d.scores)
        fig, ax = axes(f"ROC (AUROC {auc(fpr, tpr):.3f})")
        ax.plot(fpr, tpr)
        ax.set_xlabel("false positive rate")
        ax.set_ylabel("true positive rate")
        out["roc"] = svg(fig)
        fig, ax = axes("Precision-recall")
        ax.plot(rec, prec)
        ax.set_xlabel("recall")
        ax.set_ylabel("precision")
        out["pr"] = svg(fig)
    return out


def render_report(d: ReportData) -> str:
    jinja2 = require("jinja2", "report")

    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["fmt"] = _fmt
    template = env.from_string((resources.files("nrad.report") / "template.html.j2").read_text())
    return template.render(d=d, figures=figures(d), version=__version__)


def write_report(d: ReportData, path: str | Path) -> Path:
    """Render and write atomically."""
    path = Path(path)
    with atomic_path(path) as tmp:
        tmp.write_text(render_report(d), encoding="utf-8")
    return path
