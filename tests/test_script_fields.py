"""`deferstitch script -F` against perf 7.2's own `perf script -F` (output/script_fields.py,
output/trace_text.py): the same fields in the same layout, sample for sample and line for line,
on the real captures; the same refusals in perf's words; the same bytes on the C engine.

The expected side is perf 7.2's text: kept in the captures (`script-fields.txt`: `-F
comm,tid,time,ip,sym,dso`; offcpu's `script.txt`: perf's default for sched_switch, which is
`-F comm,tid,cpu,time,event,trace,ip,sym,symoff,dso`), or perf 7.2 run here (tools/sid-perf)
with the same -F on the same file. What may differ, and only so: perf holds a merged sample back
until its deferred stack comes, so the order of samples of different tasks (samples are matched
by their header line); a sample perf left unmerged (its stack was written before it: perf's last
line is its cookie after kernel frames, ours has the user frames); a [vdso] frame perf names
from an image we do not have (captures/README)."""
import lzma
import os
import shutil
import subprocess
from collections import Counter

import pytest

from conftest import CAPTURES, DATA, RECORDED_LD, RECORDED_LIBC, capture, need_engine, need_sid_perf, \
    recorded_lib, run_cli

OFFCPU = DATA / "offcpu"
TRACEPOINTS = DATA / "tracepoints"
TRACEPOINTS2 = DATA / "tracepoints2"
KERNEL = 0xffff800000000000


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A work dir holding the captures used here, the guests' kallsyms and a symfs with the
    workloads at /opt/rig and the recorded libc and ld.so."""
    w = tmp_path_factory.mktemp("fields")
    rig = w / "symfs" / "opt" / "rig"
    rig.mkdir(parents=True)
    for name in ("workload_a", "workload_b", "workload_c"):
        shutil.copy(CAPTURES / "bin" / name, rig / name)
    (rig / "workload_offcpu").write_bytes(
        lzma.decompress((OFFCPU / "symfs" / "opt" / "rig" / "workload_offcpu.xz").read_bytes()))
    libs = w / "symfs" / RECORDED_LIBC.rsplit("/", 1)[0].lstrip("/")
    libs.mkdir(parents=True)
    for lib in (RECORDED_LIBC, RECORDED_LD):
        recorded_lib(libs, lib)
    for scen in ("a_per_task", "syswide", "pipe"):
        path, _ = capture(scen)
        shutil.copy(path, w / path.name)
    tp = w / "tpsymfs" / "opt" / "rig"          # tests/data/tracepoints ran its own build of workload_b
    tp.mkdir(parents=True)
    (tp / "workload_b").write_bytes(lzma.decompress((TRACEPOINTS / "workload_b.xz").read_bytes()))
    (w / "tpsymfs" / "usr").symlink_to(w / "symfs" / "usr")
    (w / "tp.data").write_bytes(lzma.decompress((TRACEPOINTS / "tp.data.xz").read_bytes()))
    for name in ("tp2.data", "tp3.data", "tp4.data", "tp5.data"):
        (w / name).write_bytes(lzma.decompress((TRACEPOINTS2 / (name + ".xz")).read_bytes()))
    for scen, name in (("per_task", "per-task.data"), ("syswide", "syswide.data")):
        (w / ("offcpu-" + name)).write_bytes(lzma.decompress((OFFCPU / scen / (name + ".xz")).read_bytes()))
    (w / "kallsyms").write_bytes(lzma.decompress((CAPTURES / "kallsyms.xz").read_bytes()))
    (w / "offcpu-kallsyms").write_bytes(lzma.decompress((OFFCPU / "kallsyms.xz").read_bytes()))
    return w


def kallsyms(name):
    return "offcpu-kallsyms" if name.startswith("offcpu-") else "kallsyms"


def symfs(work, name):
    return work / ("tpsymfs" if name == "tp.data" else "symfs")


def ours(work, name, *args, accel=None):
    env = dict(os.environ, DEFERSTITCH_ACCEL=accel) if accel is not None else None
    r = run_cli("script", work / name, "-q", "--kallsyms", work / kallsyms(name),
                "--symfs", symfs(work, name), *args, env=env)
    return r.returncode, r.stdout.decode(), r.stderr.decode()


def perf72(work, name, *args):
    """perf 7.2's `perf script` on the file, with the guest's binaries at /opt/rig."""
    tool = need_sid_perf()
    p = subprocess.run([tool, "script", "--kallsyms=./" + kallsyms(name), "-i", name, *args],
                       capture_output=True, text=True, cwd=work, timeout=600,
                       env=dict(os.environ, SID_BINDS="%s:/opt/rig" % (symfs(work, name) / "opt" / "rig")))
    return p.returncode, p.stdout, p.stderr


def samples(text):
    """{(header line, n): [its frame lines]}: a sample is a line not starting with a tab, the
    tab lines after it its frames, a blank line ends it; n counts equal header lines."""
    out, cur = {}, None
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("\t"):
            assert cur is not None, line
            out[cur].append(line)
            continue
        if not line and (cur is not None or not lines[i + 1:i + 2] or not lines[i + 1].startswith("\t")):
            cur = None          # the end of a sample (an empty line before frames: a header of no field)
            continue
        n = 0
        while (line, n) in out:
            n += 1
        cur = (line, n)
        out[cur] = []
    return out


def _ip(line):
    return int(line.split()[0], 16)


def compare(mine, theirs):
    """Counter of how each of perf's samples compares with ours (see the module's docstring);
    fails on anything else."""
    mine, theirs = samples(mine), samples(theirs)
    assert mine.keys() == theirs.keys(), sorted(mine.keys() ^ theirs.keys())[:5]
    seen = Counter()
    for key, pf in theirs.items():
        of = mine[key]
        if of == pf:
            seen["same"] += 1
            continue
        if pf and pf[:-1] == of[:len(pf) - 1] and _ip(pf[-1]) < KERNEL \
                and all(_ip(l) >= KERNEL for l in pf[:-1]):
            # perf's last line is the cookie: a sample it left unmerged (ours has its user
            # frames) or whose stack never came (ours is unmatched: its kernel frames alone)
            seen["perf-cookie" if len(of) == len(pf) - 1 else "perf-left-unmerged"] += 1
            continue
        assert len(pf) == len(of), (key, pf, of)
        for p, o in zip(pf, of):
            if p != o:
                # a [vdso] frame perf names and we cannot: same ip, ours [unknown]
                assert _ip(p) == _ip(o) and "[unknown]" in o and ("vdso" in p or "vdso" in o), (key, p, o)
                seen["vdso"] += 1
        seen["same-but-vdso"] += 1
    return seen


def check(seen, total):
    assert sum(seen[k] for k in ("same", "perf-left-unmerged", "same-but-vdso", "perf-cookie")) == total
    assert seen["same"] >= 0.9 * total, seen
    assert seen["vdso"] <= 10, seen


@pytest.mark.parametrize("scenario", ["a_per_task", "syswide", "pipe"])
def test_comm_tid_time_ip_sym_dso_is_perfs_kept_text(work, scenario):
    """The captures' `perf script -F comm,tid,time,ip,sym,dso`, line for line."""
    path, folder = capture(scenario)
    rc, out, err = ours(work, path.name, "-F", "comm,tid,time,ip,sym,dso")
    assert rc == 0, err
    theirs = lzma.open(folder / "script-fields.txt.xz").read().decode()
    seen = compare(out, theirs)
    check(seen, len(samples(theirs)))


