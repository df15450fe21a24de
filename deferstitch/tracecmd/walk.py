"""The page walker in Python: the definition deferstitch/_tracedat.c's walker is held to
(tests/test_tracecmd_pywalk.py), and the reader of every file where the C module was not built
(or DEFERSTITCH_ACCEL=0) or whose times are shifted (clock.py).

    scan(fd, file_size, page_size, long_size, big_endian, common_end, cpus, compression=None)
        cpus: [(cpu id, first, size), ...] (file offsets); gives, per CPU walked alone to its
        end, (cpu id, good records, (offset, why) or None, first record (ts, offset) or None),
        as _tracedat.Walker(...).scan() does: the same counts, offsets and texts. Compressed
        ("zstd", "zlib"): [(cpu id, first, size, chunks, tail), ...], offsets counting the
        decompressed data as libtracecmd does, chunks [(file offset of the compressed bytes,
        compressed size, size)] (headers.flyrecord), tail None or (offset, why): the damage
        that ended the chunk table. One chunk at a time is decompressed (_ChunkPages).

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

from .. import inflate

MISSING_EVENTS = 1 << 31
MISSING_STORED = 1 << 30
COMMIT_MASK = (1 << 27) - 1
TS_MSB = 0xf8 << 56
T_PADDING, T_EXTEND, T_STAMP = 29, 30, 31
U64 = (1 << 64) - 1
MAX_CHUNK_PAGES = 16    # pages a chunk may hold (trace-cmd writes 10): _tracedat.c's


def _hex(v):
    """C's %#llx: 0 is "0", else 0x..."""
    return "%#x" % v if v else "0"


class _Damage(Exception):
    def __init__(self, off, why):
        Exception.__init__(self, off, why)
        self.off, self.why = off, why


def _pread_all(fd, n, off, damage_at, what):
    """n bytes at off (pread to the full count, as _tracedat.c), or _Damage at damage_at."""
    chunks, got = [], 0
    while got < n:
        try:
            b = os.pread(fd, n - got, off + got)
        except InterruptedError:
            continue
        except OSError as e:
            raise _Damage(damage_at, "%s cannot be read (%s): the file was cut while it was "
                          "read?" % (what, os.strerror(e.errno) if e.errno else e))
        if not b:
            raise _Damage(damage_at, "%s cannot be read (%s): the file was cut while it was "
                          "read?" % (what, "end of file"))
        chunks.append(b)
        got += len(b)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _file_pages(fd, file_size, ps):
    """The pages of uncompressed data: page(off), its bytes at file offset off (load_page)."""
    def page(off):
        if off > file_size - ps:
            raise _Damage(off, "its page at %s runs past the end of the file (%d bytes): "
                          "truncated" % (_hex(off), file_size))
        return _pread_all(fd, ps, off, off, "its page at %s" % _hex(off))
    return page


class _ChunkPages:
    """The pages of a compressed CPU: page(off), off counting its decompressed data from first;
    its chunk decompressed when the walk enters it, one held at a time (_tracedat.c's
    map_zpage and load_chunk, check for check)."""

    def __init__(self, fd, ps, first, chunks, compression):
        self.fd, self.ps, self.chunks, self.compression = fd, ps, chunks, compression
        self.k, self.cstart, self.data = 0, first, None

    def __call__(self, off):
        chunks = self.chunks
        while self.k < len(chunks) and off >= self.cstart + chunks[self.k][2]:
            self.cstart += chunks[self.k][2]
            self.k += 1
            self.data = None
        if self.k >= len(chunks):
            raise _Damage(off, "its page at %s lies in no chunk" % _hex(off))
        if self.data is None:
            self.data = memoryview(self._load())
        i = off - self.cstart
        return self.data[i:i + self.ps]

    def _load(self):
        zoff, zsize, length = self.chunks[self.k]
        at, ps = self.cstart, self.ps
        if length % ps:
            raise _Damage(at, "its chunk at file offset %s holds %d bytes, not a whole number "
                          "of %d-byte pages" % (_hex(zoff), length, ps))
        if length > MAX_CHUNK_PAGES * ps or zsize > length + length // 8 + 4096:
            raise _Damage(at, "its chunk at file offset %s says %d bytes compressed to %d: more "
                          "than a chunk of %d pages holds" % (_hex(zoff), length, zsize,
                                                              MAX_CHUNK_PAGES))
        raw = _pread_all(self.fd, zsize, zoff, at, "its chunk at file offset %s" % _hex(zoff))
        data = decompress(self.compression, raw, length)
        if data is None:
            raise _Damage(at, "its chunk at file offset %s (%d bytes) does not decompress to the "
                          "%d bytes it says (%s)" % (_hex(zoff), zsize, length, self.compression))
        return data


def decompressor(name):
    """True where this Python can decompress CPU data of that compression (decompress())."""
    return inflate.available(name)


def decompress(name, raw, size):
    """raw decompressed to exactly size bytes, or None (inflate.exact: _tracedat.c's rule)."""
    return inflate.exact(name, raw, size)


def scan(fd, file_size, page_size, long_size, big_endian, common_end, cpus, compression=None):
    """Each CPU walked alone to its end (Walker.scan), common_end the bytes a record must hold."""
    return Walker(fd, file_size, page_size, long_size, big_endian, (0, 0, 0, 0, common_end),
                  cpus, compression).scan()


class Damaged(Exception):
    """A CPU's damage, once its good records were all handed out: (cpu id, offset, why), as
    _tracedat.Damaged."""


