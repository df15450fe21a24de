"""The guest's files, as perf saw them, rebuilt from a folder of real captures (tests/data/names,
tests/data/langs: each README says how they were made): the binaries' symbol tables under a symfs,
the kernel's vDSO image, the /tmp map files and jitdumps where the guest's perf read them, and the
guest's kallsyms; and each scenario's packed files unpacked once."""
import lzma
import shutil

from conftest import DATA

RELEASE = "7.2.13+deb14-amd64"      # the guest kernel: its vDSO image is the debug package's


class Guest:
    """root: the symfs; kallsyms: its path; work: where unpacked files go."""

    def __init__(self, folder, work, dumps=None):
        """dumps: {scenario: the path the guest wrote a jitdump at} (else every jit-*.dump of
        the folder goes to /tmp, beside the perf maps)."""
        assert (folder / "kallsyms.xz").exists(), "%s is missing (carried in the repository)" % folder
        self.folder, self.work = folder, work
        self.root = root = work / "symfs"
        for packed in (folder / "symfs").rglob("*.xz"):
            self._unxz(packed, root / packed.relative_to(folder / "symfs").with_suffix(""))
        self._unxz(DATA / "vdso" / "vdso64.so.xz",
                   root / "usr/lib/debug/lib/modules" / RELEASE / "vdso" / "vdso64.so")
        (root / "tmp").mkdir()
        maps = list(folder.glob("*/perf-*.map"))
        if dumps is None:
            maps += list(folder.glob("*/jit-*.dump"))
        for f in maps:
            shutil.copy(f, root / "tmp" / f.name)
        for scenario, recorded in (dumps or {}).items():
            out = root / recorded.lstrip("/")
            self._unxz(folder / scenario / (out.name + ".xz"), out)
        self.kallsyms = work / "kallsyms"
        self._unxz(folder / "kallsyms.xz", self.kallsyms)

    def __iter__(self):
        """(symfs, kallsyms, work): as the tests' `guest` fixtures hand them."""
        return iter((self.root, self.kallsyms, self.work))

    def unpack(self, scenario, name):
        """The scenario's packed file ``name`` (``name``.xz), unpacked once into work."""
        out = self.work / ("%s-%s" % (scenario, name))
        if not out.exists():
            out.write_bytes(lzma.decompress((self.folder / scenario / (name + ".xz")).read_bytes()))
        return out

    @staticmethod
    def _unxz(packed, out):
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(lzma.decompress(packed.read_bytes()))
