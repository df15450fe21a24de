"""Times a trace.dat's options shift (tracecmd/clock.py), read by us as trace-cmd 3.x shows them:
OFFSET (--ts-offset), DATE (--date), TSC2NSEC and a guest's TIME_SHIFT, alone and together, on
a file with instances (which take no TIME_SHIFT). Every record's time, CPU and offset, in order,
equal libtracecmd's (tests/libtracecmd.py, the oracle), on both walkers' paths."""
import os
import struct

import pytest
import tracecmd_synth as S
from conftest import run_cli
from tracecmd_text import need_libtracecmd

DATE, OFFSET, TIME_SHIFT, TSC2NSEC = 1, 7, 12, 14       # enum tracecmd_option_id


def time_shift(flags, cpus, fractions=True):
    """A TIME_SHIFT option: trace id, flags, CPU count, per CPU {count, times, offsets,
    scalings}, then per CPU the fraction bits (trace-input.c tsync_cpu_offsets_load)."""
    out = struct.pack("<qii", 0x1234, flags, len(cpus))
    for rows in cpus:
        out += struct.pack("<i", len(rows))
        for k in range(3):
            out += struct.pack("<%dq" % len(rows), *[r[k] for r in rows])
    if fractions:
        for rows in cpus:
            out += struct.pack("<%dq" % len(rows), *[r[3] for r in rows])
    return out


T, SEC = S.T0, 1000 * S.MS
CASES = {
    "offset": [(OFFSET, b"1000000000\0")],
    "offset-hex-negative": [(OFFSET, b"  -0x1000 junk\0")],
    "date": [(DATE, b"0x5f5e100\0")],
    "date-and-two-offsets": [(DATE, b"12345\0"), (OFFSET, b"77\0"), (OFFSET, b"-5\0")],
    "tsc2nsec": [(TSC2NSEC, struct.pack("<iiQ", 0x2aaaaaab, 29, 123))],
    "tsc2nsec-and-offset": [(TSC2NSEC, struct.pack("<iiQ", 3 << 20, 20, 0)), (OFFSET, b"99\0")],
    # CPU 1 runs 30 ms behind CPU 0 on the host: the order across CPUs changes
    "time-shift-interpolated": [(TIME_SHIFT, time_shift(1, [
        [(T, 10, 1, 0), (T + 200 * S.MS, 5000, 1, 0), (T + 100 * S.MS, 900, 1, 0)],
        [(T - S.MS, 30 * S.MS, 1, 0), (T + SEC, 31 * S.MS, 1, 0)]]))],
    "time-shift-stepped-scaled": [(TIME_SHIFT, time_shift(0, [
        [(T, -7, 3, 1), (T + S.MS, 11, 3, 1), (T + S.MS, 12, 3, 1)],
        [(T, 40 * S.MS, 1, 0)]]))],
    "time-shift-no-fractions-and-offset": [(TIME_SHIFT, time_shift(1, [
        [(T, 10, 1, 0), (T + SEC, 20, 1, 0)]], fractions=False)), (OFFSET, b"5\0")],
}


def oracle(path):
    """{buffer: [(ts, cpu, offset)]} as libtracecmd reads them."""
    import libtracecmd
    h = libtracecmd.Handle(str(path))
    out = {"top": [r[:2] + (r[5],) for r in h.records()]}
    for i, name in enumerate(h.instance_names()):
        child = libtracecmd.Handle(str(path), parent=h, index=i)
        out[name] = [r[:2] + (r[5],) for r in child.records()]
        child.close()
    h.close()
    return out


def ours(path):
    from deferstitch.tracecmd.bridge import Trace
    with Trace(path) as t:
        return {name: [r[:2] + (r[5],) for r in h.iter_records()]
                for name, h in t.handles.items()}


@pytest.mark.parametrize("case", sorted(CASES))
def test_shifted_times_are_trace_cmds(case, tmp_path, monkeypatch):
    need_libtracecmd()
    plain = S.instances(tmp_path / "plain.dat")
    td = S.instances(None, build=True)
    for oid, data in CASES[case]:
        td.options.append((oid, data))
    shifted = td.write(tmp_path / "shifted.dat")
    theirs = oracle(shifted)
    assert theirs != oracle(plain)                  # the case shifts something
    for accel in ("1", "0"):
        monkeypatch.setenv("DEFERSTITCH_ACCEL", accel)
        assert ours(shifted) == theirs, accel
    p = {a: run_cli("trace", "script", shifted, env={**os.environ, "DEFERSTITCH_ACCEL": a})
         for a in ("1", "0")}
    assert p["1"].returncode == 0 and p["1"].stdout == p["0"].stdout, p["1"].stderr


def test_the_cpus_order_follows_the_shifted_times(tmp_path):
    """With CPU 1 moved 30 ms later, its records come after CPU 0's of the same raw time."""
    td = S.instances(None, build=True)
    td.options += CASES["time-shift-interpolated"]
    got = ours(td.write(tmp_path / "s.dat"))["top"]
    assert [ts for ts, _c, _o in got] == sorted(ts for ts, _c, _o in got)
    plain = ours(S.instances(tmp_path / "p.dat"))["top"]
    assert [c for _t, c, _o in got] != [c for _t, c, _o in plain]


@pytest.mark.parametrize("data, why", [
    (time_shift(1, [[]]), "no sample for CPU 0"),
    (time_shift(1, [[(1, 2, 3, 0)]])[:-12], "ends inside its table"),
    (time_shift(0, [[(1, 2, 1, 64)]]), "fraction of 64 bits"),
])
def test_a_time_shift_trace_cmd_cannot_apply_is_one_line(data, why, tmp_path):
    td = S.deferred(None, build=True)
    td.options.append((TIME_SHIFT, data))
    path = td.write(tmp_path / "bad.dat")
    p = run_cli("trace", "report", path)
    err = p.stderr.decode()
    assert p.returncode == 2 and why in err and str(path) in err and err.count("\n") == 1, err


def test_latency_data_is_refused_in_one_line(tmp_path):
    raw = bytearray(S.deferred(tmp_path / "d.dat").read_bytes())
    at = raw.index(b"flyrecord\0")
    raw[at:at + 10] = b"latency  \0"
    path = tmp_path / "latency.dat"
    path.write_bytes(bytes(raw))
    p = run_cli("trace", "folded", path)
    err = p.stderr.decode()
    assert p.returncode == 2 and "latency-format data" in err and "offset %#x" % at in err, err
    assert err.count("\n") == 1 and p.stdout == b""


def test_strtoll_is_cs():
    from deferstitch.tracecmd.clock import strtoll
    assert [strtoll(s) for s in (b"12", b" -0x1f", b"017", b"0x", b"+9z", b"", b"9" * 30 + b"\0",
                                 b"-" + b"9" * 30)] == [12, -31, 15, 0, 9, 0, (1 << 63) - 1, -(1 << 63)]
