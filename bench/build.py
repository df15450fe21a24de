"""Big benchmark inputs, written by deferstitch's own writer (never checked in: a cache dir).

    python3 bench/build.py replicate CAPTURE N OUT.data    # CAPTURE's records N times, shifted
    python3 bench/build.py replicate-pipe CAPTURE N OUT.data   # the same in pipe format (perf record -o -)
    python3 bench/build.py threads NTHREADS ROUNDS OUT.data  # NTHREADS tasks pending at once

``replicate``: copy k of the data section gets every timestamp shifted by k x (the capture's span
+ 1 ms) and every tid/pid > 0 shifted by k x TID_STEP, in the sample fields, the sample_id
trailers and the bodies of COMM/EXIT/FORK/MMAP/MMAP2, and in a sched:sched_switch sample's raw
data its pids (common_pid, prev_pid, next_pid where the file's own format puts them:
perfdata/sched.py SchedSwitch.pid_fields; 0, the idle task, stays 0), so a switch-in names the
copy's own task. Records without a time (perf's own user
records: ID_INDEX, THREAD_MAP, TIME_CONV, ...) are written once; FINISHED_ROUND in every copy.
So the file is N back-to-back runs of the same program by N different tasks: its pending work
never grows with N, only its length. ``pipe=True`` writes what ``perf record -o -`` writes: the
pipe header, the attrs as HEADER_ATTR records (a pipe-format capture's own metadata records are
kept as they are), then the records (what a pipe can be fed with: the file-mode layout we write
puts the attrs after the data).

``threads``: NTHREADS tasks each take a sample inside the kernel (cookie pending), then all of
them return to user space (one CALLCHAIN_DEFERRED each), ROUNDS times, a FINISHED_ROUND after
every phase: NTHREADS samples pending at every deferred record (perf 7.x scans its whole list
of pending samples for each deferred record).
"""
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from deferstitch.abi import consts as C                     # noqa: E402
from deferstitch.perfdata.reader import PerfData, Record    # noqa: E402
from deferstitch.perfdata.sched import SchedSwitch          # noqa: E402
from deferstitch.perfdata.writer import PerfWriter          # noqa: E402

TID_STEP = 100_000          # tids of copy k: tid + k * TID_STEP (pid_max is 4194304 by default)
GAP_NS = 1_000_000

_BODY_TIDS = {              # record type -> offsets of s32 pid/tid fields in the body
    C.PERF_RECORD_COMM: (8, 12), C.PERF_RECORD_MMAP: (8, 12), C.PERF_RECORD_MMAP2: (8, 12),
    C.PERF_RECORD_EXIT: (8, 12, 16, 20), C.PERF_RECORD_FORK: (8, 12, 16, 20),
}
_BODY_TIME = {C.PERF_RECORD_EXIT: 24, C.PERF_RECORD_FORK: 24}


def _raw_pids(perf, ent, data, switches):
    """Offsets in ``data`` (a sample of ``ent``) of the s32 pids in its sched_switch raw data."""
    sw = switches.get(ent.index)
    if sw is None:
        return []
    raw = ent.layout.parse(data).raw
    if raw is None:
        return []
    # RAW is its u32 size then the bytes; after CALLCHAIN, and perf asks for nothing after it
    # here, so the last match is the field itself (searched rather than re-walked)
    at = bytes(data).rfind(struct.pack(perf.endian + "I", len(raw)) + raw)
    if at < 0:
        raise SystemExit("replicate: a sched_switch sample's raw data not found in its record")
    out = []
    for off, size in sw.pid_fields():
        if size != 4 or off + 4 > len(raw):
            raise SystemExit("replicate: sched_switch pid field of %d bytes at %d" % (size, off))
        out.append(at + 4 + off)
    return out


def _plan(perf, rec, switches):
    """(tid offsets, time offsets) to patch in ``rec``, absolute within rec.data."""
    tids, times = [], []
    n = len(rec.data)
    if rec.type == C.PERF_RECORD_SAMPLE:
        ent = perf.evlist.for_sample(rec.data)
        if ent is not None:
            lay = ent.layout
            if lay.tid_offset is not None:
                tids += [lay.tid_offset, lay.tid_offset + 4]
            if lay.time_offset is not None:
                times.append(lay.time_offset)
            tids += _raw_pids(perf, ent, rec.data, switches)
        return tids, times
    tids += list(_BODY_TIDS.get(rec.type, ()))
    if rec.type in _BODY_TIME:
        times.append(_BODY_TIME[rec.type])
    ent = perf.evlist.for_trailer(rec.data)
    if ent is not None and ent.layout.trailer_names and n - 8 >= ent.layout.trailer.size:
        lay = ent.layout
        if lay.trailer_tid_from_end is not None:
            tids += [n - lay.trailer_tid_from_end, n - lay.trailer_tid_from_end + 4]
        if lay.trailer_time_from_end is not None:
            times.append(n - lay.trailer_time_from_end)
    return tids, times


