"""deferstitch diff BASE NEW on real captures: difffolded's lines, checked against difffolded's
algorithm run by Perl on our own ``folded`` output of each side; the differential flame graph's
colours against the shares of those outputs; the pprof profile read by the real pprof, as
``pprof -diff_base`` reads the two ``export --format pprof`` files; bad input on either side."""
import gzip
import os
import re
import shutil
import subprocess
from collections import Counter

import pytest

from conftest import DATA, capture, need_engine, run_cli
from google_pprof import read_profile
from test_exports import real_pprof
from test_offcpu import cap, folded  # noqa: F401 (cap: a fixture, the off-CPU captures unpacked)

TRACE = DATA / "real" / "captures" / "ftrace" / "trace-userstacktrace.dat"
V7 = DATA / "tracecmd-v7"

# difffolded.pl's algorithm (github.com/brendangregg/FlameGraph, difffolded.pl), restated in
# Perl so that -n's numbers are Perl's: every line `stack count`, -s hex numbers as 0x..., the
# two files summed per stack, -n BASE scaled to NEW's total by int(a * total2 / total1)
DIFFFOLDED = r"""
my ($norm, $strip, @files) = @ARGV;
my (%F, @total);
for my $i (0, 1) {
    open(my $fh, '<', $files[$i]) or die "$files[$i]: $!";
    while (<$fh>) {
        chomp;
        my ($stack, $count) = /^(.*)\s+?(\d+(?:\.\d*)?)$/;
        $stack =~ s/0x[0-9a-fA-F]+/0x.../g if $strip;
        $F{$stack}[$i] += $count;
        $total[$i] += $count;
    }
}
for my $stack (keys %F) {
    my ($a, $b) = map { $F{$stack}[$_] // 0 } (0, 1);
    $a = int($a * $total[1] / $total[0]) if $norm && $total[0] != $total[1];
    print "$stack $a $b\n";
}
"""


@pytest.fixture(scope="module")
def offcpu(cap):
    """The off-CPU captures (test_offcpu's, unpacked) and their symbol options."""
    return cap[0], cap[1]


def ds(*args, env=None):
    p = run_cli(*args, env=env)
    assert p.returncode == 0, p.stderr.decode()
    return p.stdout.decode()


def difffolded(tmp_path, base_text, new_text, normalize=False, strip=False):
    """difffolded's lines (sorted) of two folded texts, as Perl computes them."""
    if shutil.which("perl") is None:
        pytest.skip("perl not installed: apt-get install perl")
    a, b = tmp_path / "base.folded", tmp_path / "new.folded"
    a.write_text(base_text)
    b.write_text(new_text)
    p = subprocess.run(["perl", "-e", DIFFFOLDED, str(int(normalize)), str(int(strip)), str(a), str(b)],
                       capture_output=True, text=True, check=True)
    return sorted(p.stdout.splitlines())


def counts(text):
    return Counter(folded(text))


CASES = {   # id -> (base, new, options): the sides by name, as the fixtures give them
    "a-b": ("a_per_task", "b_per_task", []),
    "a-b-n": ("a_per_task", "b_per_task", ["-n"]),
    "lost-syswide-period-n": ("lost_per_task", "syswide", ["--weight", "period", "-n"]),
    "selection": ("b_per_task", "syswide", ["--comm", "workload_b", "--time", "10%-60%", "-n"]),
    "two-events-event": ("two_events_cpu_task", "a_per_task", ["--event", "cpu-clock", "-n"]),
    "offcpu": ("per_task", "syswide", ["--off-cpu", "-n"]),
    "offcpu-preempted": ("syswide", "per_task", ["--off-cpu", "--preempted"]),
    "wall-clock": ("global_freq", "syswide", ["--wall-clock", "-n"]),
    "trace-self-s": (TRACE, TRACE, ["-s"]),
    "trace-self-n-s": (TRACE, TRACE, ["-n", "-s"]),
    "trace-v7-n": (V7 / "big-zstd.dat", V7 / "instances-zstd.dat", ["-n"]),
    "trace-v7-comm": (V7 / "big-zstd.dat", V7 / "instances-zstd.dat", ["--comm", "other,worker"]),
}


def sides(case, capture_symbols, offcpu):
    """(base path, new path, symbol options) of a case."""
    base, new, _opts = CASES[case]
    if not isinstance(base, str):       # trace.dat files
        return str(base), str(new), []
    if base in ("per_task", "syswide", "global_freq"):
        paths, syms = offcpu
        return str(paths[base]), str(paths[new]), syms
    return str(capture(base)[0]), str(capture(new)[0]), capture_symbols


