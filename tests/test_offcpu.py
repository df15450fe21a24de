"""Off-CPU time on real captures (tests/data/offcpu, its README: a program whose threads block in
known places and log each wait with CLOCK_MONOTONIC, recorded per task, per task with
--switch-events, -a beside cpu-clock, and with a global -F): each blocking path's time against
the program's own measure and against the intervals perf's own text shows; every output."""
import collections
import json
import lzma
import re
import shutil

import pytest

from conftest import DATA, run_cli
from google_pprof import read_profile

OFFCPU = DATA / "offcpu"
SCENARIOS = ("per_task", "per_task_switch", "syswide")
FILES = {"per_task": "per-task.data", "per_task_switch": "per-task.data", "syswide": "syswide.data",
         "global_freq": "global-freq.data"}
# the program's own function on each blocking path -> the kind its log gives that wait
KIND = {"sleep_short": "sleep_short", "sleep_long": "sleep_long", "wait_pipe": "pipe",
        "take_lock": "lock", "hold_lock": "hold", "feed_sleep": "feed", "main_sleep": "main"}
LONG = ("sleep_long", "pipe", "lock", "hold", "feed", "main")     # waits of 5 ms or more


@pytest.fixture(scope="module")
def cap(tmp_path_factory):
    """Each capture unpacked, and the symbol options (the workload at /opt/rig, the guest's kallsyms)."""
    work = tmp_path_factory.mktemp("offcpu")
    (work / "symfs" / "opt" / "rig").mkdir(parents=True)
    (work / "symfs" / "opt" / "rig" / "workload_offcpu").write_bytes(
        lzma.decompress((OFFCPU / "symfs" / "opt" / "rig" / "workload_offcpu.xz").read_bytes()))
    paths = {}
    for scen, name in FILES.items():
        paths[scen] = work / ("%s.data" % scen)
        paths[scen].write_bytes(lzma.decompress((OFFCPU / scen / (name + ".xz")).read_bytes()))
    return paths, ["--symfs", str(work / "symfs"), "--kallsyms", str(OFFCPU / "kallsyms.xz")], work


def ds(*args):
    p = run_cli(*args)
    assert p.returncode == 0, p.stderr.decode()
    return p


def folded(text):
    out = {}
    for line in text.splitlines():
        stack, n = line.rsplit(" ", 1)
        out[stack] = int(n)
    return out


def by_kind(stacks):
    """ns per blocking path: the program's own function on it."""
    out = collections.Counter()
    for stack, n in stacks.items():
        for fn in stack.split(";"):
            if fn in KIND:
                out[KIND[fn]] += n
                break
    return out


def program(scen):
    """ns per kind of the waits the program logged."""
    out = collections.Counter()
    for line in (OFFCPU / scen / "waits.txt").read_text().splitlines():
        p = line.split()
        if not line.startswith("#") and len(p) == 4:
            out[p[1]] += int(p[3]) - int(p[2])
    return out


@pytest.mark.parametrize("scen", SCENARIOS)
def test_each_blocking_path_is_the_programs_own_measure(scen, cap):
    paths, sym, _ = cap
    ours = by_kind(folded(ds("folded", "--off-cpu", paths[scen], *sym).stdout.decode()))
    prog = program(scen)
    for kind in LONG:
        assert ours[kind] == pytest.approx(prog[kind], rel=0.05), (kind, ours[kind], prog[kind])


