"""Small cuts of real perf.data files: the fuzz seeds of tests/test_fuzz.py and fuzz/seeds.py.

    cut_perf(src, dst, 300)                           # the first 300 records
    cut_perf(src, dst, stop=lambda rec, n: ...)       # up to the record stop() accepts (n: count)
    cut_perf(src, dst, 13, compressed=True)           # the first zstd containers, as they are

Rewritten by our writer, so the attrs and features stay valid (a byte prefix would cut them).
"""
from deferstitch.abi import consts as C
from deferstitch.perfdata.reader import PerfData
from deferstitch.perfdata.writer import PerfWriter

CONTAINERS = (C.PERF_RECORD_COMPRESSED, C.PERF_RECORD_COMPRESSED2)


class KeepContainers(PerfWriter):
    """Our writer, copying COMPRESSED(2) containers as they are (a compressed seed)."""

    def keep(self, rtype):
        return rtype in CONTAINERS or super().keep(rtype)


def cut_perf(src, dst, first=None, stop=None, compressed=False):
    """The first ``first`` records of ``src`` (or those up to the one ``stop(rec, n)`` accepts)
    as a valid file-mode perf.data ``dst``. ``compressed``: the containers are written, not
    the records in them; else the records, not their containers."""
    with PerfData.open(str(src)) as p, open(dst, "w+b") as f:
        w = (KeepContainers if compressed else PerfWriter)(f, p.endian)
        n = 0
        for r in p.records():
            if (r.inner if compressed else r.type in CONTAINERS):      # one or the other
                continue
            w.write(r)
            n += 1
            if (n >= first) if stop is None else stop(r, n):
                break
        w.close(p.evlist.entries, p.features)
