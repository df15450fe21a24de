"""deferstitch: turn Linux deferred user callchains (perf, ftrace) back into whole stacks.

The core (``model``, ``stitcher``, ``report``) knows nothing of perf or trace-cmd; readers turn
inputs into its events and writers turn its results into outputs.
"""
__version__ = "0.1.0"

# True once __main__.run starts a command: the process is then ours (its allocator may be
# tuned: tracecmd/ownfile.py), not perf's or trace-cmd's, whose Python runs our plugins.
main_program = False
