"""trace.dat metadata parsed as libtraceevent 1.7.1 and libtracecmd 3.1.6 parse it (Debian
bookworm's, the ones tests/libtracecmd.Handle loads): event formats, header_page, kallsyms, saved cmdlines.

Each function follows its C original step by step, quirks included, so that what it gives equals
what tests/libtracecmd.Handle gets from the library (tests/test_tracecmd_formats.py holds them equal):

- parse_event: libtraceevent src/event-parse.c parse_format (event_read_name, event_read_id,
  event_read_format -> event_read_fields, the start of event_read_print), over its tokenizer
  __read_token. A format without a name or an ID is dropped and counted by libtracecmd as a
  parsing failure (trace-input.c read_event_file); one whose fields or print fmt fail is kept
  with what was parsed of it (1.7.1's __parse_event adds it all the same).
- parse_header_page: tep_parse_header_page -> parse_header_field; the size of ``commit`` is
  what libtracecmd then takes as the long size (read_header_files).
- Kallsyms: tep_parse_kallsyms + tep_find_function (func_map_init, __find_func's bsearch).
- Cmdlines: tep_parse_saved_cmdlines + tep_data_comm_from_pid (cmdline_init, find_cmdline).

Not followed: the print fmt's arguments (process_arg and the rest, some 2000 lines of C): in
1.7.1 their failure neither drops the event nor changes anything EventDesc holds.
"""
import re
from array import array

# unsigned long flags of struct tep_format_field (event-parse.h, enum tep_format_flags)
TEP_FIELD_IS_ARRAY = 1
TEP_FIELD_IS_POINTER = 2
TEP_FIELD_IS_SIGNED = 4
TEP_FIELD_IS_STRING = 8
TEP_FIELD_IS_DYNAMIC = 16
TEP_FIELD_IS_LONG = 32
TEP_FIELD_IS_FLAG = 64
TEP_FIELD_IS_SYMBOLIC = 128
TEP_FIELD_IS_RELATIVE = 256

# enum tep_event_type (event-parse.h)
ERROR, NONE, SPACE, NEWLINE, OP, DELIM, ITEM, DQUOTE, SQUOTE = range(9)
BUFSIZ = 8192
ULONG_MAX = (1 << 64) - 1


class FieldDesc:
    """One field of an event format, as struct tep_format_field holds it."""

    __slots__ = ("name", "type", "offset", "size", "arraylen", "elementsize", "flags")

    def __init__(self, name, type_, offset, size, arraylen, elementsize, flags):
        self.name, self.type, self.offset, self.size = name, type_, offset, size
        self.arraylen, self.elementsize, self.flags = arraylen, elementsize, flags

    def key(self):
        return (self.name, self.type, self.offset, self.size, self.arraylen, self.elementsize,
                self.flags)

    def __eq__(self, other):
        return isinstance(other, FieldDesc) and self.key() == other.key()

    __hash__ = None

    def __repr__(self):
        return "FieldDesc(%s %s off %d size %d flags %#x)" % (self.type, self.name, self.offset,
                                                               self.size, self.flags)


class EventDesc:
    """An event format: id, system, name, common fields and fields (in format order)."""

    __slots__ = ("id", "system", "name", "common", "fields", "print_fmt")

    def __init__(self, id_, system, name, common, fields, print_fmt):
        self.id, self.system, self.name = id_, system, name
        self.common, self.fields, self.print_fmt = common, fields, print_fmt

    def key(self):
        return (self.id, self.system, self.name, [f.key() for f in self.common],
                [f.key() for f in self.fields], self.print_fmt)

    def __eq__(self, other):
        return isinstance(other, EventDesc) and self.key() == other.key()

    __hash__ = None

    def __repr__(self):
        return "EventDesc(%d %s:%s, %d+%d fields)" % (self.id, self.system, self.name,
                                                      len(self.common), len(self.fields))


class Crashes(ValueError):
    """Text on which libtraceevent 1.7.1 dereferences NULL (the probe's child dies of it):
    our reader refuses the file as the probe does, instead of guessing a verdict."""


# -- the tokenizer: __read_token, read_token, read_token_item -------------------------------------
def _char(b):
    """A byte as libtraceevent reads it: a (signed) char, so bytes >= 0x80 are negative."""
    return b - 256 if b >= 0x80 else b


def _isspace(ch):
    return ch == 32 or 9 <= ch <= 13


def _isprint(ch):
    return 32 <= ch <= 126


