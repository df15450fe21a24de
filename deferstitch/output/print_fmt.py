"""A tracepoint's ``print fmt`` read and printed as libtraceevent does it (src/event-parse.c):
the arguments parsed into a tree of TEP_PRINT_* kinds (event_read_print_args, process_arg_token,
process_op, process_paren, process_cond, process_array, process_function and the process_*
of each helper), the format string cut into literal text and conversions (parse_args,
parse_arg_format, parse_arg_string), and a record printed by them (pretty_print ->
print_parse_data: eval_num_arg for numbers, print_str_arg for %s, print_arg_pointer for %p).

libtraceevent's semantics are kept, not C's: every value is an unsigned 64-bit number
(comparisons included), a field is read unsigned by its size, a cast only masks to the width of
char/short/int/u8..u32 (eval_type_str), a name that is not a field is 0 (strtoull; perf gives
the library no function list), and in __print_symbolic / __print_flags tables a name
libtraceevent does not know (an enum the kernel left unresolved) matches nothing (eval_flag: -1).

%pS/%ps/%pF/%pf name the address by ``resolve(addr)`` -> (name, symbol start) or None, as perf's
machine__resolve_kernel_addr answers tep's function resolver; %p prints as glibc's "%p".

%pI4/%pI6/%pI6c/%pIS print addresses (ip_text.py). What libtraceevent does not parse, and the
few helpers not followed here (the %pM/%pU/%ph extensions, function handlers of plugins, sizeof),
raise Unsupported naming the construct.
"""
from . import ip_text
from ..event_format import (DELIM, DQUOTE, ITEM, NEWLINE, NONE, OP, SQUOTE, TEP_FIELD_IS_ARRAY,
                            TEP_FIELD_IS_DYNAMIC, TEP_FIELD_IS_LONG, TEP_FIELD_IS_POINTER,
                            TEP_FIELD_IS_RELATIVE, TEP_FIELD_IS_SIGNED, TEP_FIELD_IS_STRING,
                            Tokenizer, strtoul)

U64 = (1 << 64) - 1
LONG_SIZE = 8
ERROR = -1          # TEP_EVENT_ERROR of the parser (the tokenizer never gives it)


class Unsupported(ValueError):
    """A print fmt this module does not print as libtraceevent does."""


class Failed(Unsupported):
    """A print fmt libtraceevent itself fails to parse (an operator or a function it does not
    know, such as vmscan's ``REC->ent.pid`` of Linux 7.2): perf prints "[FAILED TO PARSE]" and
    the raw fields (pretty_print -> tep_print_fields): FailedFmt."""


# the functions libtraceevent's plugins register (tep_register_print_function): not followed
_PLUGIN_FUNCTIONS = ("__le16_to_cpup", "jbd2_dev_to_name", "jiffies_to_msecs", "is_writable_pte",
                     "scsi_trace_parse_cdb", "xen_hypercall_name")


class Arg:
    """struct tep_print_arg: ``kind`` one of atom field op type flags symbol hex hex_str
    int_array string bitmask cpumask dynarray dynarray_len null, and that kind's members."""

    def __init__(self, kind=None, **kw):
        self.kind = kind
        self.left = self.right = None
        self.op = None
        self.prio = 0
        self.__dict__.update(kw)

    def copy_from(self, other):         # *arg = *other
        self.__dict__.clear()
        self.__dict__.update(other.__dict__)


_PRIO1 = {"~": 4, "!": 4, "*": 6, "/": 6, "%": 6, "+": 7, "-": 7, "<": 9, ">": 9, "&": 11,
          "^": 12, "|": 13, "?": 16}
_PRIO2 = {"++": 3, "--": 3, ">>": 8, "<<": 8, ">=": 9, "<=": 9, "==": 10, "!=": 10, "&&": 14,
          "||": 15}
_BINARY = {">>", "<<", "&", "|", "&&", "||", "-", "+", "*", "^", "/", "%", "<", ">", "<=", ">=",
           "==", "!="}


def _prio(op):
    """get_op_prio: -1 for an operator it does not know (such as "[")."""
    return (_PRIO1 if len(op) == 1 else _PRIO2).get(op, -1)


