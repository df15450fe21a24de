"""Turn perf records seen in time order into names: the maps and comms an output needs."""
from ..abi import consts as C
from ..abi import records as R
from ..symbols.maps import Maps


class PerfContext:
    """Tracks maps and comms from the records an output sees, for naming frames."""

    def __init__(self, perf):
        self.perf = perf
        self.maps = Maps()
        self.comms = {}

    def observe(self, rec):
        t, e = rec.type, self.perf.endian
        if t not in (C.PERF_RECORD_MMAP, C.PERF_RECORD_MMAP2, C.PERF_RECORD_COMM,
                     C.PERF_RECORD_FORK, C.PERF_RECORD_EXIT):
            return
        ent = self.perf.evlist.for_trailer(rec.data)
        body_end = len(rec.data) - (ent.layout.trailer.size if ent else 0)
        try:
            if t == C.PERF_RECORD_MMAP2:
                m = R.parse_mmap2(rec.data, e, body_end, rec.misc)
                self.maps.add(m.pid, m.addr, m.len, m.pgoff, m.filename, m.build_id)
            elif t == C.PERF_RECORD_MMAP:
                m = R.parse_mmap(rec.data, e, body_end)
                self.maps.add(m.pid, m.addr, m.len, m.pgoff, m.filename)
            elif t == C.PERF_RECORD_COMM:
                c = R.parse_comm(rec.data, e, body_end, rec.misc)
                self.comms[c.tid] = c.comm
                if c.exec_ and c.pid == c.tid:
                    self.maps.exec_(c.pid)
            elif t == C.PERF_RECORD_FORK:
                task = R.parse_task(rec.data, e)
                self.maps.fork(task.ppid, task.pid)
                if task.ptid in self.comms:
                    self.comms.setdefault(task.tid, self.comms[task.ptid])
        except ValueError:
            pass        # a damaged side-band record only costs names, never samples

    def comm(self, s):
        """As perf names a thread: its COMM, "swapper" for the idle task 0, else ":tid"."""
        name = self.comms.get(s.tid) or s.comm
        if name:
            return name
        return "swapper" if s.tid == 0 else ":%d" % (s.tid if s.tid is not None else -1)
