"""Runs ``deferstitch`` commands in this one process, each with its own stdout and stderr, and
writes their (status, stdout, stderr) as JSON: tests/test_tracecmd_nolib.py runs it twice, once
with trace-cmd's libraries hidden.

    python nolib_runner.py COMMANDS.json OUT.json [--hide]

--hide: ctypes refuses to load libtracecmd and libtraceevent, as on a machine without the
libtracecmd1 and libtraceevent1 packages; a load is also written down (``loads``), so that a
caught refusal cannot pass unseen.
"""
import base64
import ctypes
import io
import json
import sys

HIDDEN = ("tracecmd", "traceevent")
loads = []


def hide():
    load = ctypes.CDLL.__init__

    def refuse(self, name, *args, **kw):
        if name and any(h in str(name) for h in HIDDEN):
            loads.append(str(name))
            raise OSError("%s: cannot open shared object file: No such file or directory" % name)
        return load(self, name, *args, **kw)
    ctypes.CDLL.__init__ = refuse


class Kept(io.BytesIO):
    """A stdout whose bytes outlive the command's closing it."""

    def close(self):
        pass


def run(argv):
    from deferstitch.cli import main
    out, err = Kept(), Kept()
    sys.stdout = io.TextIOWrapper(out, write_through=True)
    sys.stderr = io.TextIOWrapper(err, write_through=True)
    try:
        status = main(argv)
    except SystemExit as e:
        status = e.code
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    return [status, base64.b64encode(out.getvalue()).decode(),
            base64.b64encode(err.getvalue()).decode()]


if __name__ == "__main__":
    if "--hide" in sys.argv:
        hide()
    with open(sys.argv[1]) as f:
        commands = json.load(f)
    results = [run(argv) for argv in commands]
    with open(sys.argv[2], "w") as f:
        json.dump({"results": results, "loads": loads}, f)
