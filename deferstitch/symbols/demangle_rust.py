"""Rust symbol names as perf prints them: legacy ``_ZN..17h<hash>E`` and v0 ``_R..`` names.

perf 7.x (util/symbol-elf.c, demangle_sym) first asks tools/perf/util/demangle-rust-v0.c, a C
port of the rustc-demangle crate (src/legacy.rs, src/v0.rs; the port is that crate's
crates/native-c), and only if the name is not Rust tries C++. It prints with alternate=true,
i.e. rustc-demangle's ``format!("{:#}", demangle(name))``: no ``::h0123..`` hash, no crate
``[1234abcd]`` disambiguators. This is a line-by-line port of that C, so the text is perf's
including its quirks: constant strings escape every non-ASCII character (``\\u{e9}``), an error
met while printing leaves ``{invalid syntax}`` / ``{recursion limit reached}`` / ``?`` in the
name, and the depth limit is the C's MAX_DEPTH (500).

    demangle_rust("_RNvCs15kBYyAo9fc_7mycrate7example")   -> "mycrate::example"
    demangle_rust("_ZN3foo17h05af221e174051e9E.llvm.1A")  -> "foo"
    demangle_rust("_Z3foov")                              -> None (not Rust: C++'s turn)

Crafted names cannot hang it: output stops where perf's buffer would (under 1 MiB; perf then
prints what fit, so do we), and a name that takes more than _MAX_STEPS (2**18) parse steps
(only backref fan-outs built for it do; perf prints them) gives None.
"""
import re

MAX_DEPTH = 500             # demangle-rust-v0.c MAX_DEPTH
OVERFLOW_MARGIN = 4         # demangle-rust-v0.h
_MAX_STEPS = 1 << 18        # ours: push_depth calls per name; real names use a few hundred
_U64 = (1 << 64) - 1        # uint64_t and size_t overflow checks
_BUF_LIMIT = 1 << 20        # demangle_sym's buffer grows while below 1 MiB

# demangle_status: None is DemangleOk, the others are what the printer prints for them.
_INVALID = "{invalid syntax}"
_RECURSED = "{recursion limit reached}"
_BUG = "{bug}"

_DIGITS = frozenset("0123456789")
_LOWER_HEX = frozenset("0123456789abcdef")
_ANY_HEX = frozenset("0123456789abcdefABCDEF")
_LLVM_HEX = frozenset("0123456789ABCDEF@")
_UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_BASE62 = {c: i for i, c in enumerate("0123456789abcdefghijklmnopqrstuvwxyz"
                                      "ABCDEFGHIJKLMNOPQRSTUVWXYZ")}
_BASIC_TYPES = {
    "b": "bool", "c": "char", "e": "str", "u": "()", "a": "i8", "s": "i16", "l": "i32",
    "x": "i64", "n": "i128", "i": "isize", "h": "u8", "t": "u16", "m": "u32", "y": "u64",
    "o": "u128", "j": "usize", "f": "f32", "d": "f64", "z": "!", "p": "_", "v": "...",
}
_LEGACY_ESCAPES = {"SP": "@", "BP": "*", "RF": "&", "LT": "<", "GT": ">", "LP": "(",
                   "RP": ")", "C": ","}
_DOLLAR_OR_DOT = re.compile(r"[$.]")
_INTEGER_62 = re.compile(r"([0-9a-zA-Z]*)_")
_IDENT = re.compile(r"(u?)(0|[1-9][0-9]*)_?")
_CHAR_ESCAPES = {"\0": "\\0", "\t": "\\t", "\r": "\\r", "\n": "\\n", "\\": "\\\\"}


def demangle_rust(name):
    """perf's text for Rust symbol ``name``, or None when perf would not take it for Rust."""
    return _demangle(name)


