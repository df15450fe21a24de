"""The flame graph page's timeline, in real headless Chromium: a range chosen on it (or given in
the page's address, #time=A,B) draws the graph of exactly the samples `folded --time A,B`
counts, on both twins; the range goes into the address; a thread's row each where asked."""
import html
import json
import os
import re
from collections import defaultdict

import pytest

from conftest import capture, need_engine, run_cli
from test_pictures import chromium, probe
from test_offcpu import cap  # noqa: F401  (the off-CPU captures, unpacked)


def data_of(page):
    m = re.search(r'<script type="application/json" id="fg-data">(.*?)</script>', page.read_text(), re.S)
    return json.loads(m.group(1)) if m else None


def seconds(ns):
    return "%d.%09d" % divmod(ns, 10**9)


def slices(d, i, j):
    """--time A,B of slices i..j of the page's timeline."""
    return seconds(d["t0"] + i * d["width"]), seconds(d["t0"] + (j + 1) * d["width"] - 1)


def drawn(dom):
    """{path of frame names from the root's child: value} of the frames in a dumped DOM (a frame's
    parent is the one a level up whose extent holds it); the lost-stack frames left out."""
    frames = []
    for m in re.finditer(r'<g class="frame [^"]*" ([^>]*)>', dom):
        a = dict(re.findall(r'(data-[a-z]+)="([^"]*)"', m.group(1)))
        frames.append((int(a["data-d"]), float(a["data-x"]), float(a["data-w"]),
                       html.unescape(a["data-name"]), a["data-kind"], int(a["data-value"])))
    frames.sort()
    paths, by_depth, out = {}, defaultdict(list), {}
    for f in frames:
        d, x, w, name = f[:4]
        if d == 0:
            paths[f] = ()
        else:
            parent = next(p for p in by_depth[d - 1] if p[1] - 1e-3 <= x and x + w <= p[1] + p[2] + 1e-3)
            paths[f] = paths[parent] + (name,)
        by_depth[d].append(f)
        if f[4] != "lost":
            out[paths[f]] = f[5]
    return out


def folded_prefixes(text):
    """{stack prefix: weight} of folded text, () the total."""
    out = defaultdict(int)
    for line in text.splitlines():
        stack, n = line.rsplit(" ", 1)
        parts = tuple(stack.split(";"))
        for k in range(len(parts) + 1):
            out[parts[:k]] += int(n)
    return out


def page_of(tmp_path, path, *opts, accel=None):
    """The flame graph page; ``accel``: DEFERSTITCH_ACCEL for the run (None: as set)."""
    out = tmp_path / ("f-%s.html" % accel)
    p = run_cli("flamegraph", path, "--no-symbols", "-o", out, *opts,
                env={**os.environ, "DEFERSTITCH_ACCEL": accel} if accel else None)
    assert p.returncode == 0, p.stderr.decode()
    return out


@pytest.mark.parametrize("accel", ["require", "0"])
@pytest.mark.parametrize("span", [(40, 120), (0, 399), (399, 399), (7, 7)])
def test_a_range_in_the_address_draws_what_folded_time_counts(tmp_path, accel, span):
    need_engine(accel)
    path, _ = capture("syswide")
    page = page_of(tmp_path, path, accel=accel)
    d = data_of(page)
    a, b = slices(d, *span)
    dom = chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", page.as_uri() + "#time=%s,%s" % (a, b))
    got = drawn(dom)
    want = folded_prefixes(run_cli("folded", "--no-symbols", path, "--time", "%s,%s" % (a, b)).stdout.decode())
    assert got[()] == want[()] > 0
    assert all(want.get(p, 0) == v for p, v in got.items()), \
        [(p, v, want.get(p)) for p, v in got.items() if want.get(p, 0) != v][:3]
    if span != (0, 399):
        whole = folded_prefixes(run_cli("folded", "--no-symbols", path).stdout.decode())
        assert got[()] < whole[()]      # the range draws less than the whole recording


def test_choosing_a_range_puts_it_in_the_address(tmp_path):
    path, _ = capture("syswide")
    page = page_of(tmp_path, path)
    d = data_of(page)
    res = probe(tmp_path, page, "window.deferstitchTimeline.choose([30, 90], false);"
                "return {hash: window.location.hash, total: +document.getElementById('flamegraph')"
                ".getAttribute('data-total'), said: document.getElementById('fg-range').textContent};")
    a, b = slices(d, 30, 90)
    assert res["hash"] == "#time=%s,%s" % (a, b)
    assert res["said"] == "--time %s,%s" % (a, b)
    want = folded_prefixes(run_cli("folded", "--no-symbols", path, "--time", "%s,%s" % (a, b)).stdout.decode())
    assert res["total"] == want[()]


def test_a_row_per_thread_where_asked(tmp_path):
    path, _ = capture("syswide")
    page = page_of(tmp_path, path)
    res = probe(tmp_path, page, "var one = document.querySelectorAll('#fg-timeline text').length;"
                "var box = document.getElementById('fg-per-thread'); box.checked = true;"
                "box.dispatchEvent(new Event('change'));"
                "return {one: one, rows: Array.prototype.map.call("
                "document.querySelectorAll('#fg-timeline text'), function (t) { return t.textContent; })};")
    assert res["one"] == 0
    comms = {l.split(";", 1)[0] for l in run_cli("folded", "--no-symbols", path).stdout.decode().splitlines()}
    assert len(res["rows"]) > 1 and set(res["rows"]) <= comms and "workload_b" in res["rows"]


def test_off_cpu_time_on_the_page_is_chosen_by_when_each_wait_began(tmp_path, cap):  # noqa: F811
    paths, _sym, _ = cap
    path = paths["syswide"]
    page = page_of(tmp_path, path, "--off-cpu", accel="0")      # off-CPU: the Python path
    d = data_of(page)
    assert d["unit"] == "ns"
    a, b = slices(d, 100, 300)
    dom = chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", page.as_uri() + "#time=%s,%s" % (a, b))
    want = folded_prefixes(run_cli("folded", "--off-cpu", "--no-symbols", path, "--time",
                                   "%s,%s" % (a, b)).stdout.decode())
    assert drawn(dom)[()] == want[()] > 0


def test_svg_and_a_pipe_have_no_timeline(tmp_path):
    path, _ = capture("syswide")
    p = run_cli("flamegraph", path, "--no-symbols", "-o", tmp_path / "f.svg")
    assert p.returncode == 0 and b"fg-data" not in (tmp_path / "f.svg").read_bytes()
    pipe, _ = capture("pipe")      # a pipe's header has no sample times: no slices to measure
    page = tmp_path / "p.html"
    assert run_cli("flamegraph", pipe, "--no-symbols", "-o", page).returncode == 0
    assert data_of(page) is None and "fg-timeline" not in page.read_text()
