"""The trace-cmd side: trace.dat (ftrace) into the shared core. We read the file ourselves, with
no library of trace-cmd's: headers, event formats, kallsyms, comms, the CPU data tables, the
times its options shift, and its ring-buffer pages, compressed or not (_tracedat.c, or walk.py).

    clock.py    the times the file's options shift (OFFSET, DATE, TSC2NSEC, TIME_SHIFT)
    headers.py  the file's metadata walked, every size checked, kept (collect) and the CPU data
                tables (flyrecord)
    formats.py  event formats, kallsyms, cmdlines parsed as libtraceevent 1.7.1 does (our own)
    ownfile.py  OwnFile / OwnBuffer: a file opened by us alone, its buffers read by our walker
    pages.py    our page reader (_tracedat.c): every page checked before anything reads it
    walk.py     the page walker in Python (the C walker's twin, the definition): its records where
                the C module is not built or not allowed, or times are shifted
    bridge.py   Trace / Event: events in time order across CPUs, fields decoded by name
    reader.py   FtraceFeed: traced event + its companions -> Sample; user_unwind_stack -> DeferredStack
    engine.py   FtraceFeed's C twin (_tracefeed.c) over our page reader
    outputs.py  the Namer that names an ftrace sample's frames for output/'s outputs, and what the
                report plugin prints
    cli.py      ``deferstitch trace {report,script,folded,flamegraph} FILE.dat``
    plugin.py   what tracecmd_plugin/plugin_deferstitch.so calls inside ``trace-cmd report``
"""
