"""Output files that never lie: written beside their target, renamed over it only when whole.

git's lockfile pattern (lockfile.c, tempfile.c): the bytes go to a temporary in the target's own
directory (one file system, so the rename is atomic), are flushed and fsync'd, then
``os.replace``d over the target. On an error, SIGINT or SIGTERM the temporary is removed and the
target keeps its old content, byte for byte: a reader sees the old file or the new one.

    with Output(args.output, binary=True, inputs=[args.input]) as f:    # None or "-": stdout
        f.write(...)
    # committed here; an exception inside removes the temporary (a FormatError, damaged input,
    # commits what was good before it, as every command promises)

Every OS error on an output becomes one ``OutputError`` naming the user's file (or "standard
output"); a broken pipe stays a BrokenPipeError (quiet, as perf and git are). An output that is
one of the inputs (also through a symlink or a hard link) is refused before anything is written.
A target that is not a regular file (/dev/null, a FIFO) is written in place: there is nothing
to replace. Standard library only (the perf plugin uses it inside perf's Python).
"""
import atexit
import io
import os
import shutil
import signal
import stat
import sys
import tempfile

from ..errors import DeferstitchError, FormatError, OutputError

STDOUT = "standard output"
_live = set()           # temporaries not yet committed or removed: what rollback_all() removes


class Terminated(BaseException):
    """SIGTERM, raised where the program is, so that it unwinds through the same cleanup as
    KeyboardInterrupt (a BaseException: ``except Exception`` blocks do not swallow it)."""


def on_sigterm():
    """Turn SIGTERM into ``Terminated`` (main thread only; the CLI exits 143 on it)."""
    def handler(_sig, _frame):
        raise Terminated()
    signal.signal(signal.SIGTERM, handler)


class _Held:
    """SIGINT and SIGTERM held while a temporary is made, renamed or removed, so that an
    interruption cannot fall between creating it and remembering it (git's sigchain)."""
    SIGNALS = {signal.SIGINT, signal.SIGTERM}

    def __enter__(self):
        self.old = signal.pthread_sigmask(signal.SIG_BLOCK, self.SIGNALS)

    def __exit__(self, *exc):
        signal.pthread_sigmask(signal.SIG_SETMASK, self.old)


def _reason(err):
    return err.strerror or str(err)


DROP_BEHIND = 8 << 20     # a temporary goes to disk and leaves the page cache by pieces of this


class _Raw(io.FileIO):
    """A FileIO whose write errors name the user's file: the buffered layers above call it only
    when their buffer fills (one call per 8 KiB, or per chunk of the C engine), so it costs
    nothing measurable.

    ``drop_behind`` (our temporary, fsync'd at commit anyway): Linux's streaming write. Once a
    piece of DROP_BEHIND bytes is written, its writeback starts (sync_file_range); the piece
    before it, started one piece earlier, is waited for and dropped from the page cache
    (POSIX_FADV_DONTNEED). So a big output goes to disk as it is made instead of all at the
    fsync, and cycles through two pieces of page cache instead of taking fresh memory for each
    of its pages (on a VM whose free memory goes back to the host, that fresh memory cost
    stitch 5-10 s of kernel time per 690 MB: bench/PROFILE.md)."""

    def __init__(self, fd, mode, name, closefd=True, drop_behind=False):
        super().__init__(fd, mode, closefd=closefd)
        self.label = name
        self.written = 0            # bytes written (the temporary is written in order)
        self.dropped = 0 if drop_behind else None

    def write(self, b):
        try:
            n = super().write(b)
        except BrokenPipeError:
            raise
        except OSError as err:
            raise OutputError(self.label, _reason(err)) from None
        if n:
            self.wrote(n)
        return n

    def error(self, errno):
        """The one line of a write to this file that failed with ``errno`` (also the C
        engine's, which writes stitch's records to the file itself)."""
        return OutputError(self.label, os.strerror(errno))

    def wrote(self, n):
        """n more bytes were written to the file (by write(), or by the C engine)."""
        if self.dropped is None:
            return
        self.written += n
        while self.dropped is not None and self.written - self.dropped >= 2 * DROP_BEHIND:
            self.drop_behind(self.dropped)

    def drop_behind(self, at):
        """The pieces at ``at`` and after it are written: start the second's writeback, wait
        for the first's and drop it."""
        sync, fd, n = _sync_file_range(), self.fileno(), DROP_BEHIND
        if sync is None:
            self.dropped = None
            return
        try:
            sync(fd, at + n, n, _SFR_WRITE)
            sync(fd, at, n, _SFR_WAIT_BEFORE | _SFR_WRITE | _SFR_WAIT_AFTER)
            os.posix_fadvise(fd, at, n, os.POSIX_FADV_DONTNEED)
        except OSError:     # a write-back error is the fsync's to report, at commit
            self.dropped = None
            return
        self.dropped = at + n


