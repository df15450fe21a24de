"""The error hierarchy: every failure on bad input says which file and which byte offset."""


class DeferstitchError(Exception):
    """Base class: a problem the CLI reports as one line (exit status 2)."""


class FormatError(DeferstitchError):
    """Input that is not what it claims to be: wrong magic, truncated, sizes that do not add up.

    ``offset`` is the byte offset in the file (for records inside a COMPRESSED container, the
    offset of that container).
    """

    def __init__(self, path, offset, message):
        self.path, self.offset, self.message = path, offset, message
        where = path if offset is None else "%s: offset %#x" % (path, offset)
        super().__init__("%s: %s" % (where, message))


class UnsupportedError(DeferstitchError):
    """Valid input we deliberately do not handle (e.g. an attr tail that perf 6.1 cannot hold)."""


class OutputError(DeferstitchError):
    """An output that cannot be written (no such directory, full disk, read-only, ...): names
    the user's file, or "standard output", and the reason. The old file is left as it was."""

    def __init__(self, name, reason):
        self.name, self.reason = name, reason
        super().__init__("%s: %s" % (name, reason))
