"""perf's selection options (--comm, --pid, --tid, --cpu, --time) on every command that reads
samples: the samples chosen equal perf 7.2's with the same options, sample for sample; a chosen
sample keeps its whole stack; the report counts the chosen and still adds up; both twins agree.

perf 7.2 is asked in --no-merge-callchains mode, where it takes samples in time order: merged,
it delivers a sample only when its stack comes, and by then a thread that exited in between is
a new one to it (":TID"), so --comm there leaves out the last samples of exiting threads.
"""
import json
import lzma
import os
import re
import shutil
import subprocess
from collections import Counter

import pytest

from conftest import capture, need_engine, need_sid_perf, run_cli
from collect import stitch
from deferstitch import selection as S
from test_offcpu import cap  # noqa: F401  (the off-CPU captures, unpacked)

SEC = 10**9
TWINS = ["require", "0"]


# -- perf's syntax (util/time-utils.c, cpumap.c, intlist.c) -----------------------------------------
def test_time_ranges_are_perfs():
    first, last = 1 * SEC, 2 * SEC
    assert S.parse_time("10%/2", first, last) == [(1_100_000_000, 1_199_999_999)]
    assert S.parse_time("10%/1,10%/3", first, last) == [(SEC, 1_099_999_999), (1_200_000_000, 1_299_999_999)]
    assert S.parse_time("0%-10%,30%-40%", first, last) == [(SEC, 1_099_999_999), (1_300_000_000, 1_399_999_999)]
    assert S.parse_time("50%", first, last) == [(SEC, 1_499_999_999)]
    assert S.parse_time("90%-100%", first, last) == [(1_900_000_000, 2 * SEC)]    # the end kept
    assert S.parse_time("1.5,2") == [(1_500_000_000, 2 * SEC)]
    assert S.parse_time("1.000000001,") == [(1_000_000_001, 0)]
    assert S.parse_time(",3") == [(0, 3 * SEC)]
    assert S.parse_time("1,2 3,4") == [(SEC, 2 * SEC), (3 * SEC, 4 * SEC)]


@pytest.mark.parametrize("text", ["5", "2,1", "1,3 2,4", "1,2,3", "x,2", "1.0000000001,2", "150%/1",
                                  "10%/x", "0%/1", "10%-x%", "-5%"])
def test_a_time_string_perf_refuses_is_refused(text):
    with pytest.raises(S.SelectionError, match="Invalid time string"):
        S.parse_time(text, SEC, 2 * SEC)


def test_skipping_follows_perf_time_ranges_skip_sample():
    one = [(10, 20)]
    assert [S.time_skips(one, t) for t in (9, 10, 20, 21)] == [True, False, False, True]
    assert not S.time_skips(one, 0) and not S.time_skips(one, None)     # no time: always kept
    assert not S.time_skips([(10, 0)], 99) and S.time_skips([(0, 20)], 21)
    two = [(10, 20), (30, 0)]
    assert [S.time_skips(two, t) for t in (5, 15, 25, 31)] == [True, False, True, False]


def test_lists_are_perfs():
    assert S.parse_cpus("0-3,5") == {0, 1, 2, 3, 5}
    assert S.parse_ints("1, 2,3", "pid") == {1, 2, 3}
    assert S.parse_comms("a,b c") == {"a", "b c"}
    for bad in ("3-1", "x", "1,,2", "4096"):
        with pytest.raises(S.SelectionError, match="Invalid cpu_list"):
            S.parse_cpus(bad)
    with pytest.raises(S.SelectionError, match="problems parsing tid list"):
        S.parse_ints("1,x", "tid")
    assert S.comm_of(None, 0) == "swapper" and S.comm_of(None, 7) == ":7" and S.comm_of("a", 7) == "a"


# -- against perf 7.2 ------------------------------------------------------------------------------
HEAD = re.compile(r"\s(-?\d+)\s+(?:\[(\d+)\]\s+)?(\d+\.\d+):")


def keys(text):
    """Counter of (tid, cpu, time) of the sample headers of perf script text (any layout)."""
    out = Counter()
    for line in text.splitlines():
        if not line or line[0] == "\t" or "DEFERRED CALLCHAIN" in line:
            continue
        m = HEAD.search(" " + line)
        if m:
            out[(int(m.group(1)), m.group(2), m.group(3))] += 1
    return out


def stacks(text):
    """(tid, cpu, time) -> [ip] of our script --no-symbols text."""
    out, cur = {}, None
    for line in text.splitlines():
        if line.startswith("\t"):
            if cur is not None:
                out[cur].append(int(line.split()[0], 16))
            continue
        m = HEAD.search(" " + line)
        cur = (int(m.group(1)), m.group(2), m.group(3)) if m else None
        if cur is not None:
            out[cur] = []
    return out