_SFR_WAIT_BEFORE, _SFR_WRITE, _SFR_WAIT_AFTER = 1, 2, 4     # <linux/fs.h>
_sfr = []


def _sync_file_range():
    """libc's sync_file_range(fd, offset, nbytes, flags), raising OSError; None where there is
    none (not Linux). Loaded when an output first reaches 2 * DROP_BEHIND (ctypes' import
    is a few ms: not for every small output)."""
    if not _sfr:
        func = None
        if sys.platform.startswith("linux") and hasattr(os, "posix_fadvise"):
            try:
                import ctypes
                libc = ctypes.CDLL(None, use_errno=True)
                raw = libc.sync_file_range
                raw.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
                raw.restype = ctypes.c_int

                def func(fd, offset, nbytes, flags):
                    if raw(fd, offset, nbytes, flags) != 0:
                        err = ctypes.get_errno()
                        raise OSError(err, os.strerror(err))
            except (ImportError, OSError, AttributeError):
                func = None
        _sfr.append(func)
    return _sfr[0]


def _wrap(raw, binary, seekable):
    buf = io.BufferedRandom(raw) if seekable else io.BufferedWriter(raw)
    return buf if binary else io.TextIOWrapper(buf)    # what open(path, "w") gives


class _Stdout:
    """sys.stdout (or its buffer) as it is now, whatever it is (a test's StringIO too), with its
    errors naming "standard output". After a failure fd 1 goes to /dev/null, so that the
    interpreter's own flush at exit does not fail a second time."""

    def __init__(self, binary):
        self.f = sys.stdout.buffer if binary else sys.stdout

    def _failed(self, err):
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self.f.fileno())
            os.close(null)
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            pass
        return OutputError(STDOUT, _reason(err))

    def write(self, data):
        try:
            return self.f.write(data)
        except BrokenPipeError:
            raise
        except OSError as err:
            raise self._failed(err) from None

    def flush(self):
        try:
            self.f.flush()
        except BrokenPipeError:
            raise
        except OSError as err:
            raise self._failed(err) from None

    def close(self):            # standard output stays open
        self.flush()


