"""/proc/kallsyms of the recorded kernel: kernel and module symbols, relocated for KASLR.

perf keeps kallsyms types T, W, D and B (either case: symbol_type__filter), with the binding
from the case (upper = global, W/w = weak). A kallsyms from another boot of the same build is
shifted by the difference between its ``_text`` and the ``_text`` the recording saw (the pgoff
of the kernel MMAP "[kernel.kallsyms]_text").
"""
import os
import sys

from .elf import note_build_id
from .table import GLOBAL, LOCAL, WEAK, SymbolTable

KERNEL_NOTES = "/sys/kernel/notes"
KALLSYMS_DSO = "[kernel.kallsyms]"


class Kallsyms:
    def __init__(self, path):
        kernel, modules = [], {}
        self.text = None
        opener = open
        if str(path).endswith(".xz"):
            import lzma
            opener = lzma.open
        with opener(path, "rt", errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 3:
                    continue
                try:
                    addr = int(parts[0], 16)
                except ValueError:
                    continue
                typ, name = parts[1], parts[2]
                if name == "_text" and self.text is None:
                    self.text = addr
                if typ.upper() not in "TWDB":
                    continue
                bind = WEAK if typ in "Ww" else GLOBAL if typ.isupper() else LOCAL
                sym = (addr, addr, bind, name)
                if len(parts) > 3 and parts[3].startswith("["):
                    modules.setdefault(parts[3].strip("[]"), []).append(sym)
                else:
                    kernel.append(sym)
        self.path = path
        self._raw_kernel, self._raw_modules = kernel, modules
        self.delta = 0
        self.kernel = SymbolTable(kernel)
        self.modules = {m: SymbolTable(s) for m, s in modules.items()}

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