@pytest.mark.parametrize("case", sorted(CASES))
def test_folded_diff_is_difffolded_of_the_folded_outputs(case, capture_symbols, offcpu, tmp_path):
    base, new, syms = sides(case, capture_symbols, offcpu)
    opts = CASES[case][2]
    folded_opts = [o for o in opts if o not in ("-n", "-s")]
    trace = ["trace"] if base.endswith(".dat") else []
    want = difffolded(tmp_path, ds(*trace, "folded", base, "-q", *syms, *folded_opts),
                      ds(*trace, "folded", new, "-q", *syms, *folded_opts), "-n" in opts, "-s" in opts)
    got = ds("diff", base, new, "-q", *syms, *opts).splitlines()
    assert got == sorted(got)
    assert got == want
    assert len(got) > (0 if trace else 10)
    rows = [line.rsplit(" ", 2) for line in got]
    if base == new:         # a self-diff: nothing changed
        assert all(a == b for _s, a, b in rows)
    else:
        assert any(a != b for _s, a, b in rows)


def test_strip_hex_merges_addresses(tmp_path):
    """-s: the trace side names frames of no known file by address: stripped, the same stacks."""
    plain = ds("diff", TRACE, TRACE, "-q").splitlines()
    stripped = ds("diff", TRACE, TRACE, "-q", "-s").splitlines()
    assert any("0x..." in line for line in stripped) and not any("0x..." in line for line in plain)
    total = lambda lines: sum(int(line.rsplit(" ", 1)[1]) for line in lines)     # noqa: E731
    assert total(stripped) == total(plain)


FRAME = re.compile(r'<g class="frame [^"]*" data-name="([^"]*)" [^>]*?data-value="(\d+)" [^>]*?'
                   r'data-base="(\d+)" [^>]*?data-x="([\d.]+)" data-w="([\d.]+)" data-d="(\d+)" '
                   r'aria-label="([^"]*)"><title>[^<]*</title><rect [^>]*fill="rgb\((\d+),(\d+),(\d+)\)"')


def frames_by_path(page):
    """{path of names from the comm: (new, base, (r, g, b), label)} of each frame drawn, the path
    rebuilt from the geometry (a frame lies within its parent, one row below)."""
    import html
    rows = [(html.unescape(m[0]), int(m[1]), int(m[2]), float(m[3]), float(m[4]), int(m[5]),
             html.unescape(m[6]), tuple(int(c) for c in m[7:10])) for m in FRAME.findall(page)]
    assert rows and rows[0][0] == "all"
    by_depth = {}
    for r in rows:
        by_depth.setdefault(r[5], []).append(r)
    paths, out = {id(rows[0]): ()}, {}
    for d in sorted(by_depth)[1:]:
        for r in by_depth[d]:
            parent = next(p for p in by_depth[d - 1] if p[3] - 1e-3 <= r[3] < p[3] + p[4] + 1e-3
                          and id(p) in paths)
            paths[id(r)] = paths[id(parent)] + (r[0],)
            out[paths[id(r)]] = (r[1], r[2], r[7], r[6])
    return out


def own(stacks, path):
    return stacks.get(";".join(path), 0)


def inclusive(stacks, path):
    key = ";".join(path)
    return sum(n for s, n in stacks.items() if s == key or s.startswith(key + ";"))


@pytest.mark.parametrize("fmt", ["html", "svg"])
def test_flame_graph_colours_by_change_of_share(fmt, capture_symbols, tmp_path):
    """The shape of NEW; red where the share of the stacks ending at a frame grew, blue where
    it shrank, white where equal, the strongest change full (flamegraph.pl's color_scale);
    each frame's NEW and BASE weights are those of the folded outputs."""
    a, b = str(capture("b_per_task")[0]), str(capture("syswide")[0])
    base = counts(ds("folded", a, "-q", *capture_symbols))
    new = counts(ds("folded", b, "-q", *capture_symbols))
    out = tmp_path / ("d." + fmt)
    ds("diff", a, b, "-q", *capture_symbols, "-o", out)
    drawn = frames_by_path(out.read_text())
    tb, tn = sum(base.values()), sum(new.values())
    changes = {p: own(new, p) / tn - own(base, p) / tb for p in drawn}
    strongest = max(abs(new[s] / tn - base[s] / tb) for s in base.keys() | new.keys())
    seen = Counter()
    for path, (n, bv, (r, g, bl), label) in drawn.items():
        assert n == inclusive(new, path) and bv == inclusive(base, path), path
        assert "%.2f%%" % (100 * n / tn) in label and "base " in label
        c = changes[path]
        if c > 1e-12:
            assert r == 255 and g == bl < 255, (path, c)
            seen["grew"] += 1
        elif c < -1e-12:
            assert bl == 255 and r == g < 255, (path, c)
            seen["shrank"] += 1
        else:
            assert (r, g, bl) == (255, 255, 255), path
            seen["same"] += 1
        if abs(c) == strongest:
            assert (r, g, bl) in ((255, 0, 0), (0, 0, 255))
    assert seen["grew"] and seen["shrank"] and seen["same"], seen
    if fmt == "html":
        assert "share grew" in out.read_text() and "share shrank" in out.read_text()


