"""Which attr a record belongs to: attr ids, ID_INDEX, HEADER_ATTR and PERF_SAMPLE_IDENTIFIER.

With one attr there is nothing to choose. With several, perf finds the sample id at a fixed
place: the first u64 of a SAMPLE and the last u64 of a sample_id trailer when every attr has
PERF_SAMPLE_IDENTIFIER, else where PERF_SAMPLE_ID sits (all attrs must then share sample_type,
as perf itself requires: evlist__valid_sample_type).
"""
import copy
import struct

from ..abi import consts as C
from ..abi.sample import SampleLayout

# Names perf gives the common software and hardware events, for files without EVENT_DESC.
_SW = ["cpu-clock", "task-clock", "page-faults", "context-switches", "cpu-migrations",
       "minor-faults", "major-faults", "alignment-faults", "emulation-faults", "dummy",
       "bpf-output", "cgroup-switches"]
_HW = ["cycles", "instructions", "cache-references", "cache-misses", "branches",
       "branch-misses", "bus-cycles", "stalled-cycles-frontend", "stalled-cycles-backend",
       "ref-cycles"]


def default_name(attr):
    if attr.type == 1 and attr.config < len(_SW):
        return _SW[attr.config] + modifiers(attr)
    if attr.type == 0 and attr.config < len(_HW):
        return _HW[attr.config] + modifiers(attr)
    return "event(type=%d,config=%#x)" % (attr.type, attr.config)


def modifiers(attr):
    """":uppp"-style suffix of an unnamed event, as perf 6.12+ evsel__add_modifiers() writes it:
    the levels counted when some are excluded, precise_ip as p's, H/G when host or guest is
    excluded (perf before 6.12 wrote H/G on another rule; 7.x is the reference here)."""
    f = attr.flags
    excl = lambda bit: f >> bit & 1      # noqa: E731 (FLAG_BITS positions)
    out = ""
    if excl(4) or excl(5) or excl(6):    # exclude_user, exclude_kernel, exclude_hv
        out += "".join(c for c, bit in (("k", 5), ("u", 4), ("h", 6)) if not excl(bit))
    out += "p" * (f >> 15 & 3)            # precise_ip
    if excl(19) or excl(20):             # exclude_host, exclude_guest
        out += "".join(c for c, bit in (("H", 19), ("G", 20)) if not excl(bit))
    return ":" + out if out else ""


class EventEntry:
    """One attr of the session: the attr, its sample ids, its name and its sample layout."""

    __slots__ = ("attr", "ids", "name", "named", "layout", "index")

    def __init__(self, attr, ids, index):
        self.attr, self.ids, self.index = attr, list(ids), index
        self.name = default_name(attr)
        self.named = False        # a name from the file (EVENT_DESC, EVENT_UPDATE)
        self.layout = SampleLayout(attr)


class Evlist:
    def __init__(self, endian):
        self.endian = endian
        self.entries = []
        self.by_id = {}
        self.index_entries = []    # ID_INDEX: (id, idx, cpu, tid) of every sample id
        self.u64 = struct.Struct(endian + "Q")
        self.sample_id_at = None      # offset of the id in a SAMPLE, None = single attr
        self.trailer_id_from_end = None

    def copy(self):
        """A copy to note records into and drop (PerfData.ahead): its entries copied, so that
        names given to them leave these alone; attrs and layouts shared (never changed)."""
        new = Evlist(self.endian)
        new.entries = [copy.copy(ent) for ent in self.entries]
        mine = {id(old): ent for old, ent in zip(self.entries, new.entries)}
        new.by_id = {i: mine[id(ent)] for i, ent in self.by_id.items()}
        new.index_entries = list(self.index_entries)
        new.sample_id_at, new.trailer_id_from_end = self.sample_id_at, self.trailer_id_from_end
        return new

    def add(self, attr, ids):
        entry = EventEntry(attr, ids, len(self.entries))
        self.entries.append(entry)
        for i in ids:
            self.by_id[i] = entry
        self._plan()
        return entry

    def add_index(self, index_entries):
        """ID_INDEX: idx is the attr's position in the session."""
        self.index_entries.extend(index_entries)
        for ent in index_entries:
            if ent.idx < len(self.entries):
                self.by_id.setdefault(ent.id, self.entries[ent.idx])

    def name_ids(self, ids, name):
        """EVENT_UPDATE(NAME): the event of these ids is called ``name`` from now on."""
        for i in ids:
            ent = self.by_id.get(i)
            if ent is not None:
                ent.name, ent.named = name, True

    def name_tracepoints(self, names):
        """Tracing data: an unnamed tracepoint event is "system:name" of the format whose ID is
        its config (perf's evsel__tp_format), until EVENT_DESC or EVENT_UPDATE name it."""
        for ent in self.entries:
            if ent.attr.type == C.PERF_TYPE_TRACEPOINT and not ent.named and ent.attr.config in names:
                ent.name = names[ent.attr.config]

    def name_by_position(self, names):
        """EVENT_DESC: its i-th name is the i-th attr's, as perf's evlist__set_event_name()
        matches them (by index, not by ids, which an entry may lack), an event named already
        keeping its name."""
        for ent, name in zip(self.entries, names):
            if not ent.named and name:
                ent.name, ent.named = name, True

    def _plan(self):
        if len(self.entries) <= 1:
            self.sample_id_at = self.trailer_id_from_end = None
            return
        lays = [e.layout for e in self.entries]
        if all(l.sample_type & C.PERF_SAMPLE_IDENTIFIER for l in lays):
            self.sample_id_at, self.trailer_id_from_end = 8, 8
        else:
            self.sample_id_at = lays[0].id_offset
            self.trailer_id_from_end = lays[0].trailer_id_from_end

    @property
    def first(self):
        return self.entries[0] if self.entries else None

    def for_sample(self, data):
        """The entry a SAMPLE record belongs to (None when its id is unknown)."""
        if self.sample_id_at is None:
            return self.entries[0] if self.entries else None
        if len(data) < self.sample_id_at + 8:
            return None
        return self.by_id.get(self.u64.unpack_from(data, self.sample_id_at)[0])

    def for_trailer(self, data):
        """The entry whose sample_id trailer a non-sample kernel record carries."""
        if self.trailer_id_from_end is None:
            return self.entries[0] if self.entries else None
        if len(data) < 8 + self.trailer_id_from_end:
            return self.entries[0]
        ent = self.by_id.get(self.u64.unpack_from(data, len(data) - self.trailer_id_from_end)[0])
        return ent if ent is not None else self.entries[0]

    def time_of(self, rec):
        """The timestamp of a record, or None (user records, no sample_id_all, no TIME)."""
        t = rec.type
        if t >= C.PERF_RECORD_USER_TYPE_START or not self.entries:
            return None
        if t == C.PERF_RECORD_SAMPLE:       # (the sorter asks this of every record: kept short)
            data = rec.data
            ent = self.entries[0] if self.sample_id_at is None else self.for_sample(data)
            if ent is None:
                return None
            off = ent.layout.time_offset
            if off is None or len(data) < off + 8:
                return None
            return self.u64.unpack_from(data, off)[0]
        ent = self.for_trailer(rec.data)
        return ent.layout.time_of_trailer(rec.data)
