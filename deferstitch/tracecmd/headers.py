"""trace.dat metadata (trace-cmd.dat(5), file versions 6 and 7; libtracecmd reads 0-5 as 6),
walked as libtracecmd reads it while opening, every size the file gives held inside the file (or
its section), every string ended: a damaged size is refused here, with its offset (libtracecmd
1.3 trusts them: a kallsyms size of 0xffffffff is its malloc(0) and a read of 4 GiB,
tests/data/trace-open-badfree.dat). The ring-buffer pages are pages.py's.

    v6   magic | "6\\0" | endian | long size | page size
         "header_page\\0" u64 size, data | "header_event\\0" u64 size, data
         u32 count, {u64 size, format} ftrace formats
         u32 count, {system "\\0", u32 count, {u64 size, format}} event formats
         u32 size, kallsyms | u32 size, printk | u64 size, cmdlines | u32 cpus
         ["options  \\0" {u16 id, u32 size, data} ... u16 0] | "flyrecord\\0" or "latency  \\0"
    v7   magic | "7\\0" | endian | long size | page size | compression "\\0" | its version "\\0"
         u64 offset of the first options section, then sections:
         {u16 id, u16 flags, u32 string, u64 size, data}; flags & 1: data is one block
         {u32 compressed size, u32 size, compressed bytes}. An options section holds
         {u16 id, u32 size, data}; option 0 (DONE) holds the offset of the next options section;
         options 16-21 hold the offsets of the sections that v6 has in line (same contents).
"""
import os
import re
import struct
import zlib

from .. import inflate
from ..errors import DeferstitchError, FormatError

MAGIC = b"\x17\x08\x44tracing"      # the first bytes of every trace.dat (trace-output.c)
BUFSIZ = 8192           # libtracecmd's read_string reads a string in one BUFSIZ read (glibc)
SEC_FL_COMPRESS = 1     # TRACECMD_SEC_FL_COMPRESS
OPTION_DONE, OPTION_BUFFER, OPTION_STRINGS, OPTION_BUFFER_TEXT = 0, 3, 15, 22
# enum tracecmd_option_id (trace-cmd-private.h): the sections v6 has in line
HEADER_INFO, FTRACE_EVENTS, EVENT_FORMATS, KALLSYMS, PRINTK, CMDLINES = range(16, 22)
FILE_VERSION_SECTIONS = FILE_VERSION_MAX = 7     # older versions: v6's layout (all of 0-6)
MAX_OPTION_SECTIONS = 1 << 16   # a chain of options sections that loops is damage


def is_trace_dat(path):
    """Whether the file at ``path`` starts with a trace.dat's magic (``-``, standard input: no,
    it is a perf.data pipe); a file that cannot be read is one line naming it (diff's choice of
    side)."""
    if path == "-":
        return False
    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError as err:
        raise DeferstitchError("%s: %s" % (path, err.strerror or err)) from None


class Meta:
    """What the walk found, kept by collect(): the texts libtracecmd hands libtraceevent
    (bytes, as in the file) and the numbers of the file's header. Each ``*_at`` is where an
    error about that text is placed: its file offset, or its compressed section's."""

    __slots__ = ("version", "big_endian", "long_size", "page_size", "compression",
                 "compression_version", "header_page", "header_event", "ftrace", "events",
                 "kallsyms", "kallsyms_at", "printk", "cmdlines", "cmdlines_at", "cpus",
                 "options", "data_kind", "data_at", "buffers", "whole")

    def __init__(self):
        self.version = self.long_size = self.page_size = self.cpus = None
        self.big_endian = False
        self.compression = self.compression_version = None     # v7: the name; "none" kept
        self.header_page = self.header_event = self.kallsyms = self.printk = self.cmdlines = b""
        self.kallsyms_at = self.cmdlines_at = self.data_at = None
        self.ftrace = []        # [(file offset, format text)]: system "ftrace"
        self.events = []        # [(system, file offset, format text)] in file order
        self.options = []       # [(id, file offset, data)] in file order, DONE excepted
        self.data_kind = None   # v6: b"flyrecord" or b"latency" (v7: in its own sections)
        self.buffers = []       # [(id, a _Reader over its data)]: BUFFER and BUFFER_TEXT options
        self.whole = True       # False: an options section we cannot decompress was not walked

    def __repr__(self):
        return ("Meta(v%s %s long %s page %s compression %s, %d ftrace + %d event formats, "
                "kallsyms %d, printk %d, cmdlines %d bytes, %d options)"
                % (self.version, "big" if self.big_endian else "little", self.long_size,
                   self.page_size, self.compression, len(self.ftrace), len(self.events),
                   len(self.kallsyms), len(self.printk), len(self.cmdlines), len(self.options)))