def test_self_diff_graph_is_white(capture_symbols, tmp_path):
    a = str(capture("b_per_task")[0])
    out = tmp_path / "d.svg"
    ds("diff", a, a, "-q", *capture_symbols, "-o", out)
    drawn = frames_by_path(out.read_text())
    assert len(drawn) > 20
    assert all(rgb == (255, 255, 255) and n == bv for n, bv, rgb, _l in drawn.values())


def _top(pprof, *args):
    """pprof -top's rows: {function: (flat, cum)}, and its Showing line."""
    p = subprocess.run([pprof, "-top", "-nodefraction=0", "-edgefraction=0", "-nodecount=1000000",
                        *map(str, args)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("flat"))
    rows = {}
    for line in lines[start + 1:]:
        flat, _fp, _sp, cum, _cp, name = line.split(None, 5)
        rows[name] = (int(flat), int(cum))
    showing = next(line for line in lines if line.startswith("Showing nodes"))
    return rows, showing


def test_pprof_is_pprof_diff_base(capture_symbols, tmp_path):
    """The real pprof reads it as it reads `pprof -diff_base BASE NEW` of the two `export
    --format pprof` files: the same flat weight per function and the same totals."""
    pprof = real_pprof()
    a, b = str(capture("a_per_task")[0]), str(capture("b_per_task")[0])
    base_pb, new_pb, diff_pb = tmp_path / "a.pb.gz", tmp_path / "b.pb.gz", tmp_path / "d.pb.gz"
    ds("export", a, "--format", "pprof", "-q", *capture_symbols, "-o", base_pb)
    ds("export", b, "--format", "pprof", "-q", *capture_symbols, "-o", new_pb)
    ds("diff", a, b, "--format", "pprof", "-q", *capture_symbols, "-o", diff_pb)
    theirs, their_total = _top(pprof, "-sample_index=samples", "-diff_base", base_pb, new_pb)
    ours, our_total = _top(pprof, "-sample_index=samples", diff_pb)
    assert our_total == their_total
    assert {k: v[0] for k, v in ours.items()} == {k: v[0] for k, v in theirs.items()}
    assert any(flat < 0 for flat, _cum in ours.values()) and any(flat > 0 for flat, _cum in ours.values())
    # the file itself: NEW's samples as they are, BASE's negated and labelled pprof::base=true
    base = counts(ds("folded", a, "-q", *capture_symbols))
    new = counts(ds("folded", b, "-q", *capture_symbols))
    prof = read_profile(diff_pb)
    st = prof.string_table
    tagged = lambda s: any(st[lab.key] == "pprof::base" and st[lab.str] == "true" for lab in s.label)  # noqa
    assert sum(s.value[0] for s in prof.sample if tagged(s)) == -sum(base.values())
    assert sum(s.value[0] for s in prof.sample if not tagged(s)) == sum(new.values())
    assert all((s.value[0] < 0) == tagged(s) for s in prof.sample)


def test_pprof_traces_show_base_negated(tmp_path):
    """A self-diff of a trace.dat: pprof shows each stack twice, once negated and tagged
    pprof::base (-raw; -traces drops the tag, as for -diff_base), and the flat weights cancel."""
    pprof = real_pprof()
    out = tmp_path / "d.pb.gz"
    ds("diff", TRACE, TRACE, "--format", "pprof", "-q", "-o", out)
    raw = subprocess.run([pprof, "-raw", str(out)], capture_output=True, text=True, timeout=120).stdout
    assert re.search(r"^ +-29000: [\d ]+\n +pprof::base:\[true\] thread:\[workload_a\]$", raw, re.M), raw
    assert re.search(r"^ +29000: [\d ]+\n +thread:\[workload_a\]$", raw, re.M), raw
    p = subprocess.run([pprof, "-traces", str(out)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert re.search(r"^ +-29000 ", p.stdout, re.M) and re.search(r"^ +29000 ", p.stdout, re.M)
    rows, showing = _top(pprof, out)
    assert showing.startswith("Showing nodes accounting for 0, 0% of 29000 total"), showing
    assert all(flat == 0 for flat, _cum in rows.values())


@pytest.mark.parametrize("fmt", [[], ["-o", "OUT.html"], ["--format", "pprof", "-o", "OUT.pb.gz"]])
def test_same_on_the_engine_and_the_python_path(fmt, capture_symbols, tmp_path):
    need_engine("require")
    a, b = str(capture("a_per_task")[0]), str(capture("lost_per_task")[0])
    got = []
    for mode in ("0", "require"):
        argv = ["diff", a, b, "-q", *capture_symbols] + [str(tmp_path / x) if x.startswith("OUT") else x
                                                         for x in fmt]
        out = ds(*argv, env={**os.environ, "DEFERSTITCH_ACCEL": mode})
        if fmt:
            data = (tmp_path / fmt[-1]).read_bytes()
            out = gzip.decompress(data) if fmt[-1].endswith(".gz") else data
        got.append(out)
    assert got[0] == got[1] and len(got[0]) > 1000


def _damaged(tmp_path):
    a = capture("a_per_task")[0]
    cut = tmp_path / "cut.data"
    cut.write_bytes(a.read_bytes()[:200000])
    text = tmp_path / "notes.txt"
    text.write_text("not a profile\n")
    return str(a), str(cut), str(text)


@pytest.mark.parametrize("which", ["base", "new"])
@pytest.mark.parametrize("bad", ["cut", "text", "missing"])
def test_bad_input_on_either_side_is_one_line(which, bad, tmp_path):
    good, cut, text = _damaged(tmp_path)
    path = {"cut": cut, "text": text, "missing": str(tmp_path / "nope.data")}[bad]
    sides = [path, good] if which == "base" else [good, path]
    out = tmp_path / "d.html"
    out.write_text("old")
    p = run_cli("diff", *sides, "-q", "--no-symbols", "-o", out)
    err = p.stderr.decode()
    assert p.returncode == 2
    assert err.count("\n") == 1 and err.startswith("deferstitch: " + path) and "Traceback" not in err
    assert out.read_text() == "old"         # the old output kept


def test_kinds_and_options_that_do_not_fit(tmp_path):
    a = str(capture("a_per_task")[0])
    p = run_cli("diff", TRACE, a, "-q")      # a trace.dat and a perf.data
    assert p.returncode == 2 and p.stderr.decode().count("\n") == 1
    assert p.stderr.decode().startswith("deferstitch: %s: offset 0x0: not a trace.dat" % a)
    for opt in (["--wall-clock"], ["--event", "cpu-clock"], ["--weight", "period"]):
        p = run_cli("diff", TRACE, TRACE, *opt)
        flag = " ".join(opt) if opt[0] == "--weight" else opt[0]
        assert p.returncode == 2 and "%s is not an option for a trace.dat" % flag in p.stderr.decode()
    p = run_cli("diff", TRACE, TRACE, "--time", "10%/2")     # trace.dat has no first/last time
    assert p.returncode == 2 and p.stderr.decode().count("\n") == 1
    assert p.stderr.decode().startswith("deferstitch: %s: a trace.dat records no first" % TRACE)
    p = run_cli("diff", a, a, "--format", "pprof", "-n", "-o", tmp_path / "x.pb.gz")
    err = p.stderr.decode()
    assert p.returncode == 2 and err.count("\n") == 1 and "pprof -normalize" in err
    p = run_cli("diff", a)
    assert p.returncode == 2 and "NEW" in p.stderr.decode()
    p = run_cli("diff", "-", "-", input=b"")
    assert p.returncode == 2 and p.stderr.decode() == ("deferstitch: -: BASE and NEW cannot both be "
                                                       "standard input\n")


def test_one_side_from_standard_input(capture_symbols):
    """BASE as - (a perf.data pipe): the same diff as from the file."""
    a, b = capture("pipe")[0], str(capture("a_per_task")[0])
    want = ds("diff", a, b, "-q", *capture_symbols)
    p = run_cli("diff", "-", b, "-q", *capture_symbols, input=a.read_bytes())
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout.decode() == want and want.count("\n") > 10
