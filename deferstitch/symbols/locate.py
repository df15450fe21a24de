"""Which files name a dso: perf's search for a binary and its debug file, in perf's order.

perf's dso__load (util/symbol.c) walks binary_type_symtab and builds each path with
dso__read_binary_type_filename (util/dso.c); every candidate whose build id matches the recorded
one is opened, the first with a ``.symtab`` gives the symbols ("syms_ss") and the first with a
``.dynsym`` is the runtime binary ("runtime_ss": program headers, PLT). A debug file has the
symbols but NOBITS copies of everything else, so both are usually needed. The order, with
DEBUG = SYMFS/usr/lib/debug (perf prefixes it with --symfs too):

    DEBUGLINK                 the name in the binary's .gnu_debuglink, looked for in the binary's
                              directory, DIR/.debug/, then DEBUG/DIR/
    BUILD_ID_CACHE            BUILDID_DIR/.build-id/xx/rest (a file, or a directory holding elf);
                              BUILDID_DIR is --buildid-dir, else SYMFS/.debug, else ~/.debug
    BUILD_ID_CACHE_DEBUGINFO  BUILDID_DIR/.build-id/xx/rest/debug
    FEDORA_DEBUGINFO          DEBUG/PATH.debug
    UBUNTU_DEBUGINFO          DEBUG/PATH
    BUILDID_DEBUGINFO         DEBUG/.build-id/xx/rest.debug      (what libc6-dbg installs)
    SYSTEM_PATH_DSO           SYMFS/PATH (and, unlike perf, PATH itself when SYMFS lacks it)
    OPENEMBEDDED_DEBUGINFO    SYMFS/DIR/.debug/NAME
    MIXEDUP_UBUNTU_DEBUGINFO  DEBUG/lib/... for a PATH under /usr/lib/

Two quirks of perf's DEBUGLINK (debuglink_paths in util/dso.c) are left out: it first tries
the bare link name relative to its working directory, and its last place is
/usr/lib/debug/SYMFS/DIR/ (the symfs inside the debug directory); we look in
SYMFS/usr/lib/debug/DIR/, as its other debug paths do, so that a result never depends on where
the command runs. A file whose build id differs from the recorded one (or, with none recorded,
from the binary's own) is refused; a debuglink target is also refused when its CRC-32 differs
and no build id could decide.
"""
import os
from collections import namedtuple

from .elf import SHT_DYNSYM, SHT_SYMTAB, ElfFile, file_crc32
from .vdso import VdsoSource, is_vdso

DEBUG_DIR = "/usr/lib/debug"

# symtab: the file whose symbols name the dso (None: none found); runtime: the binary whose
# segments map file offsets; kind: perf's binary type of symtab; why: the files refused and why
# ("not found" when nothing was there at all), else None.
Located = namedtuple("Located", "symtab runtime kind why")


def buildid_dir_for(symfs=None, buildid_dir=None):
    """The build-id cache: --buildid-dir, else SYMFS/.debug (perf's util/symbol.c
    symbol__config_symfs: an unpacked `perf archive` names everything with --symfs alone), else
    $HOME/.debug (util/config.c set_buildid_dir). perf parses `perf --buildid-dir` before the
    command's --symfs, which replaces it; ours is the command's own option, so it wins."""
    if buildid_dir:
        return buildid_dir
    if symfs:
        return os.path.join(symfs, ".debug")
    return os.path.join(os.path.expanduser("~"), ".debug")


