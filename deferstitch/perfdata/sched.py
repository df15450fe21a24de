"""What the off-CPU view reads of perf.data: sched:sched_switch's fields in a sample's raw data,
by the format the file carries (HEADER_TRACING_DATA), and the switch-in of PERF_RECORD_SWITCH.

The task state is printed as the kernel's own format prints it (include/trace/events/sched.h,
TRACE_EVENT(sched_switch)): ``prev_state & mask`` of 0 is "R" (runnable: preempted), else the
letters of its bits from the format's ``__print_flags`` table ({ 0x01, "S" }, { 0x02, "D" }, ...),
the mask the table's highest bit times two, less one (TASK_REPORT_MAX - 1).
"""
import re
import struct

from ..abi import consts as C
from ..event_format import parse_event
from . import tracing_data

# the table of Linux 5.14 to 7.x (TASK_REPORT), for a format whose print fmt we cannot read
STATE_LETTERS = ((0x01, "S"), (0x02, "D"), (0x04, "T"), (0x08, "t"), (0x10, "X"), (0x20, "Z"),
                 (0x40, "P"), (0x80, "I"))
_FLAG = re.compile(rb'\{\s*(0x[0-9a-fA-F]+|\d+)\s*,\s*"([^"]*)"\s*\}')
_SWITCH_OUT = 1 << 13              # PERF_RECORD_MISC_SWITCH_OUT
_INTS = {1: "b", 2: "h", 4: "i", 8: "q"}     # an integer field's size -> its struct code


class SchedSwitch:
    """The fields of one file's sched_switch: ``fields(raw)`` -> (prev_comm, prev_pid, state
    letter, next_pid)."""

    common_pid = None           # (offset, size) of the common field common_pid, when of() read it

    def __init__(self, desc, endian, letters=STATE_LETTERS):
        by = {f.name: f for f in desc.fields}
        self.endian = endian
        self.at = {n: (by[n].offset, by[n].size) for n in ("prev_comm", "prev_pid", "prev_state", "next_pid")}
        for n in ("prev_pid", "prev_state", "next_pid"):
            if self.at[n][1] not in _INTS:      # a format we cannot read: of_format() says None
                raise KeyError(n)
        self.letters = letters
        self.mask = (max(bit for bit, _ in letters) << 1) - 1

    @classmethod
    def of(cls, perf, entry):
        """The SchedSwitch of ``entry`` when it is sched:sched_switch with its format in the
        file and the fields it needs, else None."""
        if entry.attr.type != C.PERF_TYPE_TRACEPOINT or not perf.tracing:
            return None
        found = tracing_data.event_format(perf.tracing, entry.attr.config)
        if found is None or found[0] != "sched":
            return None
        try:
            desc, _why = parse_event(found[1], found[0])
        except ValueError:
            return None
        if desc is None or desc.name != "sched_switch":
            return None
        sw = cls.of_format(desc.fields, found[1], perf.endian)
        if sw is not None:
            for f in desc.common or ():
                if f.name == "common_pid":
                    sw.common_pid = (f.offset, f.size)
                    break
        return sw

    @classmethod
    def of_format(cls, fields, text, endian):
        """The SchedSwitch of a sched_switch format: its field descriptions (event_format.FieldDesc:
        name, offset, size) and its text, whose ``__print_flags`` table gives the letters (the
        table of STATE_LETTERS where the text has none); None when a field it needs is missing.
        Both sides build theirs here (the trace side: tracecmd/offcpu.py)."""
        try:
            return cls(_Desc(fields), endian, letters_of(text))
        except KeyError:            # a format without prev_pid & co: not one we can read
            return None

    def pid_fields(self):
        """((offset, size), ...) of the raw data's pids: common_pid (when of() found it),
        prev_pid, next_pid; what a rewrite of a file's tids shifts too (bench/build.py)."""
        return tuple(x for x in (self.common_pid, self.at["prev_pid"], self.at["next_pid"]) if x)

    def _int(self, raw, name, signed=True):
        off, size = self.at[name]
        code = _INTS[size]
        return struct.unpack_from(self.endian + (code if signed else code.upper()), raw, off)[0]

    def fields(self, raw):
        """(prev_comm, prev_pid, state letter, next_pid) of a sample's raw data; ValueError on
        data too short for the format."""
        if raw is None:
            raise ValueError("sched_switch sample without raw data")
        try:
            off, size = self.at["prev_comm"]
            comm = bytes(raw[off:off + size]).split(b"\0", 1)[0].decode("utf-8", "replace")
            state = self._int(raw, "prev_state", signed=False)
            return comm, self._int(raw, "prev_pid"), self.state(state), self._int(raw, "next_pid")
        except struct.error as err:
            raise ValueError("sched_switch raw data: %s" % err) from None

    def state(self, prev_state):
        """The state letter(s) of ``prev_state`` as the format prints them ("R" when runnable)."""
        masked = prev_state & self.mask
        if not masked:
            return "R"
        return "|".join(name for bit, name in self.letters if masked & bit) or "R"


class _Desc:
    """The ``fields`` of an event format, as SchedSwitch takes them."""

    def __init__(self, fields):
        self.fields = list(fields)


def letters_of(text):
    """((bit, letter), ...) of a format text's ``__print_flags`` table, else STATE_LETTERS."""
    if isinstance(text, str):
        text = text.encode("utf-8", "replace")
    return tuple((int(b, 0), name.decode("utf-8", "replace"))
                 for b, name in _FLAG.findall(text or b"")) or STATE_LETTERS


def switch_in(rec):
    """Whether a PERF_RECORD_SWITCH or SWITCH_CPU_WIDE is a switch-in (kernel/events/core.c
    perf_event_switch_output(): the record of the task coming in has no MISC_SWITCH_OUT; its
    sample_id is that task's)."""
    return rec.type in (C.PERF_RECORD_SWITCH, C.PERF_RECORD_SWITCH_CPU_WIDE) and not rec.misc & _SWITCH_OUT
