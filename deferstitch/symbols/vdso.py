"""[vdso] frames: which file holds the recorded kernel's vDSO image, so that its functions
(``__vdso_clock_gettime``, ``__vdso_getrandom``) are named.

The kernel maps the same small ELF image into every process and names the mapping
``[vdso]`` (``[vdso32]``, ``[vdsox32]`` for compat tasks); no file on disk is mapped. perf on
the recording machine names such frames from a copy of *its own* process's image (util/vdso.c
vdso__dso_findnew writes /proc/self's [vdso] to a temporary file), whichever kernel recorded;
with ``perf record``'s build ids it also looks in the build-id cache (util/build-id.c:
``BUILDID_DIR/[vdso]/<id>/vdso``, linked from ``BUILDID_DIR/.build-id/xx/rest``). We take, in
this order, the first file whose build id is the recorded one (any, when none was recorded):

    BUILD_ID_CACHE   BUILDID_DIR/[vdso]/<id>/vdso, BUILDID_DIR/.build-id/xx/rest[/vdso|/elf]
    RUNNING          our own process's image (getauxval(AT_SYSINFO_EHDR): the [vdso] line of
                     /proc/self/maps, read through /proc/self/mem) -- only when the recording
                     kernel is the running one (the test kallsyms.py makes), never under --symfs
    KERNEL_DEBUG     SYMFS/usr/lib/debug/lib/modules/RELEASE/vdso/vdso64.so  (Debian's and
                     Ubuntu's linux-image-*-dbg, Fedora's kernel-debuginfo)
    KERNEL_MODULES   SYMFS/lib/modules/RELEASE/vdso/vdso64.so  (``make vdso_install``)

RELEASE is the recorded ``uname -r`` (the OSRELEASE feature).
"""
import atexit
import os
import tempfile

VDSO_FILES = {"[vdso]": "vdso64.so", "[vdso32]": "vdso32.so", "[vdsox32]": "vdsox32.so"}


def is_vdso(path):
    return path in VDSO_FILES


class VdsoSource:
    """What the recording says about its kernel: ``release`` (uname -r, or None) and whether it
    is the kernel running now (``running``: the same build id, or the same release when no
    build id was recorded). ``facts()``, when given, returns both on first use instead: a
    pipe-mode perf.data says them only in its stream."""

    def __init__(self, release=None, running=False, facts=None):
        self.release, self.running, self.facts = release, running, facts

    def candidates(self, path, build_id, symfs, buildid_dir):
        """(kind, file) in the order of the module docstring."""
        if self.facts is not None:
            self.release, self.running = self.facts()
            self.facts = None
        if build_id:
            yield "build-id-cache", os.path.join(buildid_dir, path, build_id, "vdso")
            base = os.path.join(buildid_dir, ".build-id", build_id[:2], build_id[2:])
            for cand in (base, os.path.join(base, "vdso"), os.path.join(base, "elf")):
                yield "build-id-cache", cand
        if self.running and not symfs and path == "[vdso]":
            image = own_image()
            if image:
                yield "running kernel's image", image
        if self.release:
            name = VDSO_FILES[path]
            for base in ("/usr/lib/debug/lib/modules", "/lib/modules"):
                cand = os.path.join(base, self.release, "vdso", name)
                yield "kernel-debuginfo" if "debug" in base else "kernel-modules", \
                    os.path.join(symfs, cand.lstrip("/")) if symfs else cand


_own = []           # [path or None] once read


def own_image():
    """A file holding this process's [vdso] image (written once, removed at exit), or None."""
    if _own:
        return _own[0]
    path = None
    try:
        with open("/proc/self/maps") as f:
            span = next((line.split()[0] for line in f if line.rstrip().endswith("[vdso]")), None)
        if span is not None:
            start, end = (int(x, 16) for x in span.split("-"))
            with open("/proc/self/mem", "rb", buffering=0) as mem:
                mem.seek(start)
                data = mem.read(end - start)
            fd, path = tempfile.mkstemp(prefix="deferstitch-vdso-", suffix=".so")
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            atexit.register(_remove, path)
    except (OSError, ValueError):
        path = None
    _own.append(path)
    return path


def _remove(path):
    try:
        os.unlink(path)
    except OSError:
        pass
