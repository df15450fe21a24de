"""What binutils says of an ELF file, to check our own ELF reading against."""
import re
import shutil
import subprocess

import pytest


def build_id(path):
    """The GNU build id as ``readelf -n`` prints it (hex), or None when the file has none."""
    if shutil.which("readelf") is None:
        pytest.skip("readelf not installed: apt-get install binutils")
    out = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True, check=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def loads(path):
    """PT_LOAD (p_offset, p_vaddr, p_filesz) as ``readelf -lW`` prints them (what the loader maps)."""
    if shutil.which("readelf") is None:
        pytest.skip("readelf not installed: apt-get install binutils")
    out = subprocess.run(["readelf", "-lW", str(path)], capture_output=True, text=True, check=True).stdout
    return [(int(p[1], 16), int(p[2], 16), int(p[4], 16))
            for p in (line.split() for line in out.splitlines()) if p and p[0] == "LOAD"]


def dynsym_names(path):
    """Names of the defined dynamic symbols, as ``nm -D`` prints them (version suffix cut)."""
    if shutil.which("nm") is None:
        pytest.skip("nm not installed: apt-get install binutils")
    out = subprocess.run(["nm", "-D", "--defined-only", str(path)], capture_output=True, text=True,
                         check=True).stdout
    return {p[-1].split("@")[0] for p in (line.split() for line in out.splitlines()) if len(p) >= 3}
