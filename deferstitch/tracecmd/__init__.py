"""The trace-cmd side: trace.dat (ftrace) into the shared core. We open the file ourselves
(headers, event formats, kallsyms, comms, the CPU data tables) and our page reader (_tracedat.c,
or walk.py's twin) reads its ring-buffer pages, compressed or not; libtracecmd opens what is not
ours (times it shifts, latency data) and serves the Python path where it can open the file.

    _ffi.py     ctypes over libtracecmd.so.1 / libtraceevent.so.1: the only module with C pointers
    headers.py  the file's metadata walked, every size checked, kept (collect) and the CPU data
                tables (flyrecord)
    formats.py  event formats, kallsyms, cmdlines parsed as libtraceevent 1.7.1 does (our own)
    ownfile.py  OwnFile / OwnBuffer: a file opened by us alone, its buffers read by our walker
    pages.py    our page reader (_tracedat.c): every page checked before anything reads it
    walk.py     the page walker in Python (the C walker's twin): its scan, and its records where
                neither the C module nor libtracecmd reads the file
    bridge.py   Trace / Event: events in time order across CPUs, fields decoded by name
    reader.py   FtraceFeed: traced event + its companions -> Sample; user_unwind_stack -> DeferredStack
    engine.py   FtraceFeed's C twin (_tracefeed.c) over our page reader
    outputs.py  the Namer that names an ftrace sample's frames for output/'s outputs, and what the
                report plugin prints
    cli.py      ``deferstitch trace {report,script,folded,flamegraph} FILE.dat``
    plugin.py   what tracecmd_plugin/plugin_deferstitch.so calls inside ``trace-cmd report``
"""
