"""/tmp/perf-PID.map: names a runtime gives the code it generates (V8 --perf-basic-prof, the JVM's
perf-map-agent, .NET, LuaJIT, CPython's -X perf: ``py::func:file.py``).

How perf gets there (tools/perf/util/map.c, map__new): an executable mapping of anonymous memory
(``//anon``, ``/dev/zero``, ``/anon_hugepage``, or MAP_HUGETLB) or of no file at all (``[stack``,
``/SYSV``, ``[heap]``) becomes the dso ``/tmp/perf-P.map``, P the pid of the process that mapped
it, with addresses taken as they are (no file offset). A child forked later keeps its parent's
maps, so its copy of that code is still named by ``/tmp/perf-PARENT.map``; what it maps itself is
``/tmp/perf-CHILD.map``. The dso is so named even when no such file exists (then every frame is
``[unknown] (/tmp/perf-P.map)``).

The file (util/symbol.c, dso__load_perf_map), one entry a line::

    START SIZE name with spaces        START and SIZE in hex (strtoull base 16: "0x" allowed)

perf skips a line whose name would be shorter than 3 characters. perf reads only
``/tmp/perf-P.map`` on the machine where it runs; we read ``SYMFS/tmp/perf-P.map`` when
``--symfs`` is given (the recording machine's files, copied), else ``/tmp/perf-P.map``.
Entries may overlap (code freed and generated again at the same place): perf's answer then
depends on its tree of symbols; ours is the entry written last, the newest code there.
"""
import bisect
import errno
import os
import re
import stat

ANON_PREFIXES = ("//anon", "/dev/zero", "/anon_hugepage")
NO_DSO_PREFIXES = ("[stack", "/SYSV")
PROT_EXEC = 0x4
MAP_HUGETLB = 0x40000
_MAP_NAME = re.compile(r"/tmp/perf-(\d+)\.map\Z")


def map_dso(filename, pid, prot, flags):
    """The dso perf gives a mapping: ``/tmp/perf-PID.map`` for executable anonymous memory, else
    the recorded file name. ``prot`` None: a MMAP (not MMAP2) record, executable unless perf
    marked it data (the caller passes PROT_EXEC or 0)."""
    if prot is not None and prot & PROT_EXEC and (
            filename.startswith(ANON_PREFIXES) or (flags or 0) & MAP_HUGETLB
            or filename.startswith(NO_DSO_PREFIXES) or filename == "[heap]"):
        return "/tmp/perf-%d.map" % pid
    return filename


def map_pid(dso):
    """The pid of a ``/tmp/perf-PID.map`` dso, or None for any other dso."""
    if not dso.startswith("/tmp/perf-"):
        return None
    m = _MAP_NAME.match(dso)
    return int(m.group(1)) if m else None


class PerfMap:
    """The entries of one map file, looked up by address: ``find(ip) -> (name, offset)``."""

    def __init__(self, path):
        self.path = path
        entries = []
        with open_regular(path) as f:
            for n, raw in enumerate(f):
                # perf drops the line's last character, a newline or not (a last line
                # without one loses a letter of its name)
                e = parse_line(raw[:-1].decode("utf-8", "replace"))
                if e is not None:
                    entries.append((e[0], n, e[1], e[2]))
        entries.sort()
        self.starts = [e[0] for e in entries]
        self.entries = [(e[0], e[0] + e[2], e[1], e[3]) for e in entries]   # start, end, line, name
        self.longest = max((e[2] for e in entries), default=0)

    def __len__(self):
        return len(self.entries)

    def find(self, ip):
        """(name, ip - start) of the newest entry holding ip (a zero-sized one: at its start)."""
        best = None
        i = bisect.bisect_right(self.starts, ip) - 1
        while i >= 0:
            start, end, line, name = self.entries[i]
            if ip - start > self.longest:
                break
            if start <= ip < end or ip == start == end:
                if best is None or line > best[0]:
                    best = (line, name, ip - start)
            i -= 1
        return (best[1], best[2]) if best else None


def parse_line(line):
    """(start, size, name) of a map file line as perf reads it, or None when perf skips it."""
    m = re.match(r"\s*([+-]?(?:0[xX])?[0-9a-fA-F]*)", line)
    start_text = m.group(1)
    pos = m.end() + 1
    if pos + 2 >= len(line):
        return None
    m2 = re.match(r"\s*([+-]?(?:0[xX])?[0-9a-fA-F]*)", line[pos:])
    size_text = m2.group(1)
    pos += m2.end() + 1
    if pos + 2 >= len(line):
        return None
    return _hex(start_text), _hex(size_text), line[pos:]


def _hex(text):
    try:
        return int(text, 16) & 0xFFFFFFFFFFFFFFFF
    except ValueError:          # strtoull: no digits -> 0
        return 0


def open_regular(path):
    """``open(path, "rb")`` for a regular file; OSError for anything else (a FIFO named like a
    map file must neither block the open nor the read)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", path)
    return open(fd, "rb")


def map_file(dso, symfs=None):
    """Where to read a ``/tmp/perf-P.map`` dso from: under ``--symfs`` when given, else itself."""
    return os.path.join(symfs, dso.lstrip("/")) if symfs else dso
