"""Inputs built to hurt: absurd counts and sizes, and ten million samples that never resolve.

Each must give one line naming the byte offset and exit status 2 (or, for the pending flood, a
conserved report in bounded memory), never a traceback, a hang or a huge allocation.

    DEFERSTITCH_PENDING_SAMPLES=10000000 python3 -m pytest -q tests/test_pathological.py
        the flood at full size (default 10 000 000; CI may set fewer, see .ci)
"""
import json
import os
import struct
import subprocess
import sys
import threading

import pytest

from conftest import ROOT, capture, run_cli
from synth import K, Synth, make_attr
from deferstitch.abi import consts as C
from deferstitch.perfdata.header import pack_pipe_header
from deferstitch.perfdata.reader import PerfData

PENDING = int(os.environ.get("DEFERSTITCH_PENDING_SAMPLES", "10000000"))


def _good(tmp_path, endian="<"):
    s = Synth(endian)
    for t in range(10):
        s.sample(7, 100 + t, cookie=1)
    s.deferred(7, 200, 1, [0x401000, 0x401010])
    s.sample(7, 300, cookie=2)
    path = s.save(tmp_path / "good.data")
    with PerfData.open(str(path)) as p:
        recs = [(r.offset, r.type) for r in p.records()]
    return bytearray(path.read_bytes()), recs


def _expect_one_line(tmp_path, data, offset, *words, cmds=("report", "stitch", "folded", "info")):
    bad = tmp_path / "bad.data"
    bad.write_bytes(bytes(data))
    for cmd in cmds:
        r = run_cli(cmd, bad, *([] if cmd == "info" else ["-q"]),
                    *(["-o", tmp_path / "o.data"] if cmd == "stitch" else []), timeout=60)
        assert r.returncode == 2, (cmd, r.returncode, r.stderr)
        err = r.stderr.decode()
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert "offset %#x" % offset in err, (cmd, err)
        for w in words:
            assert w in err, (cmd, err)


@pytest.mark.parametrize("endian", ["<", ">"])
def test_callchain_nr_2_pow_32(tmp_path, endian):
    data, recs = _good(tmp_path, endian)
    off = [o for o, t in recs if t == C.PERF_RECORD_SAMPLE][3]
    with PerfData.open(str(tmp_path / "good.data")) as p:      # u64 nr after IP TID TIME PERIOD
        at = off + p.evlist.first.layout.callchain_offset
    struct.pack_into(endian + "Q", data, at, 1 << 32)
    _expect_one_line(tmp_path, data, off, "callchain nr=4294967296 exceeds record size",
                     cmds=("report", "stitch", "folded", "script"))


def test_deferred_nr_2_pow_32(tmp_path):
    data, recs = _good(tmp_path)
    off = [o for o, t in recs if t == C.PERF_RECORD_CALLCHAIN_DEFERRED][0]
    struct.pack_into("<Q", data, off + 16, 1 << 32)
    _expect_one_line(tmp_path, data, off, "nr=4294967296", cmds=("report", "stitch", "folded"))


def test_callchain_nr_2_pow_32_in_a_real_capture(tmp_path):
    path, _ = capture("a_per_task")
    data = bytearray(path.read_bytes())
    with PerfData.open(str(path)) as p:
        for r in p.records():
            if r.type == C.PERF_RECORD_SAMPLE:
                ent = p.evlist.for_sample(r.data)
                at = r.offset + ent.layout.callchain_offset
                break
    struct.pack_into("<Q", data, at, 1 << 32)
    _expect_one_line(tmp_path, data, r.offset, "nr=4294967296", cmds=("report", "stitch"))


@pytest.mark.parametrize("size", [0, 7])
def test_record_size_smaller_than_its_header(tmp_path, size):
    data, recs = _good(tmp_path)
    off = recs[4][0]
    struct.pack_into("<H", data, off + 6, size)
    _expect_one_line(tmp_path, data, off, "record size %d" % size)


