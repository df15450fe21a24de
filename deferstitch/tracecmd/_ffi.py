"""ctypes over libtracecmd.so.1 and libtraceevent.so.1 — the only module that touches C pointers.

Works with Debian bookworm (libtracecmd1 3.1.6, libtraceevent1 1.7.1) and sid (3.4, 1.9.0): the
prototypes and the public struct layouts used here are identical in both (libtraceevent's
include/traceevent/event-parse.h, trace-cmd's include/trace-cmd/trace-cmd.h: each layout is quoted
where it is declared below). Everything that leaves this module is plain Python: bytes, ints, strings, tuples;
records are copied and freed before ``next_record`` returns.

Usage (what bridge.py does):
    h = Handle("trace.dat")
    for ev in h.events(): ...            # EventDesc: id, system, name, fields
    rec = h.next_record()                # (ts, cpu, missed, event id, pid, payload) or None
    h.comm(pid); h.close()
    for i, name in enumerate(h.instance_names()):   # trace-cmd record -B NAME buffers
        child = Handle(path, parent=h, index=i)     # the same calls; shares h's event formats
"""
import ctypes
import errno
import faulthandler
import os
import signal

from ..errors import DeferstitchError, FormatError
from . import headers, pages
# the values events() gives, as formats.py gives them from the same texts
from .formats import EventDesc, FieldDesc

TRACECMD_FL_LOAD_NO_PLUGINS = 1 << 0   # enum tracecmd_open_flags (trace-cmd.h)

# struct tep_record {                 /* traceevent/event-parse.h, 1.7.1 and 1.9.0 */
#   unsigned long long ts, offset;
#   long long missed_events;          /* buffer dropped events before */
#   int record_size, size;            /* size of binary record, of data */
#   void *data;
#   int cpu, ref_count, locked;
#   void *priv;
# };
class TepRecord(ctypes.Structure):
    _fields_ = [("ts", ctypes.c_ulonglong), ("offset", ctypes.c_ulonglong),
                ("missed_events", ctypes.c_longlong), ("record_size", ctypes.c_int),
                ("size", ctypes.c_int), ("data", ctypes.c_void_p), ("cpu", ctypes.c_int),
                ("ref_count", ctypes.c_int), ("locked", ctypes.c_int), ("priv", ctypes.c_void_p)]


class TepFormatField(ctypes.Structure):
    pass


# struct tep_format_field {
#   struct tep_format_field *next; struct tep_event *event;
#   char *type, *name, *alias;
#   int offset, size; unsigned int arraylen, elementsize; unsigned long flags;
# };
TepFormatField._fields_ = [("next", ctypes.POINTER(TepFormatField)), ("event", ctypes.c_void_p),
                           ("type", ctypes.c_char_p), ("name", ctypes.c_char_p),
                           ("alias", ctypes.c_char_p), ("offset", ctypes.c_int),
                           ("size", ctypes.c_int), ("arraylen", ctypes.c_uint),
                           ("elementsize", ctypes.c_uint), ("flags", ctypes.c_ulong)]


# struct tep_format { int nr_common, nr_fields; struct tep_format_field *common_fields, *fields; };
class TepFormat(ctypes.Structure):
    _fields_ = [("nr_common", ctypes.c_int), ("nr_fields", ctypes.c_int),
                ("common_fields", ctypes.POINTER(TepFormatField)),
                ("fields", ctypes.POINTER(TepFormatField))]


# struct tep_print_fmt { char *format; struct tep_print_arg *args; struct tep_print_parse *print_cache; };
class TepPrintFmt(ctypes.Structure):
    _fields_ = [("format", ctypes.c_char_p), ("args", ctypes.c_void_p), ("print_cache", ctypes.c_void_p)]


# struct tep_event {
#   struct tep_handle *tep; char *name; int id; int flags;
#   struct tep_format format; struct tep_print_fmt print_fmt;
#   char *system;                     /* offset 72 on x86-64 */
#   tep_event_handler_func handler; void *context;
# };
class TepEvent(ctypes.Structure):
    _fields_ = [("tep", ctypes.c_void_p), ("name", ctypes.c_char_p), ("id", ctypes.c_int),
                ("flags", ctypes.c_int), ("format", TepFormat), ("print_fmt", TepPrintFmt),
                ("system", ctypes.c_char_p), ("handler", ctypes.c_void_p), ("context", ctypes.c_void_p)]