class _PipeOut:
    """The pipe format: header, then records as they come (no sections to write at the end)."""

    def __init__(self, f, perf):
        self.f, e = f, perf.endian
        f.write(struct.pack(e + "QQ", 0x32454C4946524550, 16) if e == "<"
                else struct.pack(">QQ", 0x32454C4946524550, 16))
        for ent in ([] if perf.pipe else perf.evlist.entries):     # perf's synthesize_attr
            body = ent.attr.raw + struct.pack(e + "%dQ" % len(ent.ids), *ent.ids)
            f.write(struct.pack(e + "IHH", C.PERF_RECORD_HEADER_ATTR, 0, 8 + len(body)) + body)
        if not perf.pipe and perf.tracing:      # perf's tracing_data_put: u32 size, then the data
            blob = bytes(perf.tracing)
            f.write(struct.pack(e + "IHHI4x", C.PERF_RECORD_HEADER_TRACING_DATA, 0, 16, len(blob))
                    + blob + b"\0" * (-len(blob) % 8))

    def write(self, rec, data=None):
        self.f.write(rec.data if data is None else data)
        if data is None and rec.extra:
            self.f.write(rec.extra)

    def close(self, _entries, _features):
        pass


def replicate(src, copies, out, pipe=False):
    perf = PerfData.open(str(src))
    e = perf.endian
    s32, u64 = struct.Struct(e + "i"), struct.Struct(e + "Q")
    recs, tmin, tmax = [], None, 0
    switches = {}
    for ent in perf.evlist.entries:         # sched:sched_switch, by the file's own format
        sw = SchedSwitch.of(perf, ent)
        if sw is not None:
            switches[ent.index] = sw
    for rec in perf.records():
        if rec.inner:
            raise SystemExit("replicate: compressed captures are not supported")
        recs.append((rec, _plan(perf, rec, switches)))
        t = perf.evlist.time_of(rec)
        if t:
            tmin = t if tmin is None else min(tmin, t)
            tmax = max(tmax, t)
    span = (tmax - (tmin or 0)) + GAP_NS
    n = 0
    with open(out, "w+b") as f:
        w = _PipeOut(f, perf) if pipe else PerfWriter(f, e)
        for k in range(copies):
            dt, dtid = k * span, k * TID_STEP
            for rec, (tids, times) in recs:
                if k and rec.type >= C.PERF_RECORD_USER_TYPE_START \
                        and rec.type != C.PERF_RECORD_FINISHED_ROUND:
                    continue
                if not k or not (tids or times):
                    w.write(rec)
                    n += 1
                    continue
                b = bytearray(rec.data)
                for off in tids:
                    v = s32.unpack_from(b, off)[0]
                    if v > 0:
                        s32.pack_into(b, off, v + dtid)
                for off in times:
                    v = u64.unpack_from(b, off)[0]
                    if v:
                        u64.pack_into(b, off, v + dt)
                w.write(rec, bytes(b))
                n += 1
        w.close(perf.evlist.entries, perf.features)
    perf.close()
    return n


class _Streaming:
    """tests/synth.py's Synth, writing each record as it is made (memory stays flat)."""

    def __init__(self, path, endian="<"):
        from synth import Synth
        self.synth = Synth(endian)
        self.f = open(path, "w+b")
        self.w = PerfWriter(self.f, endian)
        self.n = 0

        def rec(rtype, body, misc=0):
            data = struct.pack(endian + "IHH", rtype, misc, 8 + len(body)) + body
            self.w.write(Record(rtype, misc, data, 0))
            self.n += 1
        self.synth._rec = rec

    def close(self):
        self.w.close(self.synth.evlist.entries, {})
        self.f.close()
        return self.n


def threads(nthreads, rounds, out):
    s = _Streaming(out)
    syn = s.synth
    t = 1_000_000_000
    user = [0x401000 + 16 * i for i in range(8)]
    for r in range(rounds):
        for i in range(nthreads):
            syn.sample(tid=1000 + i, time=t, cookie=(r << 20) | i, cpu=i % 64)
            t += 100
        syn.round()
        for i in range(nthreads):
            syn.deferred(tid=1000 + i, time=t, cookie=(r << 20) | i, user=user)
            t += 100
        syn.round()
    syn.round()
    return s.close()


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) == 5 else None
    if what in ("replicate", "replicate-pipe"):
        src, k, out = sys.argv[2], int(sys.argv[3]), sys.argv[4]
        n = replicate(src, k, out, pipe=what == "replicate-pipe")
        print("%s: %d records written (%s x%d%s)" % (out, n, src, k,
                                                    ", pipe format" if what == "replicate-pipe" else ""))
    elif what == "threads":
        nthreads, rounds, out = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
        print("%s: %d records written (%d threads pending at once, %d rounds)"
              % (out, threads(nthreads, rounds, out), nthreads, rounds))
    else:
        raise SystemExit(__doc__)
