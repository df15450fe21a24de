"""A trace.dat opened by us alone, without libtracecmd: its metadata (headers.collect, parsed by
formats.py as libtraceevent 1.7.1 does), where each buffer's CPU data lies (the flyrecord
tables), and the records of each buffer read by our page walker (pages.walker).

    f = open_walked("trace.dat")        # an OwnFile our walker reads whole, or None
    f.events(); f.comm(pid); f.function(addr); f.instance_names()
    f.cpus, f.long_size, f.page_size, f.big_endian, f.compression
    f.formats_not_parsed, f.common_layout
    f.buffers()                          # [OwnBuffer]: the top buffer, then the instances

bridge.Trace opens a file so wherever it can: no libtracecmd open (nor its probe in a child),
no libtraceevent parse of every format and of the kallsyms, and files libtracecmd 1.3 cannot
open (v7 compressed with zlib). It leaves to libtracecmd what is not ours to read: times it
shifts (the DATE, OFFSET, TIME_SHIFT and TSC2NSEC options), latency data, a buffer whose
table we do not read as it does, or no walker here (the C module not built, DEFERSTITCH_ACCEL=0,
no library for the compression).
"""
import ctypes
import os
import struct

from ..errors import FormatError
from . import formats, headers, pages, walk
from ._ffi import open_checked

# compressions libtracecmd's tracecmd_compress_alloc knows (trace-cmd 3.4: zlib and zstd);
# headers._decompress inflates both
COMPRESSIONS = ("zstd", "zlib")
# enum tracecmd_option_id (trace-cmd-private.h)
OPTION_DATE, OPTION_BUFFER, OPTION_OFFSET, OPTION_CPUCOUNT = 1, 3, 7, 8
OPTION_TIME_SHIFT, OPTION_TSC2NSEC, OPTION_BUFFER_TEXT = 12, 14, 22
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
    """An open trace.dat's metadata, with _ffi.Handle's names and values, and its buffers'
    CPU data tables (``tables``: [(name, [CpuData]) or None where it is not ours to read])."""

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
        self.formats_failed = ev.failed     # kept with what was parsed of them, as 1.7.1 does
        self.common_layout = ev.common_layout()
        # read when a kernel address is first named (`trace report` names none)
        self._kallsyms, self._kallsyms_text = None, meta.kallsyms
        self._cmdlines = formats.Cmdlines(meta.cmdlines)
        self._instances = _instance_names(meta)
        self.options = meta.options
        self.shifted = _shifts_times(meta)
        self.tables = _tables(self, meta)
        # tracecmd_cpus: max_cpu, the header's (or CPUCOUNT's) count raised by a buffer's
        top = self.tables[0][1] if self.tables and self.tables[0] is not None else ()
        self.cpus = max(_cpus(meta), len(top))

    @property
    def fd(self):
        return self._fd

    def events(self):
        """Every event format the file carries, in ID order (tep_get_event's)."""
        return list(self._events)

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

    def walkable(self, python=False):
        """Our walker reads every buffer as libtracecmd would: no times to shift, a table of
        ours for each buffer, and a walker here for its data: the C one, or with ``python``
        walk.py's."""
        if self.shifted or not self.tables or any(t is None for t in self.tables) \
                or len(self.tables) != len(self._instances) + 1:
            return False
        if python:
            return self.compression is None or walk.decompressor(self.compression)
        return pages.available() and pages.accel_allowed() and (
            self.compression is None or pages.can_decompress(self.compression))

    def buffers(self):
        """[OwnBuffer]: the top buffer, then the instances in the file's order."""
        out, start = [], self.page_size
        for name, cpus in self.tables:
            out.append(OwnBuffer(self, name, cpus, start, self.python))
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

    def __init__(self, owner, name, cpus, start, python=False):
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
        try:
            self._walk, self._unreadable = pages.walker(self, self._ids, python), None
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


def open_walked(path, python=False):
    """The trace.dat at path opened by us, where our walker reads all of it (OwnFile.walkable),
    else None: libtracecmd opens it. With ``python``, read by walk.py's walker: for a compressed
    file that libtracecmd could not open (a compression it was built without)."""
    if not python and not (pages.available() and pages.accel_allowed()):
        return None                     # no C walker here: not worth reading the metadata
    f = OwnFile(path)
    if f.walkable(python) and (not python or f.compression is not None):
        f.python = python
        return f
    f.close()
    return None


def _tables(f, meta):
    """[(buffer name, [CpuData]) or None] for the top buffer and each instance: v7's from the
    BUFFER options (headers.flyrecord), v6's in line after "flyrecord" (read_cpu_data); None
    for a buffer that is not ours to read (latency data, an options block before its table)."""
    if f.version >= headers.FILE_VERSION_SECTIONS:
        fly = headers.flyrecord(f.path, f._fd, meta)
        if fly is None:
            return None
        top = [b for b in fly if b.name == ""]
        out = [(b.name, b.cpus) if b.cpus is not None and b.compression == f.compression
               else None for b in top[:1] + [b for b in fly if b.name != ""]]
        return out if top else None
    if meta.data_kind != b"flyrecord":
        return None
    out = [("", _v6_table(f, meta.data_at, meta.cpus or 0))]
    for oid, _at, data in meta.options:
        if oid == OPTION_BUFFER and len(data) > 8:
            at = struct.unpack_from((">" if f.big_endian else "<") + "Q", data)[0]
            kind = os.pread(f._fd, 10, at)
            out.append(("", _v6_table(f, at + 10, meta.cpus or 0))
                       if kind == b"flyrecord\0" else None)
    return out


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


def _shifts_times(meta):
    """libtracecmd would shift the records' times (trace-input.c handle_options, tsc2nsec):
    a DATE option with an offset, OFFSET (--ts-offset), TIME_SHIFT (a guest's), TSC2NSEC."""
    for oid, _at, data in meta.options:
        if oid in (OPTION_OFFSET, OPTION_TIME_SHIFT, OPTION_TSC2NSEC):
            return True
        if oid == OPTION_DATE and data.rstrip(b"\0").strip() not in (b"", b"0", b"0x0"):
            return True
    return False


def _instance_names(meta):
    """handle_buffer_option: each BUFFER (and v7 BUFFER_TEXT) option, u64 offset then its name;
    the one with an empty name is the top buffer (v7), not an instance."""
    names = []
    for oid, _at, data in meta.options:
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
