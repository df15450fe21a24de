"""Synthetic perf.data files for edge cases, written by deferstitch's own writer.

    f = Synth(endian="<")                       # one cpu-clock attr: IP|TID|TIME|CALLCHAIN|PERIOD
    f.sample(tid=10, time=100, kernel=[...], cookie=0xA)
    f.deferred(tid=10, time=200, cookie=0xA, user=[...])
    f.save(path)

``Synth(no_cookie=True)`` writes the layout before the cookie patch: a deferred chain ends with
the marker alone (any ``cookie`` given only says "deferred") and CALLCHAIN_DEFERRED has no cookie.
"""
import struct

from deferstitch.abi import consts as C
from deferstitch.abi.attr import (BIT_DEFER_CALLCHAIN, BIT_DEFER_OUTPUT, BIT_DISABLED, BIT_ENABLE_ON_EXEC,
                                  BIT_INHERIT, BIT_SAMPLE_ID_ALL,
                                  PerfEventAttr)
from deferstitch.perfdata.evlist import Evlist
from deferstitch.perfdata.reader import Record
from deferstitch.perfdata.writer import PerfWriter

BASIC = C.PERF_SAMPLE_IP | C.PERF_SAMPLE_TID | C.PERF_SAMPLE_TIME | C.PERF_SAMPLE_CALLCHAIN | C.PERF_SAMPLE_PERIOD
K = [C.PERF_CONTEXT_KERNEL, 0xffffffff81000010, 0xffffffff81000020]


def make_attr(e="<", size=144, sample_type=BASIC, config=0, defer=True, tail=b"", read_format=0,
              branch_sample_type=0, inherit=False, type_=1, precookie_task=False):
    """``precookie_task``: as the series before the cookie patch's perf record makes the events of
    the command it starts: defer_callchain without defer_output, disabled until exec."""
    raw = bytearray(max(size, 80))
    flags = BIT_SAMPLE_ID_ALL | (BIT_DEFER_CALLCHAIN | BIT_DEFER_OUTPUT if defer else 0) \
        | (BIT_INHERIT if inherit else 0)
    if precookie_task:
        flags = flags & ~BIT_DEFER_OUTPUT | BIT_DEFER_CALLCHAIN | BIT_DISABLED | BIT_ENABLE_ON_EXEC
    struct.pack_into(e + "IIQQQQQ", raw, 0, type_, size, config, 4000, sample_type, read_format, flags)
    struct.pack_into(e + "Q", raw, 72, branch_sample_type)
    if tail:
        raw[128:128 + len(tail)] = tail
    return PerfEventAttr(bytes(raw[:size]), e)


