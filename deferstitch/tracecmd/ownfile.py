"""A trace.dat opened by us, the only reader at run time: its metadata (headers.collect, parsed
by formats.py as libtraceevent 1.7.1 does), where each buffer's CPU data lies (the flyrecord
tables), the times its options shift (clock.py), and the records of each buffer read by our page
walker: the C one (_tracedat.c), else its Python twin (walk.py).

    f = open_file("trace.dat")          # an OwnFile, or FormatError in one line: what it holds
    f.events(); f.comm(pid); f.function(addr); f.instance_names()
    f.cpus, f.long_size, f.page_size, f.big_endian, f.compression, f.clock
    f.formats_not_parsed, f.common_layout
    f.buffers()                          # [OwnBuffer]: the top buffer, then the instances

What trace-cmd reads and we do not is refused, naming it: latency-format data (`trace-cmd record`
of a latency tracer: text, not events) and a buffer whose CPU table is not where the flyrecord
layout puts it.
"""
import ctypes
import functools
import os
import struct

import errno

from ..errors import FormatError
from . import formats, headers, pages, walk
from .clock import Clock

# compressions libtracecmd's tracecmd_compress_alloc knows (trace-cmd 3.4: zlib and zstd);
# headers._decompress inflates both
COMPRESSIONS = ("zstd", "zlib")
# enum tracecmd_option_id (trace-cmd-private.h)
OPTION_BUFFER, OPTION_CPUCOUNT, OPTION_BUFFER_TEXT = 3, 8, 22
V6_CPU_ENTRY = 16           # read_cpu_data: u64 offset, u64 size per CPU
M_MMAP_THRESHOLD, MMAP_THRESHOLD = -3, 128 * 1024     # glibc's malloc.h, its default


def keep_big_blocks_mapped():
    """glibc raises its mmap threshold to the size of a mapped block once it is freed (up to
    32 MiB): after the decompressed sections and the kallsyms text (8 MB each, read once and
    let go), later big blocks come from the heap and stay there, fragmented: 4 MB more at the
    peak of `trace folded` on a zstd file. A fixed threshold keeps them mapped and returned.
    Only when deferstitch is the program: inside trace-cmd, perf or a caller's Python the
    allocator is theirs, and glibc cannot give its dynamic threshold back once set."""
    from .. import main_program         # read at the call: __main__.run sets it first
    if not main_program:
        return
    try:
        ctypes.CDLL(None).mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    except (OSError, AttributeError):       # not glibc: its own allocator's way
        pass


