"""Trace / Event: a trace.dat (trace-cmd.dat(5), v6 and v7) opened by us (ownfile.py), its records
read by our page walker (pages.py: the C walker, else walk.py's), with no library of trace-cmd's.

    for ev in Trace("trace.dat"):          # time order across CPUs and buffers, as trace-cmd report
        ev.system, ev.name, ev.pid, ev.comm, ev.cpu, ev.ts, ev.missed
        ev.buffer                          # "top", or the instance's name (trace-cmd record -B NAME)
        ev["cookie"], ev.fields()          # numbers, strings, arrays (also __data_loc/__rel_loc)

Every buffer of the file is read: the top one and each instance, each with its own CPUs (so a
CPU number means something only within its buffer). The event formats are the file's, shared.

Fields are decoded here, in Python, from the record's payload and the event format that
formats.py parsed as libtraceevent does (offset, size, flags).
Decoding follows libtraceevent's rules (event-parse.c, tep_print_field / dynamic fields):

    __data_loc T[] name;  u32 at field offset: low 16 bits = offset in the record, high 16 = length
    __rel_loc  T[] name;  the same, the offset counted from the end of this 4-byte field
    char name[N] / __data_loc char[] name   strings, cut at the first NUL
    T name[N]                               a list of N elements of sizeof(T)
"""
import functools
import heapq
import struct

from . import ownfile
from .formats import (TEP_FIELD_IS_ARRAY, TEP_FIELD_IS_DYNAMIC, TEP_FIELD_IS_RELATIVE,
                      TEP_FIELD_IS_SIGNED, TEP_FIELD_IS_STRING)

INT_CODES = {1: "b", 2: "h", 4: "i", 8: "q"}
TOP = "top"
_NEEDED = object()  # Event.number() & co without a default: the field must be there         # the top buffer's name, as trace-cmd calls it (trace-split.c, "-B top")

# element type names -> size in bytes ("long" comes from the file's long size)
_BASE_SIZES = {"char": 1, "u8": 1, "s8": 1, "short": 2, "u16": 2, "s16": 2, "int": 4, "u32": 4,
               "s32": 4, "pid_t": 4, "u64": 8, "s64": 8, "long long": 8}


