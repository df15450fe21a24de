"""What tracecmd_plugin/plugin_deferstitch.so calls inside ``trace-cmd report``: thin, stdlib only.

    load(tep)             the plugin was loaded for a trace.dat being opened: note which file
    stack(tep, cpu, off)  trace-cmd prints a user_unwind_stack: the stack itself, a frame a line
                          (``=> path+0xoffset``, as the kernel's user_stack prints), then the
                          stitched stacks it served (found by cpu and record offset, which
                          report's --ts-offset and friends do not change)
    cookie(tep, cpu, off) trace-cmd prints a user_unwind_cookie: the stitched stack of the event
                          it follows when that stack was written before it (stitched after its
                          stack), so that every stitched event gets its stack printed once
    unload(tep)           trace-cmd is done: the summary of unmatched events

The plugin sees only the events trace-cmd prints, one by one, and libtraceevent gives a plugin
no hook for "every event" (handlers are per event and a plugin loads before the formats are
read). So at the first question we read the same file ourselves, through our bridge (plugins
off, so we are not loaded twice), run the shared core over it once, and answer from that:
the stitching sees every event even when ``report`` is filtered.

The file is the trace.dat that libtracecmd had just opened when it loaded the plugin: the
newest open file descriptor starting with trace.dat's magic.
"""
import os
import sys

from .headers import MAGIC

_state = {}        # tep address -> _Trace


class _Trace:
    def __init__(self, path):
        self.path = path
        self.blocks = None          # (cpu, offset) -> text printed for that user_unwind_stack
        self.after = None           # (cpu, offset) -> text printed under that user_unwind_cookie
        self.report = None
        self.error = None

    def run(self):
        if self.blocks is not None:
            return
        self.blocks, self.after = {}, {}
        from .bridge import Trace
        from .outputs import Namer, stack_block, user_stack_text
        from .reader import FtraceFeed
        try:
            with Trace(self.path) as trace:
                namer = Namer(trace)
                now = [None]            # the event being fed

                def on_stack(ev, served, frames):
                    text = user_stack_text(ev, namer, frames)
                    if served:
                        text += "\n" + stack_block(namer, served)
                    self.blocks[(ev.cpu, ev.offset)] = text

                def on_resolved(s):     # at its cookie, when its stack was written already
                    ev = now[0]
                    if s.after_stack and s.outcome == "stitched" and ev is not None \
                            and ev.name == "user_unwind_cookie":
                        self.after[(ev.cpu, ev.offset)] = stack_block(namer, [s])

                def events():
                    for ev in trace:
                        now[0] = ev
                        yield ev
                feed = FtraceFeed(stack=on_stack, resolved=on_resolved, **trace.feed_args())
                namer.recorded = feed.paths
                self.report = feed.run(events())
        except Exception as err:          # never take trace-cmd down with us
            self.error = "%s: %s" % (type(err).__name__, err)


def find_trace_dat():
    """The path of the newest open fd holding a trace.dat (the one being opened)."""
    best = None
    try:
        fds = sorted((int(fd) for fd in os.listdir("/proc/self/fd")), reverse=True)
    except OSError:
        return None
    for fd in fds:
        try:
            path = os.readlink("/proc/self/fd/%d" % fd)
            if not path.startswith("/"):
                continue
            with open(path, "rb") as f:
                if f.read(len(MAGIC)) == MAGIC:
                    best = path
                    break
        except OSError:
            continue
    return best


def load(tep):
    path = find_trace_dat()
    if path is None:
        sys.stderr.write("deferstitch plugin: no open trace.dat found; no stitching\n")
        return ""
    _state[tep] = _Trace(path)
    return ""


def _block(tep, table, cpu, offset):
    """The text ``table`` ("blocks" or "after") holds for the record at (cpu, offset), or ""."""
    t = _state.get(tep)
    if t is None:
        return ""
    t.run()
    return getattr(t, table).get((cpu, offset)) or ""


def stack(tep, cpu, offset):
    return _block(tep, "blocks", cpu, offset)


def cookie(tep, cpu, offset):
    block = _block(tep, "after", cpu, offset)
    return "\n" + block if block else ""


def unload(tep):
    t = _state.pop(tep, None)
    if t is None:
        return ""
    t.run()
    if t.error:
        return "deferstitch: %s: %s\n" % (t.path, t.error)
    from .outputs import unmatched_summary
    return unmatched_summary(t.report) + "\n"