class _Reader:
    """Bounded reads at an offset, over the file or over a section's decompressed block.
    An error names the file offset pos, or in a decompressed block the block's own (base).
    ``meta``: the Meta the walk fills (collect()), None over an option's data; ``texts``: the
    texts are read into it (else their sizes only are checked)."""

    def __init__(self, path, fd=None, data=None, start=0, end=None, base=None, endian="<",
                 scope="file", meta=None, texts=False):
        self.path, self.fd, self.data, self.start, self.end = path, fd, data, start, end
        self.base, self.endian, self.scope, self.meta = base, endian, scope, meta
        self.texts = texts

    def at(self, pos):
        """The file offset an error about pos names (a decompressed block: its section's)."""
        return pos if self.base is None else self.base

    def keep(self, start, end, what):
        """The bytes start..end, read only when collecting."""
        return self.bytes(start, end - start, what) if self.texts else b""

    def extent(self):
        """What the reads are bounded by, in words: the file, or a section of the file."""
        return "the %s (%d bytes)" % (self.scope, self.end - self.start)

    def fail(self, pos, why):
        if self.base is None:
            raise FormatError(self.path, pos, why)
        raise FormatError(self.path, self.base,
                          "%s (at byte %d of its decompressed section)" % (why, pos))

    def bytes(self, pos, n, what):
        if n < 0 or pos + n > self.end:
            self.fail(pos, "%s ends inside %s" % (self.extent(), what))
        if self.data is not None:
            return self.data[pos:pos + n]
        got = os.pread(self.fd, n, pos)
        if len(got) < n:
            self.fail(pos, "the file was cut while it was read (%s)" % what)
        return got

    def number(self, pos, size, what):
        fmt = self.endian + {2: "H", 4: "I", 8: "Q"}[size]
        return struct.unpack(fmt, self.bytes(pos, size, what))[0], pos + size

    def sized(self, pos, width, what):
        """The data after a size field at pos: (its start, its end), inside the file or
        section; an error names the size field."""
        size, start = self.number(pos, width, what + "'s size")
        if start + size > self.end:
            self.fail(pos, "%s of %d bytes runs past the end of %s"
                      % (what, size, self.extent()))
        return start, start + size

    def string(self, pos, what):
        head = self.bytes(pos, min(BUFSIZ, self.end - pos), what)
        nul = head.find(b"\0")
        if nul < 0:
            self.fail(pos, "%s has no end within %d bytes" % (what, len(head)))
        return head[:nul], pos + nul + 1

    def tag(self, pos, expect, what):
        got = self.bytes(pos, len(expect), what)
        if got != expect:
            self.fail(pos, "expected %r here (%s), found %r" % (expect, what, got))
        return pos + len(expect)


def collect(path, fd, texts=True):
    """Raise FormatError (with the offset) where the metadata of the trace.dat open on fd does
    not hold inside the file, before libtracecmd reads it; else what the walk passes: a Meta, or
    None where libtracecmd refuses the version itself. The texts are read too unless ``texts``
    is False (the numbers and options only); the formats are formats.py's to parse."""
    return _walk(path, fd, Meta(), texts)