class _Parser:
    """event_read_print_args and the process_* functions, over the format's tokens."""

    def __init__(self, inp, fields):
        self.inp, self.fields = inp, fields

    def item(self):
        return self.inp.read_item()

    def field(self, name, missing=Unsupported):
        """The field ``name``; a name the format lacks: None where libtraceevent goes on
        (``missing`` None: the value is 0, the text empty), else the error ``missing``."""
        f = self.fields.get(name)
        if f is None and missing is not None:
            raise missing("%s, a field the format does not have" % name)
        return f

    def args(self):
        """event_read_print_args: the list of arguments after the format string."""
        out, kind = [], ERROR
        while kind != NONE:
            if kind == NEWLINE:
                kind, tok = self.item()
                if kind == NONE:
                    break
                continue
            arg = Arg()
            kind, tok = self.arg(arg)
            out.append(arg)
            if kind == OP:
                kind, tok = self.op(arg, tok)
                _consolidate(arg)
                continue
            if kind == DELIM and tok == ",":
                continue
            break
        if kind not in (NONE, NEWLINE) and not (kind == DELIM and tok == ","):
            raise Unsupported("the arguments stop at %r" % tok)
        return out

    def arg(self, arg):
        """process_arg."""
        kind, tok = self.inp.read_token()
        return self.arg_token(arg, kind, tok)

    def arg_token(self, arg, kind, tok):
        """process_arg_token: (type, token) after the argument."""
        if kind == ITEM:
            if tok == "REC":
                return self.entry(arg)
            atom = tok
            kind, tok = self.item()
            if kind == DELIM and tok == "(":
                return self.function(arg, atom)
            while kind == ITEM:             # atoms can be more than one token long
                atom += " " + tok
                kind, tok = self.item()
            arg.kind, arg.atom = "atom", atom
            return kind, tok
        if kind == SQUOTE:
            arg.kind, arg.atom = "atom", str(ord(tok[0])) if tok else "0"
            return self.item()
        if kind == DQUOTE:
            arg.kind, arg.atom = "atom", tok
            return self.item()
        if kind == DELIM and tok == "(":
            return self.paren(arg)
        if kind in (DELIM, OP):             # single ops
            arg.kind, arg.op, arg.left = "op", tok, None
            return self.op(arg, tok)
        raise Unsupported("unexpected token %r" % tok)

    def entry(self, arg):
        """process_entry: REC->field."""
        kind, tok = self.item()
        if kind == DELIM and tok == ")":
            return ITEM, tok                # "(REC)->"
        _need(kind, tok, OP, "->", "REC not followed by ->")
        name = self.inp.expect_type(ITEM)
        if name is None:
            raise Unsupported("REC-> not followed by a name")
        arg.kind, arg.name, arg.field = "field", name, self.field(name, None)
        return self.inp.read_token()

    def op(self, arg, tok):
        """process_op: ``tok`` is the operator; (type, token) after the expression."""
        right = None
        if arg.kind == "op" and arg.left is None:           # a single op
            if tok not in ("~", "!", "+", "-"):
                raise Unsupported("the operator %r" % tok)
            arg.left = Arg("null")
            right = arg.right = Arg()
            kind, tok = self.arg(right)
        elif tok == "?":
            _push_down(arg, tok)
            kind, tok = self.cond(arg)
        elif tok in _BINARY:
            left = _push_down(arg, tok)
            arg.prio = 0 if left.kind == "null" else _prio(tok)
            if arg.prio < 0:
                raise Unsupported("the operator %r" % tok)
            kind, tok = self.item()
            if arg.op == "*" and kind == DELIM and tok == ")":      # a pointer type
                if left.kind != "atom":
                    raise Unsupported("a bad pointer type")
                left.atom += " *"
                arg.copy_from(left)
                return kind, tok
            right = Arg()
            kind, tok = self.arg_token(right, kind, tok)
            if right.kind == "op" and _prio(arg.op) < _prio(right.op):
                arg.right = right.left      # rotate ops according to the priority
                tmp = Arg()
                tmp.copy_from(arg)
                arg.copy_from(right)
                right.copy_from(tmp)
                arg.left = right
            else:
                arg.right = right
        elif tok == "[":
            _push_down(arg, tok)
            kind, tok = self.array(arg)
        else:
            raise Failed("the operator %r" % tok)
        if kind == OP and tok != ":":
            if _prio(tok) > arg.prio:
                return self.op(arg, tok)
            if right is None:
                raise Unsupported("the operator %r after %r" % (tok, arg.op))
            return self.op(right, tok)
        return kind, tok

    def cond(self, top):
        """process_cond: the ``a : b`` of ``?``."""
        arg, left, right = Arg("op"), Arg(), Arg()
        arg.left, arg.right = left, right
        kind, tok = self.arg(left)
        while kind == OP and tok != ":":
            kind, tok = self.op(left, tok)
        _need(kind, tok, OP, ":", "? without :")
        arg.op = ":"
        kind, tok = self.arg(right)
        top.right = arg
        return kind, tok

    def array(self, top):
        """process_array: ``[index]``."""
        arg = Arg()
        kind, tok = self.arg(arg)
        _need(kind, tok, OP, "]", "an index that is not one item")
        top.right = arg
        return self.item()

    def paren(self, arg):
        """process_paren: a parenthesized expression, or a typecast."""
        kind, tok = self.arg(arg)
        if kind == OP:
            kind, tok = self.op(arg, tok)
        if kind == ITEM and tok == ")":
            raise Unsupported("(REC)->")
        _need(kind, tok, DELIM, ")", "an unclosed (")
        kind, tok = self.item()
        if kind in (ITEM, DQUOTE, SQUOTE) or (kind == DELIM and tok == "("):
            if arg.kind != "atom":
                raise Unsupported("a cast to something that is not a type")
            item = Arg()
            cast = arg.atom
            arg.__dict__.clear()
            arg.__dict__.update(Arg("type", type=cast, item=item).__dict__)
            kind, tok = self.arg_token(item, kind, tok)
        return kind, tok

    def function(self, arg, name):
        """process_function: the helpers libtraceevent knows."""
        if name == "__print_flags":
            return self.flags(arg)
        if name == "__print_symbolic":
            return self.symbols(arg)
        if name in ("__print_hex", "__print_hex_str"):
            arg.kind = "hex" if name == "__print_hex" else "hex_str"
            arg.field = self.delim(",")
            arg.size = self.delim(")")
            return self.item()
        if name == "__print_array":
            arg.kind = "int_array"
            arg.field = self.delim(",")
            arg.count = self.delim(",")
            arg.el_size = self.delim(")")
            return self.item()
        if name == "__print_dynamic_array":
            arg.kind = "int_array"
            arg.field = Arg("dynarray", field=self.field(self.name_then(",")))
            arg.count = None            # the array's length / el_size
            arg.el_size = self.delim(")")
            return self.item()
        if name in ("__get_str", "__get_rel_str"):
            arg.kind, arg.field = "string", self.field(self.name_then(")"), None)
            return self.inp.read_token()
        if name in ("__get_bitmask", "__get_rel_bitmask", "__get_cpumask", "__get_rel_cpumask"):
            arg.kind = "bitmask" if "bitmask" in name else "cpumask"
            arg.field = self.field(self.name_then(")"), None)
            return self.inp.read_token()
        if name in ("__get_dynamic_array", "__get_rel_dynamic_array"):
            arg.kind, arg.field = "dynarray", self.field(self.name_then(")"), Failed)
            kind, tok = self.item()
            if kind == OP and tok == "[":
                raise Unsupported("%s(...)[...]" % name)
            return kind, tok
        if name in ("__get_dynamic_array_len", "__get_rel_dynamic_array_len"):
            arg.kind, arg.field = "dynarray_len", self.field(self.name_then(")"), Failed)
            return self.inp.read_token()
        if name == "__builtin_expect":
            kind, tok = self.arg(arg)
            if not (kind == DELIM and tok == ","):
                raise Unsupported("__builtin_expect")
            if self.inp.expect_type(ITEM) is None or not self.inp.expected(DELIM, ")"):
                raise Unsupported("__builtin_expect")
            return self.item()
        if name in _PLUGIN_FUNCTIONS or name == "sizeof":
            raise Unsupported("the function %s()" % name)
        raise Failed("the function %s(), which libtraceevent does not know" % name)

    def name_then(self, close):
        """A field name and the delimiter after it."""
        name = self.inp.expect_type(ITEM)
        kind, tok = self.inp.read_token()
        if name is None or (kind, tok) != (DELIM, close):
            raise Unsupported("a helper's argument that is not a field name")
        return name

    def delim(self, close):
        """alloc_and_process_delim: one argument, ops allowed, up to ``close``."""
        arg = Arg()
        kind, tok = self.arg(arg)
        if kind == OP:
            kind, tok = self.op(arg, tok)
            _consolidate(arg)
        if (kind, tok) != (DELIM, close):
            raise Unsupported("a helper's argument not ended by %r" % close)
        return arg

    def field_arg(self, arg):
        """process_field_arg."""
        kind, tok = self.arg(arg)
        while kind == OP:
            kind, tok = self.op(arg, tok)
        return kind, tok

    def flags(self, arg):
        """process_flags: __print_flags(value, "delim", { v, "name" }, ...)."""
        field = Arg()
        kind, tok = self.field_arg(field)
        _need(kind, tok, DELIM, ",", "__print_flags")
        kind, tok = self.item()
        delim = None
        if kind in (ITEM, DQUOTE, SQUOTE):
            delim = tok
            kind, tok = self.item()
        _need(kind, tok, DELIM, ",", "__print_flags")
        table, kind, tok = self.table()
        _need(kind, tok, DELIM, ")", "__print_flags")
        arg.__dict__.update(kind="flags", value=field, delim=delim, table=table)
        return self.item()

    def symbols(self, arg):
        """process_symbols: __print_symbolic(value, { v, "name" }, ...)."""
        field = Arg()
        kind, tok = self.field_arg(field)
        _need(kind, tok, DELIM, ",", "__print_symbolic")
        table, kind, tok = self.table()
        _need(kind, tok, DELIM, ")", "__print_symbolic")
        arg.__dict__.update(kind="symbol", value=field, table=table)
        return self.item()

    def table(self):
        """process_fields: [(value text, name)], and the token after it."""
        out = []
        while True:
            kind, tok = self.item()
            if (kind, tok) != (OP, "{"):
                break
            arg = Arg()
            kind, tok = self.arg(arg)
            if kind == OP:
                kind, tok = self.op(arg, tok)
            _need(kind, tok, DELIM, ",", "a flag or symbol table")
            value = _arg_eval(arg)
            arg = Arg()
            kind, tok = self.arg(arg)
            _need(kind, tok, OP, "}", "a flag or symbol table")
            out.append((value, _arg_eval(arg)))
            kind, tok = self.item()
            if (kind, tok) != (DELIM, ","):
                break
        return out, kind, tok


