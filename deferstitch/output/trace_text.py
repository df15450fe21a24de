"""perf script's ``trace`` field: a tracepoint sample's raw data as text, as perf prints it
(tools/perf/util/trace-event-parse.c event_format__fprintf: libtraceevent's tep_print_event with
TEP_PRINT_INFO, the event's handler from the plugins perf loads, else its print fmt).

- sched:sched_switch: libtraceevent's plugins/plugin_sched_switch.c sched_switch_handler,
  ``prev_comm:prev_pid [prev_prio] STATE ==> next_comm:next_pid [next_prio]``; STATE is the
  letters of prev_state's low eight bits ("|" between them, "R" for none), as write_state()
  prints them, by the format's own __print_flags table (perfdata/sched.py).
- any other event whose print fmt is one format string and arguments ``REC->field`` or
  ``__get_str(field)``, with the conversions d i u o x X c s (flags, width, precision, the
  h hh l ll z lengths): printf'd as libtraceevent does.

Anything else (a print fmt with expressions, __print_flags, __print_symbolic, %p and the
kernel's %p extensions, sched_wakeup's plugin) is refused when the run starts (``check``), with
the event's name: not printed differently from perf.
"""
import re
import struct

from ..abi import consts as C
from ..perfdata import tracing_data
from ..perfdata.sched import SchedSwitch
from ..tracecmd.formats import TEP_FIELD_IS_DYNAMIC, TEP_FIELD_IS_RELATIVE, TEP_FIELD_IS_SIGNED, parse_event
from .script_fields import FieldsError

_CONV = re.compile(r"%([-+ #0]*)(\d*)(?:\.(\d+))?(hh|h|ll|l|z)?([diouxXcs%])")
_ANY_CONV = re.compile(r"%")
_ARG = re.compile(r"^(?:REC->(\w+)|__get_str\((\w+)\))$")
_ESC = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}
_BITS = {"hh": 8, "h": 16, None: 32, "l": 64, "ll": 64, "z": 64}
_INTS = {1: "B", 2: "H", 4: "I", 8: "Q"}


class _Field:
    def __init__(self, desc, endian):
        self.off, self.size, self.flags, self.endian = desc.offset, desc.size, desc.flags, endian
        self.array = desc.arraylen or "[" in desc.type

    def number(self, raw):
        """tep_read_number_field(): the field read unsigned by its size."""
        code = _INTS.get(self.size)
        if code is None:
            raise ValueError("field of %d bytes" % self.size)
        return struct.unpack_from(self.endian + code, raw, self.off)[0]

    def value(self, raw):
        """The field as a printf argument: a signed field as signed."""
        v = self.number(raw)
        if self.flags & TEP_FIELD_IS_SIGNED and v >> (8 * self.size - 1):
            v -= 1 << (8 * self.size)
        return v

    def string(self, raw):
        if self.flags & TEP_FIELD_IS_DYNAMIC:       # __data_loc: u32 len << 16 | offset
            loc = struct.unpack_from(self.endian + "I", raw, self.off)[0]
            start = loc & 0xffff
            if self.flags & TEP_FIELD_IS_RELATIVE:
                start += self.off + self.size
            data = raw[start:start + (loc >> 16)]
        else:
            data = raw[self.off:self.off + self.size]
        return bytes(data).split(b"\0", 1)[0].decode("utf-8", "replace")


def _split_args(text):
    """The print fmt line after its string: the arguments split at top-level commas."""
    args, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
            continue
        depth += ch in "([{"
        depth -= ch in ")]}"
        cur += ch
    if cur.strip():
        args.append(cur.strip())
    return args


def _print_fmt(fmt_text):
    """(format string, [argument texts]) of a format's ``print fmt:`` line, or None."""
    m = re.search(rb'^print fmt: "((?:[^"\\]|\\.)*)"(.*)$', fmt_text, re.M | re.S)
    if m is None:
        return None
    fmt = re.sub(r"\\(.)", lambda e: _ESC.get(e.group(1), "\\" + e.group(1)),
                 m.group(1).decode("utf-8", "replace"))
    rest = m.group(2).decode("utf-8", "replace").strip()
    return fmt, _split_args(rest[1:] if rest.startswith(",") else rest)


