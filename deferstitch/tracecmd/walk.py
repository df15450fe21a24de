"""The page walker's checks in Python: the definition deferstitch/_tracedat.c's walker_scan is
held to (tests/test_tracecmd_pywalk.py), and what pages.plan() uses where the C module was not
built (or DEFERSTITCH_ACCEL=0), so that libtracecmd is never handed a page found damaged.

    scan(fd, file_size, page_size, long_size, big_endian, common_end, cpus)
        cpus: [(cpu id, first, size), ...] (file offsets); gives, per CPU walked alone to its
        end, (cpu id, good records, (offset, why) or None, first record (ts, offset) or None),
        as _tracedat.Walker(...).scan() does: the same counts, offsets and texts.

The walk (libtraceevent's kbuffer-parse.c, step for step, as _tracedat.c):

    page   | u64 timestamp | long commit (bits 0-26 bytes of data, 31 MISSING_EVENTS,
           |               |              30 MISSING_STORED) | data[commit] | [long lost] |
    event  | u32 type_len:5 time_delta:27 | array[] |
           type_len 1..28: 4*type_len bytes of payload; 0: array[0] - 4 bytes after it;
           29 padding (array[0] bytes); 30 time extend; 31 absolute time stamp
"""
import os
import struct
import sys

MISSING_EVENTS = 1 << 31
MISSING_STORED = 1 << 30
COMMIT_MASK = (1 << 27) - 1
TS_MSB = 0xf8 << 56
T_PADDING, T_EXTEND, T_STAMP = 29, 30, 31
U64 = (1 << 64) - 1


def _hex(v):
    """C's %#llx: 0 is "0", else 0x..."""
    return "%#x" % v if v else "0"


class _Damage(Exception):
    def __init__(self, off, why):
        Exception.__init__(self, off, why)
        self.off, self.why = off, why


def _read_page(fd, off, ps):
    """The page's bytes (pread to the full page, as load_page), or _Damage."""
    chunks, got = [], 0
    while got < ps:
        try:
            b = os.pread(fd, ps - got, off + got)
        except InterruptedError:
            continue
        except OSError as e:
            raise _Damage(off, "its page at %s cannot be read (%s): the file was cut while it "
                          "was read?" % (_hex(off), os.strerror(e.errno) if e.errno else e))
        if not b:
            raise _Damage(off, "its page at %s cannot be read (%s): the file was cut while it "
                          "was read?" % (_hex(off), "end of file"))
        chunks.append(b)
        got += len(b)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def scan(fd, file_size, page_size, long_size, big_endian, common_end, cpus):
    if page_size < 32 or page_size > 1 << 26 or long_size not in (4, 8):
        raise ValueError("page size %d / long size %d" % (page_size, long_size))
    out = []
    for cpu_id, first, size in cpus:
        end = first + size if size > 0 and first <= (1 << 63) - 1 - size else first
        n, damage, first_rec = 0, None, None
        try:
            for ts, at in _records(fd, file_size, page_size, long_size, big_endian,
                                   common_end, first, end):
                if first_rec is None:
                    first_rec = (ts, at)
                n += 1
        except _Damage as d:
            damage = (d.off, d.why)
        out.append((cpu_id, n, damage, first_rec))
    return out


def _records(fd, file_size, ps, long_size, big, common_end, first, end):
    """(ts, file offset) of each good record of one CPU's data [first, end); _Damage at the
    first damage (td_advance and load_page of _tracedat.c)."""
    e = ">" if big else "<"
    u32 = struct.Struct(e + "I").unpack_from
    u64 = struct.Struct(e + "Q").unpack_from
    rdlong = u64 if long_size == 8 else u32
    lsz = 8 if long_size == 8 else 4
    start = 16 if long_size == 8 else 12
    swap = bool(big) != (sys.byteorder == "big")
    page_off = -1
    while True:
        off = first if page_off < 0 else page_off + ps
        if off >= end or off < first:
            return
        # load_page
        if off > file_size - ps:
            raise _Damage(off, "its page at %s runs past the end of the file (%d bytes): "
                          "truncated" % (_hex(off), file_size))
        buf = _read_page(fd, off, ps)
        page_off = off
        flags = rdlong(buf, 8)[0]
        ts = u64(buf, 0)[0]
        commit = flags & 0xFFFFFFFF & COMMIT_MASK
        if start + commit > ps:
            raise _Damage(off + 8, "its page says it holds %d bytes of events, more than a "
                          "%d-byte page has room for" % (commit, ps))
        if flags & MISSING_EVENTS and flags & MISSING_STORED and start + commit + lsz > ps:
            raise _Damage(off + 8, "its page's count of missed events lies past the page")
        nxt = 0
        base = page_off + start
        while nxt < commit:
            curr = nxt
            at = base + curr
            if curr + 4 > commit:
                raise _Damage(at, "an event header at byte %d of its page runs past the page's "
                              "%d bytes of events" % (start + curr, commit))
            tl = u32(buf, start + curr)[0]
            if swap:
                type_len, delta = tl >> 27, tl & COMMIT_MASK
            else:
                type_len, delta = tl & 31, tl >> 5
            index = curr + 4
            if (type_len == 0 or type_len >= T_PADDING) and curr + 8 > commit:
                raise _Damage(at, "an event header at byte %d of its page runs past the page's "
                              "%d bytes of events" % (start + curr, commit))
            if type_len == T_PADDING:
                length = u32(buf, start + index)[0]
                if length & 0x80000000:
                    length -= 1 << 32
            elif type_len == T_EXTEND or type_len == T_STAMP:
                msb = ts & TS_MSB if type_len == T_STAMP else 0
                ext = u32(buf, start + index)[0] << 27
                delta = ((ext + delta) & U64) | msb
                index += 4
                length = 0
            elif type_len == 0:
                length = (u32(buf, start + index)[0] - 4) & 0xFFFFFFFF
                if length & 0x80000000:
                    length -= 1 << 32
                length = (length + 3) & ~3
                index += 4
            else:
                length = type_len * 4
            if type_len == T_STAMP:
                ts = delta
            else:
                ts = (ts + delta) & U64
            nx = index + length
            if nx <= curr:
                raise _Damage(at, "an event at byte %d of its page says the next one begins "
                              "before it" % (start + curr))
            nxt = commit if nx > commit else nx
            if type_len >= T_PADDING:
                continue
            if length < 0 or nx > commit:
                raise _Damage(at, "an event of %d bytes at byte %d of its page overruns the "
                              "page's %d bytes of events" % (length & 0xFFFFFFFF, start + curr,
                                                             commit))
            if length < common_end:
                raise _Damage(at, "a %d-byte event is shorter than its common fields (%d bytes)"
                              % (length, common_end))
            yield ts, at
