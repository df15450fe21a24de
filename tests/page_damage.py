"""Damage made to a trace.dat's ring-buffer pages for the page walker's tests
(test_tracecmd_pages: both readers; test_tracecmd_pywalk: both walks): where the pages are, a
copy of the file changed, and one change for each check of the walker."""
import struct


def pages(path):
    """[(cpu, file offset of each page)] of the top buffer, as the walker reads them."""
    from deferstitch.tracecmd.bridge import Trace
    with Trace(path) as t:
        h = t.handles["top"]
        return [(cpu, first + k * h.page_size) for cpu, (first, size) in sorted(h.extents.items())
                for k in range((size + h.page_size - 1) // h.page_size)]


def damaged(path, tmp_path, name, change):
    """A copy of path in tmp_path, its bytes (a bytearray) changed by change()."""
    data = bytearray(path.read_bytes())
    change(data)
    out = tmp_path / (name + ".dat")
    out.write_bytes(bytes(data))
    return out


def each_check(page):
    """{name: (change, words of its error)}: each check of the walker hit once, in the 4096-byte
    page at file offset page (64-bit longs): a commit larger than the page, an event longer than
    the commit, an event header cut by the commit, a padding event pointing backwards, a stored
    missed-events count past the page, a record shorter than its common fields."""
    first_event = page + 16

    def at(off, fmt, *values):
        return lambda d: struct.pack_into(fmt, d, off, *values)

    return {
        "commit-past-page": (at(page + 8, "<Q", 5000), "more than a 4096-byte page"),
        "event-past-commit": (at(first_event, "<II", 0, 9000), "overruns the page"),
        "header-past-commit": (at(page + 8, "<Q", 2), "runs past the page"),
        "padding-backwards": (at(first_event, "<Ii", 29, -8), "begins before it"),
        "lost-count-past-page": (at(page + 8, "<Q", 4080 | 3 << 30), "count of missed events"),
        "record-too-short": (at(first_event, "<I", 1), "shorter than its common fields"),
    }