class _Cpu:
    __slots__ = ("id", "records_of", "head", "damage", "records", "clock")

    def __init__(self, cpu_id, records_of, clock=None):
        self.id, self.records_of, self.head, self.damage, self.records = cpu_id, records_of, None, None, 0
        self.clock = clock

    def advance(self):
        """The CPU's next record held in head (None at its end or at damage, kept), its time
        shifted by the clock if there is one: the merge of the CPUs then orders shown times."""
        try:
            self.head = next(self.records_of)
            if self.clock is not None:
                self.head = (self.clock(self.head[0], self.id),) + self.head[1:]
        except StopIteration:
            self.head = None
        except _Damage as d:
            self.head, self.damage = None, (d.off, d.why)


class Walker:
    """_tracedat.Walker in Python: the same constructor, records, peek, scan and damage, for
    where the C module is not built (or DEFERSTITCH_ACCEL=0) and libtracecmd cannot read the
    file (a compression it was built without).

        Walker(fd, file_size, page_size, long_size, big_endian,
               (type offset, type size, pid offset, pid size, end of the common fields),
               [(cpu id, first, size) or (cpu id, first, size, chunks, tail)], compression,
               clock)

    ``clock(ts, cpu id)``: the time shown for a record's stored time (clock.py), or None.
    """

    def __init__(self, fd, file_size, page_size, long_size, big_endian, common_layout, cpus,
                 compression=None, clock=None):
        if page_size < 32 or page_size > 1 << 26 or long_size not in (4, 8):
            raise ValueError("page size %d / long size %d" % (page_size, long_size))
        if compression is not None and (compression not in ("zstd", "zlib")
                                        or not decompressor(compression)):
            raise ValueError("cannot decompress %s data" % compression)
        self._layout = common_layout
        self._e = ">" if big_endian else "<"
        self._cpus = []
        for cpu in cpus:
            cpu_id, first, size = cpu[:3]
            end = first + size if size > 0 and first <= (1 << 63) - 1 - size else first
            tail = None
            if compression is None:
                page = _file_pages(fd, file_size, page_size)
            else:
                chunks, tail = cpu[3], cpu[4]
                total = sum(c[2] for c in chunks)
                end = first + total if first <= (1 << 63) - 1 - total else first
                page = _ChunkPages(fd, page_size, first, chunks, compression)
            c = _Cpu(cpu_id, _records(page, page_size, long_size, big_endian, common_layout[4],
                                      first, end, tail), clock)
            c.advance()
            self._cpus.append(c)

    @property
    def records(self):
        """Records handed out so far."""
        return sum(c.records for c in self._cpus)

    def next(self):
        """The next record in time order (ties: the lower CPU): (ts, cpu, missed, type, pid,
        offset, payload), None at the end; Damaged once a damaged CPU's good records are out."""
        best = None
        for c in self._cpus:
            if c.damage is not None and c.head is None:
                off, why = c.damage
                c.damage = None             # raised once; the CPU stays at its end
                raise Damaged(c.id, off, why)
            if c.head is not None and (best is None or c.head[0] < best.head[0]):
                best = c
        if best is None:
            return None
        ts, at, missed, buf, index, length = best.head
        payload = bytes(buf[index:index + length])
        t_off, t_size, p_off, p_size = self._layout[:4]
        rec = (ts, best.id, missed, self._number(payload, t_off, t_size),
               self._number(payload, p_off, p_size), at, payload)
        best.records += 1
        best.advance()
        return rec

    def _number(self, payload, off, size):
        """td_type/td_pid: an unsigned number of the file's byte order, as a C int; -1 where
        the format has none."""
        if size <= 0:
            return -1
        return _int(int.from_bytes(payload[off:off + size], "big" if self._e == ">" else "little"))

    def __iter__(self):
        while True:
            r = self.next()
            if r is None:
                return
            yield r

    def peek(self, cpu_id):
        """(ts, missed) of the CPU's next record, not taken; None at its end or at damage."""
        for c in self._cpus:
            if c.id == cpu_id and c.head is not None:
                return c.head[0], c.head[2]
        return None

    def scan(self):
        """Each CPU walked alone to its end: [(cpu id, good records, (offset, why) or None,
        first record (ts, offset) or None)]. Leaves the walker at its end."""
        out = []
        for c in self._cpus:
            first = None if c.head is None else (c.head[0], c.head[1])
            n = 0
            while c.head is not None:
                n += 1
                c.advance()
            out.append((c.id, n, c.damage, first))
        return out


def _int(v):
    """A number as C's (int) cast keeps it: its low 32 bits, signed."""
    return ((v & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000


def _records(page, ps, long_size, big, common_end, first, end, tail=None):
    """(ts, offset, missed, page bytes, payload start in them, payload length) of each good record of one CPU's data [first, end), its pages read by
    page(off); _Damage at the first damage (td_advance and load_page of _tracedat.c), or tail's
    past the last page."""
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
            if tail is not None:
                raise _Damage(*tail)
            return
        buf = page(off)     # load_page
        page_off = off
        flags = rdlong(buf, 8)[0]
        ts = u64(buf, 0)[0]
        commit = flags & 0xFFFFFFFF & COMMIT_MASK
        if start + commit > ps:
            raise _Damage(off + 8, "its page says it holds %d bytes of events, more than a "
                          "%d-byte page has room for" % (commit, ps))
        if flags & MISSING_EVENTS and flags & MISSING_STORED and start + commit + lsz > ps:
            raise _Damage(off + 8, "its page's count of missed events lies past the page")
        lost = (rdlong(buf, start + commit)[0] if flags & MISSING_STORED else -1) \
            if flags & MISSING_EVENTS else 0
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
            # only the page's first event carries the count (kbuffer_missed_events: an int)
            yield ts, at, _int(lost) if curr == 0 else 0, buf, start + index, length