def _get_type(ch):
    if ch == 10:
        return NEWLINE
    if _isspace(ch):
        return SPACE
    if 48 <= ch <= 57 or 65 <= ch <= 90 or 97 <= ch <= 122 or ch == 95:
        return ITEM
    if ch == 39:
        return SQUOTE
    if ch == 34:
        return DQUOTE
    if not _isprint(ch):
        return NONE
    if ch in (40, 41, 44):
        return DELIM
    return OP


# the mac80211 work-around of __read_token (Linux commit 811cb50baf63)
_FORCED = {"LOCAL_PR_FMT": '"%s" ', "STA_PR_FMT": '" sta:%pM" ', "VIF_PR_FMT": '" vif:%p(%d)" '}


class _Input:
    """tep->input_buf, input_buf_ptr, input_buf_siz: a format text being tokenized."""

    def __init__(self, buf):
        self.buf, self.ptr, self.siz = buf, 0, len(buf)

    def read(self):
        if self.ptr >= self.siz:
            return -1
        self.ptr += 1
        return _char(self.buf[self.ptr - 1])

    def peek(self):
        return _char(self.buf[self.ptr]) if self.ptr < self.siz else -1

    def token(self):
        """__read_token: (type, text or None)."""
        ch = self.read()
        if ch < 0:
            return NONE, None
        kind = _get_type(ch)
        if kind == NONE:
            return NONE, None
        out = [ch]
        if kind in (NEWLINE, DELIM):
            return kind, chr(ch)
        if kind == OP:
            return OP, self._op(ch, out)
        if kind in (DQUOTE, SQUOTE):
            return self._quoted(ch, kind)
        while _get_type(self.peek()) == kind:        # SPACE, ITEM: a run of the same type
            out.append(self.read())
        text = "".join(map(chr, out))
        if kind == ITEM and text in _FORCED:
            return _Input(_FORCED[text].encode()).token()
        return kind, text

    def _op(self, ch, out):
        test_equal = False
        if ch == 45 and self.peek() == 62:                  # "->"
            out.append(self.read())
        elif ch in (45, 43, 124, 38, 62, 60):               # - + | & > <
            if self.peek() != ch:
                test_equal = True
            else:
                out.append(self.read())                     # -- ++ || && >> <<
                test_equal = ch in (62, 60)
        elif ch in (33, 61):                                # ! =
            test_equal = True
        if test_equal and self.peek() == 61:
            out.append(self.read())
        return "".join(map(chr, out))

    def _quoted(self, quote, kind):
        """Up to the closing quote, which is dropped; a tab or other unprintable ends it too
        (and is dropped); a NUL or a byte >= 0x80 makes the token NONE. Double-quoted strings
        separated by white space are one token."""
        out, ch = [], quote
        while True:
            while True:
                last = ch
                ch = self.read()
                out.append(ch)
                if ch == 92 and last == 92:                 # '\\' '\\' cancels itself
                    last = 0
                if ch <= 0:
                    break
                if not ((ch != quote and _isprint(ch)) or last == 92 or ch == 10):
                    break
            out.pop()
            if ch <= 0:
                kind = NONE
            if kind == DQUOTE:
                save = self.ptr
                nxt = self.read()
                while _isspace(nxt):
                    nxt = self.read()
                if nxt == 34:
                    ch = nxt
                    continue
                self.ptr = save
            return kind, "".join(map(chr, out))

    def read_token(self):
        """read_token: skips spaces, not newlines."""
        while True:
            kind, text = self.token()
            if kind != SPACE:
                return kind, text

    def read_item(self):
        """read_token_item: skips spaces and newlines."""
        while True:
            kind, text = self.token()
            if kind not in (SPACE, NEWLINE):
                return kind, text

    def expected(self, kind, text, newline_ok=True):
        """read_expected / read_expected_item: True when the next token is that one."""
        got = self.read_token() if newline_ok else self.read_item()
        return got == (kind, text)

    def expect_type(self, kind):
        """read_expect_type: the token's text, or None when it is not of that type."""
        got, text = self.read_token()
        return text if got == kind else None


Tokenizer = _Input      # for output/print_fmt.py, which parses the print fmt's arguments


_STRTOUL = re.compile(r"[ \t\n\v\f\r]*([-+]?)(0[xX](?=[0-9a-fA-F])|0?)([0-9a-zA-Z]*)")


