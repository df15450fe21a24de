"""Run the real pipeline and keep what each sample came out as (for the tests)."""
from deferstitch.output.frames import sample_ips
from deferstitch.perfdata.feed import PerfFeed
from deferstitch.perfdata.reader import PerfData


class Collect:
    def __init__(self):
        self.samples = []
        self.records = []

    def record(self, rec):
        self.records.append(rec.type)

    def sample(self, s):
        self.samples.append(s)

    def close(self):
        pass


def stitch(path, **kw):
    """(samples in output order, report)."""
    perf = PerfData.open(str(path))
    out = Collect()
    feed = PerfFeed(perf, out, **kw)
    rep = feed.run()
    return out.samples, rep, out


def ours_by_tid(samples):
    by = {}
    for s in samples:
        by.setdefault(s.tid, []).append((s.time // 1000, sample_ips(s)[:127], s))
    return by
