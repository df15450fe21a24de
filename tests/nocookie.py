"""Rewrite a perf.data into the pre-cookie deferred layout, with deferstitch's own writer.

    strip_cookies("per-task.data", "nocookie.data")

Samples ending ``PERF_CONTEXT_USER_DEFERRED, cookie`` end with the marker alone, and each
PERF_RECORD_CALLCHAIN_DEFERRED loses its ``u64 cookie`` (sizes fixed): the layout of the series
"perf: Support deferred user callchains" before the cookie patch. Everything else is copied, so
the cookie-matched answer on the original is the truth for the rewritten file.
"""
import struct

from deferstitch.abi import consts as C
from deferstitch.output.stitched_file import splice_chain
from deferstitch.perfdata.reader import PerfData
from deferstitch.perfdata.writer import PerfWriter


def strip_cookies(src, dst):
    """Write ``dst``: ``src`` without cookies. Returns (samples rewritten, records rewritten)."""
    samples = records = 0
    with PerfData.open(str(src)) as perf, open(dst, "w+b") as f:
        e = perf.endian
        w = PerfWriter(f, e)
        for rec in perf.records():
            data = None
            if rec.type == C.PERF_RECORD_SAMPLE:
                p = perf.evlist.for_sample(rec.data).layout.parse(rec.data)
                chain = p.callchain or ()
                if len(chain) >= 2 and chain[-2] == C.PERF_CONTEXT_USER_DEFERRED:
                    data = splice_chain(rec.data, p, chain[:-1], e)
                    samples += 1
            elif rec.type == C.PERF_RECORD_CALLCHAIN_DEFERRED:
                data = bytearray(rec.data[:8] + rec.data[16:])
                struct.pack_into(e + "H", data, 6, len(data))
                data = bytes(data)
                records += 1
            w.write(rec, data)
        w.close(perf.evlist.entries, perf.features)
    return samples, records
