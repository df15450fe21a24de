"""A trace.dat opened by us alone: the metadata half of _ffi.Handle, without libtracecmd.

headers.collect() walks and keeps the metadata (v6 in line, v7 sections, decompressed with zstd
or zlib, which bookworm's libtracecmd 1.3 cannot inflate); formats.py parses it as libtraceevent
1.7.1 does. The ring-buffer data is not read here: the table of each CPU's data and the reading
of its records are the two parameters marked DATA below, filled in by whoever assembles the
reader (the CPU-data tables of headers.py, the page reader of pages.py / the compressed-page
reader). Not yet used by bridge.Trace, which still opens files with _ffi.Handle.

    f = OwnFile("trace.dat")
    f.events(); f.comm(pid); f.function(addr); f.instance_names()
    f.cpus, f.long_size, f.page_size, f.big_endian, f.compression
    f.formats_not_parsed, f.common_layout
"""
import os
import struct

from ..errors import FormatError
from . import formats, headers
from ._ffi import open_checked

# compressions libtracecmd's tracecmd_compress_alloc knows (trace-cmd 3.4: zlib and zstd);
# headers._decompress inflates both
COMPRESSIONS = ("zstd", "zlib")
OPTION_BUFFER, OPTION_CPUCOUNT, OPTION_BUFFER_TEXT = 3, 8, 22   # enum tracecmd_option_id


class OwnFile:
    """An open trace.dat's metadata, with _ffi.Handle's names and values.

    DATA ``cpu_data``: {cpu index: (first page offset, bytes)} of the top buffer, as
    _ffi.Handle.extents; None until the CPU-data table reader gives it (``cpus`` then counts
    the header's CPUs). DATA ``records``: the record reader (next_record, iter_records), not
    part of this class."""

    def __init__(self, path, cpu_data=None, records=None):
        self.path = path
        fd = open_checked(path)
        try:
            self.file_size = os.fstat(fd).st_size
            meta = headers.collect(path, fd)
        finally:
            os.close(fd)
        if meta is None:
            raise FormatError(path, 0, "a file version libtracecmd does not read (0-7)")
        name = meta.compression
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
        self._kallsyms = formats.Kallsyms(meta.kallsyms)
        self._cmdlines = formats.Cmdlines(meta.cmdlines)
        self._instances = _instance_names(meta)
        self.cpus = _cpus(meta) if cpu_data is None else len(cpu_data)   # DATA: see the class
        self.extents = cpu_data
        self.records = records                                         # DATA: see the class
        self.first_ts = None        # tracecmd_get_first_ts: the first record's, a DATA question
        self.options = meta.options

    def events(self):
        """Every event format the file carries, in ID order (tep_get_event's)."""
        return list(self._events)

    def comm(self, pid):
        """The comm trace-cmd shows for pid (saved_cmdlines): "<idle>" for 0, "<...>" unknown."""
        return self._cmdlines.comm(pid)

    def function(self, addr):
        """The kernel function containing addr (the file's kallsyms), or None."""
        return self._kallsyms.function(addr)

    def instance_names(self):
        """The names of the file's buffer instances (``-B NAME``), in the file's order."""
        return list(self._instances)

    def close(self):
        pass


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
    """The header's CPU count (v6), or the CPUCOUNT option's (v7). libtracecmd's max_cpu may
    grow past it with a BUFFER option's CPU list: the CPU-data table reader's to say."""
    count = meta.cpus or 0
    for oid, _at, data in meta.options:
        if oid == OPTION_CPUCOUNT and len(data) >= 4:
            count = max(count, struct.unpack_from(">i" if meta.big_endian else "<i", data)[0])
    return count
