"""The perf.data `perf inject` should have produced: stitched chains, no deferred records.

A stitched sample's chain becomes ``…kernel…, PERF_CONTEXT_USER, user ips…``; an unmatched one
keeps its kernel part only (perf 6.1 drops a whole chain that still holds the -640 marker).
A stitched sample that would outgrow the u16 record size keeps its innermost user frames that
fit; the cut is counted (``truncated_user_stacks`` in the report the file carries).

The stitch report travels inside the file, as JSON in header feature section ``REPORT_FEATURE``
(250, a bit perf has not assigned: perf 6.1 and 7.x skip it as "unknown feature"), so that the
perf script plugin on the stitched file shows the same report as on the original. ``perf inject``
cannot take such a file: perf 7.2 copies a file's features by walking all 256 bits into its table of
known ones (util/header.c, perf_header__adds_write -> do_write_feat: feat_ops[250], past the end)
and dies with SIGSEGV; ``stitch --no-report`` leaves the section out for that.
"""
import json
import struct

from ..abi import consts as C
from ..model import PASSED, STITCHED
from ..perfdata.writer import PerfWriter
from .sink import FILE, Sink


MAX_RECORD = 0xFFFF      # perf_event_header.size is a u16


def splice_chain(data, parsed, chain, endian):
    """The sample record ``data`` with its callchain replaced by ``chain`` (which must fit)."""
    n = len(chain)
    body = struct.pack(endian + "Q%dQ" % n, n, *chain)
    new = bytearray(data[:parsed.callchain_offset])
    new += body
    new += data[parsed.callchain_end:]
    struct.pack_into(endian + "H", new, 6, len(new))
    return bytes(new)


def user_room(data, parsed, kernel):
    """How many u64s a stitched chain can add after ``kernel`` (PERF_CONTEXT_USER and the user
    ips) before the record outgrows its u16 size: the kernel's 64 KiB sample may hold up to 510
    deferred user frames more than it did."""
    base = len(data) - (parsed.callchain_end - parsed.callchain_offset) + 8 + 8 * len(kernel)
    return (MAX_RECORD - base) // 8


REPORT_FEATURE = 250


class StitchedFile(Sink):
    takes = FILE

    def __init__(self, f, perf, compat=True, keep_report=True):
        self.perf = perf
        self.keep_report = keep_report
        self.report = None          # set by the caller before close()
        self.endian = perf.endian
        self.writer = PerfWriter(f, perf.endian, compat=compat, entries=perf.evlist.entries)
        self.rewritten = 0
        self.truncated = self.truncated_frames = 0    # stitched samples cut to fit 64 KiB

    def record(self, rec):
        self.writer.write(rec)

    def sample(self, s):
        ref = s.ref
        if not ref.lead:          # another member of the same group read: the record is written
            return
        if s.outcome == PASSED:
            self.writer.write(ref.rec)
            return
        chain = s.kernel
        if s.outcome == STITCHED:
            user = s.user
            room = user_room(ref.rec.data, ref.parsed, s.kernel) - 1
            if len(user) > room:    # keep the innermost frames, as perf's max_stack cuts a chain
                self.truncated += 1
                self.truncated_frames += len(user) - max(room, 0)
                user = user[:room] if room > 0 else ()
            if user:
                chain = s.kernel + (C.PERF_CONTEXT_USER,) + tuple(user)
        self.writer.write(ref.rec, splice_chain(ref.rec.data, ref.parsed, chain, self.endian))
        self.rewritten += 1

    def close(self):
        features = dict(self.perf.features)
        if self.report is not None and self.keep_report:
            if self.truncated:
                self.report.extra["truncated_user_stacks"] = {"samples": self.truncated,
                                                              "frames": self.truncated_frames}
            features[REPORT_FEATURE] = json.dumps(self.report.to_json(), sort_keys=True).encode()
        self.writer.close(self.perf.evlist.entries, features)
