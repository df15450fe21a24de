"""perf script's ``trace`` field: a tracepoint sample's raw data as text, as perf prints it
(tools/perf/util/trace-event-parse.c event_format__fprintf: libtraceevent's tep_print_event with
TEP_PRINT_INFO, the event's handler from the plugins perf loads, else its print fmt).

- sched:sched_switch: libtraceevent's plugins/plugin_sched_switch.c sched_switch_handler,
  ``prev_comm:prev_pid [prev_prio] STATE ==> next_comm:next_pid [next_prio]``; STATE is the
  letters of prev_state's low eight bits ("|" between them, "R" for none), as write_state()
  prints them, by the format's own __print_flags table (perfdata/sched.py).
- sched:sched_wakeup and sched_wakeup_new: the same plugin's sched_wakeup_handler,
  ``comm:pid [prio] CPU:target_cpu``.
- any other event whose print fmt is one format string and arguments ``REC->field``,
  ``__get_str(field)``, ``REC->field ? "a" : "b"`` or ``__print_symbolic(REC->field, { N,
  "name" }, ...)`` (numbers only), with the conversions d i u o x X c s (flags, width,
  precision, the h hh l ll z lengths): printf'd as libtraceevent does.

Anything else (casts and other expressions, __print_flags, __print_symbolic of enum names, %p
and the kernel's %p extensions) is refused when the run starts (``check``), naming the event:
never printed differently from perf.
"""
import re
import struct

from ..abi import consts as C
from ..perfdata import tracing_data
from ..perfdata.sched import SchedSwitch
from ..event_format import (TEP_FIELD_IS_DYNAMIC, TEP_FIELD_IS_RELATIVE, TEP_FIELD_IS_SIGNED,
                                TEP_FIELD_IS_STRING, parse_event)
from .script_fields import FieldsError

_CONV = re.compile(r"%([-+ #0]*)(\d*)(?:\.(\d+))?(hh|h|ll|l|z)?([diouxXcs%])")
_ARG = re.compile(r"^(?:REC->(\w+)|__get_str\((\w+)\))$")
_TERNARY = re.compile(r'^REC->(\w+) \? "([^"\\]*)" : "([^"\\]*)"$')
_SYMBOLIC = re.compile(r"^__print_symbolic\(REC->(\w+),(.*)\)$", re.S)
_SYMBOL = re.compile(r'\{\s*(-?(?:0x[0-9a-fA-F]+|\d+))\s*,\s*"([^"\\]*)"\s*\}')
_ESC = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}
_BITS = {"hh": 8, "h": 16, None: 32, "l": 64, "ll": 64, "z": 64}
_INTS = {1: "B", 2: "H", 4: "I", 8: "Q"}
_TEXT = TEP_FIELD_IS_STRING | TEP_FIELD_IS_DYNAMIC     # a field %s prints


class _Field:
    def __init__(self, desc, endian):
        self.off, self.size, self.flags, self.endian = desc.offset, desc.size, desc.flags, endian

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


class _Choice:
    """``REC->f ? "a" : "b"``: a string by the field's truth."""

    def __init__(self, field, yes, no):
        self.field, self.yes, self.no = field, yes, no

    def string(self, raw):
        return self.yes if self.field.number(raw) else self.no


class _Symbolic:
    """``__print_symbolic(REC->f, { value, "name" }, ...)``: the name of the field's value,
    else the value as 0x%llx (libtraceevent print_str_arg, TEP_PRINT_SYMBOL)."""

    def __init__(self, field, names):
        self.field, self.names = field, names

    def string(self, raw):
        v = self.field.value(raw)
        name = self.names.get(v)
        return name if name is not None else "0x%x" % (v & 0xffffffffffffffff)


