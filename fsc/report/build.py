"""``fsc report``: the main job, a small but real run of the whole framework.

Each section computes its numbers, writes its figures and returns an HTML
fragment; :func:`build_report` assembles them into ``DIR/index.html`` with
the commands that reproduce each part at full size.  The report is built in a
temporary folder and moved into place at the end, so a failed run never
leaves a half-written report.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from fsc.errors import InputError
from fsc.files import UMASK
from fsc.report.paper import SECTIONS

__all__ = ["REPORT_MARKER", "build_report", "check_report_target"]

_STYLE = """
body { font-family: sans-serif; max-width: 1100px; margin: 2em auto; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; }
table.grid th[colspan] { text-align: center; }
table.grid caption { font-weight: bold; text-align: left; padding: 0.3em 0; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; }
a img { cursor: zoom-in; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; }
"""


# Records on <body> how many images loaded, so a headless browser can check
# the page (benchmarks/check_report_chromium.py).
_IMAGE_CHECK = (
    "<script>window.addEventListener('load', () => { const imgs = [...document.images];"
    " document.body.dataset.images = imgs.length;"
    " document.body.dataset.loaded = imgs.filter(i => i.complete && i.naturalWidth > 0).length; });</script>"
)


REPORT_MARKER = ".fsc-report"

#: The sentence at the top of the page: what the two letters on every line of it mean.
READING = (
    "Throughout, <b>q</b> is the probability that the agent plays the worse arm, in the long run (lower is better), and "
    "<b>r</b> the probability per step that the task resets to a new hypothesis and the memory to its start (the discount "
    "is 1 - r); mu is the gap between the arms' win probabilities. Click a figure to open it at full size."
)


def check_report_target(out: Path) -> None:
    """Refuse an ``--out`` that is not ours to replace.

    ``fsc report`` replaces only a missing directory, an empty one, or a previous report (one holding the
    marker file ``.fsc-report``); it never deletes files it did not write, nor the current directory or one
    of its ancestors.
    """
    resolved = out.resolve()
    cwd = Path.cwd().resolve()
    if resolved == cwd or resolved in cwd.parents:
        raise InputError(f"--out {str(out)!r} is the current directory or above it; give a new directory")
    if not out.exists():
        return
    if not out.is_dir():
        raise InputError(f"--out must be a directory, got the file {str(out)!r}")
    if (out / REPORT_MARKER).is_file() or not any(out.iterdir()):
        return
    raise InputError(
        f"--out {str(out)!r} already holds files that are not an fsc report (no {REPORT_MARKER}); "
        "give a new or empty directory"
    )


def build_report(
    out: str | Path, *, quiet: bool = False, full: bool = False, sweeps: str | Path = "sweeps", workers: int | None = None
) -> dict:
    """Run every section and write ``out/index.html`` (and ``out/report.json``).

    With ``full``, first run the points of the full-size figures that ``results/`` lacks (Figure 4 and
    Figure 2 as published: hours; the sweeps go to ``sweeps/fig4`` and ``sweeps/fig2``, on ``workers``
    processes, and resume where they stopped) and ship them into ``results/``
    (:func:`fsc.report.results.complete`).

    Returns the numbers of every section (also in ``report.json``).
    The report is built in a temporary directory beside ``out`` and renamed
    to it at the end.  An existing ``out`` is replaced only when it is empty
    or a previous report (it holds the marker file ``.fsc-report``);
    anything else is refused with a ``ValueError``, before any work.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out must be a directory, got the file {str(out)!r}")
    check_report_target(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()

    def log(message: str) -> None:
        if not quiet:
            print(message, file=sys.stderr, flush=True)

    if full:
        _complete_full_size(sweeps, workers, quiet, log, start)
    work = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        (work / "figures").mkdir()
        sections = _run_sections(work, log, start)
        seconds = time.perf_counter() - start
        numbers = _write_report(work, sections, seconds)
        _move_into_place(work, out)
    except OSError as error:  # a full disk: nothing of this report is left, the previous one is untouched
        shutil.rmtree(work, ignore_errors=True)
        if error.filename is None:
            raise OSError(error.errno, error.strerror, f"--out {out}") from None
        raise
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    log(f"report written to {out / 'index.html'} in {seconds:.0f} s")
    return numbers


def _complete_full_size(sweeps: str | Path, workers: int | None, quiet: bool, log: Callable[[str], None], start: float) -> None:
    """Run the points of each full-size figure that ``results/`` lacks, and ship them in."""
    from fsc.report.results import FULL_SIZE, complete

    for name in FULL_SIZE:
        log(f"[{time.perf_counter() - start:6.1f}s] the full-size {name}: what results/{name} lacks")
        complete(name, sweeps=sweeps, workers=workers, quiet=quiet, log=log)


def _run_sections(work: Path, log: Callable[[str], None], start: float) -> list:
    """Every section of the report, made in the report directory ``work``, each announced in the log."""
    sections = []
    for make in SECTIONS:
        log(f"[{time.perf_counter() - start:6.1f}s] {make.__doc__.splitlines()[0]}")
        sections.append(make(work, log))
    return sections


def _page(sections: list, seconds: float) -> str:
    """``index.html``: the style, the version and build time, the sentence on q and r, then each section under
    its anchored title with the commands that reproduce it at full size."""
    import fsc

    parts = []
    for section in sections:
        commands = "".join(f"<pre>{html.escape(c)}</pre>" for c in section.commands)
        reproduce = f"<h3>Reproduce at full size</h3>{commands}" if commands else ""
        anchor = re.sub(r"[^a-z0-9]+", "-", section.title.lower()).strip("-")  # index.html#figure-2-at-full-size
        parts.append(f"<h2 id='{anchor}'>{html.escape(section.title)}</h2>{section.body}{reproduce}")
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>fsc report</title>"
        f"<style>{_STYLE}</style>{_IMAGE_CHECK}</head><body><h1>fsc report</h1>"
        f"<p>fsc {fsc.__version__}; built in {seconds:.0f} s. Paper: <i>How memory architecture affects learning "
        "in a simple POMDP: the two-hypothesis testing problem</i>.</p>"
        f"<p>{READING}</p>" + "".join(parts) + "</body></html>"
    )


def _write_report(work: Path, sections: list, seconds: float) -> dict:
    """Write ``index.html``, ``report.json`` and the marker into the report directory ``work``; returns the
    numbers of every section, by title."""
    (work / "index.html").write_text(_page(sections, seconds))
    numbers = {s.title: s.numbers for s in sections}
    (work / "report.json").write_text(json.dumps({"seconds": seconds, "sections": numbers}, indent=1))
    (work / REPORT_MARKER).write_text("written by fsc report; fsc report --out may replace this directory\n")
    return numbers


def _move_into_place(work: Path, out: Path) -> None:
    """Replace ``out`` (checked again: still ours to replace) with the finished report directory ``work``."""
    work.chmod(0o777 & ~UMASK)  # mkdtemp makes it 0o700
    check_report_target(out)
    if out.exists():
        shutil.rmtree(out)
    work.rename(out)