def _push_down(arg, op):
    """The top arg copied to the left of a new op ``op`` that takes its place; the left."""
    left = Arg()
    left.copy_from(arg)
    arg.__dict__.clear()
    arg.__dict__.update(Arg("op", op=op, left=left).__dict__)
    return left


def _need(kind, tok, want_kind, want, what):
    """test_type_token: the token the grammar wants here, else the construct is not parsed."""
    if (kind, tok) != (want_kind, want):
        raise Unsupported(what)


def _consolidate(arg):
    """consolidate_op_arg: an op of two atoms becomes the atom of its value."""
    if arg.kind != "op":
        return
    if arg.left is not None:
        _consolidate(arg.left)
    if arg.right is not None:
        _consolidate(arg.right)
    if arg.left is None or arg.right is None or arg.left.kind != "atom" or arg.right.kind != "atom":
        return
    a, b, op = strtoul(arg.left.atom), strtoul(arg.right.atom), arg.op
    fn = {">>": lambda: a >> b, ">=": lambda: a >= b, ">": lambda: a > b,
          "<<": lambda: a << b, "<=": lambda: a <= b, "<": lambda: a < b,
          "&&": lambda: bool(a and b), "&": lambda: a & b, "||": lambda: bool(a or b),
          "|": lambda: a | b, "-": lambda: a - b, "+": lambda: a + b, "*": lambda: a * b,
          "^": lambda: a ^ b, "/": lambda: a // b if b else None, "%": lambda: a % b if b else None,
          "==": lambda: a == b, "!=": lambda: a != b}.get(op)
    if fn is None:
        return
    v = fn()
    if v is None:
        raise Unsupported("a division by zero")
    arg.__dict__.clear()
    arg.__dict__.update(Arg("atom", atom=str(_signed(int(v) & U64))).__dict__)


