"""A big output leaves the page cache behind its writes (output/atomic.py, DROP_BEHIND).

The temporary is fsync'd at commit anyway, so _Raw writes it back by pieces of DROP_BEHIND
bytes as it is made and drops each piece once on disk: the output cycles through two pieces of
page cache instead of taking memory for every one of its pages. Measured with util-linux's fincore (pages of the
file in the page cache) against a plain file written the same way, which must stay cached here
for the comparison to mean anything (tmpfs, or memory pressure, skip).
"""
import os
import shutil
import subprocess

import pytest

from deferstitch.output.atomic import DROP_BEHIND, Output

SIZE = 12 * DROP_BEHIND
PIECE = b"\xa5" * (1 << 20)


def resident(path):
    r = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)],
                       capture_output=True, text=True, check=True)
    return int(r.stdout.split()[0])


def write(f):
    for _ in range(SIZE // len(PIECE)):
        f.write(PIECE)


@pytest.fixture
def cached_here(tmp_path):
    """A plain file written here stays in the page cache (else nothing can be told apart)."""
    if shutil.which("fincore") is None:
        pytest.skip("fincore not found: apt-get install util-linux")
    plain = tmp_path / "plain"
    with open(plain, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    kept = resident(plain)
    plain.unlink()
    if kept < SIZE * 9 // 10:
        pytest.skip("this file system or memory keeps %d of %d bytes of a plain file cached"
                    % (kept, SIZE))


@pytest.mark.parametrize("seekable", [False, True], ids=["text-like", "seekable"])
def test_big_output_leaves_the_page_cache(cached_here, tmp_path, seekable):
    out = tmp_path / "out"
    with Output(str(out), binary=True, seekable=seekable) as f:
        write(f)
    assert out.stat().st_size == SIZE
    # every piece but the last one or two (and the header, written again at the end) is gone;
    # a plain file keeps all 96 MiB
    assert resident(out) <= 3 * DROP_BEHIND
    with open(out, "rb") as f:          # the bytes are all there (read back into the cache)
        assert all(f.read(len(PIECE)) == PIECE for _ in range(SIZE // len(PIECE)))