def _run(gen):
    """Drive a printer method to its end on an explicit stack: each nested print_* is a
    generator that yields the one it calls and is sent its result, so MAX_DEPTH levels of
    nesting take no Python frames (and no recursion limit of the process we run in)."""
    stack, value, error = [gen], None, None
    while stack:
        try:
            if error is None:
                called = stack[-1].send(value)
            else:
                called, error = stack[-1].throw(error), None
        except StopIteration as done:
            stack.pop()
            value = done.value
            continue
        except Exception as err:        # _Overflow, _TooMuchWork: through every caller
            stack.pop()
            if not stack:
                raise
            error = err
            continue
        stack.append(called)
        value = None
    return value


def _demangle(s):
    """rust_demangle_demangle + demangle_sym's buffer loop + rust_demangle_display_demangle."""
    if "\0" in s:
        s = s[:s.index("\0")]                   # a C string
    # ThinLTO's ".llvm.<HEX>" is dropped; other ".words" (".exit.i.i") are kept as a suffix.
    i = s.find(".llvm.")
    if i >= 0 and _LLVM_HEX.issuperset(s[i + 6:]):
        s = s[:i]
    legacy = _legacy_parse(s)
    if legacy is not None:
        inner, elements, end = legacy
    else:
        v0 = _v0_parse(s)
        if v0 is None:
            return None
        (inner, end), elements = v0, None
    suffix = inner[end:]
    if suffix and not (suffix[0] == "." and all("!" <= c <= "~" for c in suffix)):
        return None
    if not inner:
        return None                             # demangle_sym: mangled_len == 0
    # demangle_sym tries buffers of roundup_pow_of_two(2 * mangled_len), +32, .. below 1 MiB.
    first = 1 << (2 * len(inner) - 1).bit_length()
    if first >= _BUF_LIMIT:
        return None
    # The text is the same in every buffer it fits, so only the biggest is tried (perf, when
    # none fits, renders ~32k times: minutes for some crafted names).
    biggest = first + 32 * ((_BUF_LIMIT - 1 - first) // 32)
    p = _Printer(inner, [], biggest - OVERFLOW_MARGIN - len(suffix))
    try:
        if elements is None:
            _run(p.print_path(True))
        else:
            _legacy_print(p, elements)
    except _Overflow:
        return "".join(p.out)                   # perf: "return what is there"
    except _TooMuchWork:
        return None
    return "".join(p.out) + suffix


# -- legacy: _ZN <len><ident>... E -----------------------------------------------------------

def _legacy_parse(s):
    """rust_demangle_legacy_demangle: (inner, [element], end of the 'E' in inner) or None."""
    for prefix in ("_ZN", "ZN", "__ZN"):        # ZN: Windows dbghelp, __ZN: macOS
        if s.startswith(prefix):
            inner = s[len(prefix):]
            break
    else:
        return None
    if not inner or not inner.isascii():
        return None
    n, pos, elements = len(inner), 0, []
    while inner[pos] != "E":
        if inner[pos] not in _DIGITS:
            return None
        length = 0
        while inner[pos] in _DIGITS:
            if length > (_U64 - int(inner[pos])) // 10:
                return None
            length = length * 10 + int(inner[pos])
            pos += 1
            if pos == n:
                return None
        if n - pos <= length:
            return None
        elements.append(inner[pos:pos + length])
        pos += length
    return inner, elements, pos + 1


def _is_rust_hash(s):
    return s[:1] == "h" and _ANY_HEX.issuperset(s[1:])


def _legacy_print(p, elements):
    """rust_demangle_legacy_display_demangle, alternate: the last element if a hash is left off."""
    for element, rest in enumerate(elements):
        if element + 1 == len(elements) and _is_rust_hash(rest):
            break
        if element:
            p.emit("::")
        if rest.startswith("_$"):
            rest = rest[1:]
        while rest:
            if rest[0] == ".":
                if rest[1:2] == ".":
                    p.emit("::")
                    rest = rest[2:]
                else:
                    p.emit(".")
                    rest = rest[1:]
            elif rest[0] == "$":
                end = rest.find("$", 1)
                if end < 0:
                    break
                escape = rest[1:end]
                ch = _LEGACY_ESCAPES.get(escape)
                if ch is None:
                    val = _parse_uint(escape[1:]) if escape[:1] == "u" and len(escape) > 1 else None
                    if val is None or not _valid_char(val) or val < 0x20 or 0x7f <= val < 0xa0:
                        break                   # print the rest of this element raw
                    ch = chr(val)
                p.emit(ch, len(ch.encode()))
                rest = rest[end + 1:]
            else:
                m = _DOLLAR_OR_DOT.search(rest)
                if m is None:
                    break
                p.emit(rest[:m.start()])
                rest = rest[m.start():]
        p.emit(rest)


# -- v0: _R <path> [<instantiating-crate>] ----------------------------------------------------

def _v0_parse(s):
    """rust_demangle_v0_demangle: (inner, end of the path(s) in inner) or None."""
    for prefix in ("_R", "R", "__R"):           # R: Windows dbghelp, __R: macOS
        if s.startswith(prefix):
            inner = s[len(prefix):]
            break
    else:
        return None
    if inner[:1] not in _UPPER or not inner.isascii():
        return None
    p = _Printer(inner, None, 0)                # try_parse_path: a printer without output
    try:
        _run(p.print_path(False))
        if p.status is None and p.next < len(inner) and inner[p.next] in _UPPER:
            _run(p.print_path(False))           # the instantiating crate
    except _TooMuchWork:
        return None
    if p.status is not None:
        return None
    return inner, p.next


class _Overflow(Exception):
    """The output does not fit perf's biggest buffer (OverflowOverflow)."""


class _TooMuchWork(Exception):
    """More than _MAX_STEPS push_depth calls: our limit, not perf's."""


class _ParseError(Exception):
    """A parser_* function's demangle_status other than DemangleOk (args[0])."""


class _Printer:
    """struct printer with its struct parser (sym, next, depth) inlined. ``out`` is None for the
    parse-only pass, as the C's NULL out: lifetimes and backrefs are then not followed. The
    print_* that nest are generators run by _run: ``yield self.print_type()`` is the C's call."""

    def __init__(self, sym, out, room):
        self.sym, self.next, self.depth = sym, 0, 0
        self.status = None
        self.out, self.room = out, room
        self.bound_lifetime_depth = 0
        self.steps = 0

    # -- output ----------------------------------------------------------------------------

    def emit(self, s, nbytes=None):
        if self.out is None:
            return
        n = len(s) if nbytes is None else nbytes
        if n > self.room:
            raise _Overflow
        self.out.append(s)
        self.room -= n

    def invalid(self):
        """INVALID(printer): print the error and stop this function."""
        self.emit(_INVALID)
        self.status = _INVALID

    def parse(self, method, *args):
        """PARSE(printer, method): its value, or None once the printer is in error (which
        printed "?" or the error here): the caller then returns."""
        if self.status is not None:
            self.emit("?")
            return None
        try:
            return method(*args)
        except _ParseError as e:
            self.emit(e.args[0])
            self.status = e.args[0]
            return None

    def eat(self, ch):
        """printer_eat: parser_eat, false once in error."""
        if self.status is None and self.sym[self.next:self.next + 1] == ch:
            self.next += 1
            return True
        return False

    def pop_depth(self):
        if self.status is None:
            self.depth -= 1

    def sep_list(self, body, sep):
        """PRINT_SEP_LIST_COUNT: body() until an 'E' (or an error); how many."""
        count = 0
        while self.status is None and not self.eat("E"):
            if count:
                self.emit(sep)
            yield body()
            count += 1
        return count

    # -- parser_* ----------------------------------------------------------------------------

    def push_depth(self):
        self.steps += 1
        if self.steps > _MAX_STEPS:
            raise _TooMuchWork
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _ParseError(_RECURSED)
        return True

    def ch(self):
        if self.next == len(self.sym):
            raise _ParseError(_INVALID)
        self.next += 1
        return self.sym[self.next - 1]

    def hex_nibbles(self):
        start = self.next
        end = self.sym.find("_", start)
        if end < 0 or not _LOWER_HEX.issuperset(self.sym[start:end]):
            raise _ParseError(_INVALID)
        self.next = end + 1
        return self.sym[start:end]

    def integer_62(self):
        """'_' is 0, else base-62 digits and '_' are the number + 1 (as u64)."""
        m = _INTEGER_62.match(self.sym, self.next)
        if m is None:
            raise _ParseError(_INVALID)
        self.next = m.end()
        if not m.group(1):
            return 0
        x = 0
        for c in m.group(1):
            x = x * 62 + _BASE62[c]
            if x >= _U64:                       # x only grows: as the C's per-digit checks
                raise _ParseError(_INVALID)
        return x + 1

    def opt_integer_62(self, tag):
        if not self.eat(tag):
            return 0
        x = self.integer_62()
        if x == _U64:
            raise _ParseError(_INVALID)
        return x + 1

    def disambiguator(self):
        return self.opt_integer_62("s")

    def namespace(self):
        c = self.sym[self.next:self.next + 1]
        self.next += len(c)
        if c in _UPPER:
            return c
        if c in _LOWER:
            return ""
        raise _ParseError(_INVALID)

    def backref(self):
        """The (next, depth) a 'B' backref points at."""
        start = self.next
        if start == 0:
            raise _ParseError(_BUG)
        i = self.integer_62()
        if i >= start - 1:
            raise _ParseError(_INVALID)
        if self.depth + 1 > MAX_DEPTH:
            raise _ParseError(_RECURSED)
        return i, self.depth + 1

    def ident(self):
        """(ascii, punycode): 'u' marks punycode, whose ascii part ends at the last '_'."""
        m = _IDENT.match(self.sym, self.next)  # a length "0" takes no more digits
        if m is None:
            raise _ParseError(_INVALID)
        is_punycode, digits = m.group(1, 2)
        start = m.end()
        # (more than 20 digits overflow the C's size_t: invalid there too)
        if len(digits) > 20 or len(self.sym) - start < int(digits):
            raise _ParseError(_INVALID)
        self.next = start + int(digits)
        ident = self.sym[start:self.next]
        if not is_punycode:
            return ident, ""
        u = ident.rfind("_")
        ascii, punycode = ident[:max(u, 0)], ident[u + 1:]
        if not punycode:
            raise _ParseError(_INVALID)
        return ascii, punycode

    # -- printer_print_* ---------------------------------------------------------------------

    def print_ident(self, ident):
        if self.out is None:
            return
        ascii, punycode = ident
        if not punycode:
            self.emit(ascii)
            return
        text = _punycode_decode(ascii, punycode)
        if text is None:
            self.emit("punycode{%s%s}" % (ascii + "-" if ascii else "", punycode))
        else:
            self.emit(text, len(text.encode()))

    def print_backref(self, func):
        """Follow a 'B' backref (only when printing); func's result, else None."""
        target = self.parse(self.backref)
        if target is None or self.out is None:
            return None
        saved = self.next, self.depth, self.status
        self.next, self.depth = target
        self.status = None
        try:
            return (yield func())
        finally:
            self.next, self.depth, self.status = saved

    def print_lifetime_from_index(self, lt):
        if self.out is None:
            return
        self.emit("'")
        if lt == 0:
            self.emit("_")
        elif self.bound_lifetime_depth < lt:
            self.invalid()
        else:
            depth = self.bound_lifetime_depth - lt
            self.emit(chr(ord("a") + depth) if depth < 26 else "_%d" % depth)

    def in_binder(self, func):
        """``for<'a, ..> `` for the 'G' count of bound lifetimes, then func()."""
        bound = self.parse(self.opt_integer_62, "G")
        if bound is None:
            return
        if self.out is None:
            yield func()
            return
        if bound > 0:
            self.emit("for<")
            i = 0
            while i < bound:                    # a crafted count runs into _Overflow
                if i:
                    self.emit(", ")
                self.bound_lifetime_depth += 1
                self.print_lifetime_from_index(1)
                i += 1
            self.emit("> ")
        yield func()
        self.bound_lifetime_depth -= bound

    def print_generic_arg(self):
        if self.eat("L"):
            lt = self.parse(self.integer_62)
            if lt is not None:
                self.print_lifetime_from_index(lt)
        elif self.eat("K"):
            yield self.print_const(False)
        else:
            yield self.print_type()

    def print_generic_args(self):
        self.emit("<")
        yield self.sep_list(self.print_generic_arg, ", ")
        self.emit(">")

    def print_path(self, in_value):
        if self.parse(self.push_depth) is None:
            return
        tag = self.parse(self.ch)
        if tag is None:
            return
        if tag == "C":
            dis = self.parse(self.disambiguator)
            if dis is None:
                return
            name = self.parse(self.ident)
            if name is None:
                return
            self.print_ident(name)
            # (with alternate=false the "[%x]" disambiguator would follow: perf never asks)
        elif tag == "N":
            ns = self.parse(self.namespace)
            if ns is None:
                return
            yield self.print_path(in_value)
            if self.status is not None:
                self.emit("::")                 # so that the "?" below reads "::?"
            dis = self.parse(self.disambiguator)
            if dis is None:
                return
            name = self.parse(self.ident)
            if name is None:
                return
            if ns:                              # special namespaces: closures, shims
                self.emit("::{")
                self.emit({"C": "closure", "S": "shim"}.get(ns, ns))
                if name != ("", ""):
                    self.emit(":")
                    self.print_ident(name)
                self.emit("#%d}" % dis)
            elif name != ("", ""):
                self.emit("::")
                self.print_ident(name)
        elif tag in "MXY":
            if tag != "Y":                      # an impl: its own path is not printed
                if self.parse(self.disambiguator) is None:
                    return
                out, self.out = self.out, None
                yield self.print_path(False)
                self.out = out
            self.emit("<")
            yield self.print_type()
            if tag != "M":
                self.emit(" as ")
                yield self.print_path(False)
            self.emit(">")
        elif tag == "I":
            yield self.print_path(in_value)
            if in_value:
                self.emit("::")
            yield self.print_generic_args()
        elif tag == "B":
            yield self.print_backref(lambda: self.print_path(in_value))
        else:
            self.invalid()
            return
        self.pop_depth()

    def print_const_uint(self, tag):
        hex = self.parse(self.hex_nibbles)
        if hex is None:
            return
        val = _parse_uint(hex)
        self.emit("0x" + hex if val is None else str(val))
        # (with alternate=false the type, "usize", would follow)

    def print_const_str_literal(self):
        hex = self.parse(self.hex_nibbles)
        if hex is None:
            return
        text = _quote_str(hex)
        if text is None:
            self.invalid()
        else:
            self.emit(text)

    def print_const_struct(self):
        if self.parse(self.disambiguator) is None:
            return
        name = self.parse(self.ident)
        if name is None:
            return
        self.print_ident(name)
        self.emit(": ")
        yield self.print_const(True)

    def print_const(self, in_value):
        tag = self.parse(self.ch)
        if tag is None or self.parse(self.push_depth) is None:
            return
        opened_brace = False
        if tag in "eRQATV" and not (tag == "R" and self.sym[self.next:self.next + 1] == "e"):
            if not in_value:                    # OPEN_BRACE_IF_OUTSIDE_EXPR
                opened_brace = True
                self.emit("{")
        if tag == "p":
            self.emit("_")
        elif tag in "aslxnihtmyoj":             # signed, then unsigned integers
            if tag in "aslxni" and self.eat("n"):
                self.emit("-")
            self.print_const_uint(tag)
        elif tag == "b":
            hex = self.parse(self.hex_nibbles)
            if hex is None:
                return
            val = _parse_uint(hex)
            if val not in (0, 1):
                self.invalid()
                return
            self.emit("true" if val else "false")
        elif tag == "c":
            hex = self.parse(self.hex_nibbles)
            if hex is None:
                return
            val = _parse_uint(hex)
            if val is None or val >= 0xffffffff or not _valid_char(val):
                self.invalid()
                return
            self.emit("'%s'" % _escape_char(chr(val), "'"))
        elif tag == "e":
            self.emit("*")
            self.print_const_str_literal()
        elif tag in "RQ":
            if tag == "R" and self.eat("e"):
                self.print_const_str_literal()
            else:
                self.emit("&" if tag == "R" else "&mut ")
                yield self.print_const(True)
        elif tag == "A":
            self.emit("[")
            yield self.sep_list(lambda: self.print_const(True), ", ")
            self.emit("]")
        elif tag == "T":
            self.emit("(")
            if (yield self.sep_list(lambda: self.print_const(True), ", ")) == 1:
                self.emit(",")
            self.emit(")")
        elif tag == "V":
            yield self.print_path(True)
            kind = self.parse(self.ch)
            if kind is None:
                return
            if kind == "T":
                self.emit("(")
                yield self.sep_list(lambda: self.print_const(True), ", ")
                self.emit(")")
            elif kind == "S":
                self.emit(" { ")
                yield self.sep_list(self.print_const_struct, ", ")
                self.emit(" }")
            elif kind != "U":
                self.invalid()
                return
        elif tag == "B":
            yield self.print_backref(lambda: self.print_const(in_value))
        else:
            self.invalid()
            return
        if opened_brace:
            self.emit("}")
        self.pop_depth()

    def print_maybe_open_generics(self):
        """A dyn trait's path, leaving an 'I' path's ``<..`` open for the ``Assoc = T`` that may
        follow: True if left open."""
        if self.eat("B"):
            return bool((yield self.print_backref(self.print_maybe_open_generics)))
        if self.eat("I"):
            yield self.print_path(False)
            self.emit("<")
            yield self.sep_list(self.print_generic_arg, ", ")
            return True
        yield self.print_path(False)
        return False

    def print_dyn_trait(self):
        is_open = yield self.print_maybe_open_generics()
        while self.eat("p"):
            self.emit(", " if is_open else "<")
            is_open = True
            name = self.parse(self.ident)
            if name is None:
                return
            self.print_ident(name)
            self.emit(" = ")
            yield self.print_type()
        if is_open:
            self.emit(">")

    def print_object_bounds(self):
        yield self.sep_list(self.print_dyn_trait, " + ")

    def print_function_type(self):
        is_unsafe = self.eat("U")
        abi = None
        if self.eat("K"):
            if self.eat("C"):
                abi = "C"
            else:
                ident = self.parse(self.ident)
                if ident is None:
                    return
                if not ident[0] or ident[1]:
                    self.invalid()
                    return
                abi = ident[0]
        if is_unsafe:
            self.emit("unsafe ")
        if abi is not None:
            self.emit('extern "%s" ' % abi.replace("_", "-"))
        self.emit("fn(")
        yield self.sep_list(self.print_type, ", ")
        self.emit(")")
        if not self.eat("u"):                   # a `()` return type is not printed
            self.emit(" -> ")
            yield self.print_type()

    def print_type(self):
        tag = self.parse(self.ch)
        if tag is None:
            return
        basic = _BASIC_TYPES.get(tag)
        if basic is not None:
            self.emit(basic)
            return
        if self.parse(self.push_depth) is None:
            return
        if tag in "RQ":
            self.emit("&")
            if self.eat("L"):
                lt = self.parse(self.integer_62)
                if lt is None:
                    return
                if lt:
                    self.print_lifetime_from_index(lt)
                    self.emit(" ")
            if tag == "Q":
                self.emit("mut ")
            yield self.print_type()
        elif tag in "PO":
            self.emit("*const " if tag == "P" else "*mut ")
            yield self.print_type()
        elif tag in "AS":
            self.emit("[")
            yield self.print_type()
            if tag == "A":
                self.emit("; ")
                yield self.print_const(True)
            self.emit("]")
        elif tag == "T":
            self.emit("(")
            if (yield self.sep_list(self.print_type, ", ")) == 1:
                self.emit(",")
            self.emit(")")
        elif tag == "F":
            yield self.in_binder(self.print_function_type)
        elif tag == "D":
            self.emit("dyn ")
            yield self.in_binder(self.print_object_bounds)
            if not self.eat("L"):
                self.invalid()
                return
            lt = self.parse(self.integer_62)
            if lt is None:
                return
            if lt:
                self.emit(" + ")
                self.print_lifetime_from_index(lt)
        elif tag == "B":
            yield self.print_backref(self.print_type)
        else:
            if self.status is None and self.next > 0:
                self.next -= 1                  # back to the tag, for print_path
            yield self.print_path(False)
        self.pop_depth()


# -- leaves --------------------------------------------------------------------------------

def _valid_char(n):
    """validate_char: a Unicode scalar value (no surrogates, at most 0x10ffff)."""
    return n <= 0x10FFFF and not 0xD800 <= n <= 0xDFFF


def _parse_uint(hex):
    """try_parse_uint: lower-case hex of at most 16 significant digits, else None."""
    digits = hex.lstrip("0")
    if len(digits) > 16 or not _LOWER_HEX.issuperset(digits):
        return None
    return int(digits, 16) if digits else 0


def _escape_char(c, quote):
    """char_to_string: the C's "good enough" tables escape everything outside ASCII 0x20-0x7e."""
    if c in _CHAR_ESCAPES:
        return _CHAR_ESCAPES[c]
    if c == quote:
        return "\\" + c
    if not " " <= c <= "~":
        return "\\u{%x}" % ord(c)
    return c


def _quote_str(hex):
    """nibbles_to_string: hex-encoded UTF-8 as a double-quoted literal, None if not UTF-8."""
    if len(hex) % 2:
        return None
    try:
        text = bytes.fromhex(hex).decode("utf-8")   # strict: as the C's utf8_next_char
    except ValueError:
        return None
    return '"%s"' % "".join(_escape_char(c, '"') for c in text)


def _punycode_decode(ascii, punycode):
    """punycode_decode (RFC 3492 with the C's limits: 128 characters, size_t arithmetic)."""
    if not punycode or len(ascii) > 128:
        return None
    out = [ord(c) for c in ascii]
    base, t_min, t_max, skew, damp, bias, i, n = 36, 1, 26, 38, 700, 72, 0, 0x80
    it = iter(punycode)
    remaining = len(punycode)
    while True:
        delta, w, k = 0, 1, 0
        while True:
            k += base
            t = min(max(k - bias if k >= bias else 0, t_min), t_max)
            if remaining == 0:
                return None
            nx = next(it)
            remaining -= 1
            if "a" <= nx <= "z":
                d = ord(nx) - ord("a")
            elif "0" <= nx <= "9":
                d = 26 + ord(nx) - ord("0")
            else:
                return None
            if w == 0 or d * w > _U64 - delta:
                return None
            delta += d * w
            if d < t:
                break
            if (base - t) > _U64 // w:
                return None
            w *= base - t
        length = len(out) + 1
        if i > _U64 - delta:
            return None
        i += delta
        if n > _U64 - i // length:
            return None
        n += i // length
        i %= length
        if n > 0xFFFFFFFF or not _valid_char(n) or length > 128:
            return None
        out.insert(i, n)
        i += 1
        if remaining == 0:
            return "".join(map(chr, out))
        delta //= damp
        damp = 2
        delta += delta // length
        k = 0
        while delta > ((base - t_min) * t_max) // 2:
            delta //= base - t_min
            k += base
        bias = k + ((base - t_min + 1) * delta) // (delta + skew)