def _signed(v):
    return v - (1 << 64) if v >> 63 else v


def _arg_eval(arg):
    """arg_eval: the text of a table's value or name."""
    if arg.kind == "atom":
        return arg.atom
    if arg.kind == "type":
        return _arg_eval(arg.item)
    if arg.kind == "op":
        return str(_signed(_num_eval(arg) & U64))
    raise Unsupported("a flag or symbol table entry of kind %s" % arg.kind)


def _num_eval(arg):
    """arg_num_eval: a constant expression (signed long long in C; kept mod 2^64 here)."""
    if arg.kind == "atom":
        return strtoul(arg.atom)
    if arg.kind == "type":
        return _type(_num_eval(arg.item), arg.type, False)
    if arg.kind != "op":
        raise Unsupported("a constant of kind %s" % arg.kind)
    op = arg.op
    if op == "~":
        return ~_num_eval(arg.right) & U64
    left = 0 if arg.left.kind == "null" and op in "+-" else _num_eval(arg.left)
    right = _num_eval(arg.right)
    sl, sr = _signed(left & U64), _signed(right & U64)     # long long compares
    table = {"|": left | right, "||": int(bool(left or right)), "&": left & right,
             "&&": int(bool(left and right)), "<": int(sl < sr), "<<": (left << (right & 63)),
             "<=": int(sl <= sr), ">": int(sl > sr), ">>": sl >> (right & 63), ">=": int(sl >= sr),
             "==": int(left == right), "!=": int(left != right), "-": left - right,
             "+": left + right}
    if op not in table:
        raise Unsupported("the constant operator %r" % op)
    return table[op] & U64