def _walk(path, fd, meta, texts):
    end = os.fstat(fd).st_size
    r = _Reader(path, fd=fd, end=end, meta=meta, texts=texts)
    pos = r.tag(0, MAGIC, "the magic")
    text, pos = r.string(pos, "the version string")
    version = _strtol(text)
    if not 0 <= version <= FILE_VERSION_MAX:
        return None                 # libtracecmd refuses it itself, with no read to trust
    flags = r.bytes(pos, 2, "the endian and long size bytes")
    r.endian = ">" if flags[0] else "<"
    page, pos = r.number(pos + 2, 4, "the page size")
    meta.version, meta.big_endian, meta.long_size, meta.page_size = (
        version, bool(flags[0]), flags[1], page)
    if version < FILE_VERSION_SECTIONS:
        _v6(r, pos)
    else:
        _v7(r, pos)
    return meta


def _strtol(text):
    """The version as libtracecmd takes it: strtol(version, NULL, 10), "6abc" is 6; a negative
    one is a huge unsigned long (refused); no digits, 0 (which it accepts)."""
    m = re.match(rb"\s*([-+]?)(\d*)", text)
    value = int(m.group(2) or b"0")
    return -value if m.group(1) == b"-" and value else value


def _v6(r, pos):
    """The metadata in line, as read_headers_v6 takes it, then the options and the data kind."""
    for which in (HEADER_INFO, FTRACE_EVENTS, EVENT_FORMATS, KALLSYMS, PRINTK, CMDLINES):
        pos = _SECTIONS[which](r, pos)
    cpus, pos = r.number(pos, 4, "the CPU count")
    kind = r.bytes(pos, 10, "the data kind")
    pos += 10
    if kind.startswith(b"options"):
        pos = _options(r, pos, v7=False)[0]
        kind = r.bytes(pos, 10, "the data kind")
    if not (kind.startswith(b"flyrecord") or kind.startswith(b"latency")):
        r.fail(pos, "expected 'flyrecord' or 'latency' here, found %r" % kind)
    r.meta.cpus, r.meta.data_kind, r.meta.data_at = cpus, kind.rstrip(b" \0"), pos + 10


def _v7(r, pos):
    name, pos = r.string(pos, "the compression's name")
    ver, pos = r.string(pos, "the compression's version")
    r.meta.compression = name.decode("utf-8", "replace")
    r.meta.compression_version = ver.decode("utf-8", "replace")
    first, pos = r.number(pos, 8, "the offset of the first options section")
    _strings(r, pos)
    sections, seen, at = {}, set(), first
    while at:
        if at in seen or len(seen) > MAX_OPTION_SECTIONS:
            r.fail(at, "the options sections point back to one another")
        seen.add(at)
        block, sid = _section(r, at, "an options section")
        if block is None:
            r.meta.whole = False
            return
        if sid != OPTION_DONE:
            r.fail(at, "an options section of id %d (0 expected)" % sid)
        _end, found, at = _options(block, block.start, v7=True)
        sections.update(found)
    for which, offset in sorted(sections.items()):
        block, sid = _section(r, offset, "section %d" % which)
        if block is None:
            continue
        if sid != which:
            r.fail(offset, "the section there has id %d, its option says %d" % (sid, which))
        _SECTIONS[which](block, block.start)


def _section(r, at, what):
    """A _Reader over the section's data (decompressed if it is compressed), and its id."""
    sid, pos = r.number(at, 2, what)
    flags, pos = r.number(pos, 2, what)
    _desc, pos = r.number(pos, 4, what)
    start, end = r.sized(pos, 8, what)
    if not flags & SEC_FL_COMPRESS:
        return _Reader(r.path, fd=r.fd, start=start, end=end, endian=r.endian, scope="section",
                       meta=r.meta, texts=r.texts), sid
    csize, p = r.number(start, 4, "the compressed block of " + what)
    rsize, p = r.number(p, 4, "the compressed block of " + what)
    if p + csize > end:
        r.fail(start, "a compressed block of %d bytes in a section of %d" % (csize, end - start))
    data = _decompress(r, start, r.bytes(p, csize, "the compressed block of " + what), rsize)
    if data is None:
        return None, sid
    return _Reader(r.path, data=data, end=len(data), base=at, endian=r.endian, scope="section",
                   meta=r.meta, texts=r.texts), sid