class Locator:
    def __init__(self, symfs=None, buildid_dir=None):
        self.symfs = symfs
        self.buildid_dir = buildid_dir_for(symfs, buildid_dir)
        self.debug_dir = self._symfs(DEBUG_DIR)
        self.vdso = VdsoSource()  # the recorded kernel, for [vdso] (set by who knows the recording)
        self._found = {}          # (path, build id) -> Located

    def _symfs(self, path):
        return os.path.join(self.symfs, path.lstrip("/")) if self.symfs else path

    def candidates(self, path, build_id, link=None):
        """(kind, file) in perf's order; ``link``: the binary's .gnu_debuglink (name, crc)."""
        binary = self._symfs(path)
        if link is not None:
            d = os.path.dirname(binary)
            for cand in (os.path.join(d, link[0]), os.path.join(d, ".debug", link[0]),
                         self.debug_dir + os.path.dirname(path) + "/" + link[0]):
                yield "debuglink", cand
        if build_id:
            base = os.path.join(self.buildid_dir, ".build-id", build_id[:2], build_id[2:])
            yield "build-id-cache", base
            yield "build-id-cache", os.path.join(base, "elf")
            yield "build-id-cache-debug", os.path.join(base, "debug")
        yield "fedora-debuginfo", self.debug_dir + path + ".debug"
        yield "ubuntu-debuginfo", self.debug_dir + path
        if build_id:
            yield "buildid-debuginfo", os.path.join(self.debug_dir, ".build-id", build_id[:2],
                                                    build_id[2:] + ".debug")
        yield "system-path", binary
        if self.symfs:
            yield "system-path", path
        d, name = os.path.split(path)
        yield "openembedded-debuginfo", self._symfs(os.path.join(d, ".debug", name))
        if path.startswith("/usr/lib/"):
            yield "mixedup-ubuntu-debuginfo", self.debug_dir + path[4:]

    def locate(self, path, build_id):
        """Located(symtab, runtime, kind, why) for a recorded path and build id (cached)."""
        key = (path, build_id)
        hit = self._found.get(key)
        if hit is None:
            hit = self._found[key] = self._locate(path, build_id)
        return hit

    def _locate(self, path, build_id):
        syms = runtime = kind = runtime_kind = loadable = None
        refused, tried = [], set()
        if is_vdso(path):           # no file is mapped: the kernel's image (vdso.py)
            link, want, whose = None, build_id, "recorded"
            cands = self.vdso.candidates(path, build_id, self.symfs, self.buildid_dir)
        else:
            link, own = _binary_facts(self._symfs(path))
            # without a recorded build id the binary's own one still tells its debug files apart
            want, whose = (build_id, "recorded") if build_id else (own, "the binary's")
            cands = self.candidates(path, build_id or own, link)     # perf reads the file's own id too
        for k, cand in cands:
            if cand in tried or not os.path.isfile(cand):
                continue
            tried.add(cand)
            try:
                elf = ElfFile(cand)
                try:
                    bid = elf.build_id()
                    has_symtab, has_dynsym = elf.has(".symtab", SHT_SYMTAB), elf.has(".dynsym", SHT_DYNSYM)
                    has_contents = any(filesz for _off, _va, filesz in elf.loads)
                finally:
                    elf.m.close()
            except Exception as err:        # not an ELF, damaged: perf skips it too
                refused.append("%s: %s" % (cand, err))
                continue
            if want and bid and bid != want:
                refused.append("%s: build id %s, %s %s" % (cand, bid, whose, want))
                continue
            if k == "debuglink" and not (want and bid) and _crc32(cand) != link[1]:
                refused.append("%s: CRC-32 differs from the binary's .gnu_debuglink" % cand)
                continue
            if syms is None and has_symtab:
                syms, kind = cand, k
            if runtime is None and has_dynsym:
                runtime, runtime_kind = cand, k
            if loadable is None and has_contents:
                loadable = cand
            if syms and runtime:
                break
        if syms is None and runtime is None:
            return Located(None, None, None, "; ".join(refused) or "not found")
        if syms is None:                    # .dynsym only: perf names from the runtime binary
            syms, kind = runtime, runtime_kind
        # no .dynsym anywhere (a static binary): the segments still come from a file that has
        # contents, not from a debug file's empty ones
        return Located(syms, runtime or loadable or syms, kind, "; ".join(refused) or None)


def _binary_facts(binary):
    """(.gnu_debuglink (name, crc) or None, build id or None) of the binary, when it is here."""
    if not os.path.isfile(binary):
        return None, None
    try:
        elf = ElfFile(binary)
        try:
            return elf.debuglink(), elf.build_id()
        finally:
            elf.m.close()
    except Exception:               # not an ELF, damaged: no link to follow
        return None, None


def _crc32(path):
    try:
        return file_crc32(path)
    except OSError:
        return None