def perf_intervals(scen):
    """From perf 7.2's own script text (time-ordered here: perf prints a sample when its stack
    comes): each blocking switch-out of a task to the next sched_switch naming it next_pid,
    per blocking path; the waits that never see one are left out."""
    text = lzma.decompress((OFFCPU / scen / "script.txt.xz").read_bytes()).decode()
    head = re.compile(r"^\S.*?\s(\d+)\.(\d{6}):\s+sched:sched_switch: .*:(\d+) \[\d+\] (\S+) ==> .*:(\d+) \[\d+\]$")
    events = []
    for block in text.split("\n\n"):
        lines = block.strip("\n").splitlines()
        m = head.match(lines[0]) if lines else None
        if m:
            fns = [ln.split()[1].split("+")[0] for ln in lines[1:]]
            kind = next((KIND[f] for f in fns if f in KIND), None)
            events.append((int(m.group(1)) * 10**6 + int(m.group(2)), int(m.group(3)), m.group(4),
                           int(m.group(5)), kind))
    events.sort(key=lambda e: e[0])
    out, open_ = collections.Counter(), {}
    for us, prev, state, nxt, kind in events:
        if state != "R" and prev > 0:
            open_[prev] = (us, kind)
        if nxt in open_:
            start, k = open_.pop(nxt)
            out[k] += (us - start) * 1000
    return out


def test_each_blocking_path_is_the_intervals_perf_shows_where_every_switch_in_is_seen(cap):
    paths, sym, _ = cap
    ours = by_kind(folded(ds("folded", "--off-cpu", paths["syswide"], *sym).stdout.decode()))
    theirs = perf_intervals("syswide")
    for kind in LONG + ("sleep_short",):
        assert ours[kind] == pytest.approx(theirs[kind], rel=0.02), (kind, ours[kind], theirs[kind])


@pytest.mark.parametrize("scen", SCENARIOS + ("global_freq",))
def test_every_switch_out_is_counted_once(scen, cap):
    paths, _sym, _ = cap
    doc = json.loads(ds("report", "--json", "--off-cpu", paths[scen]).stdout)
    oc = doc["off_cpu"]
    perf_says = lzma.decompress((OFFCPU / scen / "script.txt.xz").read_bytes()).decode().count(" sched:sched_switch: ")
    assert oc["switch_outs"] + oc["unreadable"] == perf_says
    assert oc["switch_outs"] == sum(oc["ended"].values()) + sum(oc["never_ended"].values()) \
        + oc["preempted_not_counted"]
    assert sum(sum(t["waits"].values()) for t in oc["threads"]) == oc["switch_outs"] - oc["preempted_not_counted"]


def test_how_waits_end_follows_what_the_file_holds(cap):
    paths, _sym, _ = cap
    ended = {scen: json.loads(ds("report", "--json", "--off-cpu", paths[scen]).stdout)["off_cpu"]["ended"]
             for scen in SCENARIOS}
    # per task: the stack's time, or the switch-out of another thread of the program naming it
    assert ended["per_task"].get("user-stack", 0) > 10 * ended["per_task"].get("task-seen", 0)
    assert "switch-in" not in ended["per_task"]
    # --switch-events: every wait ends at a switch-in (a record, or a switch-out naming it)
    assert set(ended["per_task_switch"]) == {"switch-in", "next-pid"}
    # -a: every switch-in is a sched_switch of its CPU
    assert set(ended["syswide"]) == {"next-pid"}


def test_a_dying_threads_last_switch_out_is_named_by_prev_comm_and_never_ends(cap):
    paths, _sym, _ = cap
    oc = json.loads(ds("report", "--json", "--off-cpu", paths["syswide"]).stdout)["off_cpu"]
    assert oc["never_ended"].get("task-gone", 0) > 0
    gone = [t for t in oc["threads"] if t["tid"] == -1]
    assert gone and gone[0]["comm"] in ("locker1", "locker2", "sleeper", "piper", "feeder", "workload_offcpu")


def test_preemptions_count_only_when_asked(cap):
    paths, sym, _ = cap
    base = json.loads(ds("report", "--json", "--off-cpu", paths["syswide"]).stdout)["off_cpu"]
    more = json.loads(ds("report", "--json", "--off-cpu", "--preempted", paths["syswide"]).stdout)["off_cpu"]
    assert base["preempted_not_counted"] > 0 and more["preempted_not_counted"] == 0
    states = {st for t in more["threads"] for st in t["ns_by_state"]}
    assert "R" in states and "R" not in {st for t in base["threads"] for st in t["ns_by_state"]}
    a = sum(folded(ds("folded", "--off-cpu", paths["syswide"], *sym).stdout.decode()).values())
    b = sum(folded(ds("folded", "--off-cpu", "--preempted", paths["syswide"], *sym).stdout.decode()).values())
    assert b > a


