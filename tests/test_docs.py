"""The documentation runs: every Python block and every ``fsc`` command of README.md and docs/*.md.

Each page's Python blocks run in order in one namespace (a block may use what an earlier one defined), in a
fresh working directory that sees the repository's ``tests/`` and ``examples/``; a DeprecationWarning is an
error, so the pages show the current API.  A line ``print(...)  # 1.25 7`` states what it prints: the numbers
printed must equal the numbers of the comment to the digits the comment shows.  Each ``fsc`` line of a page's shell blocks runs through the command
line, in order and in one working directory per page, and must exit with status 0.  ``make`` lines are what CI itself runs and are left out here.

In the prose, every name in backquotes (``fsc.engines.kernels.flow_stop``, ``viz.memory_graph``) and every file
of the repository exists, every ``fsc COMMAND --option`` is one, and a paragraph that states a duration names
where it was measured (a benchmark, the shipped results, a run's record) or the constant of a time limit.
"""

from __future__ import annotations

import re
import shlex
import warnings
from pathlib import Path

import pytest

from fsc.cli import main

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\s*$")
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
STATED = re.compile(r"^(\s*)print\((.*)\)\s*#\s*([-+(\[]?\d.*)$")


def _check(where: str, stated: str, *values) -> None:
    """Print ``values`` as ``print`` does and compare their numbers with those of the comment ``stated``."""
    text = " ".join(str(v) for v in values)
    print(text)
    shown, expected = NUMBER.findall(text), NUMBER.findall(stated)
    assert len(shown) <= len(expected), f"{where}: prints {text!r}, the page says {stated!r}"
    for got, claim in zip(shown, expected, strict=False):
        mantissa = claim.lower().split("e")[0]
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        exponent = int(claim.lower().split("e")[1]) if "e" in claim.lower() else 0
        tolerance = 0.5 * 10.0 ** (exponent - decimals)
        assert abs(float(got) - float(claim)) <= tolerance * (1 + 1e-12), f"{where}: prints {text!r}, the page says {stated!r}"


def _with_checks(text: str, page: str, start: int) -> str:
    """The block with each ``print(...)  # numbers`` line turned into a call of :func:`_check`."""
    lines = []
    for offset, line in enumerate(text.splitlines()):
        stated = STATED.match(line)
        if stated:
            indent, arguments, comment = stated.groups()
            line = f"{indent}__check__({f'{page}:{start + offset}'!r}, {comment!r}, {arguments})"
        lines.append(line)
    return "\n".join(lines) + "\n"


def blocks(page: Path, languages: tuple[str, ...]) -> list[tuple[int, str]]:
    """``(line number, text)`` of each fenced block of ``page`` in one of ``languages``."""
    out, current, start = [], None, 0
    for number, line in enumerate(page.read_text().splitlines(), 1):
        fence = FENCE.match(line)
        if fence and current is None:
            current, start, language = [], number + 1, fence.group(1)
        elif fence:
            if language in languages:
                out.append((start, "\n".join(current) + "\n"))
            current = None
        elif current is not None:
            current.append(line)
    assert current is None, f"{page.name}: a code block is not closed"
    return out


def commands() -> list[tuple[str, int, list[str]]]:
    found = []
    for page in PAGES:
        for start, text in blocks(page, ("sh", "bash", "console")):
            for offset, line in enumerate(text.splitlines()):
                argv = shlex.split(line, comments=True)
                if argv and argv[0] == "fsc":
                    found.append((page.name, start + offset, argv[1:]))
                elif argv and argv[0] != "make":
                    raise AssertionError(f"{page.name}:{start + offset}: a shell line the docs test does not know: {line!r}")
    return found


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    for name in ("tests", "examples"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


PYTHON_PAGES = [page for page in PAGES if blocks(page, ("python",))]


def test_the_pages_hold_code():
    assert len(PYTHON_PAGES) >= 4 and len(commands()) >= 8


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=[page.name for page in PYTHON_PAGES])
def test_python_blocks_run(page, workdir, capsys):
    namespace = {"__name__": f"docs_{page.stem}", "__check__": _check}
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for start, text in blocks(page, ("python",)):
            exec(compile(_with_checks(text, page.name, start), f"{page.name}:{start}", "exec"), namespace)


def test_a_stated_output_is_checked():
    _check("here", "0.10952 551", 0.109521, 551)
    with pytest.raises(AssertionError, match="the page says"):
        _check("here", "0.10952 550", 0.109521, 551)
    with pytest.raises(AssertionError, match="the page says"):
        _check("here", "100163.9", 100027.588)
    assert "__check__('p:3', '1.5', x)" in _with_checks("print(x)   # 1.5\n", "p", 3)


COMMAND_PAGES = sorted({page for page, _, _ in commands()})


