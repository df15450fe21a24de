"""trace.dat metadata parsed as libtraceevent 1.7.1 and libtracecmd 3.1.6 parse it (Debian
bookworm's, the ones tests/libtracecmd.Handle loads): event formats, header_page, kallsyms, saved cmdlines.

Each function follows its C original step by step, quirks included, so that what it gives equals
what tests/libtracecmd.Handle gets from the library (tests/test_tracecmd_formats.py holds them equal):

- Events: each format by deferstitch/event_format.py's parse_event (libtraceevent
  parse_format; below both sides: a perf.data's tracing data holds the same text), and the
  blktrace format trace-cmd makes up.
- parse_header_page: tep_parse_header_page -> parse_header_field; the size of ``commit`` is
  what libtracecmd then takes as the long size (read_header_files).
- Kallsyms: tep_parse_kallsyms + tep_find_function (func_map_init, __find_func's bsearch).
- Cmdlines: tep_parse_saved_cmdlines + tep_data_comm_from_pid (cmdline_init, find_cmdline).
"""
import re
from array import array

from ..event_format import (  # noqa: F401  (the parser of event formats, below both sides)
    TEP_FIELD_IS_ARRAY, TEP_FIELD_IS_DYNAMIC, TEP_FIELD_IS_FLAG, TEP_FIELD_IS_LONG,
    TEP_FIELD_IS_POINTER, TEP_FIELD_IS_RELATIVE, TEP_FIELD_IS_SIGNED, TEP_FIELD_IS_STRING,
    TEP_FIELD_IS_SYMBOLIC, ITEM, NEWLINE, OP, ULONG_MAX, Crashes, EventDesc, FieldDesc, _Input, _int,
    parse_event)


# trace-cmd 3.1.6 lib/trace-cmd/trace-blk-hack.c: the format it makes up for blktrace records
_BLK_START = ("name: blktrace\nID: %d\nformat:\n"
              "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\n"
              "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\n"
              "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\n"
              "\tfield:int common_pid;\toffset:4;\tsize:4;\n")
_BLK_LOCK = "\tfield:int common_lock_depth;\toffset:8;\tsize:4;\n"
_BLK_BODY = ("\n\tfield:u64 sector;\toffset:16;\tsize:8;\n\tfield:int bytes;\toffset:24;\tsize:4;\n"
             "\tfield:int action;\toffset:28;\tsize:4;\n\tfield:int pid;\toffset:32;\tsize:4;\n"
             "\tfield:int device;\toffset:36;\tsize:4;\n\tfield:int cpu;\toffset:40;\tsize:4;\n"
             "\tfield:short error;\toffset:44;\tsize:2;\n\tfield:short pdu_len;\toffset:46;\tsize:2;\n"
             "\tfield:void data;\toffset:48;\tsize:0;\n\nprint fmt: \"%d\", REC->pid\n")


class Events:
    """Every event format of a file, as libtracecmd's tep holds them: sorted by ID (formats
    of one ID in the order parsed: add_event), the count of those dropped, and trace-cmd's
    made-up ftrace:blktrace (tracecmd_init_data runs tracecmd_blk_hack on every open)."""

    def __init__(self, meta):
        self.events, self.not_parsed, self.failed = [], 0, []
        self.texts = {}     # id -> format text of system sched (off-CPU time reads its tables)
        for system, at, text in [(b"ftrace", at, text) for at, text in meta.ftrace] + meta.events:
            try:
                ev, why = parse_event(text, system, meta.long_size)
            except Crashes as err:
                raise Crashes(at, "format of %s: %s" % (_shown(system), err)) from None
            if ev is None:
                self.not_parsed += 1
                continue
            if ev.system == "sched":
                self.texts.setdefault(ev.id, bytes(text))
            self._add(ev, why)
        self._blk_hack(meta.long_size)

    def _add(self, ev, why):
        if why is not None:
            self.failed.append((ev, why))
        i = len(self.events)
        while i and self.events[i - 1].id > ev.id:
            i -= 1
        self.events.insert(i, ev)

    def find(self, system, name):
        """tep_find_event_by_name: the first of that system and name in ID order."""
        return next((e for e in self.events if e.name == name and e.system == system), None)

    def _blk_hack(self, long_size):
        """tracecmd_blk_hack: an ftrace:blktrace format with the ID after ftrace's power,
        kmem_free or user_stack (the first found), where that one's common fields are at
        the places it expects; its parse is not counted (its result is ignored)."""
        for name in ("power", "kmem_free", "user_stack"):
            after = self.find("ftrace", name)
            if after is not None:
                break
        else:
            return
        common = {}
        for f in after.common:                  # tep_find_common_field: the first of a name
            common.setdefault(f.name, f)
        for name, offset, size in (("common_type", 0, 2), ("common_flags", 2, 1),
                                   ("common_preempt_count", 3, 1), ("common_pid", 4, 4)):
            f = common.get(name)
            if f is None or (f.offset, f.size) != (offset, size):
                return
        text = _BLK_START % _int(after.id + 1)
        lock = common.get("common_lock_depth")
        if lock is not None:
            if (lock.offset, lock.size) != (8, 4):
                return
            text += _BLK_LOCK
        ev, why = parse_event((text + _BLK_BODY).encode(), "ftrace", long_size)
        if ev is not None:
            self._add(ev, why)

    def common_layout(self):
        """tests/libtracecmd.Handle.common_layout: (type offset, type size, pid offset, pid size, end of the
        common fields) from the first event's common fields (tep_data_type/pid read there)."""
        if not self.events:
            return (0, 0, 0, 0, 0)
        common = {f.name: f for f in self.events[0].common}       # as libtracecmd's: the last wins
        end = max((f.offset + f.size for f in common.values()), default=0)
        t, pid = common.get("common_type"), common.get("common_pid")
        return ((t.offset, t.size) if t else (0, 0)) + ((pid.offset, pid.size) if pid else (0, 0)) \
            + (end,)