def test_record_size_65535_past_the_end(tmp_path):
    data, recs = _good(tmp_path)
    off = recs[-1][0]                   # the last record claims 64 KiB; the data ends first
    struct.pack_into("<H", data, off + 6, 65535)
    _expect_one_line(tmp_path, data, off, "65535 bytes")


def test_record_size_65535_past_eof_in_a_pipe(tmp_path):
    path, _ = capture("pipe")
    raw = path.read_bytes()
    with PerfData.open(str(path)) as p:
        last = [r.offset for r in p.records()][-1]
    data = bytearray(raw)
    struct.pack_into("<H", data, last + 6, 65535)
    _expect_one_line(tmp_path, data, last, "65535 bytes", cmds=("report", "stitch", "info"))
    with open(tmp_path / "bad.data", "rb") as f:       # the same through stdin
        r = run_cli("report", "-", stdin=f, timeout=60)
    assert r.returncode == 2 and ("offset %#x" % last).encode() in r.stderr


# -- ten million pending samples ---------------------------------------------------------
TIDS = 1000
ROUND = 10_000


def pending_flood(f, n, endian="<"):
    """A pipe-mode perf.data on ``f``: n samples in the kernel whose stacks never come (no
    CALLCHAIN_DEFERRED at all), TIDS threads, a FINISHED_ROUND every ROUND samples. Written in
    chunks: memory stays flat however large n is."""
    st = C.PERF_SAMPLE_TID | C.PERF_SAMPLE_TIME | C.PERF_SAMPLE_CALLCHAIN
    attr = make_attr(endian, sample_type=st)
    body = attr.raw + struct.pack(endian + "Q", 100)
    f.write(pack_pipe_header(endian))
    f.write(struct.pack(endian + "IHH", C.PERF_RECORD_HEADER_ATTR, 0, 8 + len(body)) + body)
    rec = struct.Struct(endian + "IHHiiQQQQQQ")     # header, pid/tid, time, nr, 4 ips
    size = rec.size
    fr = struct.pack(endian + "IHH", C.PERF_RECORD_FINISHED_ROUND, 0, 8)
    kctx, kip, defer = C.PERF_CONTEXT_KERNEL, K[1], C.PERF_CONTEXT_USER_DEFERRED
    i = 0
    while i < n:
        m = min(ROUND, n - i)
        f.write(b"".join([rec.pack(C.PERF_RECORD_SAMPLE, 1, size, 1 + j % TIDS, 1 + j % TIDS,
                                   1000 + j, 4, kctx, kip, defer, 1 + j // TIDS)
                          for j in range(i, i + m)]) + fr)
        i += m


WRAP = ("import resource, subprocess, sys\n"
        "rc = subprocess.call(sys.argv[2:])\n"
        "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
        "sys.exit(rc)\n")


def test_ten_million_pending_samples_under_max_pending(tmp_path):
    rss_file = tmp_path / "rss"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen([sys.executable, "-c", WRAP, str(rss_file), sys.executable, "-m", "deferstitch",
                          "report", "-", "--json", "--max-pending", "1000"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         cwd=ROOT, env=env)
    out = {}

    def read():
        out["stdout"], out["stderr"] = p.stdout.read(), p.stderr.read()
    t = threading.Thread(target=read)
    t.start()
    try:
        pending_flood(p.stdin, PENDING)
        p.stdin.close()
    except BrokenPipeError:
        pass
    t.join(1800)
    assert p.wait(60) == 0, out.get("stderr", b"")[-2000:]
    rep = json.loads(out["stdout"])
    assert rep["samples"] == PENDING and rep["conserved"]
    assert rep["unmatched"] == {"evicted": PENDING - 1000, "stream-ended": 1000}
    assert rep["max_pending"] <= 1001 and rep["perf"]["max_queued_in_sorter"] <= 2 * ROUND + 1
    rss_mb = int(rss_file.read_text()) / 1024
    # 10 M samples held would be gigabytes; bounded work is the interpreter plus ~a window
    assert rss_mb < 150, "peak RSS %.0f MB for %d pending samples" % (rss_mb, PENDING)
