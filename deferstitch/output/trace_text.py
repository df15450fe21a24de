"""perf script's ``trace`` field: a tracepoint sample's raw data as text, as perf prints it
(tools/perf/util/trace-event-parse.c event_format__fprintf: libtraceevent's tep_print_event with
TEP_PRINT_INFO, the event's handler from the plugins perf loads, else its print fmt).

- sched:sched_switch: libtraceevent's plugins/plugin_sched_switch.c sched_switch_handler,
  ``prev_comm:prev_pid [prev_prio] STATE ==> next_comm:next_pid [next_prio]``; STATE is the
  letters of prev_state's low eight bits ("|" between them, "R" for none), as write_state()
  prints them, by the format's own __print_flags table (perfdata/sched.py).
- sched:sched_wakeup and sched_wakeup_new: the same plugin's sched_wakeup_handler,
  ``comm:pid [prio] CPU:target_cpu``.
- kmem:kfree, kmalloc, kmalloc_node, kmem_cache_alloc, kmem_cache_alloc_node, kmem_cache_free:
  plugins/plugin_kmem.c call_site_handler, ``(func+0xoff) `` and then the print fmt's text.
- timer:hrtimer_expire_entry and hrtimer_start: plugins/plugin_hrtimer.c's handlers.
- tlb:tlb_flush: plugins/plugin_tlb.c tlb_flush_handler.
- any other event: its print fmt, parsed and printed as libtraceevent does (print_fmt.py).

Kernel addresses (%pS, %ps, the plugins' function names) are named as perf names them for the
library (machine__resolve_kernel_addr): by the run's kernel symbols (PerfContext's resolver).

A print fmt print_fmt.py does not follow (the %pM %pI %pU %ph extensions, cpumasks, functions of
plugins) is refused when the run starts (``check``), naming the event and the construct: never
printed differently from perf.
"""
import struct

from ..abi import consts as C
from ..perfdata import tracing_data
from ..perfdata.sched import SchedSwitch
from ..event_format import TEP_FIELD_IS_DYNAMIC, TEP_FIELD_IS_RELATIVE, parse_event
from ..symbols.maps import KERNEL_START
from . import print_fmt
from .script_fields import FieldsError

_KMEM = ("kfree", "kmalloc", "kmalloc_node", "kmem_cache_alloc", "kmem_cache_alloc_node",
         "kmem_cache_free")
_TLB = {0: "flush on task switch", 1: "remote shootdown", 2: "local shootdown",
        3: "local mm shootdown"}


class _Field:
    def __init__(self, desc, endian):
        self.off, self.size, self.flags, self.endian = desc.offset, desc.size, desc.flags, endian

    def number(self, raw):
        """tep_read_number_field(): the field read unsigned by its size."""
        code = _INTS.get(self.size)
        if code is None:
            raise ValueError("field of %d bytes" % self.size)
        return struct.unpack_from(self.endian + code, raw, self.off)[0]

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


_INTS = {1: "B", 2: "H", 4: "I", 8: "Q"}


class _Pretty:
    """pretty_print: the event's print fmt (output/print_fmt.py)."""

    def __init__(self, fmt, endian):
        self.fmt, self.endian = fmt, endian

    def text(self, raw):
        return self.fmt.text(raw, self.endian)


class _CallSite:
    """plugin_kmem.c call_site_handler: ``(func+0xoff) `` before the print fmt's text, when
    the call site names a kernel function."""

    def __init__(self, field, resolve, pretty):
        self.field, self.resolve, self.pretty = field, resolve, pretty

    def text(self, raw):
        val = self.field.number(raw)
        hit = self.resolve(val)
        head = "(%s+0x%x) " % (hit[0], (val - hit[1]) & 0xffffffff) if hit else ""
        return head + self.pretty.text(raw)


class _Hrtimer:
    """plugin_hrtimer.c timer_expire_handler / timer_start_handler: ``hrtimer=0x%llx``, the
    function as tep_print_func_field prints it (``name/0x<start - addr>``), the times %llu."""

    def __init__(self, fields, resolve, start):
        self.f, self.resolve, self.start = fields, resolve, start

    def func(self, raw):
        val = self.f["function"].number(raw)
        hit = self.resolve(val)
        if hit is None:
            return "0x%08x" % val
        return "%s/0x%x" % (hit[0], (hit[1] - val) & 0xffffffffffffffff)

    def text(self, raw):
        f = self.f
        timer = f.get("timer") or f["hrtimer"]
        out = "hrtimer=0x%x" % timer.number(raw)
        if self.start:
            return out + " function=%s expires=%d softexpires=%d" % (
                self.func(raw), f["expires"].number(raw), f["softexpires"].number(raw))
        return out + " now=%d function=%s" % (f["now"].number(raw), self.func(raw))


class _TlbFlush:
    """plugin_tlb.c tlb_flush_handler: ``pages=%ld reason=<words> (%lld)``."""

    def __init__(self, fields):
        self.f = fields

    def text(self, raw):
        pages = _int64(self.f["pages"].number(raw))
        reason = self.f["reason"].number(raw)
        return "pages=%d reason=%s (%d)" % (pages, _TLB.get(reason, ""), _int64(reason))


def _int64(v):
    return v - (1 << 64) if v >> 63 else v


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

    def __init__(self, perf, ctx=None):
        self.perf = perf
        self.printers = {}
        self.resolver = ctx.resolver if ctx is not None else None

    def resolve(self, addr):
        """machine__resolve_kernel_addr, tep's function resolver in perf: (name, start) of
        the kernel symbol holding addr, or None."""
        if self.resolver is None or addr < KERNEL_START:
            return None
        name, off, _dso = self.resolver.frame(-1, addr)
        return (name, addr - off) if name is not None else None

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
        return printer(entry.name, found[0], found[1], perf.endian, self.resolve)


def printer(name, system, text, endian, resolve=None):
    """The printer of the trace text of event ``name`` by its format ``text`` (bytes) of
    ``system``: ``printer(...).text(raw)``; FieldsError when it is not one printed here.
    ``resolve(addr)``: (name, start) of a kernel address's symbol, or None."""
    resolve = resolve or (lambda _addr: None)
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
    if system == "timer" and desc.name in ("hrtimer_expire_entry", "hrtimer_start") \
            and "function" in fields and ("timer" in fields or "hrtimer" in fields) \
            and all(n in fields for n in (("expires", "softexpires") if desc.name == "hrtimer_start"
                                          else ("now",))):
        return _Hrtimer(fields, resolve, desc.name == "hrtimer_start")
    if system == "tlb" and desc.name == "tlb_flush" and "pages" in fields and "reason" in fields:
        return _TlbFlush(fields)
    try:
        pretty = _Pretty(print_fmt.parse(bytes(text), {d.name: d for d in list(desc.common or ())
                                                       + list(desc.fields)}, resolve), endian)
    except print_fmt.Failed:
        pretty = _Pretty(print_fmt.FailedFmt(list(desc.fields)), endian)
    except print_fmt.Unsupported as why:
        raise FieldsError("-F trace: %s's print fmt has %s, which deferstitch does not render"
                          % (name, why)) from None
    if system == "kmem" and desc.name in _KMEM and "call_site" in fields:
        return _CallSite(fields["call_site"], resolve, pretty)
    return pretty