def _shown(name):
    return repr(name[:40].decode("utf-8", "replace") if isinstance(name, bytes) else name[:40])


# -- header_page --------------------------------------------------------------------------------
def parse_header_page(text, long_size):
    """tep_parse_header_page(tep, text, len, long_size) -> header_page_size_size, the size of
    ``commit``, which libtracecmd takes as the file's long size (0 if it does not parse)."""
    if not text:
        return long_size
    inp = _Input(bytes(text))
    sizes = {}
    for name, mandatory in (("timestamp", True), ("commit", True), ("overwrite", False),
                            ("data", True)):
        _header_field(inp, name, mandatory, sizes)
    return sizes.get("commit", 0)


def _atoi(token):
    m = re.match(r"[0-9]*", token)
    value = min(int(m.group(0)), (1 << 63) - 1) if m.group(0) else 0
    return _int(value)


def _header_field(inp, name, mandatory, sizes):
    """parse_header_field: sizes[name] = its size when it gets that far."""
    save = inp.ptr
    if not (inp.expected(ITEM, "field") and inp.expected(OP, ":")):
        return
    if inp.expect_type(ITEM) is None:
        return
    if mandatory:
        if not inp.expected(ITEM, name):
            return
    else:
        token = inp.expect_type(ITEM)
        if token is None:
            return
        if token != name:
            inp.ptr = save
            sizes[name] = 0
            return
    if not (inp.expected(OP, ";") and inp.expected(ITEM, "offset") and inp.expected(OP, ":")):
        return
    if inp.expect_type(ITEM) is None:
        return
    if not (inp.expected(OP, ";") and inp.expected(ITEM, "size") and inp.expected(OP, ":")):
        return
    token = inp.expect_type(ITEM)
    if token is None:
        return
    sizes[name] = _atoi(token)
    if not inp.expected(OP, ";"):
        return
    kind, token = inp.read_token()
    if kind != NEWLINE and kind == ITEM and token == "signed" and inp.expected(OP, ":") \
            and inp.expect_type(ITEM) is not None and inp.expected(OP, ";"):
        inp.expect_type(NEWLINE)


# -- kallsyms -----------------------------------------------------------------------------------
_SPACE = b" \t\n\v\f\r"
_HEX = b"0123456789abcdefABCDEF"
# a line in the shape /proc/kallsyms writes, where sscanf's reading is plain: address, one
# type character, the name (a module after it is not needed by tep_find_function)
_KALLSYMS_LINE = re.compile(rb"([0-9a-fA-F]{1,16})[ \t\v\f\r]+([^ \t\n\v\f\r])[ \t\v\f\r]+"
                            rb"([^ \t\n\v\f\r]+)")


def _scan_hex(line, i, width):
    """sscanf's %16llx at line[i:] (glibc vfscanf): (value, next index) or None."""
    n = len(line)
    while i < n and line[i] in _SPACE:
        i += 1
    sign = 1
    if width and i < n and line[i] in b"+-":
        sign = -1 if line[i] == 45 else 1
        i, width = i + 1, width - 1
    digits = b""
    if width and i < n and line[i] == 48:                       # "0", then maybe "x"
        digits, i, width = b"0", i + 1, width - 1
        if width and i < n and line[i] in b"xX":
            i, width = i + 1, width - 1
    while width and i < n and line[i] in _HEX:
        digits += line[i:i + 1]
        i, width = i + 1, width - 1
    if not digits:
        return None
    return (sign * int(digits, 16)) % (1 << 64), i


def _kallsyms_line(line):
    """sscanf(line, "%16llx %c %n%*s%n...", ...) as tep_parse_kallsyms reads it: (addr, type
    char, name) or None where it fails (the parse stops there)."""
    m = _KALLSYMS_LINE.match(line)
    if m:
        return int(m.group(1), 16), m.group(2)[0], m.group(3)
    got = _scan_hex(line, 0, 16)
    if got is None:
        return None
    addr, i = got
    n = len(line)
    while i < n and line[i] in _SPACE:                          # " %c"
        i += 1
    if i >= n:
        return None
    ch, i = line[i], i + 1
    while i < n and line[i] in _SPACE:                          # " %n%*s%n"
        i += 1
    start = i
    while i < n and line[i] not in _SPACE:
        i += 1
    if i == start:
        return None
    return addr, ch, line[start:i]


