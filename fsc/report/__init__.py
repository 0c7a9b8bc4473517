"""``fsc report``: the main job, a small but real run of the whole framework, as one HTML page.

Each section (:mod:`fsc.report.paper`, :mod:`fsc.report.beyond`) computes its numbers, writes its
figures and returns an HTML fragment; :func:`build_report` assembles them in a temporary directory and
moves the page into place at the end, so a failed run never leaves half a report.
"""

from fsc.report.build import REPORT_MARKER, build_report, check_report_target
from fsc.report.page import Section, table

__all__ = ["REPORT_MARKER", "Section", "build_report", "check_report_target", "table"]