def test_trace_sched_switch_is_perfs_default_text(work):
    """offcpu per_task's perf script (perf's default for a tracepoint with a callchain:
    comm,tid,cpu,time,event,trace,ip,sym,symoff,dso): the sched_switch text as libtraceevent's
    plugin prints it, every sample."""
    rc, out, err = ours(work, "offcpu-per-task.data", "-F", "comm,tid,cpu,time,event,trace,ip,sym,symoff,dso")
    assert rc == 0, err
    theirs = lzma.open(OFFCPU / "per_task" / "script.txt.xz").read().decode()
    seen = compare(out, theirs)
    check(seen, len(samples(theirs)))
    states = Counter(k[0].split("] ")[-1].split(" ==>")[0] for k in samples(out))
    assert {"R", "S"} <= set(states), states            # both ways a task leaves the CPU


def test_trace_of_other_tracepoints_is_perfs_default_text(work):
    """tests/data/tracepoints: sched_wakeup and sched_wakeup_new as libtraceevent's plugin
    prints them, the others by their print fmt (__get_str, REC->field, a ? : choice,
    __print_symbolic), each sample as perf 7.2 printed it in the guest."""
    rc, out, err = ours(work, "tp.data", "-F", "comm,tid,cpu,time,event,trace,ip,sym,symoff,dso")
    assert rc == 0, err
    theirs = lzma.open(TRACEPOINTS / "script.txt.xz").read().decode()
    seen = compare(out, theirs)
    check(seen, len(samples(theirs)))
    events = Counter(k[0].split(": ")[1].split()[-1] for k in samples(out))
    assert len(events) == 9 and sum(events.values()) == 125, events    # 9 of the 10 events fired