def _type(val, type_, pointer):
    """eval_type_str: what libtraceevent's cast does to a value (no sign extension)."""
    if len(type_) < 2:
        return val
    if pointer:
        if not type_.endswith("*"):
            return val
        return _type(val, type_[:-2], False)
    if type_.endswith("*") or type_.startswith("struct"):
        return val
    if type_ in ("u8", "s8"):
        return val & 0xff
    if type_ in ("u16", "s16"):
        return val & 0xffff
    if type_ in ("u32", "s32"):
        return val & 0xffffffff
    if type_.startswith("unsigned "):
        type_ = type_[9:]
    return val & {"char": 0xff, "short": 0xffff, "int": 0xffffffff}.get(type_, U64)


class Record:
    """One record's bytes and the event's byte order."""

    def __init__(self, raw, endian):
        self.raw, self.endian = raw, endian

    def number(self, off, size):
        """tep_read_number: unsigned, 0 for a size other than 1 2 4 8."""
        if size not in (1, 2, 4, 8):
            return 0
        return int.from_bytes(bytes(self.raw[off:off + size]), "little" if self.endian == "<" else "big")

    def dynamic(self, field):
        """dynamic_offset_field: (offset, length) of a __data_loc field's data."""
        size = len(self.raw)
        if field.offset + field.size > size:
            return 0, 0
        val = self.number(field.offset, field.size)
        o = val & 0xffff
        ln = size - o if field.size == 2 else (val >> 16) & 0xffff
        off = 0 if o > size else o
        ln = 0 if o + ln > size else ln
        if field.flags & TEP_FIELD_IS_RELATIVE:
            off += field.offset + field.size
        return off, ln


def _num(arg, rec):
    """eval_num_arg: the value of an argument (unsigned 64 bits)."""
    k = arg.kind
    if k == "null":
        return 0
    if k == "atom":
        return strtoul(arg.atom)            # test_for_symbol: perf's tep has no function list
    if k == "field":
        f = arg.field
        if f is None or f.offset + f.size > len(rec.raw):
            return 0
        return rec.number(f.offset, f.size)
    if k == "type":
        return _type(_num(arg.item, rec), arg.type, False)
    if k == "dynarray_len":
        return rec.dynamic(arg.field)[1]
    if k in ("flags", "symbol", "int_array", "hex", "hex_str", "string", "bitmask", "cpumask"):
        return 0
    if k != "op":
        return 0
    op = arg.op
    if op == "[":
        right = _num(arg.right, rec)
        larg, typearg = arg.left, None
        while larg.kind == "type":
            typearg = typearg or larg
            larg = larg.item
        if larg.kind == "field":
            if larg.field is None:
                return 0            # out_warning_field
            size = larg.field.elementsize
            off = larg.field.offset + right * larg.field.elementsize
        elif larg.kind == "dynarray":
            off, _ = rec.dynamic(larg.field)
            off += right
            size = larg.field.elementsize or LONG_SIZE
        else:
            return 0                # default_op: "[" is no operator there (out_warning_op)
        if off + size > len(rec.raw):
            return 0
        val = rec.number(off, size)
        return _type(val, typearg.type, True) if typearg else val
    if op == "?":
        branch = arg.right
        return _num(branch.left if _num(arg.left, rec) else branch.right, rec)
    left, right = _num(arg.left, rec), _num(arg.right, rec)
    if op == "!":
        return int(not right)
    if op == "~":
        return ~right & U64
    if op in ("/", "%") and right == 0:
        raise ValueError("division by zero")
    val = {"!=": lambda: left != right, "|": lambda: left | right, "||": lambda: left or right,
           "&": lambda: left & right, "&&": lambda: left and right, "<": lambda: left < right,
           "<<": lambda: left << (right & 63), "<=": lambda: left <= right,
           ">": lambda: left > right, ">>": lambda: left >> (right & 63),
           ">=": lambda: left >= right, "==": lambda: left == right, "-": lambda: left - right,
           "+": lambda: left + right, "/": lambda: left // right, "%": lambda: left % right,
           "*": lambda: left * right}.get(op)
    if val is None:
        return 0            # out_warning_op (such as "^", which eval_num_arg lacks)
    v = val()
    return (int(bool(v)) if op in ("||", "&&") else int(v)) & U64


def _eval_flag(text):
    """eval_flag: a table value (long long); of names only the few libtraceevent knows, else -1.
    A value arg_eval printed negative ("%lld") starts with "-": not a digit, so -1 too."""
    if text[:1].isdigit():
        return _signed(strtoul(text))
    return _FLAGS.get(text, -1)


_FLAGS = {"HI_SOFTIRQ": 0, "TIMER_SOFTIRQ": 1, "NET_TX_SOFTIRQ": 2, "NET_RX_SOFTIRQ": 3,
          "BLOCK_SOFTIRQ": 4, "IRQ_POLL_SOFTIRQ": 5, "TASKLET_SOFTIRQ": 6, "SCHED_SOFTIRQ": 7,
          "HRTIMER_SOFTIRQ": 8, "RCU_SOFTIRQ": 9, "HRTIMER_NORESTART": 0, "HRTIMER_RESTART": 1}