def test_a_frequency_sampled_tracepoint_says_it_gives_estimates(cap):
    paths, sym, _ = cap
    p = ds("folded", "--off-cpu", paths["global_freq"], *sym)
    err = p.stderr.decode()
    assert err.count("\n") == 1 and "sampled by frequency" in err
    assert "-e sched:sched_switch -e cpu-clock/freq=999/" in err
    assert "ESTIMATES" in ds("report", "--off-cpu", paths["global_freq"]).stdout.decode()
    assert "(estimates: sched_switch sampled by frequency)</title>" in \
        ds("flamegraph", "--off-cpu", paths["global_freq"], *sym).stdout.decode()
    assert ds("folded", "--off-cpu", paths["per_task"], *sym).stderr == b""


def test_a_file_without_sched_switch_is_one_line_and_exit_2(cap):
    p = run_cli("folded", "--off-cpu", DATA.parent.parent / "examples" / "compressed.data")
    assert p.returncode == 2
    err = p.stderr.decode()
    assert err.count("\n") == 1 and "sched:sched_switch" in err and "Traceback" not in err


def test_one_event_of_several(cap):
    paths, sym, _ = cap
    mixed = ds("folded", paths["syswide"], *sym)
    assert "--event" in mixed.stderr.decode()
    clock = folded(ds("folded", "--event", "cpu-clock", paths["syswide"], *sym).stdout.decode())
    switches = folded(ds("folded", "--event", "sched:sched_switch", paths["syswide"], *sym).stdout.decode())
    everything = folded(mixed.stdout.decode())
    text = lzma.decompress((OFFCPU / "syswide" / "script.txt.xz").read_bytes()).decode()
    assert sum(clock.values()) == len(re.findall(r" cpu-clock/freq=999/: ", text))
    assert sum(switches.values()) == text.count(" sched:sched_switch: ")
    assert sum(everything.values()) == sum(clock.values()) + sum(switches.values())
    p = run_cli("folded", "--event", "cycles", paths["syswide"])
    assert p.returncode == 2 and b"cpu-clock" in p.stderr


def test_the_wall_clock_view_puts_both_under_their_frames(cap):
    paths, sym, _ = cap
    wall = folded(ds("folded", "--wall-clock", paths["syswide"], *sym).stdout.decode())
    off = folded(ds("folded", "--off-cpu", paths["syswide"], *sym).stdout.decode())
    on = {k: v for k, v in wall.items() if k.split(";")[1] == "[on-cpu]"}
    offs = {k.replace(";[off-cpu]", "", 1): v for k, v in wall.items() if k.split(";")[1] == "[off-cpu]"}
    assert len(on) + len(offs) == len(wall)
    assert offs == off
    text = lzma.decompress((OFFCPU / "syswide" / "script.txt.xz").read_bytes()).decode()
    periods = [int(n) for n in re.findall(r"\s(\d+) cpu-clock/freq=999/: ", text)]
    assert sum(on.values()) == sum(periods)
    p = run_cli("folded", "--wall-clock", paths["per_task"])
    assert p.returncode == 2 and b"cpu-clock" in p.stderr