@pytest.mark.parametrize("accel", ["1", "0"])
@pytest.mark.parametrize("name, text, nevents, nsamples", [
    ("tp2.data", "trace-fields.txt.xz", 36, 6387), ("tp3.data", "trace-fields-3.txt.xz", 62, 983),
    ("tp4.data", "trace-fields-4.txt.xz", 30, 287), ("tp5.data", "trace-fields-5.txt.xz", 3, 72)])
def test_trace_of_any_print_fmt_is_perfs_text(work, accel, name, text, nevents, nsamples):
    """tests/data/tracepoints2: 131 tracepoints of Linux 7.2 (casts, arithmetic, bit operators,
    comparisons and ? :, %p, %pS and %ps named by the kernel's symbols, __print_flags,
    __print_symbolic of numbers and of enum names, __get_str, __print_dynamic_array, an
    indexed array field, libtraceevent's kmem, hrtimer and tlb plugins, the syscalls, %#x,
    %pI4 %pI6c %pISpc of the sock, tcp and fib events, vmscan's print fmts libtraceevent fails to
    parse, printed "[FAILED TO PARSE]" and the raw fields): every
    sample's -F comm,tid,time,event,trace line as perf 7.2 printed it in the guest (perf prints
    some of them in another order: samples are compared by content, as compare() does)."""
    rc, out, err = ours(work, name, "-F", "comm,tid,time,event,trace", accel=accel)
    assert rc == 0, err
    theirs = lzma.open(TRACEPOINTS2 / text).read().decode()
    seen = compare(out, theirs)
    assert seen["same"] == len(samples(theirs)), seen
    events = Counter(k[0].split(": ")[1].strip() for k in samples(out))
    assert len(events) == nevents and sum(events.values()) == nsamples, events


def test_a_print_fmt_not_rendered_is_refused_naming_the_event():
    """timer:hrtimer_start's print fmt of Linux 7.2 (%p, %ps, casts, __print_symbolic of enum
    names) is rendered; a conversion or helper deferstitch does not follow is refused at the
    start, naming the event and the construct: never printed differently from perf."""
    from deferstitch.output.script_fields import FieldsError
    from deferstitch.output.trace_text import printer
    text = (TRACEPOINTS / "timer-hrtimer_start.format").read_bytes()
    printer("test:hrtimer_start", "test", text, "<")           # its print fmt, not the plugin
    with pytest.raises(FieldsError, match=r"^-F trace: test:hrtimer_start's print fmt has the "
                                          r"conversion %pM, which deferstitch does not render$"):
        printer("test:hrtimer_start", "test", text.replace(b"function=%ps", b"function=%pM"), "<")
    with pytest.raises(FieldsError, match=r"^-F trace: test:hrtimer_start's print fmt has the "
                                          r"function sizeof\(\), which"):
        printer("test:hrtimer_start", "test", text.replace(b"REC->was_armed", b"sizeof(REC->mode)"), "<")


