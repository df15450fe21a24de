"""Counted stacks as pprof's Profile holds them (github.com/google/pprof, package profile), and
their one writer: what a single file's ``export --format pprof`` and the fleet's pprof both fill
and write.

    sample types        what each sample's values are (samples/count, cpu/nanoseconds)
    strings             each string once, ids in the order first met, "" first
    mappings, functions, locations
                        each once, ids from 1 in the order first met
    stacks              location ids leaf first, each distinct stack once
    label sets          each distinct set of (key, string) labels once
    samples             (stack, label set, tid) -> values, summed as pprof's merge sums them

It is held as it will be written (pprof_wire.py): each table entry encoded when first met, each
stack as its packed location ids, each label set as bytes, and per sample one dict entry (an int
key) and one array slot per value, so memory follows the output's size, not Python objects per
sample. ``write()`` writes the fields in protobuf's order: sample types, samples, mappings,
locations, functions, strings, duration, period type.
"""
from array import array

from . import pprof_wire as W

_TID_BITS = 33              # a sample's key: stack, label set, tid + its 33 low bits (-1: no tid)
_TID_MASK = (1 << _TID_BITS) - 1
_U64_MAX = (1 << 64) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class Profile:
    """The model; ``tids``: each sample carries a numeric ``tid`` label (its own thread);
    ``signed``: values may be negative (int64, as pprof's own: a diff's base, negated)."""

    def __init__(self, sample_types, period_type=None, tids=False, signed=False):
        self.strings = {}
        self._strings = []                  # string_table entries, encoded, in id order
        self.s("")
        self._head = b"".join(W.field(W.SAMPLE_TYPE, W.value_type(self.s(t), self.s(u)))
                              for t, u in sample_types)
        self._period_type = W.field(W.PERIOD_TYPE, W.value_type(
            self.s(period_type[0]), self.s(period_type[1]))) if period_type else b""
        self.functions, self.locations, self.mappings = {}, {}, {}
        self._tables = {W.MAPPING: [], W.LOCATION: [], W.FUNCTION: []}   # encoded, in id order
        self._stacks = {}          # packed location ids -> stack number
        self._stack_bodies = []    # stack number -> packed location ids
        self._labels = {}          # the caller's key of a label set -> its number
        self._label_bytes = []     # label set number -> its encoded labels
        self.tids, self._tid_key = tids, None
        self._samples = {}         # (stack << 32 | label set) << 33 | tid -> sample number
        self._values = [array("q" if signed else "Q") for _ in sample_types]    # per value, per sample
        self._lo, self._hi = (_INT64_MIN, _INT64_MAX) if signed else (0, _U64_MAX)
        self.first = self.last = None

    def s(self, text):
        """The string id of ``text``."""
        i = self.strings.get(text)
        if i is None:
            i = self.strings[text] = len(self._strings)
            self._strings.append(W.string(text))
        return i

    def mapping(self, filename, m=None):
        """The id of the mapping of ``filename``: the first met of that name, with ``m``'s
        start, end, pgoff and build id when known (a symbols.maps Map), else only its name."""
        mid = self.mappings.get(filename)
        if mid is None:
            mid = self.mappings[filename] = len(self.mappings) + 1
            name = self.s(filename)
            if m is not None:
                build_id = self.s(m.build_id) if m.build_id else 0
                self._tables[W.MAPPING].append(W.mapping(mid, m.start, m.end, m.pgoff, name, build_id))
            else:
                self._tables[W.MAPPING].append(W.mapping(mid, 0, 0, 0, name, 0))
        return mid

    def function(self, name, filename=None):
        """The id of the function ``name`` of ``filename`` (None: no file named)."""
        fkey = (name, filename)
        fid = self.functions.get(fkey)
        if fid is None:
            fid = self.functions[fkey] = len(self.functions) + 1
            sname = self.s(name)
            self._tables[W.FUNCTION].append(W.function(
                fid, sname, sname, self.s(filename) if filename is not None else 0))
        return fid

    def location(self, key, mapping_id, address, function_id, inlined=()):
        """A new location under the caller's ``key`` (``locations.get(key)`` first): a Line per
        function id of ``inlined`` (innermost first), then the holder's."""
        lid = self.locations[key] = len(self.locations) + 1
        self._tables[W.LOCATION].append(W.location(lid, mapping_id, address, function_id, inlined))
        return lid

    def stack(self, body):
        """The number of the stack of packed location ids ``body`` (W.packed, leaf first)."""
        n = self._stacks.get(body)
        if n is None:
            n = self._stacks[body] = len(self._stack_bodies)
            self._stack_bodies.append(body)
        return n

    def outer(self, stack, lid):
        """The number of ``stack`` with location ``lid`` as its outermost frame."""
        return self.stack(self._stack_bodies[stack] + W.varint(lid))

    def labels(self, key, pairs):
        """The number of the label set of ``pairs`` ((key, string); an empty string left out),
        made once per the caller's ``key``: its strings are met now, in their order."""
        n = self._labels.get(key)
        if n is None:
            n = self._labels[key] = len(self._label_bytes)
            self._label_bytes.append(b"".join(W.label(self.s(k), self.s(v)) for k, v in pairs if v))
            if self.tids:
                self._tid_key = self.s("tid")
        return n

    def add(self, stack, labels, tid, values):
        """Values (one per sample type) of a sample of ``stack``, ``labels`` and ``tid``
        (None: -1), summed into those of its equal; a sum past 2**64 stays at 2**64 - 1 (signed:
        within int64)."""
        skey = (stack << 32 | labels) << _TID_BITS | ((tid if tid is not None else -1) & _TID_MASK)
        i = self._samples.get(skey)
        lo, hi = self._lo, self._hi
        if i is None:
            self._samples[skey] = len(self._values[0])
            for arr, v in zip(self._values, values):
                arr.append(v if lo <= v <= hi else hi if v > hi else lo)
        else:
            for arr, v in zip(self._values, values):
                v += arr[i]
                arr[i] = v if lo <= v <= hi else hi if v > hi else lo

    def times(self, first, last):
        """Samples taken from ``first`` to ``last`` (None: ``first``): the duration spans them."""
        if first is not None:
            if self.first is None or first < self.first:
                self.first = first
            if last is None:
                last = first
            if self.last is None or last > self.last:
                self.last = last

    def write(self, f):
        """The profile, gzip'd, into binary file ``f`` (the file itself stays the caller's)."""
        out = W.GzipProfile(f)
        out.write(self._head)
        stacks = [W.locations_field(b) for b in self._stack_bodies]
        labels, tids, values = self._label_bytes, {}, self._values
        tid_key = self._tid_key if self.tids else None
        mask, varint, parts = (1 << 32) - 1, W.varint, []
        encoded = {}                    # value -> varint: counts and periods repeat
        one = W.ONE_BYTE                # (Sample.value's packed length: at most 10 a value)
        for key, i in self._samples.items():
            tl = b""
            if tid_key is not None:
                t = key & _TID_MASK
                tl = tids.get(t)
                if tl is None:
                    tl = tids[t] = W.label(tid_key, 0, t if t != _TID_MASK else -1)
            key >>= _TID_BITS
            vs = []
            for arr in values:
                v = arr[i]
                e = encoded.get(v)
                if e is None:
                    e = encoded[v] = varint(v if v <= W.INT64_MAX else W.INT64_MAX)
                vs.append(e)
            if len(encoded) > 1 << 16:
                encoded.clear()
            vs = b"".join(vs)
            body = b"".join((stacks[key >> 32], b"\x12", one[len(vs)], vs, labels[key & mask], tl))
            parts += (W.SAMPLE, varint(len(body)), body)        # W.sample(), inline: one per sample
            if len(parts) > 3000:
                out.write(b"".join(parts))
                parts.clear()
        out.write(b"".join(parts))
        for tag in (W.MAPPING, W.LOCATION, W.FUNCTION):
            for data in self._tables[tag]:
                out.write(data)
        for data in self._strings:
            out.write(data)
        if self.first is not None and self.last != self.first:    # perf's clock is not wall time: no time_nanos
            out.write(W.DURATION + W.varint(self.last - self.first))
        out.write(self._period_type)
        out.close()