def ours(path, *opts, accel=None):
    """Our script --no-symbols text; ``accel``: DEFERSTITCH_ACCEL for the run (None: as set)."""
    env = {**os.environ, "DEFERSTITCH_ACCEL": accel} if accel else None
    p = run_cli("script", "--no-symbols", path, *opts, env=env)
    assert p.returncode == 0, p.stderr.decode()
    return p.stdout.decode()


def perfs(tmp_path, path, fields, *opts, merged=False):
    perf = need_sid_perf()
    local = tmp_path / path.name
    if not local.exists():
        shutil.copy(path, local)
    mode = [] if merged else ["--no-merge-callchains"]
    p = subprocess.run([perf, "script", *mode, "-F", fields, "-i", "./" + local.name, *opts],
                       cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


SYSWIDE = [("--comm", "workload_b"), ("--comm", "swapper,rcu_preempt"), ("--pid", "275"),
           ("--tid", "277,278"), ("-C", "1"), ("--cpu", "0-1"), ("--time", "10%/2"),
           ("--time", "0%-10%,30%-40%"), ("--time", "147.8,148.2"), ("--time", "147.8,"),
           ("--time", ",147.9"), ("--time", "147.7,147.9 148.3,148.5"),
           ("--comm", "workload_b", "-C", "0", "--time", "20%/3"), ("--pid", "0", "--tid", "0")]


@pytest.mark.parametrize("opts", SYSWIDE, ids=" ".join)
def test_the_samples_chosen_are_perfs(tmp_path, opts):
    path, _ = capture("syswide")
    theirs = keys(perfs(tmp_path, path, "tid,cpu,time", *opts))
    assert theirs, "perf chose nothing: the options test nothing"
    for accel in TWINS:
        need_engine(accel)
        assert keys(ours(path, *opts, accel=accel)) == theirs, accel


@pytest.mark.parametrize("opts", SYSWIDE[::3], ids=" ".join)
def test_the_stacks_chosen_are_perfs_frame_for_frame(tmp_path, opts):
    """perf 7.2 merged: each sample's frames are ours, or (taken after its stack was written)
    its kernel frames and the cookie, which we stitch."""
    path, _ = capture("syswide")
    theirs = stacks(perfs(tmp_path, path, "tid,cpu,time,ip", *opts, merged=True))
    mine = stacks(ours(path, *opts))
    same = after = 0
    for key, ips in theirs.items():
        if key not in mine:
            continue            # merged, perf's --comm left out a thread's last samples
        if mine[key] == ips:
            same += 1
        else:
            assert mine[key][:len(ips) - 1] == ips[:-1] and len(mine[key]) > len(ips) - 1, key
            after += 1
    assert same > 0 and same + after >= 0.99 * len(theirs)


@pytest.mark.parametrize("opts", [("--time", "25%-50%"), ("--tid", "138"), ("--comm", "workload_a"), ("--pid", "1")],
                         ids=" ".join)
def test_a_file_without_cpus_chooses_as_perf(tmp_path, opts):
    path, _ = capture("a_per_task")
    theirs = keys(perfs(tmp_path, path, "tid,time", *opts))
    mine = keys(ours(path, *opts))
    assert mine == theirs and sum(mine.values()) == sum(theirs.values())


def test_a_chosen_sample_keeps_its_stack_written_after_the_range():
    """Stitched on the whole file: a sample at the end of --time whose stack came later."""
    path, _ = capture("syswide")
    samples, _rep, _ = stitch(path)
    late = [s for s in samples if s.outcome == "stitched" and s.stack_time > s.time and s.user]
    assert late
    s = late[len(late) // 2]
    end = "%d.%09d" % divmod(s.time, SEC)
    for accel in TWINS:
        need_engine(accel)
        picked = stacks(ours(path, "--time", "," + end, "--tid", str(s.tid), accel=accel))
        key = max(picked, key=lambda k: k[2])
        assert key[2] == "%d.%06d" % (s.time // SEC, s.time % SEC // 1000)
        assert picked[key][-len(s.user):] == list(s.user)
        whole = stacks(ours(path, accel=accel))
        assert all(whole[k] == v for k, v in picked.items())


# -- the report, outputs and twins ---------------------------------------------------------------------
@pytest.mark.parametrize("opts", SYSWIDE[:8], ids=" ".join)
def test_the_report_counts_the_chosen_and_adds_up(opts):
    path, _ = capture("syswide")
    whole = json.loads(run_cli("report", "--json", path).stdout)
    docs = []
    for accel in TWINS:
        need_engine(accel)
        p = run_cli("report", "--json", path, *opts, env={**os.environ, "DEFERSTITCH_ACCEL": accel})
        assert p.returncode == 0, p.stderr.decode()
        doc = json.loads(p.stdout)
        assert doc["conserved"]
        assert doc["samples"] == doc["stitched"] + doc["passed"] + sum(doc["unmatched"].values())
        assert doc["samples"] + doc["selection"]["not_chosen"] == whole["samples"]
        assert doc["samples"] == sum(keys(ours(path, *opts)).values())
        assert doc["selection"]["options"] == " ".join(
            ("--cpu" if o == "-C" else o) for o in opts)
        docs.append(doc)
    assert docs[0] == docs[1]
    text = run_cli("report", path, *opts).stdout.decode()
    assert "chosen by" in text and str(docs[0]["samples"]) in text


def test_no_selection_leaves_the_report_as_it_was():
    path, _ = capture("syswide")
    assert "selection" not in json.loads(run_cli("report", "--json", path).stdout)


@pytest.mark.parametrize("cmd", [("folded",), ("export", "--format", "pprof", "-o", "{tmp}/p.pb.gz"),
                                 ("flamegraph", "-o", "{tmp}/f.html"), ("script",)], ids=lambda c: c[0])
def test_every_output_gives_the_same_bytes_on_both_twins(tmp_path, cmd):
    path, _ = capture("syswide")
    got = []
    for accel in TWINS:
        need_engine(accel)
        args = [a.format(tmp=tmp_path) for a in cmd]
        p = run_cli(*args, path, "--no-symbols", "--comm", "workload_b", "--time", "10%/3",
                    env={**os.environ, "DEFERSTITCH_ACCEL": accel})
        assert p.returncode == 0, p.stderr.decode()
        out = p.stdout if "-o" not in args else (tmp_path / os.path.basename(args[-1])).read_bytes()
        got.append(out)
    assert got[0] == got[1] and got[0]


def test_folded_of_a_thread_is_its_lines_of_the_whole():
    path, _ = capture("syswide")
    whole = run_cli("folded", "--no-symbols", path).stdout.decode().splitlines()
    one = run_cli("folded", "--no-symbols", "--comm", "rcu_preempt", path).stdout.decode().splitlines()
    assert one and sorted(one) == sorted(l for l in whole if l.startswith("rcu_preempt;"))


def test_stitch_writes_only_the_chosen(tmp_path):
    path, _ = capture("syswide")
    out = tmp_path / "st.data"
    p = run_cli("stitch", path, "--tid", "277", "-o", out)
    assert p.returncode == 0, p.stderr.decode()
    doc = json.loads(run_cli("report", "--json", out).stdout)
    assert set(doc["by_thread"]) == {"277"}
    assert doc["samples"] == sum(keys(ours(path, "--tid", "277")).values())


def test_off_cpu_chooses_waits_by_their_task_and_start(cap):  # noqa: F811
    """A wait is chosen by its switch-out; it still ends at the evidence of any sample."""
    paths, _sym, _ = cap
    path = paths["syswide"]
    whole = run_cli("folded", "--off-cpu", "--no-symbols", path).stdout.decode().splitlines()
    comm = Counter(l.split(";", 1)[0] for l in whole).most_common(1)[0][0]
    one = run_cli("folded", "--off-cpu", "--no-symbols", "--comm", comm, path).stdout.decode().splitlines()
    assert one and sorted(one) == sorted(l for l in whole if l.startswith(comm + ";"))
    doc = json.loads(run_cli("report", "--json", "--off-cpu", "--time", "50%-100%", path).stdout)
    oc = doc["off_cpu"]
    assert oc["switch_outs"] == sum(oc["ended"].values()) + sum(oc["never_ended"].values()) \
        + oc["preempted_not_counted"]
    half = json.loads(run_cli("report", "--json", "--off-cpu", path).stdout)["off_cpu"]["switch_outs"]
    assert 0 < oc["switch_outs"] < half


# -- bad lists and ranges: perf's words, one line, exit 2 ------------------------------------------------
@pytest.mark.parametrize("opts,words", [
    (("--cpu", "3-1"), "Invalid cpu_list"), (("--pid", "x"), "problems parsing pid list"),
    (("--tid", "1,y"), "problems parsing tid list"), (("--time", "5"), "Invalid time string"),
    (("--time", "148.0,147.0"), "Invalid time string"), (("--time", "150%/1"), "Invalid time string")])
@pytest.mark.parametrize("cmd", ["script", "folded", "report", "stitch"])
def test_a_bad_list_or_range_is_perfs_words_one_line_and_exit_2(tmp_path, cmd, opts, words):
    path, _ = capture("syswide")
    out = ("-o", tmp_path / "o") if cmd == "stitch" else ()
    p = run_cli(cmd, path, *opts, *out)
    err = p.stderr.decode()
    assert p.returncode == 2 and words in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "o").exists()


def test_cpu_on_a_file_without_cpus_is_perfs_words(tmp_path):
    path, _ = capture("a_per_task")
    p = run_cli("folded", path, "-C", "0")
    err = p.stderr.decode()
    assert p.returncode == 2 and len(err.splitlines()) == 1
    assert "File does not contain CPU events. Remove -C option to proceed." in err


# -- the trace side: the same options on a trace.dat ------------------------------------------------
def test_trace_side_chooses_waits_and_samples_as_the_perf_side(tmp_path):
    """test_tracecmd_offcpu's scenario: a wait is chosen by its switch-out; the switches left
    out still end others' waits (A's first wait ends at B's switch naming it, at 3 ms)."""
    import test_tracecmd_offcpu as T
    dat = str(T.scenario(tmp_path / "offcpu.dat"))
    ms, t0 = T.MS, T.T0
    assert {k: int(v) for k, v in T.folded(dat, "--comm", "workload").items()} == \
        {T.A_READ: 3 * ms, T.A_LOST: 2 * ms}
    assert {k: int(v) for k, v in T.folded(dat, "--comm", "other").items()} == {T.B_PPID: 7 * ms}
    assert {k: int(v) for k, v in T.folded(dat, "--cpu", "1").items()} == {T.B_PPID: 7 * ms, T.A_LOST: 2 * ms}
    after = "%d.%09d," % divmod(t0 + 5 * ms, 10**9)
    assert {k: int(v) for k, v in T.folded(dat, "--time", after).items()} == {T.A_LOST: 2 * ms}
    doc = json.loads(run_cli("trace", "report", dat, "--json", "--tid", str(T.A)).stdout)
    whole = json.loads(run_cli("trace", "report", dat, "--json").stdout)
    assert doc["conserved"] and set(doc["by_thread"]) == {str(T.A)}
    assert doc["samples"] + doc["selection"]["not_chosen"] == whole["samples"]
    assert doc["ftrace"]["buffers"]["top"]["samples"] == doc["samples"]
    p = run_cli("trace", "folded", dat, "--time", "10%/2")
    assert p.returncode == 2 and b"percent slices" in p.stderr and len(p.stderr.splitlines()) == 1


# -- inside perf script -s: perf chooses the samples it hands over, the report counts those ----------
@pytest.mark.parametrize("opts", [("--comms", "workload_b"), ("-C", "1"), ("--time", "10%/2"),
                                  ("--tid", "277,278")], ids=" ".join)
def test_the_plugin_reports_the_samples_perf_chose(tmp_path, opts):
    import test_perf_plugin as P
    from conftest import CAPTURES
    ks = tmp_path / "ks"
    ks.write_bytes(lzma.open(CAPTURES / "kallsyms.xz").read())
    path, _ = capture("syswide")
    shutil.copy(path, tmp_path / "in.data")
    text, rep, _p = P.perf7_plugin(tmp_path, "in.data", ks, "--no-merge-callchains", *opts)
    cli = json.loads(run_cli("report", "--json", path, *opts).stdout)
    assert P.core_report(rep) == cli and cli["selection"]["not_chosen"] > 0
    assert sum(1 for _ in P.parse_script(text)) == cli["samples"]


def test_fleet_chooses_in_each_input_as_the_single_file(tmp_path):
    pytest.importorskip("distributed", reason="pip install 'deferstitch[fleet]'")
    a, _ = capture("syswide")
    b, _ = capture("b_per_task")
    out, rep = tmp_path / "f.folded", tmp_path / "r.json"
    p = run_cli("fleet", a, b, "--no-symbols", "--workers", 1, "--comm", "workload_b", "--time", "0%-50%",
                "-o", out, "--report", rep)
    assert p.returncode == 0, p.stderr.decode()
    singles = [json.loads(run_cli("report", "--json", f, "--comm", "workload_b", "--time", "0%-50%").stdout)
               for f in (a, b)]
    assert json.loads(rep.read_text())["totals"]["samples"] == sum(d["samples"] for d in singles) > 0
    assert sum(int(l.rsplit(" ", 1)[1]) for l in out.read_text().splitlines()) == \
        sum(d["samples"] for d in singles)
    p = run_cli("fleet", a, "--time", "x")
    assert p.returncode == 2 and b"Invalid time string" in p.stderr