class OwnFile:
    """An open trace.dat's metadata, with the names and values of libtracecmd's handle (tests/libtracecmd.py), and its buffers'
    CPU data tables (``tables``: [(name, [CpuData], FormatError or None)], the top buffer
    first; ``unreadable``: the errors of the buffers we do not read)."""

    def __init__(self, path):
        keep_big_blocks_mapped()
        self.path, self.python = path, False
        self._fd = open_checked(path)
        try:
            self.file_size = os.fstat(self._fd).st_size
            meta = headers.collect(path, self._fd)
            if meta is None:
                raise FormatError(path, 0, "a file version libtracecmd does not read (0-7)")
            self._read(meta)
        except BaseException:
            os.close(self._fd)
            self._fd = None
            raise

    def _read(self, meta):
        path, name = self.path, meta.compression
        if name not in (None, "none") and name not in COMPRESSIONS:
            raise FormatError(path, None, "compressed with %r, which libtracecmd does not know"
                              % name)
        self.version = meta.version
        self.compression = None if name in (None, "none") else name
        self.page_size, self.big_endian = meta.page_size, meta.big_endian
        # read_header_files: the long size is the size of header_page's "commit"
        self.long_size = formats.parse_header_page(meta.header_page, meta.long_size)
        try:
            ev = formats.Events(meta)
        except formats.Crashes as err:
            at, why = err.args
            raise FormatError(path, at, "%s: libtraceevent 1.7.1 crashes on this format, not "
                              "read: damaged trace.dat" % why) from None
        self._events, self.formats_not_parsed = ev.events, ev.not_parsed
        self._texts = ev.texts              # id -> format text (system sched only)
        self.formats_failed = ev.failed     # kept with what was parsed of them, as 1.7.1 does
        self.common_layout = ev.common_layout()
        # read when a kernel address is first named (`trace report` names none)
        self._kallsyms, self._kallsyms_text = None, meta.kallsyms
        self._cmdlines = formats.Cmdlines(meta.cmdlines)
        self._instances = _instance_names(meta.options)
        self.options = meta.options
        self.clock = Clock.of(meta.options, meta.big_endian, path)     # None: times as stored
        self.tables = _tables(self, meta)
        if len(self.tables) != len(self._instances) + 1:
            raise FormatError(path, None, "%d buffers of data for %d named instances: a BUFFER "
                              "option without a name" % (len(self.tables), len(self._instances)))
        self.unreadable = [err for _n, _c, err in self.tables if err is not None]
        # tracecmd_cpus: max_cpu, the header's (or CPUCOUNT's) count raised by a buffer's
        self.cpus = max(_cpus(meta), len(self.tables[0][1]))

    @property
    def fd(self):
        return self._fd

    def events(self):
        """Every event format the file carries, in ID order (tep_get_event's)."""
        return list(self._events)

    def format_text(self, type_id):
        """The format text of event ``type_id`` as the file has it, for system sched (the
        print tables of sched_switch's prev_state: tracecmd/offcpu.py), else None."""
        return self._texts.get(type_id)

    def comm(self, pid):
        """The comm trace-cmd shows for pid (saved_cmdlines): "<idle>" for 0, "<...>" unknown."""
        return self._cmdlines.comm(pid)

    def function(self, addr):
        """The kernel function containing addr (the file's kallsyms), or None."""
        if self._kallsyms is None:
            held, self._kallsyms_text = [self._kallsyms_text], None
            # the C twin where built (a tenth of the time, no object a symbol); DEFERSTITCH_ACCEL=0
            # keeps the definition
            use_c = pages.Kallsyms is not None and pages.accel_allowed()
            self._kallsyms = (pages.Kallsyms if use_c else formats.Kallsyms)(held)  # frees the text
        return self._kallsyms.function(addr)

    def instance_names(self):
        """The names of the file's buffer instances (``-B NAME``), in the file's order."""
        return list(self._instances)

    def c_walks(self):
        """The C walker reads this file: built and allowed, its decompressor here, and no time
        to shift (clock.py is Python's alone: walk.py's walker shifts)."""
        return (self.clock is None and pages.available() and pages.accel_allowed() and (
            self.compression is None or pages.can_decompress(self.compression)))

    def buffers(self):
        """[OwnBuffer]: the top buffer, then the instances in the file's order."""
        out, start = [], self.page_size
        for name, cpus, _err in self.tables:
            out.append(OwnBuffer(self, name, cpus, start, self.python, top=not out))
            # each instance's offsets go on from where the top buffer's end (it copies the top
            # handle, its next offset with it: tracecmd_buffer_instance_handle)
            start = out[0].next_start
        return out

    def error(self, offset, message):
        """A FormatError about the record at data ``offset`` (as the top buffer's)."""
        return pages.WalkedBuffer.error(self, offset, message)

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class OwnBuffer(pages.WalkedBuffer):
    """One buffer of an OwnFile, its records read by our walker: what bridge.Trace and the C
    feed take from a buffer handle (pages.WalkedBuffer)."""

    def __init__(self, owner, name, cpus, start, python=False, top=True):
        self.path, self.owner, self.name = owner.path, owner, name
        self.file_size, self.page_size = owner.file_size, owner.page_size
        self.long_size, self.big_endian = owner.long_size, owner.big_endian
        self.common_layout, self.compression = owner.common_layout, owner.compression
        self.cpus, self.records = max(owner.cpus, len(cpus)), 0
        self.flyrecord = headers.BufferData(name, owner.page_size, owner.compression, cpus, None)
        if owner.compression is None:
            self.extents = {i: (c.offset - c.offset % owner.page_size, c.size)
                            for i, c in enumerate(cpus) if c.size}
            self.next_start = start
        else:
            # offsets count the decompressed data from where libtracecmd puts each CPU's
            starts, self.next_start = headers.decompressed_offsets(self.flyrecord, start)
            self.extents = {i: (starts[c.cpu], sum(n for _o, _z, n in c.chunks))
                            for i, c in enumerate(cpus) if c.cpu in starts}
        self._ids = {i: c.cpu for i, c in enumerate(cpus)}
        clock = None
        if owner.clock is not None:     # shifted by the CPU's index, as libtracecmd's cpu_data
            index = {c.cpu: i for i, c in enumerate(cpus)}
            clock = functools.partial(_shift, owner.clock.shift, index, top)
        try:
            self._walk, self._unreadable = pages.walker(self, self._ids, python, clock), None
        except FormatError as err:  # no page can be read: no record is, the error at the first
            self._walk, self._unreadable = None, err

    def peek(self, cpu):
        return None if self._walk is None else super().peek(cpu)

    def next_record(self):
        if self._walk is None:
            self._raise_unreadable()
            return None
        return super().next_record()

    def iter_records(self):
        if self._walk is None:
            self._raise_unreadable()
            return
        yield from super().iter_records()

    def _raise_unreadable(self):
        err, self._unreadable = self._unreadable, None
        if err is not None:
            raise err

    @property
    def fd(self):
        return self.owner.fd

    def close(self):
        self._walk = None