def test_flame_graph_export_and_fleet_speak_time(cap):
    paths, sym, work = cap
    off = folded(ds("folded", "--off-cpu", paths["per_task"], *sym).stdout.decode())
    html = ds("flamegraph", "--off-cpu", paths["per_task"], *sym).stdout.decode()
    assert "<title>Off-CPU Time Flame Graph: per_task.data</title>" in html
    assert 'data-kind="wait-user"' in html and 'data-kind="wait-kernel"' in html
    assert re.search(r"wait_pipe \(1\.\d\d s, ", html)          # time on hover, not a count
    assert 'data-total="%d"' % sum(off.values()) in html
    ss = json.loads(ds("export", "--format", "speedscope", "--off-cpu", paths["per_task"], *sym).stdout)
    assert {p["unit"] for p in ss["profiles"]} == {"nanoseconds"}
    assert sum(sum(p["weights"]) for p in ss["profiles"]) == sum(off.values())
    out = work / "off.pb.gz"
    ds("export", "--format", "pprof", "--off-cpu", paths["per_task"], *sym, "-o", out)
    prof = read_profile(out)
    st = [(prof.string_table[t.type], prof.string_table[t.unit]) for t in prof.sample_type]
    assert st == [("waits", "count"), ("off-cpu", "nanoseconds")]
    assert sum(s.value[1] for s in prof.sample) == sum(off.values())


def test_fleet_sums_off_cpu_time_of_its_inputs(cap):
    pytest.importorskip("dask.distributed", reason="dask not installed: pip install 'deferstitch[fleet]'")
    paths, sym, work = cap
    one = folded(ds("folded", "--off-cpu", paths["per_task"], *sym).stdout.decode())
    twice = work / "twice"
    twice.mkdir(exist_ok=True)
    for n in (1, 2):
        shutil.copy(paths["per_task"], twice / ("%d.data" % n))
    got = folded(ds("fleet", "--off-cpu", "--workers", "1", twice, *sym).stdout.decode())
    assert got == {k: 2 * v for k, v in one.items()}


@pytest.mark.parametrize("scen", SCENARIOS)
def test_a_wait_keeps_its_threads_name_though_it_ends_after_the_thread_exited(scen, cap):
    paths, _sym, _ = cap
    comms = {line.split(";", 1)[0] for line in ds("folded", "--off-cpu", "--no-symbols", paths[scen]).stdout.decode().splitlines()}
    assert {"sleeper", "piper", "feeder", "locker1", "locker2"} <= comms
    assert not [c for c in comms if c.startswith(":")]          # perf's name of an exited thread


def lossy(src, dst, every=5):
    """``src`` with every ``every``-th CALLCHAIN_DEFERRED left out, as a full ring buffer would."""
    from deferstitch.abi import consts as C
    from deferstitch.perfdata.reader import PerfData
    from deferstitch.perfdata.writer import PerfWriter
    n = 0
    with PerfData.open(str(src)) as perf, open(dst, "w+b") as f:
        w = PerfWriter(f, perf.endian)
        for rec in perf.records():
            if rec.type == C.PERF_RECORD_CALLCHAIN_DEFERRED:
                n += 1
                if n % every == 0:
                    continue
            w.write(rec)
        w.close(perf.evlist.entries, dict(perf.features))
    return dst


def test_a_wait_whose_stack_is_not_proven_is_counted_never_guessed(cap):
    """Stacks lost (a full buffer) or without cookies: each such wait keeps its kernel half and
    its reason; the counts still add up."""
    from nocookie import strip_cookies
    paths, sym, work = cap
    for path in (lossy(paths["per_task"], work / "lossy.data"), work / "nocookie.data"):
        if path.name == "nocookie.data":
            strip_cookies(paths["per_task"], path)
        doc = json.loads(ds("report", "--json", "--off-cpu", path).stdout)
        oc = doc["off_cpu"]
        assert oc["switch_outs"] == doc["samples"]
        assert oc["switch_outs"] == sum(oc["ended"].values()) + sum(oc["never_ended"].values()) \
            + oc["preempted_not_counted"]
        if path.name == "lossy.data":
            assert doc["unmatched"].get("deferred-lost", 0) > 50
            html = ds("flamegraph", "--off-cpu", path, *sym).stdout.decode()
            assert "[user stack lost: deferred-lost]" in html
            lines = folded(ds("folded", "--off-cpu", path, *sym).stdout.decode())
            kernel_only = [k for k in lines if not any(f in KIND for f in k.split(";"))
                           and "[libc.so.6]" not in k]
            assert kernel_only