def _same(a, b):
    return a is not None and b is not None and (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _stat(path_or_fd):
    try:
        return os.stat(path_or_fd)
    except (OSError, ValueError):
        return None


def refuse_terminal(output, what):
    """A binary file or a page of markup poured onto a terminal helps no one: one line, exit 2."""
    if output in (None, "-") and sys.stdout is not None and sys.stdout.isatty():
        raise DeferstitchError("refusing to write %s to a terminal: give -o FILE or redirect" % what)


class Output:
    """One output: ``open()`` gives the file object to write, then ``commit()`` or ``rollback()``
    (the only two ways out; also a context manager). ``seekable`` outputs (the stitched
    perf.data rewrites its header at the end; binary) go through a temporary even to standard
    output."""

    def __init__(self, path, binary=False, seekable=False, inputs=()):
        self.path = None if path in (None, "-") else path
        self.binary, self.seekable, self.inputs = binary, seekable, inputs
        self.name = STDOUT if self.path is None else path
        self.target = None      # the file os.replace() writes (symlinks resolved)
        self.tmp = None         # our temporary's path while it exists
        self.f = None
        self.copy_to = None     # standard output or a non-regular target, filled at commit

    # -- opening ------------------------------------------------------------------------------
    def open(self):
        st = self._check()
        if self.path is None or (st is not None and not stat.S_ISREG(st.st_mode)):
            self._open_stream(st)
        else:
            self._open_temporary(st)
        return self.f

    def _check(self):
        """The target's stat (None: not there yet); refuses what must not be written."""
        if self.path is None and sys.stdout is None:   # started with fd 1 closed (>&-): it may
            raise OutputError(STDOUT, os.strerror(9))   # now be another file of ours; EBADF
        st = _stat(1) if self.path is None else _stat(self.path)
        for inp in self.inputs:
            ist = _stat(0) if inp == "-" else _stat(inp)
            if _same(st, ist) and stat.S_ISREG(st.st_mode):
                raise OutputError(self.name, "is the input file%s: write to another file"
                                  % ("" if inp == "-" else " (%s)" % inp))
        if self.path is not None and st is not None:
            if stat.S_ISDIR(st.st_mode):
                raise OutputError(self.name, os.strerror(21))          # EISDIR
            if stat.S_ISREG(st.st_mode):    # a file we may not write stays so (read-only
                try:                        # file or file system): opened, not truncated
                    os.close(os.open(self.path, os.O_WRONLY | os.O_CLOEXEC))
                except OSError as err:
                    raise OutputError(self.name, _reason(err)) from None
        return st

    def _open_stream(self, st):
        """Standard output or a device/FIFO: written in place (nothing to rename over)."""
        if self.path is None:
            target = _Stdout(self.binary or self.seekable)
        else:
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CLOEXEC)
            except OSError as err:
                raise OutputError(self.name, _reason(err)) from None
            target = _wrap(_Raw(fd, "wb", self.name), self.binary or self.seekable, False)
        if not self.seekable:
            self.f = target
            return
        self.copy_to = target
        try:
            tmp = tempfile.TemporaryFile()
        except OSError as err:
            raise OutputError(self.name, "a temporary file in %s: %s"
                              % (tempfile.gettempdir(), _reason(err))) from None
        self.f = _wrap(_Raw(os.dup(tmp.fileno()), "wb+", self.name), self.binary, True)
        tmp.close()

    def _open_temporary(self, st):
        self.target = os.path.realpath(self.path)
        folder, base = os.path.split(self.target)
        with _Held():
            try:
                fd, self.tmp = self._create(folder, base)
            except OSError as err:
                if not os.path.isdir(folder):
                    raise OutputError(self.name, _reason(err)) from None
                raise OutputError(self.name, "cannot create a file in %s: %s"
                                  % (folder, _reason(err))) from None
            _live.add(self.tmp)
        if st is not None:
            try:
                os.fchmod(fd, stat.S_IMODE(st.st_mode))     # the target keeps its mode
            except OSError:
                pass
        self.f = _wrap(_Raw(fd, "wb+" if self.seekable else "wb", self.name, drop_behind=True),
                       self.binary, self.seekable)

    @staticmethod
    def _create(folder, base):
        """A new file beside the target, mode 0666 less the umask (as open() would make it)."""
        for _ in range(100):
            tmp = os.path.join(folder, ".%s.%s.tmp" % (base[:200], os.urandom(4).hex()))
            try:
                return os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), tmp
            except FileExistsError:
                continue
        raise FileExistsError(17, os.strerror(17))

    # -- the two ways out ---------------------------------------------------------------------
    def commit(self):
        """Flush, fsync and rename the temporary over the target (or copy it to the stream)."""
        try:
            if self.copy_to is not None:
                self.f.flush()
                self.f.seek(0)
                shutil.copyfileobj(self.f, self.copy_to)
                self.copy_to.flush()
            else:
                self.f.flush()
            if self.tmp is not None:
                try:
                    os.fsync(self.f.fileno())
                except OSError as err:
                    raise OutputError(self.name, _reason(err)) from None
            self.f.close()
            if self.copy_to is not None:
                self.copy_to.close()
            if self.tmp is not None:
                with _Held():
                    try:
                        os.replace(self.tmp, self.target)
                    except OSError as err:
                        raise OutputError(self.name, _reason(err)) from None
                    _live.discard(self.tmp)
                    self.tmp = None
        except BaseException:
            self.rollback()
            raise

    def rollback(self):
        """Drop what was written: the temporary goes, the target is as it was."""
        with _Held():
            for f in (self.f, self.copy_to):
                if f is not None:
                    try:
                        f.close()           # its flush may fail again (a full disk): no matter
                    except BaseException:
                        pass
            if self.tmp is not None:
                _remove(self.tmp)
                self.tmp = None

    def __enter__(self):
        return self.open()

    def __exit__(self, etype, exc, _tb):
        if etype is None or issubclass(etype, FormatError):
            self.commit()       # damaged input: what was good before it is written
        else:
            self.rollback()


def _remove(tmp):
    try:
        os.unlink(tmp)
    except OSError:
        pass
    _live.discard(tmp)


@atexit.register
def rollback_all():
    """Remove every temporary still open (the perf plugin calls this before os._exit)."""
    for tmp in list(_live):
        _remove(tmp)


class NamedStdout:
    """sys.stdout for commands that print (report, info): its OS errors (a full disk, EIO) are
    one OutputError naming "standard output", wherever the print happens to fill the buffer."""

    def __init__(self, f):
        self._f = f

    def _named(self, call, *args):
        try:
            return call(*args)
        except BrokenPipeError:
            raise
        except OSError as err:
            raise OutputError(STDOUT, _reason(err)) from None

    def write(self, text):
        return self._named(self._f.write, text)

    def flush(self):
        return self._named(self._f.flush)

    def __getattr__(self, name):
        return getattr(self._f, name)