@pytest.mark.parametrize("page", COMMAND_PAGES)
def test_commands_run(page, workdir, capsys):
    """A page's commands, in order, in one working directory (a command may use what an earlier one wrote)."""
    for name, line, argv in commands():
        if name == page:
            status = main(argv)
            assert status == 0, f"{page}:{line}: fsc {' '.join(argv)} exited with {status}: {capsys.readouterr().err}"


def test_json_blocks_parse_and_specs_match_their_files():
    """Every JSON block is valid JSON; a sweep spec shown whole equals the file of that name in examples/sweeps."""
    import json

    for page in PAGES:
        for start, text in blocks(page, ("json",)):
            doc = json.loads(text)
            shown = ROOT / "examples" / "sweeps" / f"{doc.get('name')}.json"
            if isinstance(doc, dict) and shown.exists():
                on_disk = json.loads(shown.read_text())
                on_disk.pop("description", None)
                assert doc == on_disk, f"{page.name}:{start} differs from {shown.name}"


# Names, files, options and times the pages mention in their text (outside code blocks).

SPAN = re.compile(r"`([^`]+)`")
NAME = re.compile(r"(?<![\w./])((?:fsc|viz|policies|tasks)(?:\.\w+)+)")
REPO_PATH = re.compile(r"(?<![\w/.])((?:examples|benchmarks|docs|tests|fsc|policies|viz|tasks|results)/[\w/.*-]+)")
#: A duration promised in prose: "0.21 s", "38 minutes", "in seconds", "a minute", "hours".
DURATION = re.compile(r"(?<![\w.])\d[\d.,]*(?:e-?\d+)?\s?(?:ms|s|seconds?|minutes?|min|h|hours?)\b|\bin (?:seconds|a minute|minutes)\b|\bminutes\b|\bhours\b")
#: Where a duration was measured: a benchmark, the shipped results and their provenance, or a run's own record;
#: or, for a time limit rather than a measurement, the constant that sets it (``MEMORY_FILE_SECONDS``).
MEASURED = re.compile(r"benchmarks/\w+\.(?:py|sh)|results/|PROVENANCE|provenance\.json|report\.json|result\.json|\b[A-Z][A-Z_]*SECONDS\b")


def prose(page: Path) -> str:
    """``page`` without its fenced code blocks."""
    return re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` (``fsc.engines.kernels.flow_stop``) is a module or an attribute reached from one."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attribute in parts[cut:]:
                value = getattr(value, attribute)
        except AttributeError:
            return False
        return True
    return False


def test_every_name_and_file_the_pages_mention_exists():
    missing = []
    for page in PAGES:
        for span in SPAN.findall(prose(page)):
            missing += [f"{page.name}: {name}" for name in NAME.findall(span) if not resolves(name)]
            missing += [f"{page.name}: {path}" for path in REPO_PATH.findall(span) if not list(ROOT.glob(path.rstrip("/")))]
    assert not missing, missing


def test_every_command_and_option_the_pages_mention_exists():
    import fsc.cli

    wrong = []
    for page in PAGES:
        for span in SPAN.findall(prose(page)):
            words = span.split()
            if words[:1] != ["fsc"] or len(words) < 2 or words[1] in ("--help", "-h"):
                continue
            if words[1] not in fsc.cli.COMMANDS:
                wrong.append(f"{page.name}: {span!r} names no command")
                continue
            parser = fsc.cli.make_parser(words[1])._subparsers._group_actions[0].choices[words[1]]
            options = {o for action in parser._actions for o in action.option_strings}
            wrong += [f"{page.name}: {span!r}: {w}" for w in re.findall(r"--[\w-]+", span) if w not in options]
    assert not wrong, wrong


def test_every_time_a_page_promises_says_where_it_was_measured():
    """A paragraph that states a duration names where it was measured: a benchmark script that prints it, the
    shipped results and their provenance, or a run's own record."""
    unsourced = []
    for page in PAGES:
        for paragraph in re.split(r"\n\s*\n", prose(page)):
            durations = DURATION.findall(paragraph.replace("second opinion", ""))
            if durations and not MEASURED.search(paragraph):
                unsourced.append(f"{page.name}: {durations} in {paragraph.strip()[:80]!r}")
    assert not unsourced, unsourced


def test_the_checks_of_names_and_times_can_fail():
    assert resolves("fsc.engines.kernels.flow_stop") and resolves("viz.memory_graph") and resolves("fsc.Policy.load")
    assert not resolves("viz.build_memory_graph") and not resolves("fsc.nothing.here")
    assert DURATION.findall("it takes 0.21 s, then 38 minutes") == ["0.21 s", "38 minutes"] and not DURATION.findall("a second opinion, 2 cores")
    assert MEASURED.search("(benchmarks/bench_evaluate.py automaton)") and not MEASURED.search("it took 3 s here")
