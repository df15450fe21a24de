"""google/pprof's own profile.proto, compiled by protoc for the protobuf package: the pprof files
we write are decoded with the schema pprof itself reads, never with a copy of ours.

    read_profile(path)    a .pb.gz -> perftools.profiles.Profile (protobuf's parser)

The .proto comes from Debian's golang-github-google-pprof-dev, the sources tests/test_exports.py
builds the pprof binary from; protoc's module is made once under the test cache.
"""
import gzip
import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import TEST_CACHE

PROTO = Path("/usr/share/gocode/src/github.com/google/pprof/proto/profile.proto")
CACHE = TEST_CACHE / "google-pprof"
_module = []


def profile_pb2():
    """The module protoc writes for pprof's profile.proto (skips naming what to install)."""
    if _module:
        return _module[0]
    pytest.importorskip("google.protobuf", reason="protobuf not installed: pip install protobuf")
    if not PROTO.exists():
        pytest.skip("google/pprof's profile.proto not found: apt-get install golang-github-google-pprof-dev")
    protoc = shutil.which("protoc")
    if protoc is None:
        pytest.skip("protoc not installed: apt-get install protobuf-compiler")
    version = subprocess.run([protoc, "--version"], capture_output=True, text=True).stdout.split()[-1]
    out = CACHE / version
    target = out / "profile_pb2.py"
    if not target.exists():
        out.mkdir(parents=True, exist_ok=True)
        p = subprocess.run([protoc, "--proto_path", str(PROTO.parent), "--python_out", str(out), PROTO.name],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
    spec = importlib.util.spec_from_file_location("google_pprof_profile_pb2", target)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.Profile.DESCRIPTOR.full_name == "perftools.profiles.Profile"
    _module.append(mod)
    return mod


def read_profile(path):
    prof = profile_pb2().Profile()
    prof.ParseFromString(gzip.decompress(Path(path).read_bytes()))
    return prof