assert TepEvent.system.offset == 72 or ctypes.sizeof(ctypes.c_void_p) != 8

_P = ctypes.c_void_p
_REC = ctypes.POINTER(TepRecord)
_EV = ctypes.POINTER(TepEvent)

# name -> (restype, argtypes, library)
_PROTOS = {
    "tracecmd_open": (_P, [ctypes.c_char_p, ctypes.c_int], "tracecmd"),
    "tracecmd_close": (None, [_P], "tracecmd"),
    "tracecmd_get_tep": (_P, [_P], "tracecmd"),
    "tracecmd_cpus": (ctypes.c_int, [_P], "tracecmd"),              # trace-cmd-private-python.h
    "tracecmd_long_size": (ctypes.c_int, [_P], "tracecmd"),         # idem
    "tracecmd_page_size": (ctypes.c_int, [_P], "tracecmd"),
    "tracecmd_read_next_data": (_REC, [_P, ctypes.POINTER(ctypes.c_int)], "tracecmd"),  # idem
    "tracecmd_peek_data": (_REC, [_P, ctypes.c_int], "tracecmd"),   # idem: the handle keeps it
    "tracecmd_read_data": (_REC, [_P, ctypes.c_int], "tracecmd"),   # idem: that CPU's next
    "tracecmd_buffer_instances": (ctypes.c_int, [_P], "tracecmd"),                 # trace-cmd.h
    "tracecmd_buffer_instance_name": (ctypes.c_char_p, [_P, ctypes.c_int], "tracecmd"),
    "tracecmd_buffer_instance_handle": (_P, [_P, ctypes.c_int], "tracecmd"),
    "tracecmd_free_record": (None, [_REC], "tracecmd"),
    "tracecmd_record_page": (_P, [_P, _REC], "tracecmd"),           # idem: page->map
    "tracecmd_get_cpu_file_size": (ctypes.c_longlong, [_P, ctypes.c_int], "tracecmd"),   # idem
    "tracecmd_get_cursor": (ctypes.c_ulonglong, [_P, ctypes.c_int], "tracecmd"),         # idem
    "tracecmd_get_file_compress_proto": (ctypes.c_int, [_P, ctypes.POINTER(ctypes.c_char_p),
                                                        ctypes.POINTER(ctypes.c_char_p)], "tracecmd"),
    "tracecmd_get_parsing_failures": (ctypes.c_int, [_P], "tracecmd"),            # idem
    "tracecmd_get_first_ts": (ctypes.c_ulonglong, [_P], "tracecmd"),
    "tracecmd_set_loglevel": (None, [ctypes.c_int], "tracecmd"),
    "tep_get_events_count": (ctypes.c_int, [_P], "traceevent"),
    "tep_get_event": (_EV, [_P, ctypes.c_int], "traceevent"),
    "tep_find_event": (_EV, [_P, ctypes.c_int], "traceevent"),
    "tep_data_type": (ctypes.c_int, [_P, _REC], "traceevent"),
    "tep_data_pid": (ctypes.c_int, [_P, _REC], "traceevent"),
    "tep_data_comm_from_pid": (ctypes.c_char_p, [_P, ctypes.c_int], "traceevent"),
    "tep_is_file_bigendian": (ctypes.c_bool, [_P], "traceevent"),
    "tep_get_long_size": (ctypes.c_int, [_P], "traceevent"),
    "tep_find_function": (ctypes.c_char_p, [_P, ctypes.c_ulonglong], "traceevent"),
    "tep_set_loglevel": (None, [ctypes.c_int], "traceevent"),
}

_PACKAGES = {"tracecmd": ("libtracecmd.so.1", "libtracecmd1"),
             "traceevent": ("libtraceevent.so.1", "libtraceevent1")}
_libs = {}


def _lib(which):
    """The shared library, loaded once; missing -> one line naming the apt package."""
    lib = _libs.get(which)
    if lib is None:
        soname, package = _PACKAGES[which]
        try:
            lib = ctypes.CDLL(soname)
        except OSError:
            raise DeferstitchError("%s not found: apt-get install %s" % (soname, package)) from None
        _libs[which] = lib
    return lib


