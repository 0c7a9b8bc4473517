"""The pieces of the report page: a finished :class:`Section` and HTML tables."""

from __future__ import annotations

import html
from pathlib import Path

import attrs

__all__ = ["SHIPPED", "Section", "table"]

#: Where the results computed at full size are shipped with the project (results/PROVENANCE.md says how).
SHIPPED = Path(__file__).resolve().parents[2] / "results"


@attrs.frozen
class Section:
    """A finished part of the report."""

    title: str
    body: str
    commands: tuple[str, ...] = ()
    numbers: dict = attrs.field(factory=dict)


def table(header: list[str], rows: list[list], *, digits: int = 6) -> str:
    """An HTML table; floats printed with ``digits`` significant digits."""

    def cell(value) -> str:
        if isinstance(value, float):
            return f"{value:.{digits}g}"
        return html.escape(str(value))

    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