def _cstr(data):
    return bytes(data).split(b"\0", 1)[0].decode("utf-8", "replace")


def _str(out, fmt, plen, arg, rec):
    """print_str_arg: an argument printed by a %s conversion ``fmt``."""
    k = arg.kind

    def put(s):
        out.append(_cformat(fmt, plen, s))

    if k == "atom":
        put(arg.atom)
    elif k == "field":
        f = arg.field
        if f is None:
            return
        if not f.flags & TEP_FIELD_IS_ARRAY and f.size == LONG_SIZE:
            out.append("%x" % rec.number(f.offset, 8))     # a pointer, by its address
        else:
            ln = f.size or len(rec.raw) - f.offset
            put(_cstr(rec.raw[f.offset:f.offset + ln]))
    elif k == "flags":
        val = _num(arg.value, rec)
        printed = False
        for value, name in arg.table:
            fval = _eval_flag(value)
            if not val and fval < 0:
                put(name)
                break
            if fval > 0 and val & fval == fval:
                if printed and arg.delim:
                    out.append(arg.delim)
                put(name)
                printed = True
                val &= ~fval & U64
        if val:
            if printed and arg.delim:
                out.append(arg.delim)
            out.append("0x%x" % val)
    elif k == "symbol":
        val = _signed(_num(arg.value, rec))
        for value, name in arg.table:
            if val == _eval_flag(value):
                put(name)
                break
        else:
            out.append("0x%x" % (val & U64))
    elif k in ("hex", "hex_str"):
        base = _base(arg.field, rec)
        n = _num(arg.size, rec)
        sep = " " if k == "hex" else ""
        out.append(sep.join("%02x" % b for b in bytes(rec.raw[base:base + n])))
    elif k == "int_array":
        base = _base(arg.field, rec)
        el = _num(arg.el_size, rec)
        if arg.count is None:
            n = rec.dynamic(arg.field.field)[1] // el if el else 0
        else:
            n = _num(arg.count, rec)
        if el not in (1, 2, 4, 8):
            raise Unsupported("__print_array of %d-byte elements" % el)
        out.append("{" + ",".join("0x%x" % rec.number(base + i * el, el) for i in range(n)) + "}")
    elif k == "string":
        if arg.field is None:
            return
        off, ln = rec.dynamic(arg.field)
        if ln:
            put(_cstr(rec.raw[off:]))
    elif k in ("bitmask", "cpumask"):
        if arg.field is None:
            return
        off, ln = rec.dynamic(arg.field)
        show = _bitmask if k == "bitmask" else _cpumask
        out.append(_cformat(fmt, plen, show(bytes(rec.raw[off:off + ln]), rec.endian)))
    elif k == "op":
        if arg.op == "?":
            branch = arg.right
            _str(out, fmt, plen, branch.left if _num(arg.left, rec) else branch.right, rec)
    # type, dynarray, dynarray_len, null: nothing (print_str_arg's default)


def _base(arg, rec):
    if arg.kind == "dynarray":
        return rec.dynamic(arg.field)[0]
    if arg.kind == "field":
        return arg.field.offset
    raise Unsupported("a helper's array that is not a field")


def _bitmask(data, endian):
    """print_bitmask_to_seq: hex, most significant byte first, a comma every 32 bits."""
    n = len(data)
    order = data if endian == ">" else data[::-1]
    digits = "".join("%02x" % b for b in order)
    out = []
    while digits:
        out.insert(0, digits[-8:])
        digits = digits[:-8]
    return ",".join(out) if n else ""


def _cpumask(data, endian):
    """print_cpumask_to_seq: the set bits as ranges, "0-3,8"."""
    order = data[::-1] if endian == ">" else data
    bits = [i * 8 + b for i, byte in enumerate(order) for b in range(8) if byte >> b & 1]
    out, i = [], 0
    while i < len(bits):
        j = i
        while j + 1 < len(bits) and bits[j + 1] == bits[j] + 1:
            j += 1
        out.append("%d" % bits[i] if j == i else "%d-%d" % (bits[i], bits[j]))
        i = j + 1
    return ",".join(out)


def _cformat(fmt, plen, s):
    """printf of a %s conversion (``fmt`` its text, ``plen`` a * width or None)."""
    spec = fmt[1:-1].replace("#", "")
    if plen is not None:
        spec = spec.replace("*", str(plen), 1)
    return ("%" + spec + "s") % s


_BITS = {-2: 8, -1: 16, 0: 32, 1: 64, 2: 64}


