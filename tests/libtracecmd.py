"""The tests' oracle: ctypes over libtracecmd.so.1 and libtraceevent.so.1, which deferstitch's own
trace.dat reader (deferstitch/tracecmd/ownfile.py) is held to. deferstitch loads neither at run time.

Works with Debian bookworm (libtracecmd1 3.1.6, libtraceevent1 1.7.1) and sid (3.4, 1.9.0): the
prototypes and the public struct layouts used here are identical in both (libtraceevent's
include/traceevent/event-parse.h, trace-cmd's include/trace-cmd/trace-cmd.h: each layout is quoted
where it is declared below). Everything that leaves this module is plain Python: bytes, ints, strings, tuples;
records are copied and freed before ``next_record`` returns.

Usage:
    h = Handle("trace.dat")
    for ev in h.events(): ...            # EventDesc: id, system, name, fields
    for rec in h.records(): ...          # (ts, cpu, missed, event id, pid, offset, payload)
    h.comm(pid); h.close()
    for i, name in enumerate(h.instance_names()):   # trace-cmd record -B NAME buffers
        child = Handle(path, parent=h, index=i)     # the same calls; shares h's event formats
"""
import ctypes
import faulthandler
import os
import signal

from deferstitch.errors import DeferstitchError, FormatError
from deferstitch.tracecmd import headers
# the values events() gives, as formats.py gives them from the same texts
from deferstitch.tracecmd.formats import EventDesc, FieldDesc
from deferstitch.tracecmd.ownfile import open_checked

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


class Handle:
    """An open trace.dat (struct tracecmd_input), plugins not loaded: the oracle that our reader
    (deferstitch/tracecmd/ownfile.py) is held to. With ``parent`` and ``index``: that file's
    buffer instance ``index`` (``trace-cmd record -B``), the parent's event formats."""

    def __init__(self, path, probe=True, parent=None, index=None):
        self.path = path
        self._fd = open_checked(path, magic=parent is None)
        try:
            if parent is None:
                # sizes libtracecmd would trust, checked before it reads (it crashes on some)
                headers.collect(path, self._fd, texts=False)
                if probe:
                    _probe_open(path)
        except BaseException:
            os.close(self._fd)
            raise
        if parent is None:
            self._h = api.tracecmd_open(os.fsencode(path), TRACECMD_FL_LOAD_NO_PLUGINS)
        else:
            parent._check()
            self._h = api.tracecmd_buffer_instance_handle(parent._h, index)
        if not self._h:
            os.close(self._fd)
            raise FormatError(path, 0, "libtracecmd cannot open it as a trace.dat "
                                       "(tracecmd_open failed)")
        self._tep = api.tracecmd_get_tep(self._h)
        self.cpus = api.tracecmd_cpus(self._h)
        self.long_size = api.tracecmd_long_size(self._h)
        self.page_size = api.tracecmd_page_size(self._h)
        self.big_endian = bool(api.tep_is_file_bigendian(self._tep))
        self._comms = {}
        name = ctypes.c_char_p()
        if api.tracecmd_get_file_compress_proto(self._h, ctypes.byref(name), None) == 0:
            self.compression = _s(name.value) or "compressed"
        else:
            self.compression = None
        # event formats libtraceevent could not parse: 1.9 drops them (their records then have
        # a type with no format), 1.7 keeps what it parsed of them
        self.formats_not_parsed = api.tracecmd_get_parsing_failures(self._h)
        self.common_layout = self._common_layout()

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

    def instance_names(self):
        """The names of the file's buffer instances (``-B NAME``), in the file's order."""
        self._check()
        return [_s(api.tracecmd_buffer_instance_name(self._h, i))
                for i in range(api.tracecmd_buffer_instances(self._h))]

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

    def records(self):
        """Every record in time order across CPUs, as libtracecmd gives it (its times shifted by
        the file's options): (ts, cpu, missed_events, type, pid, offset, payload). Only for files
        known whole: libtracecmd trusts every page."""
        self._check()
        cpu = ctypes.c_int(0)
        while True:
            rp = api.tracecmd_read_next_data(self._h, ctypes.byref(cpu))
            if not rp:
                return
            try:
                r = rp.contents
                payload = ctypes.string_at(r.data, r.size) if r.size > 0 else b""
                yield (r.ts, r.cpu, r.missed_events, api.tep_data_type(self._tep, rp),
                       api.tep_data_pid(self._tep, rp), r.offset, payload)
            finally:
                api.tracecmd_free_record(rp)

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
