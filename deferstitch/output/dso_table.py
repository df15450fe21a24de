"""info's DSO table: each file the maps name, its recorded build id, and which file here names
its frames (or why none does), found the way script/folded/export find them.

Cheap on purpose: only MMAP/MMAP2 records are parsed, files are located by their headers and
build ids (symbols/locate.py), and no symbol table or kallsyms is read.
"""
import os

from ..abi import consts as C
from ..symbols.dwarf import has_debug_info
from ..symbols.jitdump import JitDump, marker_pid
from ..symbols.kallsyms import KALLSYMS_DSO
from ..symbols.locate import Locator
from ..symbols.perf_context import default_kallsyms, kernel_build_id, mapped_dso, parse_map, vdso_source
from ..symbols.perfmap import PerfMap, map_file, map_pid
from ..symbols.vdso import is_vdso
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
        path = KALLSYMS_DSO if m.filename.startswith(KALLSYMS_DSO) else mapped_dso(m, rec.misc)
        self.seen.setdefault((path, m.build_id or self.recorded.get(path)), m.pid == -1)

    def rows(self):
        """[{dso, build_id, symbols, via, binary, dwarf}]: symbols None when nothing names the
        dso, and via then says why; dwarf the file whose DWARF gives its inlined calls."""
        out = []
        dumps = {marker_pid(path): path for path, _b in self.seen if marker_pid(path) is not None}
        for (path, build_id), kernel in self.seen.items():
            row = {"dso": path, "build_id": build_id, "symbols": None, "via": None, "binary": None,
                   "dwarf": None}
            if path == KALLSYMS_DSO:
                row["build_id"] = build_id or kernel_build_id(self.perf)
                self._kernel(row)
            elif kernel:                 # a module: named through the kernel's kallsyms
                self._kernel(row)
            elif map_pid(path) is not None:
                self._perf_map(row, dumps.get(map_pid(path)))
            elif marker_pid(path) is not None:
                self._jitdump(row)
            elif not is_vdso(path) and (path.startswith("[") or path.startswith("//")
                                        or not path.startswith("/")):
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

    def _perf_map(self, row, dump):
        """Executable anonymous memory: named by the runtime's map file (symbols/perfmap.py),
        and first by the process's jitdump (``dump``, its own row) when there is one."""
        where = map_file(row["dso"], self.locator.symfs)
        first = "jitdump %s first, then " % dump if dump else ""
        try:
            row["symbols"], row["via"] = where, first + "perf map: %d entries" % len(PerfMap(where))
        except OSError as err:
            row["via"] = first + "perf map %s: %s" % (where, err.strerror or err)

    def _jitdump(self, row):
        """A jitdump's marker mapping: the dump names the code of /tmp/perf-PID.map."""
        where = map_file(row["dso"], self.locator.symfs)
        if not os.path.isfile(where):
            row["via"] = "jitdump %s: not found" % where
            return
        try:
            dump = JitDump(where)
        except OSError as err:
            row["via"] = "jitdump %s: %s" % (where, err.strerror or err)
            return
        row["symbols"] = where
        row["via"] = "jitdump: %d pieces of code name /tmp/perf-%d.map" % (len(dump.codes),
                                                                             marker_pid(row["dso"]))
        if dump.error:
            row["via"] += "; " + dump.error

    def _kernel(self, row):
        if self.kallsyms:
            row["symbols"], row["via"] = self.kallsyms, "--kallsyms"
        elif self.locator.symfs:
            row["via"] = "--symfs given: only --kallsyms names the kernel (as in perf)"
        else:
            path, warning = default_kallsyms(self.perf, self.locator.buildid_dir, row["build_id"])
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
