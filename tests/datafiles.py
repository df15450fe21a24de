"""Where the tests' real data lives: tests/data/real, with captures/, external/ and repro/.

Big files are stored there as NAME.xz (listed in tests/data/real/.gitignore); unpack() writes each
NAME beside its .xz once (again when the .xz is newer), so that tests, fuzz seeds and benchmarks read
plain files by their usual names.
"""
import lzma
import os
from pathlib import Path

REAL = Path(__file__).resolve().parent / "data" / "real"
CAPTURES = REAL / "captures"
EXTERNAL = REAL / "external"
REPRO = REAL / "repro"


def packed():
    """The files stored compressed: paths of the plain files, as .gitignore lists them."""
    listing = REAL / ".gitignore"
    return [REAL / line.strip().lstrip("/") for line in listing.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def unpack():
    """Write every packed file that is missing or older than its .xz (atomically: a rename)."""
    for path in packed():
        xz = path.with_name(path.name + ".xz")
        if path.exists() and path.stat().st_mtime >= xz.stat().st_mtime:
            continue
        tmp = path.with_name(".%s.%d" % (path.name, os.getpid()))
        with lzma.open(xz) as src, open(tmp, "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
        os.replace(tmp, path)
    return REAL


def listing(folder):
    """Every data file under folder by its plain name: the .xz a packed file is stored as and the
    folder's README.md left out."""
    stored = {path.with_name(path.name + ".xz") for path in packed()}
    return sorted(p for p in Path(folder).rglob("*")
                  if p.is_file() and p not in stored and p.name != "README.md")
