"""One self-contained HTML report: a data object, figures, and a template."""

from nrad.report.data import ReportData, build_report_data
from nrad.report.render import render_report, write_report

__all__ = ["ReportData", "build_report_data", "render_report", "write_report"]
