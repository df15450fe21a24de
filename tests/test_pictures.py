"""Flame graphs and report pages, opened in real headless Chromium (Debian's ``chromium``): the
page renders, the workload's functions are frames, a click zooms, search highlights and says the
share matched, lost user stacks show as frames, and the screenshot is not blank.

Each check runs the page's own script in the browser: a probe script appended to a copy of the
page acts (click events, typing in the search box) and writes what it sees into the DOM, which
``chromium --dump-dom`` prints."""
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
import zlib

import pytest

from conftest import capture, run_cli
import tracecmd_synth as S

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars"]


def chromium(tmp_path, *args):
    exe = shutil.which("chromium")
    if exe is None:
        pytest.skip("chromium not installed: apt-get install chromium")
    res = subprocess.run([exe, *CHROMIUM_FLAGS, "--user-data-dir=%s" % (tmp_path / "profile"), *args],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout


def probe(tmp_path, page, js):
    """Run ``js`` (its last value, JSON-able) after the page's own script; returns that value."""
    text = page.read_text()
    wrapped = ("<script>window.addEventListener('load', function () { var r;"
               "try { r = (function () { %s })(); } catch (e) { r = {error: String(e)}; }"
               "var pre = document.createElement('pre'); pre.id = 'probe-result';"
               "pre.textContent = JSON.stringify(r); document.body.appendChild(pre); });</script>" % js)
    copy = tmp_path / ("probe-" + page.name)
    copy.write_text(text.replace("</body>", wrapped + "</body>"))
    dom = chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", copy.as_uri())
    m = re.search(r'<pre id="probe-result">(.*?)</pre>', dom, re.S)
    assert m, dom[-2000:]
    import html
    return json.loads(html.unescape(m.group(1)))


def png_colours(path):
    """Distinct colours of a PNG (8-bit RGB/RGBA, as Chromium writes): unfiltered rows."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, bpp = 8, b"", 0, 0, 4
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height = int.from_bytes(body[:4], "big"), int.from_bytes(body[4:8], "big")
            bpp = {2: 3, 6: 4}[body[9]]
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, prev, colours = zlib.decompress(idat), width * bpp, bytearray(width * bpp), set()
    for y in range(height):
        f, row = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = row[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                row[i] = (row[i] + a) & 0xFF
            elif f == 2:
                row[i] = (row[i] + b) & 0xFF
            elif f == 3:
                row[i] = (row[i] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        colours.update(bytes(row[i:i + 3]) for i in range(0, stride, bpp * 7))
        prev = row
    return colours


@pytest.fixture
def symbols(capture_symbols):
    return capture_symbols


def folded_share(lines, pattern):
    """The share of samples whose folded stack has a frame matching ``pattern`` (the truth)."""
    total = hit = 0
    for line in lines:
        stack, n = line.rsplit(" ", 1)
        total += int(n)
        if any(re.search(pattern, f) for f in stack.split(";")):
            hit += int(n)
    return 100.0 * hit / total


def test_flamegraph_renders_zooms_and_searches(tmp_path, symbols):
    path, _ = capture("b_per_task")
    out = tmp_path / "b.html"
    res = run_cli("flamegraph", path, "-o", out, *symbols)
    assert res.returncode == 0, res.stderr
    assert "http" not in re.sub(r'xmlns="http://www.w3.org/2000/svg"', "", out.read_text())   # loads nothing
    folded = run_cli("folded", path, *symbols).stdout.decode().splitlines()
    seen = probe(tmp_path, out, """
        var W = +document.getElementById('flamegraph').getAttribute('width');
        function frame(name) { return document.querySelector('g.frame[data-name="' + name + '"]'); }
        function width(g) { return g.getBoundingClientRect().width; }
        var names = ['t0_outer', 't0_mid', 't0_inner', 't1_a', 't2_x', 't3_p'];
        var before = names.map(function (n) { var g = frame(n); return g ? width(g) : -1; });
        var kinds = {};
        document.querySelectorAll('g.frame').forEach(function (g) { kinds[g.dataset.kind] = 1; });
        var t1 = frame('t1_a'), t0 = frame('t0_outer');
        t1.dispatchEvent(new MouseEvent('click', {bubbles: true}));
        var zoomed = {t1: +t1.querySelector('rect').getAttribute('width'), t0: width(t0),
                      attr: document.getElementById('flamegraph').getAttribute('data-zoomed')};
        document.getElementById('fg-reset-button').click();
        var reset = width(t0);
        var q = document.getElementById('fg-query');
        q.value = '^t1_'; q.dispatchEvent(new Event('input'));
        var matches = Array.prototype.map.call(document.querySelectorAll('g.frame.match'),
                                               function (g) { return g.dataset.name; });
        var fill = getComputedStyle(document.querySelector('g.frame.match rect')).fill;
        return {W: W, before: before, kinds: Object.keys(kinds), zoomed: zoomed, reset: reset,
                matches: matches, fill: fill,
                matched: document.getElementById('flamegraph').getAttribute('data-matched'),
                label: t1.getAttribute('aria-label')};
    """)
    assert "error" not in seen, seen
    assert all(w > 1 for w in seen["before"]), seen["before"]        # each function drawn
    assert {"user", "kernel", "comm"} <= set(seen["kinds"])
    assert abs(seen["zoomed"]["t1"] - (seen["W"] - 0.5)) < 1 and seen["zoomed"]["t0"] == 0
    assert seen["zoomed"]["attr"] == "t1_a" and seen["reset"] > 1
    assert set(seen["matches"]) == {"t1_a", "t1_b", "t1_c", "t1_d"}
    assert seen["fill"] == "rgb(230, 0, 230)"
    assert abs(float(seen["matched"]) - folded_share(folded, "^t1_")) < 0.1
    assert seen["label"].startswith("t1_a (") and "samples" in seen["label"]


def test_flamegraph_shows_lost_user_stacks(tmp_path, symbols):
    path, _ = capture("lost_per_task")
    out = tmp_path / "lost.html"
    assert run_cli("flamegraph", path, "-o", out, *symbols).returncode == 0
    rep = json.loads(run_cli("report", path, "--json").stdout)
    seen = probe(tmp_path, out, """
        var lost = {};
        document.querySelectorAll('g.frame.lost').forEach(function (g) {
            lost[g.dataset.name] = (lost[g.dataset.name] || 0) + (+g.dataset.value); });
        var after = +document.querySelector('g.frame[data-kind="root"]').dataset.after;
        return {lost: lost, after: after,
                colour: getComputedStyle(document.querySelector('g.frame.lost rect')).fill};
    """)
    want = {"[user stack lost: %s]" % r: n for r, n in rep["unmatched"].items()}
    assert seen["lost"] == want and want
    assert seen["after"] == rep["stitched_after_stack"]


def test_flamegraph_screenshot_is_not_blank_and_svg_stands_alone(tmp_path, symbols):
    path, _ = capture("a_per_task")
    for name, extra in (("a.html", []), ("a.svg", ["--inverted", "--weight", "period", "--title", "A & B"])):
        out = tmp_path / name
        assert run_cli("flamegraph", path, "-o", out, *symbols, *extra).returncode == 0
    root = ET.parse(tmp_path / "a.svg").getroot()          # well-formed XML on its own
    ns = {"s": "http://www.w3.org/2000/svg"}
    frames = root.findall(".//s:g[@class]", ns)
    assert root.get("aria-label") == "A & B" and root.get("data-unit") == "period"
    top = {g.get("data-name"): float(g.find("s:rect", ns).get("y")) for g in frames}
    assert top["all"] < top["workload_a"]                  # icicle: the root on top
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    shots = {}
    for name in ("a.html", "a.svg", "blank.html"):
        png = tmp_path / (name + ".png")
        chromium(tmp_path, "--screenshot=%s" % png, "--window-size=1240,700", (tmp_path / name).as_uri())
        shots[name] = len(png_colours(png))
    assert shots["blank.html"] <= 2                         # the check can tell a blank page
    assert shots["a.html"] > 20 and shots["a.svg"] > 20, shots


def test_report_page_bars_timeline_and_lost_marks(tmp_path):
    path, _ = capture("lost_per_task")
    out = tmp_path / "report.html"
    res = run_cli("report", path, "--json", "--html", out)
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    seen = probe(tmp_path, out, """
        var bars = {};
        document.querySelectorAll('#reasons g.bar').forEach(function (g) {
            bars[g.dataset.key] = +g.dataset.count; });
        var lost = 0;
        document.querySelectorAll('#timeline rect.lost title').forEach(function (t) {
            lost += parseInt(t.textContent, 10); });
        var drawn = {};
        document.querySelectorAll('#timeline g.row rect').forEach(function (r) {
            var n = parseInt(r.querySelector('title').textContent.split(': ')[1], 10);
            drawn[r.dataset.key] = (drawn[r.dataset.key] || 0) + n; });
        return {bars: bars, lost: lost, rows: document.querySelectorAll('#timeline g.row').length,
                drawn: drawn, tables: document.querySelectorAll('table').length,
                verdict: document.getElementById('verdict').textContent,
                height: document.getElementById('timeline').getBoundingClientRect().height};
    """)
    want = {"stitched": rep["stitched"], "passed": rep["passed"], **rep["unmatched"]}
    assert seen["bars"] == want
    assert seen["lost"] == rep["lost_records"] > 0
    threads = len(rep["by_thread"])
    assert seen["rows"] == threads + len([c for c in rep["by_cpu"] if c != "None"])
    # every sample is drawn once per thread row (and once more per CPU row when CPUs are known)
    assert {k: v // (2 if len(rep["by_cpu"]) > 1 or "None" not in rep["by_cpu"] else 1)
            for k, v in seen["drawn"].items()} == {k: v for k, v in want.items() if v}
    assert seen["tables"] >= 3 and "add up" in seen["verdict"] and seen["height"] > 50


def test_trace_flamegraph_and_report_page(tmp_path):
    dat = tmp_path / "deferred.dat"
    S.deferred(dat)
    out, page = tmp_path / "t.html", tmp_path / "t-report.html"
    res = run_cli("trace", "flamegraph", dat, "-o", out)
    assert res.returncode == 0, res.stderr
    res = run_cli("trace", "report", dat, "--json", "--html", page)
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    seen = probe(tmp_path, out, """
        var f = {};
        document.querySelectorAll('g.frame').forEach(function (g) {
            f[g.dataset.name + '|' + g.dataset.kind] = +g.dataset.value; });
        return f;
    """)
    assert seen["all|root"] == rep["samples"]
    lost = {k.split("|")[0]: v for k, v in seen.items() if k.endswith("|lost")}
    assert lost == {"[user stack lost: %s]" % r: n for r, n in rep["unmatched"].items()}
    assert seen.get("ksys_read|kernel") and any(k.endswith("|user") for k in seen)
    seen = probe(tmp_path, page, """
        var lost = 0;
        document.querySelectorAll('#timeline rect.lost title').forEach(function (t) {
            lost += parseInt(t.textContent, 10); });
        return {lost: lost, bars: document.querySelectorAll('#reasons g.bar').length};
    """)
    assert seen["lost"] == rep["lost_records"] == 1 and seen["bars"] == 2 + len(rep["unmatched"])
