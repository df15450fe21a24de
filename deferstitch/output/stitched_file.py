"""The perf.data `perf inject` should have produced: stitched chains, no deferred records.

A stitched sample's chain becomes ``…kernel…, PERF_CONTEXT_USER, user ips…``; an unmatched one
keeps its kernel part only (perf 6.1 drops a whole chain that still holds the -640 marker).

The stitch report travels inside the file, as JSON in header feature section ``REPORT_FEATURE``
(250, a bit perf has not assigned: perf 6.1 and 7.x skip it as "unknown feature"), so that the
perf script plugin on the stitched file shows the same report as on the original.
"""
import json
import struct

from ..abi import consts as C
from ..model import PASSED, STITCHED
from ..perfdata.writer import PerfWriter


def splice_chain(data, parsed, chain, endian):
    """The sample record ``data`` with its callchain replaced by ``chain``."""
    n = len(chain)
    body = struct.pack(endian + "Q%dQ" % n, n, *chain)
    new = bytearray(data[:parsed.callchain_offset])
    new += body
    new += data[parsed.callchain_end:]
    if len(new) > 0xFFFF:
        raise ValueError("stitched sample of %d bytes exceeds the 64 KiB record limit" % len(new))
    struct.pack_into(endian + "H", new, 6, len(new))
    return bytes(new)


REPORT_FEATURE = 250


class StitchedFile:
    def __init__(self, f, perf, compat=True):
        self.perf = perf
        self.report = None          # set by the caller before close()
        self.endian = perf.endian
        self.writer = PerfWriter(f, perf.endian, compat=compat)
        self.rewritten = 0

    def record(self, rec):
        self.writer.write(rec)

    def sample(self, s):
        ref = s.ref
        if not ref.lead:          # another member of the same group read: the record is written
            return
        if s.outcome == PASSED:
            self.writer.write(ref.rec)
            return
        chain = s.kernel + (C.PERF_CONTEXT_USER,) + tuple(s.user) if s.outcome == STITCHED else s.kernel
        self.writer.write(ref.rec, splice_chain(ref.rec.data, ref.parsed, chain, self.endian))
        self.rewritten += 1

    def close(self):
        features = dict(self.perf.features)
        if self.report is not None:
            features[REPORT_FEATURE] = json.dumps(self.report.to_json(), sort_keys=True).encode()
        self.writer.close(self.perf.evlist.entries, features)