def open_checked(path, magic=True):
    """A descriptor of the trace.dat at path: a file we cannot open says why in the system's
    words, an empty file or another format says so, all as the perf side says it of a perf.data."""
    try:
        fd = os.open(path, os.O_RDONLY)
        if os.path.isdir(path):
            os.close(fd)
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
    except OSError as err:
        raise FormatError(path, None, err.strerror or str(err)) from None
    head = os.pread(fd, len(headers.MAGIC), 0) if magic else headers.MAGIC
    if head != headers.MAGIC:
        os.close(fd)
        raise FormatError(path, 0, "not a trace.dat file (magic %r)" % head if head
                          else "empty file, not a trace.dat")
    return fd


def open_file(path):
    """The trace.dat at path opened by us, its records walked by the C walker where it reads
    them (OwnFile.c_walks), else by walk.py's; what we do not read is a FormatError."""
    f = OwnFile(path)
    try:
        if f.compression is not None and not f.c_walks() and not walk.decompressor(f.compression):
            raise FormatError(path, None, "its data is compressed with %s, and no %s module is "
                              "here to read it (pip install zstandard)" % (f.compression,
                                                                          f.compression))
        f.python = not f.c_walks()
        return f
    except BaseException:
        f.close()
        raise


def _shift(shift, index, top, ts, cpu):
    """The walker's clock: a record's time as trace-cmd shows it (clock.Clock.shift)."""
    return shift(ts, index.get(cpu, cpu), top)