def test_the_wall_clock_view_in_pprof_is_wall_time(cap):
    paths, sym, work = cap
    out = work / "wall.pb.gz"
    ds("export", "--format", "pprof", "--wall-clock", paths["syswide"], *sym, "-o", out)
    prof = read_profile(out)
    st = [(prof.string_table[t.type], prof.string_table[t.unit]) for t in prof.sample_type]
    assert st == [("samples", "count"), ("wall", "nanoseconds")]
    wall = folded(ds("folded", "--wall-clock", paths["syswide"], *sym).stdout.decode())
    assert sum(s.value[1] for s in prof.sample) == sum(wall.values())
    names = {prof.string_table[f.name] for f in prof.function}
    assert {"[on-cpu]", "[off-cpu]"} <= names


def test_replicated_syswide_is_x1_times_k(cap):
    """bench/build.py replicate shifts the pids in sched_switch's raw data as in the sample
    fields (SchedSwitch.pid_fields, by the file's format): copy k's switch-ins name copy k's
    tasks, so x3's off-CPU profile is x1's with every weight times 3."""
    import subprocess
    import sys
    from deferstitch.perfdata.reader import PerfData
    from deferstitch.perfdata.sched import SchedSwitch
    paths, _named, work = cap
    with PerfData.open(str(paths["syswide"])) as perf:
        sw = [SchedSwitch.of(perf, e) for e in perf.evlist.entries]
        assert [s.pid_fields() for s in sw if s] == [((4, 4), (24, 4), (56, 4))]  # common_pid, prev_pid, next_pid
    out = work / "syswide-x3.data"
    root = OFFCPU.parents[2]
    subprocess.run([sys.executable, str(root / "bench" / "build.py"), "replicate", str(paths["syswide"]), "3",
                    str(out)], check=True, capture_output=True)
    one = folded(ds("folded", "--off-cpu", "-q", "--no-symbols", str(paths["syswide"])).stdout.decode())
    three = folded(ds("folded", "--off-cpu", "-q", "--no-symbols", str(out)).stdout.decode())
    assert three == {stack: 3 * n for stack, n in one.items()}
    ended = [json.loads(ds("report", "--json", "--off-cpu", p).stdout)["off_cpu"]["ended"]
             for p in (paths["syswide"], out)]
    assert ended[1] == {how: 3 * n for how, n in ended[0].items()}      # every wait by a switch-in


def test_a_pipe_gives_what_the_file_gives(cap):
    """perf record -o - carries its attrs and the tracepoint formats as records: the off-CPU
    view reads them ahead, before the run (a pipe written as perf writes one: bench/build.py)."""
    import subprocess
    import sys
    paths, _sym, work = cap
    pipe = work / "per_task.pipe.data"
    subprocess.run([sys.executable, str(OFFCPU.parents[2] / "bench" / "build.py"), "replicate-pipe",
                    str(paths["per_task"]), "1", str(pipe)], check=True, capture_output=True)
    with open(pipe, "rb") as f:
        got = run_cli("folded", "--off-cpu", "--no-symbols", "-", stdin=f)
    assert got.returncode == 0, got.stderr.decode()
    assert got.stdout == ds("folded", "--off-cpu", "--no-symbols", paths["per_task"]).stdout


@pytest.mark.parametrize("cmd", ["folded", "report", "flamegraph", "export", "fleet"])
def test_preempted_without_off_cpu_is_a_usage_error(cmd):
    fmt = ["--format", "pprof"] if cmd == "export" else []
    p = run_cli(cmd, "--preempted", *fmt, DATA.parent.parent / "examples" / "compressed.data")
    assert p.returncode == 2
    err = p.stderr.decode()
    assert err.startswith("usage: deferstitch %s" % cmd) and "--off-cpu" in err.splitlines()[-2]