def _arg(text, fields):
    """The printer of one print fmt argument, or None when it is not one rendered here."""
    a = _ARG.match(text)
    if a:
        return fields.get(a.group(1) or a.group(2))
    a = _TERNARY.match(text)
    if a and a.group(1) in fields:
        return _Choice(fields[a.group(1)], a.group(2), a.group(3))
    a = _SYMBOLIC.match(text)
    if a and a.group(1) in fields:
        table = a.group(2).strip()
        pairs = _SYMBOL.findall(table)
        if pairs and _SYMBOL.sub("", table).replace(",", "").strip() == "":
            return _Symbolic(fields[a.group(1)], {int(v, 0): n for v, n in pairs})
    return None


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
        self.pieces = []            # literal text, or (spec, length, conv, field)
        convs = list(_CONV.finditer(fmt))
        known = {m.start() for m in convs} | {m.start() + 1 for m in convs if m.group(5) == "%"}
        odd = [fmt[i:i + 3] for i in range(len(fmt)) if fmt[i] == "%" and i not in known]
        if odd:
            raise FieldsError("-F trace: %s's print fmt has the conversion %r, which deferstitch "
                              "does not render" % (name, odd[0]))
        pos, argi = 0, 0
        for m in convs:
            self.pieces.append(fmt[pos:m.start()])
            pos = m.end()
            if m.group(5) == "%":
                self.pieces.append("%")
                continue
            if argi >= len(args):
                raise FieldsError("-F trace: %s's print fmt has fewer arguments than conversions" % name)
            field = _arg(args[argi], fields)
            argi += 1
            if field is None:
                raise FieldsError("-F trace: %s's print fmt argument %r is not one deferstitch "
                                  "renders" % (name, args[argi - 1]))
            text = not isinstance(field, _Field) or field.flags & _TEXT
            if (m.group(5) == "s") != bool(text):         # %s of a number, a number of a string
                raise FieldsError("-F trace: %s's print fmt prints %r with %%%s, which deferstitch "
                                  "does not render" % (name, args[argi - 1], m.group(5)))
            spec = "%" + m.group(1) + m.group(2) + ("." + m.group(3) if m.group(3) else "")
            self.pieces.append((spec, m.group(4), m.group(5), field))
        rest = fmt[pos:]
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


class _Wakeup:
    """plugin_sched_switch.c's sched_wakeup_handler (sched_wakeup, sched_wakeup_new):
    ``comm:pid [prio]``, `` success=N`` where the format has it, `` CPU:%03d``."""

    def __init__(self, fields):
        self.f = fields

    def text(self, raw):
        f = self.f
        out = "%s:%d" % (f["comm"].string(raw), f["pid"].number(raw))
        if "prio" in f:
            out += " [%d]" % f["prio"].number(raw)
        if "success" in f:
            out += " success=%d" % f["success"].number(raw)
        if "target_cpu" in f:
            out += " CPU:%03d" % f["target_cpu"].number(raw)
        return out


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
        return printer(entry.name, found[0], found[1], perf.endian)


def printer(name, system, text, endian):
    """The printer of the trace text of event ``name`` by its format ``text`` (bytes) of
    ``system``: ``printer(...).text(raw)``; FieldsError when it is not one printed here."""
    desc, _why = parse_event(text, system)
    if desc is None:
        raise FieldsError("-F trace: %s: its format does not parse" % name)
    fields = {d.name: _Field(d, endian) for d in list(desc.common or ()) + list(desc.fields)}
    if system == "sched" and desc.name == "sched_switch":
        need = ("prev_comm", "prev_pid", "prev_prio", "prev_state", "next_comm", "next_pid", "next_prio")
        sw = SchedSwitch.of_format(desc.fields, text, endian)
        if sw is not None and all(n in fields for n in need):
            return _Switch(fields, sw)
    if system == "sched" and desc.name in ("sched_wakeup", "sched_wakeup_new") \
            and "pid" in fields and "comm" in fields:
        return _Wakeup(fields)
    parsed = _print_fmt(bytes(text))
    if parsed is None:
        raise FieldsError("-F trace: %s: its format has no print fmt" % name)
    return _Printf(name, parsed[0], parsed[1], fields, endian)
