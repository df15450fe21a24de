"""The FINISHED_ROUND rule, replayed on perf's own example (util/session.c) and on a reader that
gets a few bytes at a time."""
import io

import pytest

from conftest import capture
from deferstitch.abi import consts as C
from deferstitch.perfdata.reader import PerfData, Record
from deferstitch.perfdata.sorter import OrderStats, ordered

ROUND = C.PERF_RECORD_FINISHED_ROUND


def recs(*times):
    return [Record(ROUND, 0, b"", 0) if t == "FR" else Record(C.PERF_RECORD_SAMPLE, 0, b"", t)
            for t in times]


def run(records):
    out = []
    flushed_at_round = []
    for r in ordered(records, lambda r: r.offset):
        if r.type == ROUND:
            flushed_at_round.append(len(out))
        else:
            out.append(r.offset)
    return out, flushed_at_round


def test_perf_session_c_example():
    # session.c: pass n: cpu0 1 2, cpu1 2 3 4 (max 4); pass n+1: cpu0 3 4 5, cpu1 5 6 7 (max 7):
    # at the end of pass n+1 flush everything below 4; at the end of n+2 everything below 7.
    stream = recs(1, 2, 2, 3, 4, "FR", 3, 4, 5, 5, 6, 7, "FR", 8, 9, "FR")
    out, at = run(stream)
    assert out == sorted(out)
    # nothing at the first round; 1 2 2 3 3 4 4 (<= 4) at the second; 5 5 6 7 (<= 7) at the
    # third; 8 9 wait for the end
    assert at == [0, 7, 11]


def test_without_rounds_it_is_a_full_sort():
    out, _ = run(recs(5, 3, 9, 1, 7))
    assert out == [1, 3, 5, 7, 9]


def test_equal_times_keep_file_order():
    a, b = recs(5, 5)
    got = [r for r in ordered([a, b], lambda r: r.offset)]
    assert got[0] is a and got[1] is b


def test_memory_is_two_rounds():
    stream = []
    for i in range(100):
        stream += recs(*(range(i * 10, i * 10 + 10)))
        stream += recs("FR")
    st = OrderStats()
    list(ordered(stream, lambda r: r.offset, st))
    assert st.max_queued <= 20 and st.rounds == 100


def test_without_rounds_memory_is_capped_by_half_flushes():
    st = OrderStats()
    out = [r.offset for r in ordered(recs(*range(1000, 0, -1)) + recs(*range(2000, 3000)),
                                     lambda r: r.offset, st, max_queued=100)]
    assert st.forced_flushes > 0 and st.max_queued <= 101
    assert sorted(out) == list(range(1, 1001)) + list(range(2000, 3000))   # nothing lost
    assert out[-1000:] == list(range(2000, 3000))       # in order where the input allows


class Trickle(io.RawIOBase):
    """A file that returns at most 7 bytes per read, like a slow pipe."""

    def __init__(self, data):
        self.data, self.pos = data, 0

    def readable(self):
        return True

    def seekable(self):
        return False

    def readinto(self, b):
        n = min(len(b), 7, len(self.data) - self.pos)
        b[:n] = self.data[self.pos:self.pos + n]
        self.pos += n
        return n


def test_a_reader_fed_a_few_bytes_at_a_time():
    path, _ = capture("compressed")
    raw = path.read_bytes()
    with PerfData.open(str(path)) as p:
        want = [(r.type, r.data) for r in p.records()]
    p = PerfData(Trickle(raw), "trickle")
    assert [(r.type, r.data) for r in p.records()] == want


def test_damage_still_delivers_what_was_queued():
    """The reader raises at a bad record: the records read before it, still queued for their
    round, come out in time order first, then the error (the CLI writes what was good)."""
    from deferstitch.errors import FormatError

    def damaged():
        yield from recs(5, 3, 4, 1)
        raise FormatError("x.data", 0x40, "bad record")
    out = []
    with pytest.raises(FormatError):
        for r in ordered(damaged(), lambda r: r.offset):
            out.append(r.offset)
    assert out == [1, 3, 4, 5]