def strtoul(text):
    """strtoul(text, NULL, 0) (glibc): space, a sign, "0x" or "0", digits of that base up to
    the first that is not; past ULONG_MAX it is ULONG_MAX; "-n" is 2^64 - n."""
    m = _STRTOUL.match(text)
    prefix, digits = m.group(2), m.group(3)
    base = 16 if len(prefix) == 2 else 8 if prefix == "0" else 10
    ok = re.match({16: r"[0-9a-fA-F]*", 8: r"[0-7]*", 10: r"[0-9]*"}[base], digits).group(0)
    value = int(ok, base) if ok else 0
    if value > ULONG_MAX:
        return ULONG_MAX
    return (-value) % (1 << 64) if m.group(1) == "-" else value


def _int(value):
    """An unsigned long stored in a C int (gcc: modulo 2^32)."""
    value &= 0xffffffff
    return value - (1 << 32) if value >= 1 << 31 else value


def _type_size(name):
    """type_size(): the element size of a ``TYPE[] name`` dynamic array's type."""
    return {"u8": 1, "u16": 2, "u32": 4, "u64": 8, "s8": 1, "s16": 2, "s32": 4, "s64": 8,
            "char": 1}.get(name, 0)


class _Field:
    __slots__ = ("name", "type", "offset", "size", "arraylen", "elementsize", "flags")

    def __init__(self):
        self.name = self.type = None
        self.offset = self.size = self.arraylen = self.elementsize = self.flags = 0

    def desc(self):
        return FieldDesc(self.name, self.type, self.offset, self.size, self.arraylen,
                         self.elementsize, self.flags)


class _Fields:
    """event_read_fields's state: the list it links fields into and its ``delim``, which
    lives across the fields of one call (a static-like quirk kept as the C has it)."""

    def __init__(self):
        self.done, self.delim = [], " "


def _read_fields(inp, ftrace, long_size):
    """event_read_fields: (the fields parsed, ok). A field that fails is not kept; the ones
    before it are (they are linked into the event already)."""
    st = _Fields()
    while True:
        size_dynamic = 0
        kind, token = inp.read_token()
        if kind == NEWLINE:
            return st.done, True
        if (kind, token) != (ITEM, "field"):
            return st.done, False
        kind, token = inp.read_token()
        if ftrace and (kind, token) == (ITEM, "special"):
            kind, token = inp.read_token()
        if (kind, token) != (OP, ":"):
            return st.done, False
        last = inp.expect_type(ITEM)
        if last is None:
            return st.done, False
        field = _Field()
        while True:                                 # the rest of the type
            kind, token = inp.read_token()
            if kind == ITEM or (kind == OP and token == "*") or \
                    (ftrace and kind == OP and token == "."):
                if token == "*":
                    field.flags |= TEP_FIELD_IS_POINTER
                if field.type is not None:
                    field.type += st.delim + last
                else:
                    field.type = last
                last, st.delim = token, " "
                continue
            if kind == DELIM and last == "__attribute__" and token[0] == "(":
                if field.type is None:              # append() to a NULL type: strlen(NULL)
                    raise Crashes("a field's type begins with __attribute__(")
                field.type += " " + last + "("
                st.delim = " "
                depth = 1
                while True:
                    kind, token = inp.read_token()
                    if kind == NONE:
                        break
                    if kind == DELIM:
                        depth += 1 if token[0] == "(" else -1 if token[0] == ")" else 0
                        if not depth:
                            break
                        field.type += token
                        st.delim = ""
                    else:
                        field.type += st.delim + token
                        st.delim = " "
                    last = token
                continue
            break
        if field.type is None:
            return st.done, False
        field.name = last
        if kind != OP:
            return st.done, False
        if token == "[":
            last_type = kind
            brackets = token
            field.flags |= TEP_FIELD_IS_ARRAY
            kind, token = inp.read_token()
            field.arraylen = strtoul(token) if kind == ITEM else 0
            if token is None:                       # strcmp(NULL, "]")
                raise Crashes("a field's text ends right after its '['")
            while token != "]":
                delim = " " if last_type == ITEM and kind == ITEM else ""
                last_type = kind
                brackets += delim + token
                field.arraylen = strtoul(token) & 0xffffffff
                kind, token = inp.read_token()
                if kind == NONE:
                    return st.done, False
            brackets += "]"
            kind, token = inp.read_token()
            if kind == ITEM:
                field.type += " " + field.name + brackets
                size_dynamic = _type_size(field.name)
                field.name = token
                kind, token = inp.read_token()
            else:
                field.type += brackets
        field.arraylen &= 0xffffffff
        if field.flags & TEP_FIELD_IS_ARRAY and any(t in field.type for t in ("char", "u8", "s8")):
            field.flags |= TEP_FIELD_IS_STRING
        if field.type.startswith("__data_loc"):
            field.flags |= TEP_FIELD_IS_DYNAMIC
        if field.type.startswith("__rel_loc"):
            field.flags |= TEP_FIELD_IS_DYNAMIC | TEP_FIELD_IS_RELATIVE
        if "long" in field.type:
            field.flags |= TEP_FIELD_IS_LONG
        if (kind, token) != (OP, ";"):
            return st.done, False
        if not (inp.expected(ITEM, "offset") and inp.expected(OP, ":")):
            return st.done, False
        token = inp.expect_type(ITEM)
        if token is None:
            return st.done, False
        field.offset = _int(strtoul(token))
        if not (inp.expected(OP, ";") and inp.expected(ITEM, "size") and inp.expected(OP, ":")):
            return st.done, False
        token = inp.expect_type(ITEM)
        if token is None:
            return st.done, False
        field.size = _int(strtoul(token))
        if field.flags & TEP_FIELD_IS_DYNAMIC and field.size == 2:
            field.flags |= TEP_FIELD_IS_STRING | TEP_FIELD_IS_ARRAY
        if not inp.expected(OP, ";"):
            return st.done, False
        kind, token = inp.read_token()
        if kind != NEWLINE:
            if (kind, token) != (ITEM, "signed") or not inp.expected(OP, ":"):
                return st.done, False
            token = inp.expect_type(ITEM)
            if token is None:
                return st.done, False
            if strtoul(token):
                field.flags |= TEP_FIELD_IS_SIGNED
            if not inp.expected(OP, ";") or inp.expect_type(NEWLINE) is None:
                return st.done, False
        if field.flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC):
            if field.arraylen:
                field.elementsize = (field.size & 0xffffffff) // field.arraylen
            elif field.flags & TEP_FIELD_IS_DYNAMIC:
                field.elementsize = size_dynamic
            elif field.flags & TEP_FIELD_IS_STRING:
                field.elementsize = 1
            elif field.flags & TEP_FIELD_IS_LONG:
                field.elementsize = long_size & 0xffffffff
        else:
            field.elementsize = field.size & 0xffffffff
        st.done.append(field.desc())