class _Api:
    """Typed function pointers, bound on first use."""

    def __getattr__(self, name):
        restype, argtypes, which = _PROTOS[name]
        try:
            fn = getattr(_lib(which), name)
        except AttributeError:
            raise DeferstitchError("%s lacks %s: this trace-cmd is too old (need 3.x)"
                                   % (_PACKAGES[which][0], name)) from None
        fn.restype, fn.argtypes = restype, argtypes
        setattr(self, name, fn)
        return fn


api = _Api()


def _fields(p):
    out = []
    while p:
        f = p.contents
        out.append(FieldDesc(_s(f.name), _s(f.type), f.offset, f.size, f.arraylen, f.elementsize,
                             f.flags))
        p = f.next
    return out


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else None


def quiet():
    """Keep libtracecmd/libtraceevent warnings off stderr (they print their own lines)."""
    api.tracecmd_set_loglevel(0)
    api.tep_set_loglevel(0)


MAGIC = headers.MAGIC


def _probe_open(path):
    """Open the file once in a child process first: libtracecmd 3.1.6 dereferences NULL inside
    tracecmd_open on some truncated files ("File possibly truncated. Need at least 16384, but
    file size is 9000." then SIGSEGV), which would kill us without a word."""
    size = os.path.getsize(path)
    try:
        pid = os.fork()
    except OSError as err:          # ENOMEM: one of our mappings is past the machine's memory
        # (overcommit heuristic; a leak of libtracecmd's: see fuzz/cases.py), not the load
        raise DeferstitchError("%s: cannot fork the process that tries libtracecmd on it first: %s"
                               % (path, err.strerror)) from None
    if pid == 0:                                     # child: no Python cleanup, just the verdict
        try:
            faulthandler.disable()                   # the crash is the expected verdict
            for sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT):
                signal.signal(sig, signal.SIG_DFL)   # not an inherited handler's exit code
            null = os.open(os.devnull, os.O_WRONLY)  # the library's own lines stay quiet
            os.dup2(null, 1)
            os.dup2(null, 2)
            h = api.tracecmd_open(os.fsencode(path), TRACECMD_FL_LOAD_NO_PLUGINS)
            for i in range(api.tracecmd_buffer_instances(h) if h else 0):
                api.tracecmd_buffer_instance_handle(h, i)      # reads its options and CPU table
            os._exit(0 if h else 1)
        except BaseException:
            os._exit(1)
    _pid, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        raise FormatError(path, None, "libtracecmd crashed opening it (signal %d): truncated or "
                          "damaged trace.dat (%d bytes)" % (os.WTERMSIG(status), size))


def open_checked(path, magic=True):
    """A descriptor of the trace.dat at path, before libtracecmd is asked anything (or even
    loaded): a file we cannot open says why in the system's words, an empty file or another
    format says so, all as the perf side says it of a perf.data."""
    try:
        fd = os.open(path, os.O_RDONLY)
        if os.path.isdir(path):
            os.close(fd)
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
    except OSError as err:
        raise FormatError(path, None, err.strerror or str(err)) from None
    head = os.pread(fd, len(MAGIC), 0) if magic else MAGIC
    if head != MAGIC:
        os.close(fd)
        raise FormatError(path, 0, "not a trace.dat file (magic %r)" % head if head
                          else "empty file, not a trace.dat")
    return fd


