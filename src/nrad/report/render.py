"""Figures (plotly, JavaScript inlined) and the jinja2 template -> one HTML file."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from nrad import __version__
from nrad.io import atomic_path
from nrad.report.data import ReportData


def _fmt(value: Any) -> str:
    if isinstance(value, float | np.floating):
        return f"{value:.4g}"
    return str(value)


def figures(d: ReportData) -> dict[str, str]:
    """Each figure as an HTML fragment (plotly.js itself is inlined once by the template)."""
    import plotly.graph_objects as go

    def html(fig: Any) -> str:
        fig.update_layout(height=360, margin={"l": 50, "r": 20, "t": 40, "b": 40})
        return fig.to_html(full_html=False, include_plotlyjs=False)

    hist = go.Figure(go.Histogram(x=d.scores, nbinsx=60, name="rows"))
    if d.threshold is not None:
        hist.add_vline(
            x=d.threshold, line_dash="dash", line_color="crimson", annotation_text="flag threshold"
        )
    hist.update_layout(title="Anomaly score distribution", xaxis_title="anomaly score", yaxis_title="rows")
    colors = ["#999" if i in d.noise_sources else "#1f77b4" for i in range(len(d.influence))]
    order = np.argsort(-d.influence)
    infl = go.Figure(
        go.Bar(x=[f"s{i}" for i in order], y=d.influence[order], marker_color=[colors[i] for i in order])
    )
    infl.update_layout(title="Source influence (blue: pure, grey: noise)", yaxis_title="mean log column norm")
    out = {"histogram": html(hist), "influence": html(infl), "roc": "", "pr": ""}
    if d.labels is not None and 0 < np.sum(d.labels) < len(d.labels):
        from sklearn.metrics import auc, precision_recall_curve, roc_curve

        fpr, tpr, _ = roc_curve(d.labels, d.scores)
        prec, rec, _ = precision_recall_curve(d.labels, d.scores)
        roc = go.Figure(go.Scatter(x=fpr, y=tpr, mode="lines"))
        roc.update_layout(title=f"ROC (AUROC {auc(fpr, tpr):.3f})", xaxis_title="false positive rate",
                          yaxis_title="true positive rate")  # fmt: skip
        pr = go.Figure(go.Scatter(x=rec, y=prec, mode="lines"))
        pr.update_layout(title="Precision-recall", xaxis_title="recall", yaxis_title="precision")
        out.update(roc=html(roc), pr=html(pr))
    return out


def render_report(d: ReportData) -> str:
    import jinja2
    from plotly.offline import get_plotlyjs

    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["fmt"] = _fmt
    template = env.from_string((resources.files("nrad.report") / "template.html.j2").read_text())
    return template.render(d=d, figures=figures(d), plotly_js=get_plotlyjs(), version=__version__)


def write_report(d: ReportData, path: str | Path) -> Path:
    """Render and write atomically."""
    path = Path(path)
    with atomic_path(path) as tmp:
        tmp.write_text(render_report(d), encoding="utf-8")
    return path
