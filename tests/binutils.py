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