def _tables(f, meta):
    """[(buffer name, [CpuData], error)] for the top buffer and each instance: v7's from the
    BUFFER options (headers.flyrecord), v6's in line after "flyrecord" (read_cpu_data). A buffer
    that is not ours to read (latency data, a table not where the flyrecord layout puts it) has
    no CPUs and its FormatError: the other buffers are read first, as trace-cmd reads the
    instances it can open. The top buffer's is raised here: nothing else would be read."""
    if f.version >= headers.FILE_VERSION_SECTIONS:
        fly = headers.flyrecord(f.path, f._fd, meta)
        if fly is None:
            raise FormatError(f.path, None, "an options section is compressed with %s, and no "
                              "%s module is here to read it (pip install zstandard)"
                              % (f.compression, f.compression))
        top = [b for b in fly if b.name == ""]
        if not top:
            raise FormatError(f.path, None, "no BUFFER option names the top buffer's data: "
                              "no flyrecord to read")
        out = []
        for b in top[:1] + [b for b in fly if b.name != ""]:
            err = None
            if b.cpus is None:
                err = _latency(f, b.section, b.name)
            elif b.compression != f.compression:
                err = FormatError(f.path, b.section, "buffer %s's data is %s, where the file "
                                  "says %s: not a layout trace-cmd writes"
                                  % (_named(b.name), b.compression or "not compressed",
                                     f.compression or "not compressed"))
            out.append((b.name, [] if err else b.cpus, err))
        if out[0][2] is not None:
            raise out[0][2]
        return out
    if meta.data_kind != b"flyrecord":
        raise _latency(f, meta.data_at - 10, "")
    out = [("", _v6_table(f, meta.data_at, meta.cpus or 0), None)]
    for oid, _at, data in meta.options:
        if oid == OPTION_BUFFER and len(data) > 8:
            at = struct.unpack_from((">" if f.big_endian else "<") + "Q", data)[0]
            kind = os.pread(f._fd, 10, at)
            name = (_instance_names([(oid, _at, data)]) or [""])[0]
            if kind == b"flyrecord\0":
                out.append((name, _v6_table(f, at + 10, meta.cpus or 0), None))
            elif kind.startswith(b"latency"):
                out.append((name, [], _latency(f, at, name)))
            else:
                out.append((name, [], FormatError(
                    f.path, at, "buffer %s's data begins with %r, not 'flyrecord': no CPU data "
                    "to read there" % (_named(name), kind))))
    return out


def _named(name):
    return repr(name) if name else "top"


def _latency(f, at, name):
    return FormatError(f.path, at, "buffer %s holds latency-format data (the text of a latency "
                       "tracer, no ring-buffer events): deferstitch reads flyrecord data; "
                       "`trace-cmd report` shows it" % _named(name))


def _v6_table(f, at, cpus):
    """read_cpu_data: each CPU's u64 offset and u64 size; one past the file is a truncated file
    (libtracecmd refuses to open it: "File possibly truncated")."""
    raw = os.pread(f._fd, cpus * V6_CPU_ENTRY, at)
    if len(raw) < cpus * V6_CPU_ENTRY:
        raise FormatError(f.path, at + len(raw) // V6_CPU_ENTRY * V6_CPU_ENTRY,
                          "the table of the CPUs' data ends past the end of the file (%d bytes): "
                          "truncated" % f.file_size)
    out = []
    for cpu in range(cpus):
        offset, size = struct.unpack_from((">" if f.big_endian else "<") + "QQ", raw,
                                          cpu * V6_CPU_ENTRY)
        if size and offset + size > f.file_size:
            raise FormatError(f.path, at + cpu * V6_CPU_ENTRY, "CPU %d's data (%d bytes at %#x) "
                              "runs past the end of the file (%d bytes): truncated"
                              % (cpu, size, offset, f.file_size))
        out.append(headers.CpuData(cpu, offset, size))
    return out


def _instance_names(options):
    """handle_buffer_option: each BUFFER (and v7 BUFFER_TEXT) option, u64 offset then its name;
    the one with an empty name is the top buffer (v7), not an instance."""
    names = []
    for oid, _at, data in options:
        if oid in (OPTION_BUFFER, OPTION_BUFFER_TEXT) and len(data) > 8:
            nul = data.find(b"\0", 8)
            if nul > 8:
                names.append(data[8:nul].decode("utf-8", "replace"))
    return names


def _cpus(meta):
    """The header's CPU count (v6), or the CPUCOUNT option's (v7)."""
    count = meta.cpus or 0
    for oid, _at, data in meta.options:
        if oid == OPTION_CPUCOUNT and len(data) >= 4:
            count = max(count, struct.unpack_from(">i" if meta.big_endian else "<i", data)[0])
    return count
