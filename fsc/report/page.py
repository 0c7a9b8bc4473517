"""The pieces of the report page: a finished :class:`Section`, numbers written for reading, HTML tables and
grids, figures that open at full size, and Markdown made HTML."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from pathlib import Path

import attrs

__all__ = ["MAX_DIGITS", "SHIPPED", "Section", "figure", "grid", "long_numbers", "markdown", "number", "reset_text", "table"]

#: Where the results computed at full size are shipped with the project (results/PROVENANCE.md says how).
SHIPPED = Path(__file__).resolve().parents[2] / "results"

#: The most significant digits a number on the page has: more would claim a precision nothing here has.
MAX_DIGITS = 6


@attrs.frozen
class Section:
    """A finished part of the report."""

    title: str
    body: str
    commands: tuple[str, ...] = ()
    numbers: dict = attrs.field(factory=dict)


def number(value: float, digits: int = MAX_DIGITS) -> str:
    """``value`` with ``digits`` significant digits (at most :data:`MAX_DIGITS`), exponents without padding:
    ``9.54e-7``, not ``9.5367431640625e-07``."""
    text = f"{value:.{min(digits, MAX_DIGITS)}g}"
    mantissa, e, exponent = text.partition("e")
    return f"{mantissa}e{int(exponent)}" if e else text


def reset_text(r: float, digits: int = 3) -> str:
    """A reset probability as the grids print it: a power of two below 1/8 as ``2^-20 ≈ 9.54e-7``."""
    exponent = math.log2(r) if r > 0 else 0.0
    if exponent < -3 and exponent == int(exponent):
        return f"2^{int(exponent)} ≈ {number(r, digits)}"
    return number(r, digits)


#: A number as a page prints it: digits with a decimal point and an optional exponent, not inside a word.
_NUMBER = re.compile(r"(?<![\w.])\d*\.\d+(?:[eE][-+]?\d+)?(?![\w.])")


def long_numbers(text: str) -> list[str]:
    """The decimal numbers in the text ``text`` with more than :data:`MAX_DIGITS` significant digits
    (what ``benchmarks/check_report_chromium.py`` and the tests refuse on the page)."""
    found = []
    for match in _NUMBER.finditer(text):
        digits = re.split(r"[eE]", match.group())[0].replace(".", "").lstrip("0")
        if len(digits) > MAX_DIGITS:
            found.append(match.group())
    return found


def _cell(value, digits: int) -> str:
    if isinstance(value, float):
        return number(value, digits)
    return html.escape(str(value))


def table(header: list[str], rows: list[list], *, digits: int | Sequence[int] = MAX_DIGITS) -> str:
    """An HTML table; floats printed with ``digits`` significant digits (:func:`number`), one count for every
    column or one per column (a standard error needs two, the value it qualifies more)."""
    per_column = [digits] * len(header) if isinstance(digits, int) else list(digits)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_cell(v, d)}</td>" for v, d in zip(row, per_column, strict=True)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def grid(corner: str, columns: list[str], fields: list[str], rows: list[tuple[str, list[list]]], *, caption: str = "") -> str:
    """An HTML grid: one row per ``(label, cells)``, one column group per entry of ``columns`` with a sub-column per
    ``fields``; ``cells[j]`` holds the values of column ``j`` (``None``: nothing there), floats as :func:`number`."""
    top = f"<tr><th rowspan='2'>{html.escape(corner)}</th>" + "".join(f"<th colspan='{len(fields)}'>{html.escape(c)}</th>" for c in columns) + "</tr>"
    sub = "<tr>" + "".join(f"<th>{html.escape(f)}</th>" for _ in columns for f in fields) + "</tr>"
    body = []
    for label, cells in rows:
        tds = "".join(f"<td>{'' if v is None else _cell(v, MAX_DIGITS)}</td>" for values in cells for v in values)
        body.append(f"<tr><th>{html.escape(label)}</th>{tds}</tr>")
    title = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table class='grid'>{title}<thead>{top}{sub}</thead><tbody>{''.join(body)}</tbody></table>"


def figure(src: str, alt: str) -> str:
    """An image at page width that opens at full size (an SVG in the browser's own viewer) when clicked."""
    src, alt = html.escape(src, quote=True), html.escape(alt, quote=True)
    return f"<a href='{src}' target='_blank' title='open at full size'><img src='{src}' alt='{alt}'></a>"


def _inline(text: str) -> str:
    """Markdown inside a line: `code`, **bold**, *emphasis*, [text](link) (the rest escaped)."""
    parts = re.split(r"(`[^`]+`)", text)
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
            continue
        part = html.escape(part)
        part = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", part)
        part = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<i>\1</i>", part)
        part = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r"<a href='\2'>\1</a>", part)
        out.append(part)
    return "".join(out)


def markdown(text: str) -> str:
    """The Markdown the project writes (headings, paragraphs, lists, indented or fenced code, tables) as HTML."""
    blocks, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif line.startswith("```"):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines))
            blocks.append(f"<pre>{html.escape(chr(10).join(lines[i + 1 : end]))}</pre>")
            i = end + 1
        elif line.startswith("    "):
            end = next((j for j in range(i, len(lines)) if lines[j].strip() and not lines[j].startswith("    ")), len(lines))
            blocks.append(f"<pre>{html.escape(chr(10).join(x[4:] for x in lines[i:end]).strip(chr(10)))}</pre>")
            i = end
        elif heading := re.match(r"(#{1,6})\s+(.*)", line):
            level = min(len(heading.group(1)) + 2, 6)  # below the report's own h2 and h3
            blocks.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
            i += 1
        else:
            i = _block(lines, i, blocks)
    return "".join(blocks)


def _block(lines: list[str], i: int, blocks: list[str]) -> int:
    """A list, a table or a paragraph starting at ``lines[i]``, appended to ``blocks``; the next line's index."""
    end = next((j for j in range(i, len(lines)) if not lines[j].strip() or lines[j].startswith(("```", "#", "    "))), len(lines))
    chunk = lines[i:end]
    if chunk[0].lstrip().startswith(("- ", "* ")):
        items, current = [], []
        for line in chunk:
            if line.lstrip().startswith(("- ", "* ")) and current:
                items.append(" ".join(current))
                current = []
            current.append(line.strip().removeprefix("- ").removeprefix("* ") if not current else line.strip())
        items.append(" ".join(current))
        blocks.append("<ul>" + "".join(f"<li>{_inline(item)}</li>" for item in items) + "</ul>")
    elif chunk[0].lstrip().startswith("|"):
        rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in chunk if not re.fullmatch(r"[\s|:-]+", line)]
        head = "".join(f"<th>{_inline(c)}</th>" for c in rows[0])
        body = "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in rows[1:])
        blocks.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    else:
        blocks.append(f"<p>{_inline(' '.join(line.strip() for line in chunk))}</p>")
    return end