class _Printf:
    """A print fmt of REC->field / __get_str(field) arguments."""

    def __init__(self, name, fmt, args, fields, endian):
        self.pieces = []            # literal text, or (spec, length, conv, field, string?)
        pos, argi = 0, 0
        for m in _CONV.finditer(fmt):
            self.pieces.append(fmt[pos:m.start()])
            pos = m.end()
            if m.group(5) == "%":
                self.pieces.append("%")
                continue
            if argi >= len(args):
                raise FieldsError("-F trace: %s's print fmt has fewer arguments than conversions" % name)
            a = _ARG.match(args[argi])
            argi += 1
            field = a and fields.get(a.group(1) or a.group(2))
            if field is None:
                raise FieldsError("-F trace: %s's print fmt argument %r is not one deferstitch "
                                  "renders (REC->field, __get_str(field))" % (name, args[argi - 1]))
            spec = "%" + m.group(1) + m.group(2) + ("." + m.group(3) if m.group(3) else "")
            self.pieces.append((spec, m.group(4), m.group(5), field))
        rest = fmt[pos:]
        if _ANY_CONV.search(rest) or any(isinstance(p, str) and "%" in p and p != "%"
                                         for p in self.pieces):
            raise FieldsError("-F trace: %s's print fmt has a conversion deferstitch does not "
                              "render" % name)
        if argi != len(args):
            raise FieldsError("-F trace: %s's print fmt has arguments deferstitch does not "
                              "render" % name)
        self.pieces.append(rest)

    def text(self, raw):
        out = []
        for p in self.pieces:
            if isinstance(p, str):
                out.append(p)
                continue
            spec, length, conv, field = p
            if conv == "s":
                out.append((spec + "s") % field.string(raw))
                continue
            v = field.value(raw)
            bits = _BITS[length]
            v &= (1 << bits) - 1
            if conv in "di" and v >> (bits - 1):
                v -= 1 << bits
            if conv == "c":
                out.append((spec + "c") % chr(v & 0xff))
            else:
                out.append((spec + ("d" if conv in "diu" else conv)) % v)
        return "".join(out)


class _Switch:
    """plugin_sched_switch.c's sched_switch_handler."""

    def __init__(self, fields, sw):
        self.f, self.sw = fields, sw

    def text(self, raw):
        f = self.f
        prev, nxt = f["prev_pid"].number(raw), f["next_pid"].number(raw)
        return "%s:%d [%d] %s ==> %s:%d [%d]" % (
            f["prev_comm"].string(raw), prev, _int32(f["prev_prio"].number(raw)),
            self.sw.state(f["prev_state"].number(raw) & 0xffffffff), f["next_comm"].string(raw),
            nxt, _int32(f["next_prio"].number(raw)))


def _int32(v):
    v &= 0xffffffff
    return v - (1 << 32) if v >> 31 else v


class TraceText:
    """``text(entry, raw)``: the trace field of a sample of ``entry``; ``check(entries)``
    refuses, at the start, an event this module cannot print as perf does."""

    def __init__(self, perf):
        self.perf = perf
        self.printers = {}

    def check(self, entries):
        for e in entries:
            if e.attr.type == C.PERF_TYPE_TRACEPOINT:
                self._printer(e)

    def text(self, entry, raw):
        if raw is None:             # perf: PRINT_FIELD(TRACE) && sample->raw_data
            return ""
        try:
            return self._printer(entry).text(raw)
        except (struct.error, ValueError, IndexError):
            return "[FAILED TO PARSE]"

    def _printer(self, entry):
        p = self.printers.get(entry.index)
        if p is None:
            p = self.printers[entry.index] = self._make(entry)
        return p

    def _make(self, entry):
        perf = self.perf
        found = tracing_data.event_format(perf.tracing, entry.attr.config) if perf.tracing else None
        if found is None:
            raise FieldsError("-F trace: %s: the file holds no format for it (HEADER_TRACING_DATA)"
                              % entry.name)
        system, text = found
        desc, _why = parse_event(text, system)
        if desc is None:
            raise FieldsError("-F trace: %s: its format does not parse" % entry.name)
        fields = {d.name: _Field(d, perf.endian) for d in list(desc.common or ()) + list(desc.fields)}
        if system == "sched" and desc.name == "sched_switch":
            need = ("prev_comm", "prev_pid", "prev_prio", "prev_state", "next_comm", "next_pid", "next_prio")
            sw = SchedSwitch.of_format(desc.fields, text, perf.endian)
            if sw is not None and all(n in fields for n in need):
                return _Switch(fields, sw)
        if system == "sched" and desc.name in ("sched_wakeup", "sched_wakeup_new"):
            raise FieldsError("-F trace: %s: perf prints it through libtraceevent's sched_wakeup "
                              "plugin, which deferstitch does not follow" % entry.name)
        parsed = _print_fmt(bytes(text))
        if parsed is None:
            raise FieldsError("-F trace: %s: its format has no print fmt" % entry.name)
        return _Printf(entry.name, parsed[0], parsed[1], fields, perf.endian)