def _number(fmt, plen, ls, val):
    """print_arg_number: ``val`` cast to the conversion's width, printed by it."""
    conv = fmt[-1]
    bits = _BITS[ls]
    val &= (1 << bits) - 1
    spec = "".join(c for c in fmt[1:-1] if c not in "hlLzZ")
    if plen is not None:
        spec = spec.replace("*", str(plen), 1)
    if conv == "c":
        return ("%" + spec.replace("#", "") + "c") % chr(val & 0xff)
    if conv in "di" and val >> (bits - 1):
        val -= 1 << bits
    if "#" in spec and val == 0:
        spec = spec.replace("#", "")          # C: no 0x before a 0
    return ("%" + spec + ("d" if conv in "diu" else conv)) % val


class PrintFmt:
    """``text(raw, endian)``: a record's text by the event's print fmt."""

    def __init__(self, fmt, args, resolve):
        self.pieces = _parse_args(fmt, args)
        self.resolve = resolve
        for p in self.pieces:
            if not isinstance(p, str) and p[0] != "string" and "pI" not in p[1] and "pi" not in p[1]:
                _numeric(p[2])


    def text(self, raw, endian):
        rec = Record(raw, endian)
        out = []
        for p in self.pieces:
            if isinstance(p, str):
                out.append(p)
                continue
            kind, fmt, arg, len_arg, ls = p
            plen = _signed32(_num(len_arg, rec)) if len_arg is not None else None
            if kind == "digit":
                out.append(_number(fmt, plen, ls, _num(arg, rec)))
            elif kind == "string":
                _str(out, fmt, plen, arg, rec)
            else:
                out.append(self._pointer(fmt, arg, rec))
        return "".join(out)

    @staticmethod
    def _ip(ext, arg, rec):
        """print_ip_arg: the field's (or dynamic array's) bytes as an address."""
        while arg.kind == "type":
            arg = arg.item
        if arg.kind == "dynarray":
            off, ln = rec.dynamic(arg.field)
        elif arg.field is None:
            return ""
        else:
            off, ln = arg.field.offset, arg.field.size
        return ip_text.text(ext, rec.raw[off:off + ln], rec.endian == ">")

    def _pointer(self, fmt, arg, rec):
        """print_arg_pointer: %p as glibc prints it, %pS %ps %pF %pf by the kernel's symbols."""
        val = _num(arg, rec)
        ext = fmt[fmt.index("p") + 1:]
        if ext[:1] in ("I", "i"):
            return self._ip(ext, arg, rec)
        if ext[:1] in ("F", "f", "S", "s"):
            hit = self.resolve(val) if self.resolve else None
            if hit is None:
                return "0x%x" % val
            name, start = hit
            return name + ("+0x%x" % ((val - start) & U64) if ext[0] in "FS" else "")
        return "0x%x" % val if val else "(nil)"


def _numeric(arg):
    """Refuse, before the run, a number that is the address of a record's data (a dynamic
    array without an index: eval_num_arg gives the library's own pointer)."""
    if arg is None:
        return
    if arg.kind == "dynarray":
        raise Unsupported("the address of a dynamic array")
    if arg.kind == "op" and arg.op == "[":
        _numeric(arg.right)
        return
    for sub in (arg.__dict__.get("left"), arg.__dict__.get("right"), arg.__dict__.get("item")):
        if isinstance(sub, Arg):
            _numeric(sub)


def _ip_arg(arg):
    """print_ipv4_arg & co. print a field (a sockaddr also a dynamic array), after casts."""
    while arg.kind == "type":
        arg = arg.item
    if arg.kind not in ("field", "dynarray"):
        raise Unsupported("%pI of an argument that is not a field")


def _signed32(v):
    v &= 0xffffffff
    return v - (1 << 32) if v >> 31 else v


def _parse_args(fmt, args):
    """parse_args: literal text and conversions, each conversion taking its arguments."""
    pieces, args, i = [], list(args), 0
    while i < len(fmt):
        if fmt[i] == "%" and fmt[i + 1:i + 2] != "%":
            i = _parse_format(pieces, fmt, i, args)
        else:
            i = _parse_string(pieces, fmt, i)
    if args:
        raise Unsupported("more arguments than conversions")
    return pieces


_ESC = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}


def _parse_string(pieces, fmt, i):
    """parse_arg_string: text up to a conversion, \\ escapes and %% resolved."""
    out = []
    while i < len(fmt):
        c = fmt[i]
        if c == "\\":
            i += 1
            nxt = fmt[i:i + 1]
            out.append(_ESC.get(nxt, nxt))
        elif c == "%":
            if fmt[i + 1:i + 2] == "%":
                out.append("%")
                i += 1
            else:
                break
        else:
            out.append(c)
        i += 1
    pieces.append("".join(out))
    return i


