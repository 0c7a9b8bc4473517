"""``--memory FILE.py:NAME`` imports the file as a module: its ``__main__`` block does not run, and an import that
runs on is stopped with one line that says why."""

import signal

import pytest

from fsc.cli import main
from fsc.model import memory

GUARDED = '''
import pathlib

import fsc

mine = fsc.Memento(1)

if __name__ == "__main__":
    pathlib.Path(__file__).with_name("trained").write_text("the script ran")
'''


def test_the_main_block_does_not_run(tmp_path, capsys):
    path = tmp_path / "guarded.py"
    path.write_text(GUARDED)
    assert main(["evaluate", "--memory", f"{path}:mine", "--json"]) == 0, capsys.readouterr().err
    assert not (tmp_path / "trained").exists()


@pytest.mark.parametrize("body", ["while True:\n    pass\n", "import time\ntry:\n    time.sleep(30)\nexcept Exception:\n    pass\n"])
def test_an_import_that_runs_on_is_stopped_in_one_line(tmp_path, capsys, monkeypatch, body):
    monkeypatch.setattr(memory, "MEMORY_FILE_SECONDS", 0.3)
    path = tmp_path / "busy.py"
    path.write_text(body)
    assert main(["evaluate", "--memory", f"{path}:x"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "still running after 0.3 s" in err and 'if __name__ == "__main__":' in err


def test_a_timer_of_the_caller_survives(tmp_path):
    path = tmp_path / "quick.py"
    path.write_text("import fsc\nmine = fsc.RAM(2)\n")
    signal.setitimer(signal.ITIMER_REAL, 100.0)
    try:
        assert memory.parse_memory(f"{path}:mine").num_nodes == 10
        left, _ = signal.getitimer(signal.ITIMER_REAL)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    assert 90 < left <= 100