def _decompress(r, at, raw, size):
    """The block as libtracecmd's zstd or zlib inflates it, at most ``size`` bytes (a bomb
    stops there), or None where no zstd module is here (libtracecmd then reads it alone)."""
    if inflate.kind(raw) == "zlib":
        try:
            return inflate.zlib_block(raw, size)
        except zlib.error:
            r.fail(at, "its compressed block does not inflate (zlib)")
    try:
        return inflate.zstd_block(raw, size)
    except inflate.NoZstd:
        return None
    except ValueError as err:
        r.fail(at, "its compressed block does not decompress (%s)" % err)


def _strings(r, pos):
    """read_metadata_strings: every section from here on, in file order, to the first that does
    not fit (libtracecmd stops there too, and opens the file without its strings: they are the
    last section, so a file cut at its very end still opens). One size it must not be given: an
    uncompressed strings section's size is an int there, and one of 2^31 or more goes negative
    (``realloc(strings_size + size)`` shrinks, the read that follows overruns it)."""
    while pos + 16 <= r.end:
        sid, p = r.number(pos, 2, "a section header")
        flags, p = r.number(p, 2, "a section header")
        size, p = r.number(p + 4, 8, "a section header")
        if sid == OPTION_STRINGS and not flags & SEC_FL_COMPRESS and size & 0xffffffff >= 1 << 31:
            r.fail(p - 8, "a strings section of %d bytes" % size)
        if p + size > r.end:
            return
        pos = p + size


def _options(r, pos, v7):
    """Each option's size inside its section (or the file); (end, {section id: offset},
    offset of the next options section)."""
    sections, following = {}, 0
    while True:
        oid, pos = r.number(pos, 2, "an option's id")
        if oid == OPTION_DONE and not v7:
            return pos, sections, 0
        size, pos = r.number(pos, 4, "option %d's size" % oid)
        data = r.bytes(pos, size, "option %d" % oid)
        if oid != OPTION_DONE:
            r.meta.options.append((oid, r.at(pos), data))
            if v7 and oid in (OPTION_BUFFER, OPTION_BUFFER_TEXT):
                r.meta.buffers.append((oid, _Reader(r.path, fd=r.fd, data=r.data, start=pos,
                                                    end=pos + size, base=r.base, endian=r.endian,
                                                    scope="option %d" % oid)))
        if v7 and oid in _SECTIONS and size >= 8:
            sections[oid] = struct.unpack_from(r.endian + "Q", data)[0]
        pos += size
        if oid == OPTION_DONE:
            if size >= 8:
                following = struct.unpack_from(r.endian + "Q", data)[0]
            return pos, sections, following


def _header_info(r, pos):
    pos = r.tag(pos, b"header_page\0", "the header_page section")
    start, pos = r.sized(pos, 8, "header_page")
    page = r.keep(start, pos, "header_page")
    pos = r.tag(pos, b"header_event\0", "the header_event section")
    start, pos = r.sized(pos, 8, "header_event")
    r.meta.header_page, r.meta.header_event = page, r.keep(start, pos, "header_event")
    return pos


def _ftrace_events(r, pos):
    count, pos = r.number(pos, 4, "the count of ftrace formats")
    for i in range(count):
        start, pos = r.sized(pos, 8, "ftrace format %d" % i)
        r.meta.ftrace.append((r.at(start - 8), r.keep(start, pos, "ftrace format %d" % i)))
    return pos


def _event_formats(r, pos):
    systems, pos = r.number(pos, 4, "the count of event systems")
    for _ in range(systems):
        name, pos = r.string(pos, "an event system's name")
        count, pos = r.number(pos, 4, "the count of %s's formats" % _shown(name))
        for i in range(count):
            start, pos = r.sized(pos, 8, "format %d of %s" % (i, _shown(name)))
            r.meta.events.append((name, r.at(start - 8), r.keep(start, pos, "a format")))
    return pos


def _shown(name):
    """A name from the file as an error line may hold it: quoted, escaped, at most 40 bytes."""
    return repr(name[:40].decode("utf-8", "replace")) + ("..." if len(name) > 40 else "")


