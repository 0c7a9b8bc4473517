"""The report reads: numbers with the digits their precision carries, Figure 2 as the paper's grid, figures that
open at full size, Markdown made HTML, and q and r said before they are used."""

import csv
import html
import re

import pytest

from fsc.report import build_report, page
from fsc.report.page import long_numbers, markdown, number, reset_text
from fsc.report.paper import section_figure2_full_size
from policies.closed_form import ccp_eps_best, ccp_q


def test_numbers_are_written_for_reading():
    assert number(2**-20, 3) == "9.54e-7" and reset_text(2**-20) == "2^-20 ≈ 9.54e-7" and reset_text(0.125) == "0.125"
    assert number(0.1) == "0.1" and number(1 / 3) == "0.333333" and number(1 / 3, 12) == "0.333333" and number(123456789.0) == "1.23457e8"
    assert long_numbers("q = 9.5367431640625e-07, 0.1234567 and 0.123456, commit 1e70c87, 12.50") == ["9.5367431640625e-07", "0.1234567"]


def test_markdown_becomes_html():
    text = "## results/x/\n\nA *note* with `code` and **bold**,\ncontinued.\n\n    fsc sweep spec.json\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    out = markdown(text)
    assert out.startswith("<h4>results/x/</h4><p>A <i>note</i> with <code>code</code> and <b>bold</b>, continued.</p>")
    assert "<pre>fsc sweep spec.json</pre>" in out and "<ul><li>one</li><li>two</li></ul>" in out
    assert "<th>a</th><th>b</th>" in out and "<td>1</td><td>2</td>" in out and "**" not in out and "`" not in out


def grids(body: str) -> dict[tuple[str, str, str], list[str]]:
    """(caption, row label, column title) -> the texts of the cell's fields, for every grid in ``body``."""
    cells = {}
    for table in re.findall(r"<table class='grid'>(.*?)</table>", body):
        caption = html.unescape(re.search(r"<caption>(.*?)</caption>", table).group(1))
        columns = [html.unescape(c) for c in re.findall(r"<th colspan='\d+'>(.*?)</th>", table)]
        for label, tds in re.findall(r"<tr><th>([^<]*)</th>((?:<td>[^<]*</td>)+)</tr>", table.split("<tbody>")[1]):
            values = re.findall(r"<td>(.*?)</td>", tds)
            for j, column in enumerate(columns):
                cells[caption, html.unescape(label), column] = values[3 * j : 3 * j + 3]
    return cells


def test_figure2_is_the_papers_grid_with_the_published_line_and_the_difference(tmp_path):
    shipped = page.SHIPPED / "fig2" / "groups.csv"  # shipped with the repository (results/fig2)
    (tmp_path / "figures").mkdir()
    body = section_figure2_full_size(tmp_path, lambda message: None).body
    cells = grids(body)
    with open(shipped, newline="") as f:
        records = [r for r in csv.DictReader(f) if r["median_q"]]
    assert len(re.findall("<table class='grid'>", body)) == 2 * len({r["mu"] for r in records})  # two panels for each mu
    for r in records:
        mu, M, reset, ours = float(r["mu"]), int(r["memory"].split(":")[1]), float(r["reset"]), float(r["median_q"])
        line = (1 - reset) * ccp_q(mu, M, reset, ccp_eps_best(mu, M, reset)) + reset / 2  # the paper convention
        expected = [number(ours), number(line), number(float(number(ours - line, 2)))]
        left = cells.get((f"mu = {mu:g}: q against r (the paper's left panel)", reset_text(reset), f"M = {M}"))
        right = cells.get((f"mu = {mu:g}: q against M (the paper's right panel)", str(M), f"r = {number(reset, 3)}"))
        assert expected in (left, right), (r, left, right)
    assert not long_numbers(html.unescape(re.sub(r"<[^>]+>", " ", body)))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report"
    build_report(out, quiet=True)
    return (out / "index.html").read_text()


def test_the_page_prints_no_long_number_and_explains_q_and_r(report):
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style)\b.*?</\1>", "", report, flags=re.S))).split())
    assert long_numbers(text) == []
    first = text.index(" q is the probability")
    assert first < text.index("q exact") and "r the probability per step" in text[first : first + 200]


def test_every_figure_opens_at_full_size_and_no_markdown_is_shown_raw(report):
    images = re.findall(r"<img src='([^']+)'", report)
    assert images and all(f"<a href='{src}' target='_blank'" in report for src in images)
    assert any(src.endswith(".svg") for src in images)
    for block in re.findall(r"<pre>(.*?)</pre>", report, flags=re.S):
        assert not re.search(r"^#+ |\*\*|\]\(|^    \S", html.unescape(block), flags=re.M), block[:80]
