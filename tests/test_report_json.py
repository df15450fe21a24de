"""The report's JSON has one documented shape (docs/report-json.md): the core's counts
at the top, the same for perf.data and trace.dat, each front end's counters under its own key,
and a version; reports stored by earlier versions (flat) are still read."""
import json
import os
import re

import pytest

from conftest import CAPTURES, ROOT, capture, run_cli
from tracecmd_text import need_libtracecmd
from deferstitch.report import VERSION, StitchReport


def documented():
    """{key: the row's text} from the table of docs/report-json.md."""
    section = (ROOT / "docs" / "report-json.md").read_text()
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| (.+?) \| (.+) \|$", line)
        if m and "`" in m.group(1):
            for key in re.findall(r"`([a-z_]+)`", m.group(1)):
                rows[key] = m.group(2)
    return rows


def perf_report(scenario="lost_per_task"):
    path, _ = capture(scenario)
    p = run_cli("report", path, "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_perf_report_shape_is_documented():
    d = perf_report()
    rows = documented()
    assert list(d)[:3] == ["version", "complete", "error"] and d["version"] == VERSION
    assert set(d) == set(rows) - {"ftrace", "off_cpu", "selection"}, "undocumented or missing top-level keys"
    for key in d["perf"]:
        assert "`%s`" % key in rows["perf"], "perf.%s is not documented" % key
    assert d["complete"] is True and d["error"] is None


def test_off_cpu_shape_is_documented():
    """report --off-cpu adds ``off_cpu``: each of its keys and its threads' keys documented."""
    import lzma
    import tempfile
    from conftest import DATA
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "per-task.data")
        with open(path, "wb") as f:
            f.write(lzma.decompress((DATA / "offcpu" / "per_task" / "per-task.data.xz").read_bytes()))
        p = run_cli("report", path, "--json", "--off-cpu")
    assert p.returncode == 0, p.stderr
    oc = json.loads(p.stdout)["off_cpu"]
    row = documented()["off_cpu"]
    for key in list(oc) + list(oc["threads"][0]):
        assert "`%s`" % key in row, "off_cpu.%s is not documented" % key


def test_trace_report_has_the_same_top_level():
    real = CAPTURES / "ftrace" / "trace-userstacktrace.dat"
    need_libtracecmd()
    p = run_cli("trace", "report", real, "--json")
    assert p.returncode == 0, p.stderr
    t = json.loads(p.stdout)
    rows = documented()
    assert set(t) - {"ftrace"} == set(perf_report()) - {"perf"}
    for key in t["ftrace"]:
        assert "`%s`" % key in rows["ftrace"], "ftrace.%s is not documented" % key


def test_reports_stored_before_version_1_are_read():
    d = perf_report("a_per_task")
    flat = {k: v for k, v in d.items() if k not in ("version", "complete", "error", "perf")}
    flat.update(d["perf"])                  # how stitch stored it before: perf's counters on top
    assert StitchReport.from_json(flat).to_json() == d
    assert StitchReport.from_json(d).to_json() == d


def test_selection_shape_is_documented():
    """--comm, --pid, --tid, --cpu, --time add ``selection``: its keys documented."""
    path, _ = capture("syswide")
    d = json.loads(run_cli("report", path, "--json", "--cpu", "0").stdout)
    rows = documented()
    assert set(d) == set(rows) - {"ftrace", "off_cpu"}
    assert set(d["selection"]) == {"options", "not_chosen"}
    assert all("`%s`" % k in rows["selection"] for k in d["selection"])