def _parse_format(pieces, fmt, i, args):
    """parse_arg_format: one conversion from fmt[i] == '%'; the index after it."""
    start, ls, len_arg = i, 0, None
    i += 1
    while i < len(fmt):
        c = fmt[i]
        if c == "h":
            ls -= 1
        elif c == "l":
            ls += 1
        elif c == "L":
            ls = 2
        elif c in "zZ":
            ls = 1
        elif c in "#.0123456789-+":
            pass
        elif c == "*":
            if not args or len_arg is not None:
                raise Unsupported("a * without its argument")
            len_arg = args.pop(0)
        elif c == "p":
            if not args:
                raise Unsupported("%p without its argument")
            ext = fmt[i + 1:i + 2]
            if ext in ("F", "S", "f", "s"):
                i += 1
            elif ext in ("I", "i") and fmt[i + 2:i + 3] in ("4", "6", "S"):
                i += ip_text.consumed(fmt[i + 1:])
                _ip_arg(args[0])
            elif ext in ("M", "m", "I", "i", "U", "h"):
                raise Unsupported("the conversion %%p%s" % ext)
            pieces.append(("pointer", fmt[start:i + 1], args.pop(0), len_arg, ls))
            return i + 1
        elif c in "cduixXo":
            if c == "o" and "#" in fmt[start:i]:
                raise Unsupported("the conversion %s" % fmt[start:i + 1])   # Python's 0o
            if not args:
                raise Unsupported("%s without its argument" % fmt[start:i + 1])
            if ls not in _BITS:
                raise Unsupported("the conversion %s" % fmt[start:i + 1])
            pieces.append(("digit", fmt[start:i + 1], args.pop(0), len_arg, ls))
            return i + 1
        elif c == "s":
            if not args:
                raise Unsupported("%s without its argument" % fmt[start:i + 1])
            pieces.append(("string", fmt[start:i + 1], args.pop(0), len_arg, 0))
            return i + 1
        else:
            pieces.append(">%s<" % c)
            return i + 1
        i += 1
    return i


def parse(text, fields, resolve=None):
    """The PrintFmt of a format ``text`` (bytes) whose fields are ``fields`` {name: FieldDesc}."""
    at = text.find(b"\nprint fmt:")
    if at < 0:
        raise Unsupported("no print fmt")
    inp = Tokenizer(bytes(text[at + 1:]))
    if not (inp.expected(ITEM, "print") and inp.expected(ITEM, "fmt") and inp.expected(OP, ":")):
        raise Unsupported("no print fmt")
    fmt = inp.expect_type(DQUOTE)
    if fmt is None:
        raise Unsupported("no print fmt")
    kind, tok = inp.read_item()
    while kind == DQUOTE:
        fmt += tok
        kind, tok = inp.read_item()
    args = []
    if (kind, tok) == (DELIM, ","):
        args = _Parser(inp, fields).args()
    return PrintFmt(fmt, args, resolve)



class FailedFmt:
    """pretty_print of an event libtraceevent failed to parse: "[FAILED TO PARSE]", then each
    field as `` name=value`` (tep_print_fields -> print_field_raw)."""

    def __init__(self, fields):
        self.fields = fields

    def text(self, raw, endian):
        rec = Record(raw, endian)
        return "[FAILED TO PARSE]" + "".join(" %s=%s" % (f.name, _raw_field(f, rec))
                                             for f in self.fields)


def _raw_field(f, rec):
    """print_field_raw: a printable string array as text, other arrays as ARRAY[hex, ...],
    numbers by their sign, size and pointer-ness."""
    if f.flags & TEP_FIELD_IS_ARRAY:
        off, ln = rec.dynamic(f) if f.flags & TEP_FIELD_IS_DYNAMIC else (f.offset, f.size)
        data = bytes(rec.raw[off:off + ln])
        text = data.split(b"\0", 1)[0]
        if f.flags & TEP_FIELD_IS_STRING and all(32 <= b < 127 or 9 <= b <= 13 for b in text):
            return _cstr(rec.raw[off:])
        return "ARRAY[" + ", ".join("%02x" % b for b in data) + "]"
    val = rec.number(f.offset, f.size)
    if f.flags & TEP_FIELD_IS_POINTER:
        return "0x%x" % val
    if f.flags & TEP_FIELD_IS_SIGNED:
        if f.size == 4:
            return "0x%x" % _signed32(val) if f.flags & TEP_FIELD_IS_LONG else "%d" % _signed32(val)
        if f.size == 2:
            return "%2d" % (val - (1 << 16) if val >> 15 else val)
        if f.size == 1:
            return "%1d" % (val - (1 << 8) if val >> 7 else val)
        return "%d" % _signed(val)
    return "0x%x" % val if f.flags & TEP_FIELD_IS_LONG else "%d" % val