# (file, -F ...): each against perf 7.2 run here on the same file
LIVE = [
    ("syswide.data", ["-F", "comm,tid,pid,time,cpu,event,ip,sym,dso,symoff,period"]),
    ("syswide.data", ["-F", "pid,time,period,event"]),
    ("per-task.data", ["-F", "ip,sym", "--ns"]),
    ("per-task.data", ["-F", "comm,tid,time,event", "--ns"]),
    ("per-task.data", ["-F", "+pid,-dso"]),
    ("per-task.data", ["-F", "sw:comm,tid,ip"]),
    ("per-task.data", ["-F", "sw:comm,cpu"]),            # typed: a field the samples lack is dropped
    ("per-task.data", ["-F", "trace:comm"]),
    ("per-task.data", ["-F", "tid,ip,dso"]),
    ("per-task.data", ["-F", "trace"]),
    ("per-task.data", ["-F", "-comm,-tid,-time,-event,-period"]),   # "-F -x": perf's -field
    ("per-task.data", ["-F", "-dso"]),
    ("per-task.data", ["-F", "comm,sym"]),              # sym without ip: nothing to name
    ("per-task.data", ["-F", "period"]),
    ("pipe.data", ["-F", "comm,tid,time"]),              # a pipe: perf adds ip and sym
    ("offcpu-per-task.data", ["-F", "comm,tid,time,event,trace"]),
    ("offcpu-per-task.data", ["-F", "comm,pid,tid,cpu,time,period,event,trace,ip,sym,symoff,dso"]),
    ("offcpu-syswide.data", ["-F", "tid,time,event,trace"]),
    ("offcpu-syswide.data", ["-F", "trace:tid,cpu,time,trace,ip,sym", "-F", "sw:tid,time,period"]),
    ("tp.data", ["-F", "tid,time,event,trace", "--ns"]),
    ("tp.data", ["-F", "trace:comm,pid,time,trace,ip,dso"]),
]


@pytest.mark.parametrize("name,args", LIVE, ids=[" ".join([n] + a) for n, a in LIVE])
def test_fields_as_perf_72_prints_them(work, name, args):
    prc, theirs, perr = perf72(work, name, *args)
    assert prc == 0, perr
    rc, out, err = ours(work, name, *args)
    assert rc == 0, err
    seen = compare(out, theirs)
    check(seen, len(samples(theirs)))


# what perf refuses, and what it says
REFUSED = [
    ("per-task.data", "comm,bogus"),          # Invalid field requested.
    ("per-task.data", "comm,-tid"),           # Cannot mix +-field with overridden fields
    ("per-task.data", ""),                    # Cannot set fields to 'none' for all event types.
    ("per-task.data", "comm,cpu"),            # the samples carry no cpu
    ("per-task.data", "ip,symoff"),           # symoff without sym
    ("per-task.data", "bogus:comm"),          # Invalid event type in field string.
    ("per-task.data", "sw:trace"),            # 'trace' not valid for software events.
]


@pytest.mark.parametrize("name,spec", REFUSED)
def test_refused_in_perfs_words(work, name, spec):
    rc, out, err = ours(work, name, "-F", spec)
    assert rc == 2 and out == "" and err.count("\n") == 1 and err.startswith("deferstitch: "), err
    prc, _pout, perr = perf72(work, name, "-F", spec)
    assert prc != 0
    said = perr.strip().split("\n")[0]
    assert said and err.rstrip("\n").endswith(": " + said), (err, perr)


def test_a_field_perf_knows_but_we_do_not_print_is_one_line(work):
    rc, out, err = ours(work, "per-task.data", "-F", "comm,srcline")
    assert rc == 2 and out == "" and err.count("\n") == 1 and "srcline" in err, err


ENGINE = ["comm,tid,pid,time,event,ip,sym,dso,symoff,period", "ip,sym", "+pid,-dso",
          "pid,time,period,event", "sw:tid,ip,dso", "tid,ip"]


@pytest.mark.parametrize("accel", ["require", "0"])
def test_same_bytes_on_both_paths(work, accel):
    """The C engine and the Python path: the same text for every field set (and the engine
    really ran: DEFERSTITCH_ACCEL=require)."""
    need_engine(accel)
    for name in ("syswide.data", "pipe.data"):
        for spec in ENGINE:
            for ns in ([], ["--ns"]):
                a = ours(work, name, "-F", spec, *ns, accel="0")
                b = ours(work, name, "-F", spec, *ns, accel=accel)
                assert a == b and a[0] == 0 and a[1], (name, spec, ns, a[2], b[2])


def test_trace_runs_on_the_python_path_with_the_same_bytes(work):
    """-F trace reads a sample's raw data, which the engine does not hand: the run takes the
    Python path (the same bytes either way)."""
    a = ours(work, "offcpu-syswide.data", "-F", "tid,time,event,trace", accel="0")
    b = ours(work, "offcpu-syswide.data", "-F", "tid,time,event,trace", accel="1")
    assert a == b and a[0] == 0 and "==>" in a[1]
