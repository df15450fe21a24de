"""Event formats as libtraceevent 1.7.1 parses them (src/event-parse.c parse_format:
event_read_name, event_read_id, event_read_format -> event_read_fields, the start of
event_read_print, over its tokenizer __read_token): the fields of a tracepoint's raw data.

Below both sides: a trace.dat's formats (tracecmd/formats.py) and a perf.data's tracing data
(perfdata/sched.py, output/trace_text.py) are the same text, parsed here once. A format without
a name or an ID is dropped (libtracecmd counts it a parsing failure: trace-input.c
read_event_file); one whose fields or print fmt fail is kept with what was parsed of it (1.7.1's
__parse_event adds it all the same). Not followed: the print fmt's arguments (process_arg and
the rest): in 1.7.1 their failure neither drops the event nor changes what EventDesc holds.
tests/test_tracecmd_formats.py holds it to libtraceevent itself.
"""
import re

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
