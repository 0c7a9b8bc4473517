"""Open the report in headless Chromium and check that every image loaded.

    python benchmarks/check_report_chromium.py report/index.html [--screenshot report.png]

Needs Debian's chromium (apt-get install chromium).  Exit status 0 when the
page loaded every image, 1 otherwise, 2 when chromium is missing.
"""

from __future__ import annotations

import argparse
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
    return 0 if images.group(1) == loaded.group(1) and int(images.group(1)) > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
