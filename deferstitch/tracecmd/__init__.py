"""The trace-cmd side: trace.dat (ftrace) through the installed libtracecmd, into the shared core.

    _ffi.py     ctypes over libtracecmd.so.1 / libtraceevent.so.1: the only module with C pointers
    bridge.py   Trace / Event: events in time order across CPUs, fields decoded by name
    reader.py   FtraceFeed: traced event + its companions -> Sample; user_unwind_stack -> DeferredStack
    outputs.py  script / folded text, and the blocks the report plugin prints
    cli.py      ``deferstitch trace {report,script,folded} FILE.dat``
    plugin.py   what tracecmd_plugin/plugin_deferstitch.so calls inside ``trace-cmd report``
"""