class Handle(pages.WalkedBuffer):
    """An open trace.dat (struct tracecmd_input), plugins not loaded: we only decode. With
    ``parent`` and ``index``: that file's buffer instance ``index`` (``trace-cmd record -B``),
    its own per-CPU data, the parent's event formats (libtracecmd copies the parent handle and
    reads the CPU table at the offset the instance's BUFFER option gives)."""

    def __init__(self, path, probe=True, parent=None, index=None):
        self.path = path
        # our own descriptor on the same file: its size, watched while libtracecmd maps it
        self._fd = open_checked(path, magic=parent is None)
        self._walked = None
        if parent is None:
            try:
                # sizes libtracecmd would trust, checked before it reads; the options kept
                self._walked = headers.collect(path, self._fd, texts=False)
                if probe:
                    _probe_open(path)
            except BaseException:
                os.close(self._fd)
                raise
        self.file_size = os.fstat(self._fd).st_size
        if parent is None:
            self._h = api.tracecmd_open(os.fsencode(path), TRACECMD_FL_LOAD_NO_PLUGINS)
        else:
            parent._check()
            self._h = api.tracecmd_buffer_instance_handle(parent._h, index)
        if not self._h:
            os.close(self._fd)
            if parent is not None:
                raise FormatError(path, None, "libtracecmd cannot read buffer instance %r "
                                  "(its BUFFER option points to no CPU data)"
                                  % parent.instance_names()[index])
            raise FormatError(path, 0, "libtracecmd cannot open it as a trace.dat "
                                       "(tracecmd_open failed)")
        self._tep = api.tracecmd_get_tep(self._h)
        self.cpus = api.tracecmd_cpus(self._h)
        self.long_size = api.tracecmd_long_size(self._h)
        self.page_size = api.tracecmd_page_size(self._h)
        self.big_endian = bool(api.tep_is_file_bigendian(self._tep))
        self.first_ts = api.tracecmd_get_first_ts(self._h)
        self._cpu = ctypes.c_int(0)
        self._comms = {}
        name = ctypes.c_char_p()
        if api.tracecmd_get_file_compress_proto(self._h, ctypes.byref(name), None) == 0:
            self.compression = _s(name.value) or "compressed"
        else:
            self.compression = None             # data offsets are file offsets
        self._mapped = self.compression is None     # libtracecmd mmaps the file's pages
        # event formats libtraceevent could not parse: 1.9 drops them (their records then have
        # a type with no format), 1.7 keeps what it parsed of them
        self.formats_not_parsed = api.tracecmd_get_parsing_failures(self._h)
        self.common_layout = self._common_layout()
        self._common_end = self.common_layout[4]
        self.flyrecord = self._flyrecord(parent, index)
        self.extents = self._cpu_data()
        self._extents = {cpu: (first, first + (size - 1) // self.page_size * self.page_size)
                         for cpu, (first, size) in self.extents.items()}
        self._last = {}             # cpu -> data offset of the last record read there
        self._new_page = True       # the last record began a page: check the file before going on
        self.records = 0
        self._plan = self._walk = None
        self._ids = {}              # cpu index -> the CPU number its records carry
        self._unreadable = None     # a header that leaves no page readable
        self._choose_reader()

    def _choose_reader(self):
        """Walk every CPU's pages first (pages.py): then either our walker hands out the records
        (it agrees with libtracecmd on each CPU's first record: no time offsets to apply), or
        libtracecmd does, asked per CPU for no more records than the walk found good."""
        try:
            plan = pages.plan(self)
        except FormatError as err:  # no page can be read: no record is, the error at the first
            self._plan, self._taken, self._raised, self._unreadable = {}, {}, set(), err
            return
        if plan is None:
            return
        agree = checked = 0
        for i, b in sorted(plan.items()):
            first, _size = self.extents[i]
            if not b.records or b.first is None or b.first[1] >= first + self.page_size:
                continue            # libtracecmd has loaded only each CPU's first page yet
            checked += 1
            rp = api.tracecmd_peek_data(self._h, i)
            if not rp or rp.contents.offset != b.first[1]:
                return              # it does not read the pages as we do: its own way, unplanned
            self._ids[i] = rp.contents.cpu
            agree += rp.contents.ts == b.first[0]       # no time offset applied
        self._plan, self._taken, self._raised = plan, {i: 0 for i in plan}, set()
        if checked and agree == checked and pages.accel_allowed():
            self._walk = pages.walker(self, self._ids)

    @property
    def fd(self):
        return self._fd

    def _flyrecord(self, parent, index):
        """This buffer's CPU data as the file lays it out (headers.flyrecord: offsets, chunk
        tables), or None: a v6 file, or a layout libtracecmd opened but we do not read as it
        does (it then reads the pages). The buffers follow the options' order, as
        libtracecmd's handle->buffers (the instances by index) do."""
        if parent is None:
            try:
                self._buffers = None if self._walked is None else \
                    headers.flyrecord(self.path, self._fd, self._walked)
            except FormatError:
                self._buffers = None
        else:
            self._buffers = parent._buffers
        if self._buffers is None:
            return None
        top = [b for b in self._buffers if b.name == ""]
        inst = [b for b in self._buffers if b.name != ""]
        if parent is None:
            return top[0] if top else None
        return inst[index] if index < len(inst) else None

    def _common_layout(self):
        """(type offset, type size, pid offset, pid size, end of the common fields): where
        libtraceevent reads every record's type and pid (tep_data_type/pid: the common fields
        of the first event format), and the bytes a record must hold for it."""
        p = api.tep_get_event(self._tep, 0) if api.tep_get_events_count(self._tep) > 0 else None
        if not p:
            return (0, 0, 0, 0, 0)
        common = {f.name: f for f in _fields(p.contents.format.common_fields)}
        end = max((f.offset + f.size for f in common.values()), default=0)
        t, pid = common.get("common_type"), common.get("common_pid")
        return ((t.offset, t.size) if t else (0, 0)) + ((pid.offset, pid.size) if pid else (0, 0)) \
            + (end,)

    def _cpu_data(self):
        """cpu index -> (first page, bytes) of its data as libtracecmd counts offsets (file
        offsets, or offsets in the decompressed data of a compressed file)."""
        out = {}
        for cpu in range(self.cpus):
            size = api.tracecmd_get_cpu_file_size(self._h, cpu)   # -1: no such cpu index
            if size <= 0 or size > 1 << 48 or self.page_size <= 0:
                continue
            first = min(api.tracecmd_get_cursor(self._h, cpu), 1 << 62)    # past any file
            out[cpu] = (first - first % self.page_size, size)
        return out

    def instance_names(self):
        """The names of the file's buffer instances (``-B NAME``), in the file's order; the
        top buffer is not one of them."""
        self._check()
        return [_s(api.tracecmd_buffer_instance_name(self._h, i))
                for i in range(api.tracecmd_buffer_instances(self._h))]

    def peek(self, cpu):
        """(ts, missed_events) of the next record on cpu, not consumed; None at its end.
        libtracecmd reads that CPU's next record anyway to order the CPUs."""
        self._check()
        if self._walk is not None:
            return super().peek(cpu)
        if self._plan is not None and self._spent(cpu):
            return None             # its next page is damaged: libtracecmd must not load it
        self._unchanged()
        rp = api.tracecmd_peek_data(self._h, cpu)
        if not rp:
            return None
        return rp.contents.ts, rp.contents.missed_events

    def events(self):
        """Every event format the file carries."""
        out = []
        for i in range(api.tep_get_events_count(self._tep)):
            p = api.tep_get_event(self._tep, i)
            if not p:
                continue
            e = p.contents
            out.append(EventDesc(e.id, _s(e.system), _s(e.name), _fields(e.format.common_fields),
                                 _fields(e.format.fields), _s(e.print_fmt.format)))
        return out

    def next_record(self):
        """The next record in time order across CPUs, copied: (ts, cpu, missed_events, type,
        pid, file offset, payload bytes), or None at the end. missed_events: 0, a count, or -1
        when the kernel said events were lost without a count."""
        self._check()
        if self._walk is not None:
            return super().next_record()
        if self._new_page:
            self._unchanged()
        if self._unreadable is not None:
            err, self._unreadable = self._unreadable, None
            raise err
        if self._plan is not None:
            rp = self._next_planned()
        else:
            rp = api.tracecmd_read_next_data(self._h, ctypes.byref(self._cpu))
        if not rp:
            self._unchanged()
            self._complete()
            return None
        try:
            r = rp.contents
            self._fits(rp, r)
            size, offset, cpu = r.size, r.offset, r.cpu
            payload = ctypes.string_at(r.data, size) if size > 0 else b""
            self.records += 1
            last = self._last.get(cpu, -self.page_size)
            self._new_page = self._mapped or offset // self.page_size != last // self.page_size
            self._last[cpu] = offset
            return (r.ts, cpu, r.missed_events, api.tep_data_type(self._tep, rp),
                    api.tep_data_pid(self._tep, rp), offset, payload)
        finally:
            api.tracecmd_free_record(rp)

    def iter_records(self):
        """next_record() to the end, as a generator: through our walker, its C iterator."""
        if self._walk is not None:
            self._check()
            yield from super().iter_records()
            return
        nxt = self.next_record
        while True:
            r = nxt()
            if r is None:
                return
            yield r

    def _spent(self, cpu):
        """The CPU gave every record the walk found good before its damage (or its end)."""
        b = self._plan.get(cpu)
        return b is None or self._taken[cpu] >= b.records

    def _next_planned(self):
        """tracecmd_read_next_data's choice (the earliest record, ties to the lower CPU) made
        here, CPU by CPU, so that a CPU whose next page is damaged is never peeked: its damage
        is raised instead, once its good records were all handed out."""
        best, best_ts = None, 0
        for cpu in sorted(self._plan):
            if self._spent(cpu):
                b = self._plan[cpu]
                if b.damage is not None and cpu not in self._raised:
                    self._raised.add(cpu)
                    self._unchanged()
                    raise self._damaged(self._ids.get(cpu, cpu), *b.damage)
                continue
            rp = api.tracecmd_peek_data(self._h, cpu)
            if rp and (best is None or rp.contents.ts < best_ts):
                best, best_ts = cpu, rp.contents.ts
        if best is None:
            return None
        self._taken[best] += 1
        return api.tracecmd_read_data(self._h, best)

    def _fits(self, rp, r):
        """The record lies inside the page libtracecmd holds it in: kbuffer takes an event's
        length from the event itself (a damaged one says 64 MB or 2 GB), and copying that much
        reads past the page (libtracecmd 3.1.6: SIGSEGV, SIGBUS, valgrind reads past a 40 KiB
        buffer). The page is page_size bytes at tracecmd_record_page() (page->map)."""
        page = api.tracecmd_record_page(self._h, rp)
        data, size = r.data or 0, r.size
        need = max(size, self._common_end)
        if page and data and size >= 0 and page <= data and data + need <= page + self.page_size:
            if size >= self._common_end:
                return
            why = "a %d-byte event is shorter than its common fields (%d bytes)" % (
                size, self._common_end)
        else:
            why = "an event of %d bytes at byte %d of its page overruns the %d-byte page" % (
                size & 0xFFFFFFFF, data - page if page and data else -1, self.page_size)
        raise self.error(r.offset, "CPU %d: %s: damaged ring-buffer page (%d records read before "
                          "it)" % (r.cpu, why, self.records))

    def _complete(self):
        """At the end of data: each CPU was read to its last pages. libtracecmd ends a CPU
        quietly when it cannot read or decompress a page, which would pass for a short trace.
        Where our walk counted each CPU's records (uncompressed data), it gave them all; else
        it read on to the CPU's last page or the one before."""
        if self._plan is not None:
            for cpu, b in sorted(self._plan.items()):
                if self._taken[cpu] < b.records:
                    raise self.error(self._last.get(cpu, self.extents[cpu][0]), "CPU %d: "
                                     "libtracecmd stopped reading here, after %d of the %d "
                                     "records of this CPU: incomplete, %d records read"
                                     % (self._ids.get(cpu, cpu), self._taken[cpu], b.records,
                                        self.records))
            return
        for cpu, (first, last) in sorted(self._extents.items()):
            reached = self._last.get(cpu)
            reached = first - self.page_size if reached is None else reached - reached % self.page_size
            if reached < last - self.page_size:
                raise self.error(max(reached, first), "CPU %d: libtracecmd stopped reading "
                                 "here, %d bytes before the end of this CPU's data (unreadable or "
                                 "damaged): incomplete, %d records read"
                                 % (cpu, last + self.page_size - max(reached, first), self.records))

    def comm(self, pid):
        """The comm trace-cmd shows for pid (saved_cmdlines), "<...>" when unknown."""
        c = self._comms.get(pid)
        if c is None:
            self._check()
            c = self._comms[pid] = _s(api.tep_data_comm_from_pid(self._tep, pid)) or "<...>"
        return c

    def function(self, addr):
        """The kernel function containing addr (kallsyms of the file), or None."""
        self._check()
        return _s(api.tep_find_function(self._tep, addr))

    def _check(self):
        if not self._h:         # a NULL handle would crash inside the library
            raise DeferstitchError("%s: trace already closed" % self.path)

    def close(self):
        if self._h:
            api.tracecmd_close(self._h)
            self._h = self._tep = None
            os.close(self._fd)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
