"""info's DSO table: each file the maps name, its recorded build id, and which file here names
its frames (or why none does), found the way script/folded/export find them.

Cheap on purpose: only MMAP/MMAP2 records are parsed, files are located by their headers and
build ids (symbols/locate.py), and no symbol table or kallsyms is read.
"""
from ..abi import consts as C
from ..symbols.kallsyms import KALLSYMS_DSO
from ..symbols.locate import Locator
from ..symbols.dwarf import has_debug_info
from ..symbols.vdso import is_vdso
from .perf_records import default_kallsyms, kernel_build_id, parse_map, vdso_source
from .tables import table


class DsoTable:
    def __init__(self, perf, symfs=None, buildid_dir=None, kallsyms=None):
        self.perf = perf
        self.locator = Locator(symfs, buildid_dir)
        self.locator.vdso = vdso_source(perf)
        self.kallsyms = kallsyms
        self.recorded = {}           # path -> build id, from the BUILD_ID feature
        for ent in perf.feature(C.HEADER_BUILD_ID) or ():
            self.recorded.setdefault(ent["filename"], ent["build_id"])
        self.seen = {}               # (path, build id) -> kernel side?, in the order the maps name them

    def observe(self, rec):
        """Note the file of a MMAP/MMAP2 record (other records: the caller skips them)."""
        try:
            m = parse_map(self.perf, rec)
        except ValueError:
            return                   # a damaged side-band record: info counts it all the same
        path = KALLSYMS_DSO if m.filename.startswith(KALLSYMS_DSO) else m.filename
        self.seen.setdefault((path, m.build_id or self.recorded.get(path)), m.pid == -1)

    def rows(self):
        """[{dso, build_id, symbols, via, binary, dwarf}]: symbols None when nothing names the
        dso, and via then says why; dwarf the file whose DWARF gives its inlined calls."""
        out = []
        for (path, build_id), kernel in self.seen.items():
            row = {"dso": path, "build_id": build_id, "symbols": None, "via": None, "binary": None,
                   "dwarf": None}
            if path == KALLSYMS_DSO:
                row["build_id"] = build_id or kernel_build_id(self.perf)
                self._kernel(row)
            elif kernel:                 # a module: named through the kernel's kallsyms
                self._kernel(row)
            elif not is_vdso(path) and (path.startswith("[") or path.startswith("//") or not path.startswith("/")):
                row["via"] = "not a file"
            else:
                where = self.locator.locate(path, build_id)
                row["symbols"], row["via"] = where.symtab, where.kind or where.why
                if where.kind and where.why:
                    row["via"] += "; refused " + where.why
                if where.runtime != where.symtab:
                    row["binary"] = where.runtime
                if not is_vdso(path):
                    row["dwarf"] = next((f for f in dict.fromkeys((where.symtab, where.runtime))
                                         if f and has_debug_info(f)), None)
            out.append(row)
        return out

    def _kernel(self, row):
        if self.kallsyms:
            row["symbols"], row["via"] = self.kallsyms, "--kallsyms"
        elif self.locator.symfs:
            row["via"] = "--symfs given: only --kallsyms names the kernel (as in perf)"
        else:
            path, warning = default_kallsyms(self.perf, self.locator.buildid_dir)
            row["symbols"], row["via"] = path, "kallsyms" if path else (
                warning or "no --kallsyms, and not recorded on the running kernel")

    def text(self):
        rows = self.rows()
        return table([[r["dso"], r["build_id"] or "-",
                       "(itself)" if r["symbols"] == r["dso"] else r["symbols"] or "-",
                       r["via"] + (", binary " + r["binary"] if r["binary"] else "")
                       + ("; inlined calls from " + ("its DWARF" if r["dwarf"] == r["symbols"] else r["dwarf"])
                          if r["dwarf"] else "")] for r in rows],
                     ["dso", "build id", "symbols from", "how"])
