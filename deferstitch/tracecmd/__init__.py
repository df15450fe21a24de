"""The trace-cmd side: trace.dat (ftrace) into the shared core. The installed libtracecmd opens
the file (event formats, kallsyms, comms); our page reader (_tracedat.c) reads its ring-buffer
pages where it can, libtracecmd where it cannot (compressed files, the C module not built).

    _ffi.py     ctypes over libtracecmd.so.1 / libtraceevent.so.1: the only module with C pointers
    headers.py  the file's metadata walked, every size checked, before libtracecmd reads it
    formats.py  event formats, kallsyms, cmdlines parsed as libtraceevent 1.7.1 does (our own)
    ownfile.py  OwnFile: the metadata half of _ffi.Handle from those two, no libtracecmd
    pages.py    our page reader (_tracedat.c): every page checked before anything reads it
    walk.py     the page walker's checks in Python (the C scan's twin): pages.plan without C
    bridge.py   Trace / Event: events in time order across CPUs, fields decoded by name
    reader.py   FtraceFeed: traced event + its companions -> Sample; user_unwind_stack -> DeferredStack
    engine.py   FtraceFeed's C twin (_tracefeed.c) over our page reader
    outputs.py  the Namer that names an ftrace sample's frames for output/'s outputs, and what the
                report plugin prints
    cli.py      ``deferstitch trace {report,script,folded,flamegraph} FILE.dat``
    plugin.py   what tracecmd_plugin/plugin_deferstitch.so calls inside ``trace-cmd report``
"""