def parse_event(text, system, long_size=8):
    """tep_parse_event(tep, text, len(text), system): (EventDesc or None, why it failed or
    None). None: no name or no ID, dropped and counted in formats_not_parsed. An EventDesc
    with a reason: kept, as 1.7.1 keeps it, with the fields read before the failure.
    ``long_size``: the file header's (tep_set_long_size), the element size of long arrays.
    Raises Crashes where libtraceevent 1.7.1 would crash."""
    inp = _Input(bytes(text))
    if not (inp.expected(ITEM, "name") and inp.expected(OP, ":")):
        return None, "no name"
    name = inp.expect_type(ITEM)
    if name is None:
        return None, "no name"
    sys_name = system.decode("utf-8", "replace") if isinstance(system, bytes) else system
    ftrace = sys_name == "ftrace"
    if not (inp.expected(ITEM, "ID", newline_ok=False) and inp.expected(OP, ":")):
        return None, "no ID"
    token = inp.expect_type(ITEM)
    if token is None or _int(strtoul(token)) < 0:
        return None, "no ID"
    ev = EventDesc(_int(strtoul(token)), sys_name, name, [], [], None)
    if not (inp.expected(ITEM, "format", newline_ok=False) and inp.expected(OP, ":")) or \
            inp.expect_type(NEWLINE) is None:
        return ev, "no format"
    ev.common, ok = _read_fields(inp, ftrace, long_size)
    if not ok:
        return ev, "a common field does not parse"
    ev.fields, ok = _read_fields(inp, ftrace, long_size)
    if not ok:
        return ev, "a field does not parse"
    return ev, _read_print(inp, ev)


def _read_print(inp, ev):
    """The start of event_read_print: the format string (adjacent strings joined); its
    arguments are not parsed here (see the module's docstring)."""
    if not (inp.expected(ITEM, "print", newline_ok=False) and inp.expected(ITEM, "fmt")
            and inp.expected(OP, ":")):
        return "no print fmt"
    text = inp.expect_type(DQUOTE)
    if text is None:
        return "no print fmt"
    while True:
        ev.print_fmt = text
        kind, token = inp.read_item()
        if kind == NONE:
            return None
        if kind != DQUOTE:
            return None if (kind, token) == (DELIM, ",") else "no ',' after the print fmt"
        text += token


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
