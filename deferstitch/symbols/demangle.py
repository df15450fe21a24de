"""Symbol names as perf prints them: demangled, in perf's order (tools/perf/util/symbol.c
``dso__demangle_sym``, formerly symbol-elf.c ``demangle_sym``), each name once.

    Rust      legacy ``_ZN..17h<hash>E`` and v0 ``_R..``, hash and disambiguators left out
              (util/demangle-rust-v0.c, rustc-demangle's ``{:#}``): demangle_rust.py
    C++       Itanium ``_Z..`` (and, as __cxa_demangle does, a bare type name: ``f`` is
              ``float``) by libstdc++'s own ``abi::__cxa_demangle``, the one perf links
              (util/demangle-cxx.cpp), called through ctypes: the system's demangler, no copy
    OCaml     ``camlModule__fn_123`` -> ``Module.fn_123`` (util/demangle-ocaml.c)
    Java      ``Ljava/lang/String;hashCode()I`` -> ``java.lang.String.hashCode()``
              (util/demangle-java.c, JAVA_DEMANGLE_NORET)

perf demangles the names of ELF symbols (.symtab, .dynsym, and so jitted code written out by
``perf inject --jit``) and of inlined functions (util/srcline.c ``new_inline_sym``), never
kernel symbols (``symbol_conf.demangle_kernel`` is off) nor perf-map names.
"""
import ctypes

from .demangle_rust import demangle_rust


def _cxa():
    """libstdc++'s __cxa_demangle and libc's free, or None where libstdc++ is not installed."""
    try:
        lib = ctypes.CDLL("libstdc++.so.6")
        cxa = lib.__cxa_demangle
        free = ctypes.CDLL(None).free
    except (OSError, AttributeError):
        return None
    cxa.restype = ctypes.c_void_p
    cxa.argtypes = (ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int))
    free.argtypes = (ctypes.c_void_p,)
    free.restype = None
    return cxa, free


_CXA = _cxa()


def demangle_cxx(name):
    """``abi::__cxa_demangle(name)``, or None (not a C++ name, or no libstdc++ here).
    libiberty's own limits keep it bounded: a name of over ~1 000 characters is refused."""
    if _CXA is None or "\0" in name:
        return None
    cxa, free = _CXA
    status = ctypes.c_int(0)
    out = cxa(name.encode("utf-8", "surrogateescape"), None, None, ctypes.byref(status))
    if not out:
        return None
    try:
        return ctypes.string_at(out).decode("utf-8", "surrogateescape")
    finally:
        free(out)


def demangle_ocaml(name):
    if not (name.startswith("caml") and len(name) > 4 and "A" <= name[4] <= "Z"):
        return None
    out, i, n = [], 4, len(name)
    hexd = "0123456789abcdefABCDEF"
    while i < n:
        if name.startswith("__", i):
            out.append(".")
            i += 2
        elif name[i] == "$" and i + 2 < n and name[i + 1] in hexd and name[i + 2] in hexd:
            out.append(chr(int(name[i + 1:i + 3], 16)))
            i += 3
        else:
            out.append(name[i])
            i += 1
    return "".join(out)


def demangle_java(name):
    """The method part of a JVM signature up to its ``)``, as java_demangle_sym with
    JAVA_DEMANGLE_NORET: classes dotted, argument types spelled out."""
    end = name.rfind(")")
    if end < 0:
        return None
    return _java(name[:end + 1])


_JAVA_BASE = {"B": "byte", "C": "char", "D": "double", "F": "float", "I": "int", "J": "long",
              "S": "short", "Z": "boolean"}
_PREFIX, _CLASS, _FUNC, _TYPE, _CTYPE = range(5)


def _java(s):
    """__demangle_java_sym(str, end, MODE_PREFIX) of util/demangle-java.c, step for step."""
    out, mode, array, narg = [], _PREFIX, 0, 0
    for i, c in enumerate(s):
        if c == "L":
            if mode in (_PREFIX, _TYPE):
                if mode == _TYPE:
                    if narg:
                        out.append(", ")
                    narg += 1
                mode = _CLASS if mode == _PREFIX else _CTYPE
            else:
                out.append(c)
        elif c in _JAVA_BASE or c == "V":
            if mode == _TYPE:
                if c != "V":
                    if narg:
                        out.append(", ")
                    narg += 1
                out.append(_JAVA_BASE.get(c, "void") + "[]" * array)
                array = 0
            else:
                out.append(c)
        elif c == "[":
            if mode != _TYPE:
                return None
            array += 1
        elif c == "(":
            if mode != _FUNC:
                return None
            out.append(c)
            mode = _TYPE
        elif c == ")":
            if mode != _TYPE:
                return None
            out.append(c)
            narg = 0
        elif c == ";":
            if mode not in (_CLASS, _CTYPE):
                return None
            if mode == _CLASS and i + 1 < len(s) and s[i + 1].isascii() and s[i + 1].isalpha():
                out.append(".")
            mode = _FUNC if mode == _CLASS else _TYPE
        elif c == "/":
            if mode not in (_CLASS, _CTYPE):
                return None
            out.append(".")
        else:
            out.append(c)
    return "".join(out)


def demangle(name):
    """The name perf prints for an ELF or DWARF name: demangled, else as it is. A PLT entry's
    ``name@plt`` is its symbol's name demangled, then ``@plt`` (symbol-elf.c names it so)."""
    if name.endswith("@plt"):
        return demangle(name[:-4]) + "@plt"
    return (demangle_rust(name) or demangle_cxx(name) or demangle_ocaml(name)
            or demangle_java(name) or name)


class Demangler:
    """``demangle`` with each name's answer kept: profiles name a few thousand functions over and
    over. ``enabled=False`` (``--no-demangle``) gives every name as it is."""

    LIMIT = 1 << 18

    def __init__(self, enabled=True):
        self.enabled = enabled
        self._seen = {}

    def __call__(self, name):
        if not self.enabled or name is None:
            return name
        hit = self._seen.get(name)
        if hit is None:
            if len(self._seen) > self.LIMIT:
                self._seen.clear()
            hit = self._seen[name] = demangle(name)
        return hit
