"""Rewrite a perf.data into the pre-cookie deferred layout, with deferstitch's own writer.

    strip_cookies("per-task.data", "nocookie.data")
    precookie_task_events("per-task.data", "precookie.data")

Samples ending ``PERF_CONTEXT_USER_DEFERRED, cookie`` end with the marker alone, and each
PERF_RECORD_CALLCHAIN_DEFERRED loses its ``u64 cookie`` (sizes fixed): the layout of the series
"perf: Support deferred user callchains" before the cookie patch. Everything else is copied, so
the cookie-matched answer on the original is the truth for the rewritten file.
"""
import struct

from deferstitch.abi import consts as C
from deferstitch.abi.attr import BIT_DEFER_OUTPUT, FLAGS_OFFSET, PerfEventAttr
from deferstitch.abi.sample import split_chain
from deferstitch.output.stitched_file import splice_chain
from deferstitch.perfdata.evlist import EventEntry
from deferstitch.perfdata.reader import PerfData
from deferstitch.perfdata.writer import PerfWriter


def _uncooked(data, e):
    """A CALLCHAIN_DEFERRED record's bytes without its cookie (header size fixed)."""
    data = bytearray(data[:8] + data[16:])
    struct.pack_into(e + "H", data, 6, len(data))
    return bytes(data)


def strip_cookies(src, dst, again=None):
    """Write ``dst``: ``src`` without cookies. Returns (samples rewritten, records rewritten).
    ``again``: (tid, cookie) -> the stack record to write once more right after each sample so
    keyed (see precookie_task_events)."""
    samples = records = 0
    with PerfData.open(str(src)) as perf, open(dst, "w+b") as f:
        e = perf.endian
        w = PerfWriter(f, e)
        for rec in perf.records():
            data = None
            stack = None
            if rec.type == C.PERF_RECORD_SAMPLE:
                p = perf.evlist.for_sample(rec.data).layout.parse(rec.data)
                chain = p.callchain or ()
                if len(chain) >= 2 and chain[-2] == C.PERF_CONTEXT_USER_DEFERRED:
                    data = splice_chain(rec.data, p, chain[:-1], e)
                    samples += 1
                    stack = again.get((p.tid, p.time)) if again else None
            elif rec.type == C.PERF_RECORD_CALLCHAIN_DEFERRED:
                data = _uncooked(rec.data, e)
                records += 1
            w.write(rec, data)
            if stack is not None:           # the same frames, a nanosecond after the sample
                lay = perf.evlist.for_trailer(stack.data).layout
                copy = bytearray(_uncooked(stack.data, e))
                struct.pack_into(e + "Q", copy, len(copy) - lay.trailer_time_from_end, p.time + 1)
                w.write(stack, bytes(copy))
                records += 1
        entries = perf.evlist.entries
        if again is not None:
            entries = [_without_defer_output(ent) for ent in entries]
        features = {b: v for b, v in perf.features.items()
                    if again is None or b != C.HEADER_EVENT_DESC}    # its attrs would say defer_output
        w.close(entries, features)
    return samples, records


def _without_defer_output(ent):
    raw = bytearray(ent.attr.raw)
    e = ent.attr.endian
    flags = struct.unpack_from(e + "Q", raw, FLAGS_OFFSET)[0] & ~BIT_DEFER_OUTPUT
    struct.pack_into(e + "Q", raw, FLAGS_OFFSET, flags)
    return EventEntry(PerfEventAttr(bytes(raw), e), ent.ids, ent.index)


def precookie_task_events(src, dst):
    """Write ``dst``: ``src`` (a 7.x capture of a command perf record started) as the series
    before the cookie patch would have written it: no cookies, no defer_output attr, and each
    sample taken after its entry's stack followed by that stack again (its event's task work,
    queued anew, runs before the return: the same frames, from the entry's unwind cache).
    Returns (samples rewritten, records written)."""
    stacks, again = {}, {}
    with PerfData.open(str(src)) as perf:
        e = perf.endian
        for rec in perf.records():         # which samples come after their entry's stack
            if rec.type == C.PERF_RECORD_CALLCHAIN_DEFERRED:
                lay = perf.evlist.for_trailer(rec.data).layout
                end = len(rec.data)
                cookie = struct.unpack_from(e + "Q", rec.data, 8)[0]
                t = struct.unpack_from(e + "Q", rec.data, end - lay.trailer_time_from_end)[0]
                tid = struct.unpack_from(e + "I", rec.data, end - lay.trailer_tid_from_end + 4)[0]
                stacks.setdefault((tid, cookie), (t, rec))
        for rec in perf.records():
            if rec.type == C.PERF_RECORD_SAMPLE:
                p = perf.evlist.for_sample(rec.data).layout.parse(rec.data)
                cookie = split_chain(p.callchain or ())[1]
                st = stacks.get((p.tid, cookie))
                if cookie is not None and st is not None and st[0] < p.time:
                    again[(p.tid, p.time)] = st[1]
    return strip_cookies(src, dst, again)
