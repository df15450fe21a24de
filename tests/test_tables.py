"""output/tables.table draws what tabulate's "simple" layout draws for the report's cells, so
that the report inside perf (no tabulate there) is the CLI's bytes: held to tabulate on random
tables of text, numbers, None and padded cells, and on a real report."""
import io
import random
import sys

import pytest
from conftest import CAPTURES, run_cli

WORDS = ["stitched", "  of which after its stack", "unmatched: lost", "", " x ", "workload_a",
         "COUNTS DO NOT ADD UP", "-", "0x1f", "名前", "é", "12.5%", "a b", "trailing  "]


def cell(rnd):
    k = rnd.random()
    if k < 0.3:
        return rnd.randrange(0, 10 ** rnd.randrange(1, 9))
    if k < 0.35:
        return None
    return rnd.choice(WORDS)


def test_the_tables_are_tabulates():
    tabulate = pytest.importorskip("tabulate").tabulate
    from deferstitch.output.tables import table
    rnd = random.Random(7)
    for _ in range(500):
        ncols = rnd.randrange(1, 6)
        headers = [rnd.choice(["outcome", "samples", "tid", "n", "first unmatched: time", " cpu "])
                   for _ in range(ncols)]
        rows = [[cell(rnd) for _ in range(ncols)] for _ in range(rnd.randrange(0, 6))]
        want = tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)
        assert table(rows, headers) == want, (headers, rows)


def test_the_report_is_tabulates_on_a_capture(monkeypatch):
    """The whole report of a real capture, drawn by tabulate and by us."""
    tabulate = pytest.importorskip("tabulate").tabulate
    from deferstitch.cli import main
    from deferstitch.output import tables
    p = run_cli("report", CAPTURES / "c_per_task" / "per-task.data")
    assert p.returncode == 0, p.stderr
    ours = p.stdout.decode()
    monkeypatch.setattr(tables, "table", lambda rows, headers: tabulate(
        rows, headers=headers, tablefmt="simple", disable_numparse=True))
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["report", str(CAPTURES / "c_per_task" / "per-task.data")]) == 0
    assert out.getvalue() == ours