class Synth:
    def __init__(self, endian="<", attrs=None, no_cookie=False):
        self.e = endian
        self.no_cookie = no_cookie
        self.evlist = Evlist(endian)
        for i, a in enumerate(attrs or [make_attr(endian)]):
            self.evlist.add(a, [100 + i])
        self.records = []

    def _rec(self, rtype, body, misc=0):
        data = struct.pack(self.e + "IHH", rtype, misc, 8 + len(body)) + body
        self.records.append(Record(rtype, misc, data, 0))

    def trailer(self, tid, time, attr_index=0, cpu=0, sample_id=None):
        lay = self.evlist.entries[attr_index].layout
        sid = 100 + attr_index if sample_id is None else sample_id
        vals = {"pid": tid, "tid": tid, "time": time, "id": sid, "stream_id": 0,
                "cpu": cpu, "identifier": sid}
        out = b""
        for name in lay.trailer_names:
            if name == "pid":
                out += struct.pack(self.e + "ii", tid, tid)
            elif name == "cpu":
                out += struct.pack(self.e + "II", cpu, 0)
            elif name in ("tid", None):
                continue
            else:
                out += struct.pack(self.e + "Q", vals[name])
        return out

    def sample(self, tid, time, kernel=K, cookie=None, user=None, attr_index=0, cpu=0, pid=None,
               ip=None, read=(), branches=None, hw_idx=None, user_mode=False, sample_id=None):
        """``read``: the u64 words of PERF_SAMPLE_READ as the attr's read_format lays them out;
        ``branches``: [(from, to, flags)] of PERF_SAMPLE_BRANCH_STACK (``hw_idx`` when the attr
        has PERF_SAMPLE_BRANCH_HW_INDEX); ``user_mode``: taken in user space (header.misc
        PERF_RECORD_MISC_USER, no kernel part); ``sample_id``: its ID/IDENTIFIER (default: the
        attr's first id; inherited events have one per CPU)."""
        lay = self.evlist.entries[attr_index].layout
        sid = 100 + attr_index if sample_id is None else sample_id
        chain = [] if user_mode else list(kernel)
        if cookie is not None:
            chain += [C.PERF_CONTEXT_USER_DEFERRED] + ([] if self.no_cookie else [cookie])
        if user:
            chain += [C.PERF_CONTEXT_USER] + list(user)
        st = lay.sample_type
        body = b""
        for bit, pack in ((C.PERF_SAMPLE_IDENTIFIER, lambda: struct.pack(self.e + "Q", sid)),
                          (C.PERF_SAMPLE_IP, lambda: struct.pack(self.e + "Q", ip if ip is not None else
                                                                 chain[1] if len(chain) > 1 else 0)),
                          (C.PERF_SAMPLE_TID, lambda: struct.pack(self.e + "ii", pid or tid, tid)),
                          (C.PERF_SAMPLE_TIME, lambda: struct.pack(self.e + "Q", time)),
                          (C.PERF_SAMPLE_ID, lambda: struct.pack(self.e + "Q", sid)),
                          (C.PERF_SAMPLE_CPU, lambda: struct.pack(self.e + "II", cpu, 0)),
                          (C.PERF_SAMPLE_PERIOD, lambda: struct.pack(self.e + "Q", 250000)),
                          (C.PERF_SAMPLE_READ, lambda: struct.pack(self.e + "%dQ" % len(read), *read)),
                          (C.PERF_SAMPLE_CALLCHAIN, lambda: struct.pack(self.e + "Q%dQ" % len(chain), len(chain), *chain)),
                          (C.PERF_SAMPLE_BRANCH_STACK, lambda: self._branches(branches or [], hw_idx))):
            if st & bit:
                body += pack()
        self._rec(C.PERF_RECORD_SAMPLE, body,
                  misc=C.PERF_RECORD_MISC_USER if user_mode else C.PERF_RECORD_MISC_KERNEL)

    def _branches(self, branches, hw_idx):
        out = struct.pack(self.e + "Q", len(branches))
        if hw_idx is not None:
            out += struct.pack(self.e + "Q", hw_idx)
        for b in branches:
            out += struct.pack(self.e + "QQQ", *b)
        return out

    def deferred(self, tid, time, cookie, user, attr_index=0, cpu=0, sample_id=None):
        ips = [C.PERF_CONTEXT_USER] + list(user)
        body = struct.pack(self.e + "Q%dQ" % len(ips), len(ips), *ips)
        if not self.no_cookie:
            body = struct.pack(self.e + "Q", cookie) + body
        self._rec(C.PERF_RECORD_CALLCHAIN_DEFERRED, body + self.trailer(tid, time, attr_index, cpu, sample_id),
                  misc=2)

    def fork(self, tid, time, ptid=1):
        self._rec(C.PERF_RECORD_FORK, struct.pack(self.e + "iiiiQ", tid, ptid, tid, ptid, time)
                  + self.trailer(tid, time))

    def exit(self, tid, time):
        self._rec(C.PERF_RECORD_EXIT, struct.pack(self.e + "iiiiQ", tid, tid, tid, tid, time)
                  + self.trailer(tid, time))

    def lost(self, time, n=5, id_=100, cpu=0):
        """LOST of ``n`` records in the buffer of the event with id ``id_`` (one id per CPU);
        ``cpu``: its sample_id's CPU, where the attr samples it (-a)."""
        self._rec(C.PERF_RECORD_LOST, struct.pack(self.e + "QQ", id_, n) + self.trailer(-1, time, cpu=cpu))

    def round(self):
        self._rec(C.PERF_RECORD_FINISHED_ROUND, b"")

    def raw(self, rtype, body=b"", misc=0):
        self._rec(rtype, body, misc)

    def save(self, path, features=None):
        with open(path, "w+b") as f:
            w = PerfWriter(f, self.e)
            for r in self.records:
                w.write(r)
            w.close(self.evlist.entries, features or {})
        return path


def oversized(path):
    """A stream whose stitched samples reach perf's 64 KiB record size: tid 10's kernel part
    (8000 frames) plus its 500 deferred user frames would pass it; tid 11's 50 user frames fill
    its record exactly (65528 bytes); tid 9's sample never resolves and comes first, so the
    others wait behind it to the end. Returns (path, {tid: (kernel chain, user frames)})."""
    user = [0x400000 + 16 * i for i in range(500)]
    big = [C.PERF_CONTEXT_KERNEL] + [0xffffffff81000000 + 16 * i for i in range(8000)]
    # header, IP, TID, TIME, PERIOD (40 bytes) + nr + 8 * (kernel + PERF_CONTEXT_USER + 50) <= 65535
    exact = [C.PERF_CONTEXT_KERNEL] + [0xffffffff82000000 + 16 * i for i in range((65535 - 48) // 8 - 52)]
    s = Synth()
    s.sample(9, 50, cookie=0x9)
    s.sample(10, 100, kernel=big, cookie=0xA)
    s.sample(11, 110, kernel=exact, cookie=0xB)
    s.deferred(10, 200, 0xA, user)
    s.deferred(11, 210, 0xB, user[:50])
    return s.save(path), {9: (K, []), 10: (big, user), 11: (exact, user[:50])}
