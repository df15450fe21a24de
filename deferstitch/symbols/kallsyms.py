"""/proc/kallsyms of the recorded kernel: kernel and module symbols, relocated for KASLR.

perf keeps kallsyms types T, W, D and B (either case: symbol_type__filter), with the binding
from the case (upper = global, W/w = weak). A kallsyms from another boot of the same build is
shifted by the difference between its ``_text`` and the ``_text`` the recording saw (the pgoff
of the kernel MMAP "[kernel.kallsyms]_text").
"""
import os
import re
import sys
from array import array

from .elf import note_build_id
from .table import GLOBAL, LOCAL, STT_FUNC, WEAK, SymbolTable

KERNEL_NOTES = "/sys/kernel/notes"
KALLSYMS_DSO = "[kernel.kallsyms]"
_HEX = re.compile(rb"[0-9a-fA-F]{1,16}").fullmatch
_KEPT = frozenset(b"TWDBtwdb")
_BIND = {ord("W"): WEAK, ord("w"): WEAK, **{c: GLOBAL for c in b"TDB"}, **{c: LOCAL for c in b"tdb"}}


def columns(data):
    """The symbols of a kallsyms text (bytes): (the address of ``_text`` or None, [(module or
    None, starts, binds, names)]), each group sorted by start (stably: equal starts keep the
    file's order), the kernel's and each module's in the order they first appear.

    A line is "ADDR TYPE NAME [\t[MODULE]]" split on ASCII white space; ADDR 1 to 16 hex
    digits, else the line is passed over; perf keeps the types T, W, D, B in either case
    (symbol_type__filter), W/w weak, upper case global. _accel.kallsyms_columns is the C twin
    (tests/test_kallsyms.py): the same rules, the names left in the text until asked."""
    text, groups = None, {}
    for line in data.split(b"\n"):
        parts = line.split()
        if len(parts) < 3 or not _HEX(parts[0]):
            continue
        addr, typ, name = int(parts[0], 16), parts[1], parts[2]
        if text is None and name == b"_text":
            text = addr
        if len(typ) != 1 or typ[0] not in _KEPT:
            continue
        module = parts[3].strip(b"[]").decode("utf-8", "replace") \
            if len(parts) > 3 and parts[3][:1] == b"[" else None
        g = groups.get(module)
        if g is None:
            g = groups[module] = ([], [], [])
        g[0].append(addr)
        g[1].append(_BIND[typ[0]])
        g[2].append(name.decode("utf-8", "replace"))
    out = []
    for module, (starts, binds, names) in groups.items():
        order = sorted(range(len(starts)), key=starts.__getitem__)
        out.append((module, [starts[i] for i in order], bytes(binds[i] for i in order),
                    [names[i] for i in order]))
    return text, out


class _Names:
    """The names of one group of the C twin's columns, decoded from the text when asked."""
    __slots__ = ("data", "offs", "lens")

    def __init__(self, data, offs, lens):
        self.data, self.offs, self.lens = data, offs, lens

    def __len__(self):
        return len(self.offs)

    def __getitem__(self, i):
        o = self.offs[i]
        return self.data[o:o + self.lens[i]].decode("utf-8", "replace")


def _c_columns(data):
    """columns() by the C twin, or None where it is not built or DEFERSTITCH_ACCEL=0."""
    if os.environ.get("DEFERSTITCH_ACCEL") == "0":
        return None
    try:
        from .. import _accel
    except ImportError:
        return None
    text, groups = _accel.kallsyms_columns(data)
    out = []
    for module, starts, binds, offs, lens in groups:
        out.append((module, array("Q", starts), binds,
                    _Names(data, array("I", offs), array("I", lens))))
    return text, out


class Kallsyms:
    def __init__(self, path):
        opener = open
        if str(path).endswith(".xz"):
            import lzma
            opener = lzma.open
        with opener(path, "rb") as f:
            data = f.read()
        text, groups = _c_columns(data) or columns(data)
        self.text = text
        self.path = path
        self.delta = 0
        self.kernel = SymbolTable()
        self.modules = {}
        for module, starts, binds, names in groups:
            n = len(starts)
            table = SymbolTable.from_columns(starts, bytes(n), binds, bytes((STT_FUNC,)) * n, names,
                                             presorted=True)
            if module is None:
                self.kernel = table
            else:
                self.modules[module] = table

    def relocate(self, recorded_text):
        """Shift every symbol so that our _text lands on the recorded one."""
        if self.text is None or recorded_text is None or recorded_text == self.text + self.delta:
            return
        self.delta = recorded_text - self.text

    def find(self, addr, module=None):
        table = self.modules.get(module) if module else self.kernel
        if table is None:
            return None
        return table.find(addr - self.delta)


def running_build_id(notes=KERNEL_NOTES):
    """The running kernel's build id (its ELF notes in sysfs, native byte order), or None."""
    try:
        with open(notes, "rb") as f:
            data = f.read()
    except OSError:
        return None
    return note_build_id(data, "<" if sys.byteorder == "little" else ">")


def find_kallsyms(build_id, buildid_dir, running=None):
    """(kallsyms path or None, warning or None) for the recorded kernel, as perf's
    dso__find_kallsyms (util/symbol.c) does without a vmlinux: /proc/kallsyms when the
    running kernel has the recorded build id, else the build-id cache's copy
    (BUILDID_DIR/[kernel.kallsyms]/<id>/kallsyms, or the older BUILDID_DIR/[kernel.kallsyms]/<id>),
    else perf's one-line error and no kernel names."""
    if running is None:
        running = running_build_id()
    if running == build_id and os.access("/proc/kallsyms", os.R_OK):
        return "/proc/kallsyms", None
    base = os.path.join(buildid_dir, KALLSYMS_DSO, build_id)
    for path in (os.path.join(base, "kallsyms"), base):
        if os.path.isfile(path):
            return path, None
    return None, "No kallsyms or vmlinux with build-id %s was found" % build_id