_LINES = re.compile(rb"[^\n]+")


def _sorted(keys, offsets, blob, code="Q"):
    """(keys, offsets, blob) sorted by key as libtraceevent sorts its list: it prepends each
    entry, then glibc 2.36's qsort (a stable merge sort) orders them, so equal keys come in
    the reverse of the text's order."""
    order = sorted(range(len(keys) - 1, -1, -1), key=keys.__getitem__)
    out, where, names = array(code), array("I", [0]), bytearray()
    for i in order:
        out.append(keys[i])
        names += blob[offsets[i]:offsets[i + 1]]
        where.append(len(names))
    return out, where, bytes(names)


class Kallsyms:
    """The file's kallsyms as libtraceevent keeps it: addresses sorted (equal ones in the
    reverse of their order in the file: tep_register_function prepends, glibc 2.36's qsort is
    a stable merge sort), with names in one block in the file's order. About 17 bytes a
    symbol plus its name."""

    def __init__(self, text):
        """text: the kallsyms, or a list holding it, which gives it up (its memory freed once
        read, before the sort)."""
        text = bytes(text.pop() if isinstance(text, list) else text)
        nul = text.find(b"\0")
        if nul >= 0:
            text = text[:nul]                                   # strdup(kallsyms)
        addrs, starts, blob = array("Q"), array("I", [0]), bytearray()
        for m in _LINES.finditer(text):                         # strtok_r(, "\n"): no empty ones
            got = _kallsyms_line(m.group(0))
            if got is None:
                break                                            # "Failed to parse kallsyms"
            addr, ch, name = got
            if name[:1] != b"$" and ch not in b"Aa":
                addrs.append(addr)
                blob += name
                starts.append(len(blob))
        del text
        # one int a symbol, its address over its place from the end: sorted, equal addresses
        # come in the reverse of the file's order (and one list, not a list and its keys)
        n, shift = len(addrs), max(len(addrs), 1).bit_length()
        keys = [(a << shift) | (n - 1 - i) for i, a in enumerate(addrs)]
        del addrs
        keys.sort()
        low = (1 << shift) - 1
        self._order = array("I", (n - 1 - (k & low) for k in keys))
        self.addrs = array("Q", (k >> shift for k in keys))
        del keys
        self._starts, self._blob = starts, bytes(blob)

    def __len__(self):
        return len(self.addrs)

    def name(self, i):
        """The name of the i-th symbol in address order."""
        j = self._order[i]
        return self._blob[self._starts[j]:self._starts[j + 1]].decode("utf-8", "replace")

    def function(self, addr):
        """tep_find_function: glibc's bsearch with func_bcmp over the sorted map and its
        sentinel (address 0): the symbol at addr or the last one below it, but None past the
        last symbol (its next address is the sentinel's 0)."""
        addr &= ULONG_MAX                           # an unsigned long long, as ctypes passes it
        a, lo, hi = self.addrs, 0, len(self.addrs)
        last = hi - 1
        while lo < hi:
            i = (lo + hi) // 2
            x = a[i]
            if addr == x or (addr > x and addr < (a[i + 1] if i < last else 0)):
                return self.name(i)
            if addr < x:
                hi = i
            else:
                lo = i + 1
        return None


# -- saved cmdlines -------------------------------------------------------------------------------
_CMDLINE = re.compile(rb"[ \t\v\f\r]*([-+]?[0-9]+)(?![0-9])[ \t\v\f\r]*([^ \t\v\f\r\n][^\n]*)")
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1


class Cmdlines:
    """saved_cmdlines as libtraceevent keeps them: pids sorted (a pid given twice: both kept,
    the later line first), comms in one block; comm() is tep_data_comm_from_pid."""

    def __init__(self, text):
        text = bytes(text)
        nul = text.find(b"\0")
        if nul >= 0:
            text = text[:nul]
        pids, offsets, blob = array("q"), array("I", [0]), bytearray()
        for m in _LINES.finditer(text):
            m = _CMDLINE.match(m.group(0))                      # sscanf("%d %m[^\n]s")
            if not m or not LONG_MIN <= int(m.group(1)) <= LONG_MAX:    # no match, ERANGE
                break
            pids.append(_int(int(m.group(1))))
            blob += m.group(2)
            offsets.append(len(blob))
        self.pids, self.offsets, self.comms = _sorted(pids, offsets, blob, "i")

    def comm(self, pid):
        """find_cmdline: "<idle>" for pid 0, the comm glibc's bsearch lands on, else "<...>"."""
        pid = _int(pid)
        if not pid:
            return "<idle>"
        p, lo, hi = self.pids, 0, len(self.pids)
        while lo < hi:
            i = (lo + hi) // 2
            if pid < p[i]:
                hi = i
            elif pid > p[i]:
                lo = i + 1
            else:
                return self.comms[self.offsets[i]:self.offsets[i + 1]].decode("utf-8", "replace")
        return "<...>"