class Field:
    """How to read one field out of a payload: (name, reader) built once per event format."""

    __slots__ = ("name", "type", "desc", "dynamic", "is_string", "elem", "signed", "count",
                 "unpack", "offset", "end")

    def __init__(self, desc, long_size, endian="<"):
        self.name, self.type, self.desc = desc.name, desc.type, desc
        t = desc.type or ""
        flags = desc.flags
        self.dynamic = bool(flags & TEP_FIELD_IS_DYNAMIC) or t.startswith(("__data_loc", "__rel_loc"))
        base = t.replace("__data_loc", "").replace("__rel_loc", "").split("[")[0].strip()
        base = base.replace("unsigned ", "").replace("signed ", "").replace("const ", "").strip()
        self.is_string = bool(flags & TEP_FIELD_IS_STRING) or base == "char"
        self.signed = bool(flags & TEP_FIELD_IS_SIGNED)
        if "long" in base and "long long" not in base:
            self.elem = long_size
        elif base.endswith("*"):
            self.elem = long_size
        else:
            self.elem = _BASE_SIZES.get(base) or desc.elementsize or desc.size
        if self.dynamic:
            self.count = None
        elif flags & TEP_FIELD_IS_ARRAY or "[" in t:
            self.count = desc.arraylen or (desc.size // self.elem if self.elem else 0)
        else:
            self.count = 0      # a scalar
            self.elem = desc.size
        # a number at a fixed place: one struct call (Event.number), where the record holds it
        code = INT_CODES.get(self.elem)
        self.unpack = None
        self.offset, self.end = desc.offset, desc.offset + desc.size
        if self.count == 0 and not self.dynamic and not self.is_string and code and desc.offset >= 0:
            self.unpack = _struct(endian + (code if self.signed else code.upper())).unpack_from

    def span(self, data, endian):
        """(start, length) of the field's bytes in the payload."""
        d = self.desc
        if not self.dynamic:
            return d.offset, d.size
        (v,) = struct.unpack_from(endian + "I", data, d.offset)
        off, length = v & 0xFFFF, v >> 16
        if d.flags & TEP_FIELD_IS_RELATIVE or (self.type or "").startswith("__rel_loc"):
            off += d.offset + d.size
        return off, length

    def read(self, data, endian):
        start, length = self.span(data, endian)
        code = INT_CODES.get(self.elem)
        if code is not None and not self.is_string and 0 <= start and start + length <= len(data):
            # the common case in one struct call (same values as _num element by element)
            code = code if self.signed else code.upper()
            if self.count == 0:
                return _struct(endian + code).unpack_from(data, start)[0]
            return list(_struct("%s%d%s" % (endian, length // self.elem, code)).unpack_from(
                data, start))
        raw = data[start:start + length]
        if self.is_string:
            return raw.split(b"\0", 1)[0].decode("utf-8", "replace")
        if self.count == 0:
            return _num(raw, self.elem, self.signed, endian)
        n = length // self.elem if self.elem else 0
        return [_num(raw[i * self.elem:(i + 1) * self.elem], self.elem, self.signed, endian)
                for i in range(n)]


@functools.lru_cache(maxsize=256)
def _struct(fmt):
    return struct.Struct(fmt)


def _num(raw, size, signed, endian):
    code = INT_CODES.get(size)
    if code is None or len(raw) < size:
        return int.from_bytes(raw, "big" if endian == ">" else "little", signed=signed)
    return struct.unpack(endian + (code if signed else code.upper()), raw)[0]


class EventType:
    """One event format of the file: system, name, id and its fields (common ones apart)."""

    def __init__(self, desc, long_size, endian="<"):
        self.id, self.system, self.name = desc.id, desc.system, desc.name
        self.key = (self.system, self.name)
        self.print_fmt = desc.print_fmt
        self.common = {d.name: Field(d, long_size, endian) for d in desc.common}
        self.fields = {d.name: Field(d, long_size, endian) for d in desc.fields}

    def __repr__(self):
        return "EventType(%s:%s id %d)" % (self.system, self.name, self.id)


class Event:
    """One record: where and when, and its fields decoded on request."""

    __slots__ = ("trace", "type", "ts", "cpu", "missed", "pid", "offset", "data", "comm", "buffer")

    def __init__(self, trace, type_, ts, cpu, missed, pid, offset, data, comm, buffer=TOP):
        self.trace, self.type, self.ts, self.cpu = trace, type_, ts, cpu
        self.missed, self.pid, self.offset, self.data = missed, pid, offset, data
        self.comm = comm        # as trace-cmd shows it (saved_cmdlines), "<...>" when unknown
        self.buffer = buffer    # TOP, or the name of the instance it was recorded in

    @property
    def system(self):
        return self.type.system if self.type else None

    @property
    def name(self):
        return self.type.name if self.type else None

    def __contains__(self, name):
        return self.type is not None and name in self.type.fields

    def __getitem__(self, name):
        """The field's value; a field the event's format lacks is a format error (a damaged or
        foreign format: the file's, not ours), one line naming the file."""
        f = self.type.fields.get(name) if self.type else None
        if f is None:
            if self.type is None:
                what = "an event of unknown type"
            else:
                what = "event %s:%s (format id %d, fields: %s)" % (
                    self.system, self.name, self.type.id, ", ".join(self.type.fields) or "none")
            raise self.trace.error(self.offset, "%s has no field %r, which deferstitch needs"
                                   % (what, name))
        return self._read(f)

    def _read(self, f):
        try:
            return f.read(self.data, self.trace.endian)
        except struct.error:        # a __data_loc word past the end of a short record
            raise self.trace.error(self.offset, "a %d-byte %s:%s record is too short for its "
                                   "field %r" % (len(self.data), self.system, self.name, f.name))

    def get(self, name, default=None):
        return self[name] if name in self else default

    def number(self, name, default=_NEEDED):
        """Field ``name`` as one number (a cookie, a pid, an inode); a damaged format that makes
        it an array or a string is a format error at this record. Absent: ``default``, or the
        error of a missing field when none is given."""
        f = self.type.fields.get(name) if self.type is not None else None
        if f is not None and f.unpack is not None and f.end <= len(self.data):
            return f.unpack(self.data, f.offset)[0]
        return self._typed(name, default, int, "a number")

    def numbers(self, name, default=_NEEDED):
        """Field ``name`` as a list of numbers (a stack, its inodes and devices, callers)."""
        v = self._typed(name, default, list, "an array of numbers")
        if v is not default and not all(isinstance(x, int) for x in v):
            raise self._wrong(name, "an array of numbers")
        return v

    def text(self, name, default=_NEEDED):
        """Field ``name`` as a string (a path)."""
        return self._typed(name, default, str, "a string")

    def _typed(self, name, default, kind, what):
        if default is not _NEEDED and name not in self:
            return default
        v = self[name]
        if not isinstance(v, kind):
            raise self._wrong(name, what)
        return v

    def _wrong(self, name, what):
        return self.trace.error(self.offset, "field %r of %s:%s is declared %r, where deferstitch "
                                "needs %s" % (name, self.system, self.name,
                                              self.type.fields[name].type, what))

    def array(self, name, count):
        """``count`` elements of array field ``name``, read past its declared length when the
        record is longer (ftrace's kernel_stack: ``caller[8]`` in the format, ``size`` entries
        in the record); cut at the end of the payload."""
        f = self.type.fields[name]
        start = f.desc.offset
        n = max(0, min(count, (len(self.data) - start) // f.elem))
        if n == 0:                  # a record cut before the array: none of it
            return []
        code = INT_CODES.get(f.elem)
        if code is not None and start >= 0:
            return list(_struct("%s%d%s" % (self.trace.endian, n, code if f.signed else code.upper()))
                        .unpack_from(self.data, start))
        return [_num(self.data[start + i * f.elem:start + (i + 1) * f.elem], f.elem, f.signed,
                     self.trace.endian) for i in range(n)]

    def common(self, name):
        return self._read(self.type.common[name])

    def fields(self):
        """{name: value} of the event's own fields, in format order."""
        if self.type is None:
            return {}
        return {n: self._read(f) for n, f in self.type.fields.items()}

    def __repr__(self):
        return "Event(%s:%s pid %d cpu %d ts %d%s)" % (
            self.system, self.name, self.pid, self.cpu, self.ts,
            " missed %d" % self.missed if self.missed else "")


class Trace:
    """An open trace.dat: ``iter(trace)`` yields every Event in time order across CPUs."""

    def __init__(self, path):
        self.path = str(path)
        self._file = ownfile.open_file(self.path)
        self.cpus, self.long_size = self._file.cpus, self._file.long_size
        self.endian = ">" if self._file.big_endian else "<"
        self.types = {d.id: EventType(d, self.long_size, self.endian) for d in self._file.events()}
        self.formats_not_parsed = self._file.formats_not_parsed
        # buffer name -> its records: the top buffer, then the instances in the file's order
        # (an instance not ours to read is left out, its error raised once the others are read)
        names = [TOP] + self._file.instance_names()
        self.handles = {name: b for name, b, (_n, _c, err) in
                        zip(names, self._file.buffers(), self._file.tables) if err is None}
        self.unreadable = self._file.unreadable

    def feed_args(self):
        """What reader.FtraceFeed wants to know of the file: long size, and the peek at each
        CPU's next record (every buffer's CPUs)."""
        return {"long_size": self.long_size, "peek": self.peek,
                "cpus": max(h.cpus for h in self.handles.values()), "buffers": self.buffers}

    @property
    def buffers(self):
        """The buffers' names: TOP first, then the instances."""
        return list(self.handles)

    def peek(self, buffer, cpu):
        """(ts, missed_events) of the next record of ``cpu`` in ``buffer``, not consumed (None
        at its end): where a CPU's next page says events were lost, that is known before the
        record is read (reader.py uses it for the reasons of lost stacks)."""
        h = self.handles[buffer]
        return h.peek(cpu) if 0 <= cpu < h.cpus else None

    def error(self, offset, message):
        """A FormatError about the record at data ``offset`` (a file offset unless the file is
        compressed: then the offset goes in the text)."""
        return self._file.error(offset, message)

    def format_text(self, type_id):
        """The format text of a sched event (ownfile.OwnFile.format_text), else None."""
        return self._file.format_text(type_id)

    def comm(self, pid):
        return self._file.comm(pid)

    def function(self, addr):
        return self._file.function(addr)

    def __iter__(self):
        if len(self.handles) == 1:
            yield from self._events(TOP, self.handles[TOP])
        else:
            # time order across buffers too, as trace-cmd report merges its handles (equal
            # times: the top buffer first, then the instances in the file's order)
            yield from heapq.merge(*(self._events(name, h) for name, h in self.handles.items()),
                                   key=lambda ev: ev.ts)
        if self.unreadable:         # what could be read was; the file is still damaged
            raise self.unreadable[0]

    def _events(self, buffer, h):
        types, comm, comms = self.types, self._file.comm, {}
        for ts, cpu, missed, type_id, pid, offset, data in h.iter_records():
            c = comms.get(pid)
            if c is None:
                c = comms[pid] = comm(pid)
            yield Event(self, types.get(type_id), ts, cpu, missed, pid, offset, data, c, buffer)

    def close(self):
        for h in reversed(list(getattr(self, "handles", {}).values())):
            h.close()
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
