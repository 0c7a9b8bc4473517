"""Open the report in headless Chromium and check what a reader sees.

    python benchmarks/check_report_chromium.py report/index.html [--screenshot report.png]

Checks, on the page as Chromium built it: every image loaded and opens at full size when clicked (it sits in
a link to itself); no number has more than 6 significant digits (:func:`fsc.report.page.long_numbers`); no
Markdown is shown raw in a code block; the Figure 2 section, when results/fig2 is shipped, is a grid (tables
of class ``grid`` with the columns ours, paper, difference).  Needs Debian's chromium (apt-get install
chromium).  Exit status 0 when every check passes, 1 otherwise, 2 when chromium is missing.
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--virtual-time-budget=10000"]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path)
    parser.add_argument("--screenshot", type=Path, default=None)
    args = parser.parse_args()
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("chromium is missing: apt-get install chromium", file=sys.stderr)
        return 2
    url = args.page.resolve().as_uri()
    with tempfile.TemporaryDirectory() as profile:
        dom = subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
        if args.screenshot:
            subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", f"--screenshot={args.screenshot.resolve()}", "--window-size=1200,4000", url],
                           capture_output=True, timeout=120)  # fmt: skip
    images = re.search(r'data-images="(\d+)"', dom)
    loaded = re.search(r'data-loaded="(\d+)"', dom)
    if not images or not loaded:
        print("the page did not report its images (script did not run?)", file=sys.stderr)
        return 1
    print(f"{loaded.group(1)} of {images.group(1)} images loaded")
    problems = reading_problems(dom)
    for problem in problems:
        print(problem)
    return 0 if images.group(1) == loaded.group(1) and int(images.group(1)) > 0 and not problems else 1


#: How Chromium writes the class of the report's grids.
GRID = 'class="grid"'


def reading_problems(dom: str) -> list[str]:
    """What a reader of the page ``dom`` would trip on (empty when nothing)."""
    from fsc.report.page import long_numbers

    text = html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style)\b.*?</\1>", "", dom, flags=re.S)))
    problems = [f"{len(long)} numbers with more than 6 significant digits, e.g. {long[:3]}" for long in [long_numbers(text)] if long]
    unlinked = [src for src in re.findall(r"<img[^>]*src=\"([^\"]+)\"", dom) if f'href="{src}"' not in dom]
    if unlinked:
        problems.append(f"images that do not open at full size on click: {unlinked}")
    raw = [block[:60] for block in re.findall(r"<pre>(.*?)</pre>", dom, flags=re.S) if re.search(r"^#+ |\*\*|\]\(", html.unescape(block), flags=re.M)]
    if raw:
        problems.append(f"Markdown shown raw in a code block: {raw}")
    figure2 = dom[dom.find("Figure 2 at full size") :]
    figure2 = figure2[: figure2.find("<h2>")] if "<h2>" in figure2 else figure2
    grids = figure2.count(GRID)
    if not grids and "No results shipped" not in figure2:
        problems.append("the Figure 2 section shows no grid")
    print(f"Figure 2: {grids} grids")
    return problems


if __name__ == "__main__":
    sys.exit(main())