def _sized(what, width):
    """A block of text after its size (kallsyms, printk: u32; cmdlines: u64): libtracecmd
    allocates size + 1, so a size that does not fit in the file wraps that to nothing.
    Collected into Meta.<what> (and <what>_at, where it has one: its size field's offset)."""
    def walk(r, pos):
        start, end = r.sized(pos, width, what)
        setattr(r.meta, what, r.keep(start, end, what))
        if what + "_at" in Meta.__slots__:
            setattr(r.meta, what + "_at", r.at(pos))
        return end
    return walk


_SECTIONS = {HEADER_INFO: _header_info, FTRACE_EVENTS: _ftrace_events,
             EVENT_FORMATS: _event_formats, KALLSYMS: _sized("kallsyms", 4),
             PRINTK: _sized("printk", 4), CMDLINES: _sized("cmdlines", 8)}


# Where each CPU's ring-buffer data lies (v7), for our page reader (pages.py, _tracedat.c).
#
#   option BUFFER (3) / BUFFER_TEXT (22)   (trace-input.c handle_buffer_option; trace-output.c
#                                            tcmd_out_add_buffer_option)
#       u64 offset of its flyrecord section | name "\0" ("" the top buffer) | clock "\0"
#       BUFFER only: u32 page size | u32 count | {u32 cpu, u64 offset, u64 size} * count
#   flyrecord section: {u16 id 3, u16 flags, u32 string, u64 size}, then each CPU's data,
#       page aligned; flags & 1: each CPU's data is a chunk table (trace-compress.c,
#       tracecmd_compress_copy_from; trace-output.c writes PAGES_IN_CHUNK = 10 pages a chunk):
#       u32 count | {u32 compressed size, u32 size, compressed bytes} * count
#
# libtracecmd decompresses one chunk at a time (trace-input.c read_zpage) and counts offsets in
# the decompressed data: init_cpu_zpage puts the first CPU's at page_size, each next one at the
# next page boundary after it (an instance continues after the top buffer's CPUs).


class CpuData:
    """One CPU's data: its cpu number, file offset and size (the BUFFER option's), and where it
    is compressed its chunks [(file offset of the compressed bytes, compressed size, size)] up to
    the first that does not hold inside the data and the file; that one is ``damage``, (file
    offset, why) or None, for the walk to raise after the good chunks' records."""

    __slots__ = ("cpu", "offset", "size", "chunks", "damage")

    def __init__(self, cpu, offset, size, chunks=None, damage=None):
        self.cpu, self.offset, self.size, self.chunks, self.damage = cpu, offset, size, chunks, damage

    def __repr__(self):
        return "CpuData(cpu %d at %#x, %d bytes, %s chunks%s)" % (
            self.cpu, self.offset, self.size, "no" if self.chunks is None else len(self.chunks),
            ", damage %r" % (self.damage,) if self.damage else "")


class BufferData:
    """A buffer's flyrecord (``name`` "" the top buffer): its page size, its compression (None,
    "zstd", "zlib") and its CPUs ([CpuData] in the option's order); a latency buffer
    (BUFFER_TEXT) has cpus None."""

    __slots__ = ("name", "page_size", "compression", "cpus", "section")

    def __init__(self, name, page_size, compression, cpus, section):
        self.name, self.page_size, self.compression = name, page_size, compression
        self.cpus, self.section = cpus, section

    def __repr__(self):
        return "BufferData(%r, %s, %r)" % (self.name, self.compression, self.cpus)


def flyrecord(path, fd, meta=None):
    """[BufferData] of a v7 trace.dat, in the order of its options (libtracecmd's: the top
    buffer, and its instances by index), every size checked (FormatError with its offset), from
    the BUFFER options the header walk kept (``meta``: collect()'s, else a walk without the
    texts); None for a v6 file (libtracecmd gives its CPU data offsets) or where an options
    section is compressed with a zstd we have no module for."""
    if meta is None:
        meta = collect(path, fd, texts=False)
    if meta is None or meta.version < FILE_VERSION_SECTIONS or not meta.whole:
        return None
    r = _Reader(path, fd=fd, end=os.fstat(fd).st_size, endian=">" if meta.big_endian else "<")
    name = (meta.compression or "").encode()
    compression = None if name in (b"", b"none") else name.decode("ascii", "replace")
    return [_buffer(r, opt, oid, compression) for oid, opt in meta.buffers]


def _buffer(r, opt, oid, compression):
    """A BUFFER or BUFFER_TEXT option read (handle_buffer_option), its flyrecord section's
    header and each CPU's data or chunk table checked."""
    section, pos = opt.number(opt.start, 8, "the buffer's section offset")
    name, pos = opt.string(pos, "the buffer's name")
    _clock, pos = opt.string(pos, "the buffer's clock")
    name = name.decode("utf-8", "replace")
    if oid == OPTION_BUFFER_TEXT:
        return BufferData(name, None, compression, None, section)
    page_size, pos = opt.number(pos, 4, "the buffer's page size")
    count, pos = opt.number(pos, 4, "the buffer's CPU count")
    sid, p = r.number(section, 2, "buffer %r's flyrecord section" % name)
    flags, p = r.number(p, 2, "buffer %r's flyrecord section" % name)
    if sid != OPTION_BUFFER:
        r.fail(section, "buffer %r's flyrecord section has id %d (3 expected)" % (name, sid))
    compressed = bool(flags & SEC_FL_COMPRESS) and compression is not None
    cpus = []
    for _ in range(count):
        cpu, pos = opt.number(pos, 4, "a CPU's number")
        offset, pos = opt.number(pos, 8, "CPU %d's data offset" % cpu)
        size, pos = opt.number(pos, 8, "CPU %d's data size" % cpu)
        data = CpuData(cpu, offset, size)
        if compressed and size:
            data.chunks, data.damage = _chunks(r, cpu, offset, size)
        cpus.append(data)
    return BufferData(name, page_size, compression if compressed else None, cpus, section)


def _chunks(r, cpu, offset, size):
    """A CPU's chunk table (tracecmd_load_chunks_info): the chunks that lie inside its data and
    the file, and the damage at the first one that does not (or None). The data's size may leave
    out the 4 bytes of the count: trace-cmd 3.1.6's tracecmd_compress_copy_from gives the
    chunks' bytes alone as the size it writes (3.4 counts the count too)."""
    limit = min(offset + size + 4, r.end)
    where = "the file (%d bytes): truncated" % r.end if limit < offset + size + 4 else \
        "CPU %d's data (%d bytes at %#x)" % (cpu, size, offset)
    chunks = []
    if offset + 4 > limit:
        return chunks, (offset, "its chunk count at file offset %#x lies past the end of %s"
                        % (offset, where))
    count, pos = r.number(offset, 4, "CPU %d's chunk count" % cpu)
    fmt = r.endian + "II"
    for k in range(count):
        if pos + 8 > limit:
            return chunks, (pos, "chunk %d of %d: its header at file offset %#x lies past the "
                            "end of %s" % (k, count, pos, where))
        zsize, length = struct.unpack(fmt, r.bytes(pos, 8, "chunk %d's header" % k))
        if pos + 8 + zsize > limit:
            return chunks, (pos, "chunk %d of %d: its %d compressed bytes at file offset %#x "
                            "run past the end of %s" % (k, count, zsize, pos + 8, where))
        chunks.append((pos + 8, zsize, length))
        pos += 8 + zsize
    return chunks, None


def decompressed_offsets(buffer, start):
    """({cpu: offset} where libtracecmd counts each compressed CPU's data from, the start of the
    next buffer's): init_cpu_zpage puts each CPU with data, in cpu order, at start, the next at
    the page boundary after it. start: the file's page size for the top buffer; an instance
    starts where the top buffer ended (tracecmd_buffer_instance_handle copies the top handle,
    its next_offset with it). Sizes past a damaged chunk are unknown: that CPU ends the map."""
    ps, out = buffer.page_size, {}
    for c in sorted(buffer.cpus or (), key=lambda c: c.cpu):
        if not c.size or c.chunks is None:
            continue
        out[c.cpu] = start
        if c.damage is not None:
            return out, None
        start = (start + sum(n for _o, _z, n in c.chunks) + ps - 1) // ps * ps
    return out, start
