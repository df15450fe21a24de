"""The times a trace.dat's options shift, as trace-cmd 3.x shows them (lib/trace-cmd/trace-input.c
handle_options and timestamp_calc): every record's time goes through

    ts  --TIME_SHIFT (top buffer only: a guest's clock on its host's, per CPU)-->
        --TSC2NSEC (ts * mult >> shift: TSC counts to ns)-->  + ts_offset  -->  the time shown

    ts_offset = sum of OFFSET options (--ts-offset, ns) + sum of DATE options (--date, us * 1000)

TIME_SHIFT holds, for each CPU, samples (time, offset, scaling[, fraction]): a record between two
samples is scaled by the earlier one and moved by its offset, interpolated between the two when
the option's flags say so (TRACECMD_TSYNC_FLAG_INTERPOLATE). Arithmetic is C's: u64 wrapping.

    c = Clock.of(options, big_endian, path)    # None: the file shifts no time
    c.shift(ts, cpu_index, top=True)
"""
import struct

from ..errors import FormatError

# enum tracecmd_option_id (trace-cmd-private.h)
OPTION_DATE, OPTION_OFFSET, OPTION_TIME_SHIFT, OPTION_TSC2NSEC = 1, 7, 12, 14
TSYNC_FLAG_INTERPOLATE = 1 << 0         # enum tracecmd_time_sync_flags
U64 = (1 << 64) - 1
LLONG_MAX, LLONG_MIN = (1 << 63) - 1, -(1 << 63)


def _s64(v):
    v &= U64
    return v - (1 << 64) if v >> 63 else v


def strtoll(data):
    """C's strtoll(buf, NULL, 0): blanks, a sign, 0x (hex) or 0 (octal) or decimal digits, up to
    the first other byte; 0 where no digit; clamped to a long long."""
    s = data.split(b"\0", 1)[0].lstrip(b" \t\n\v\f\r")
    sign = 1
    if s[:1] in (b"+", b"-"):
        sign, s = (-1 if s[:1] == b"-" else 1), s[1:]
    base, digits = 10, b"0123456789"
    if s[:2].lower() == b"0x" and s[2:3] and s[2:3].lower() in b"0123456789abcdef":
        base, s, digits = 16, s[2:], b"0123456789abcdef"
    elif s[:1] == b"0":
        base, digits = 8, b"01234567"
    n = 0
    for ch in s.lower():
        if ch not in digits:
            break
        n = n * base + digits.index(ch)
    return max(LLONG_MIN, min(LLONG_MAX, sign * n))


class _Samples:
    """One CPU's TIME_SHIFT samples, sorted by time, one per time (tsync_cpu_offsets_load)."""

    __slots__ = ("time", "offset", "scaling", "fraction")

    def __init__(self, rows):
        self.time = [r[0] for r in rows]
        self.offset = [r[1] for r in rows]
        self.scaling = [r[2] for r in rows]
        self.fraction = [r[3] for r in rows]


class Clock:
    """The shift of one file's times (module docstring)."""

    def __init__(self, ts_offset, tsc, host, interpolate):
        self.ts_offset = ts_offset      # ns added last (s64)
        self.tsc = tsc                  # (mult, shift) or None
        self.host = host                # [_Samples] by CPU index, or None
        self.interpolate = interpolate

    @classmethod
    def of(cls, options, big_endian, path):
        """The Clock of a file's options [(id, file offset, data)], or None where none of them
        shifts a time. A TIME_SHIFT or TSC2NSEC option that libtracecmd would refuse, or read
        past its end, is damage at its offset."""
        e = ">" if big_endian else "<"
        ts_offset, tsc, host, interpolate, shifts = 0, None, None, False, False
        for oid, at, data in options:
            if oid == OPTION_DATE:
                ts_offset += strtoll(data) * 1000
                shifts = True
            elif oid == OPTION_OFFSET:
                ts_offset += strtoll(data)
                shifts = True
            elif oid == OPTION_TSC2NSEC and len(data) >= 16:
                mult, shift = struct.unpack_from(e + "ii", data)
                if mult and not 0 <= shift <= 32:
                    raise FormatError(path, at, "its TSC2NSEC option shifts by %d bits, which "
                                      "trace-cmd cannot apply (0 to 32)" % shift)
                tsc = (mult, shift) if mult else None
                shifts = shifts or tsc is not None
            elif oid == OPTION_TIME_SHIFT and len(data) >= 16:
                (flags,) = struct.unpack_from(e + "i", data, 8)
                host = _time_shift(data[12:], e, path, at)
                interpolate = bool(flags & TSYNC_FLAG_INTERPOLATE)
                shifts = shifts or bool(host)
        if not shifts:
            return None
        return cls(_s64(ts_offset), tsc, host or None, interpolate)

    def shift(self, ts, cpu, top=True):
        """The time trace-cmd shows for raw time ``ts`` of the CPU at index ``cpu`` (an instance,
        not ``top``, has no TIME_SHIFT: tracecmd_buffer_instance_handle clears it)."""
        if self.host is not None and top and cpu < len(self.host):
            ts = self._host_sync(ts, self.host[cpu])
        if self.tsc is not None:
            mult, shift = self.tsc
            mult &= U64                             # an int handed as unsigned long long
            lo, hi = ts & 0xFFFFFFFF, ts >> 32
            ts = ((lo * mult) & U64) >> shift       # mul_u64_u32_shr
            if hi:
                ts = (ts + ((((hi * mult) & U64) << (32 - shift)) & U64)) & U64
        return (ts + self.ts_offset) & U64

    def _host_sync(self, ts, s):
        """timestamp_host_sync: the pair of samples around ts (binary search as trace-cmd's)."""
        n = len(s.time)
        if n == 1:
            return (ts + s.offset[0]) & U64
        if n == 2 or ts <= (s.time[0] & U64):
            return self._correct(ts, s, 0, 1)
        if ts >= (s.time[n - 1] & U64):
            return self._correct(ts, s, n - 2, n - 1)
        lo, hi = 0, n - 1
        mid = (lo + hi) // 2
        while lo <= hi:
            t = s.time[mid] & U64       # a long long compared with the u64 ts: as unsigned
            if ts < t:
                hi = mid - 1
            elif ts > t:
                lo = mid + 1
            else:
                break
            mid = (lo + hi) // 2
        return self._correct(ts, s, mid, mid + 1)

    def _correct(self, ts, s, a, b):
        """timestamp_correction_calc between samples a and b."""
        if self.interpolate:
            delta = _s64(s.time[b] - s.time[a])
            off = _s64(_s64(_s64(ts) - s.time[a]) * _s64(s.offset[b] - s.offset[a]))
            tscor = _s64(s.offset[a] + _cdiv(_s64(off + _cdiv(delta, 2)), delta))
        else:
            tscor = s.offset[a]
        ts = ((ts * (s.scaling[a] & U64)) & U64) >> s.fraction[a]
        return (ts + tscor) & U64


def _cdiv(a, b):
    """C's division of long longs: truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _time_shift(raw, e, path, at):
    """tsync_cpu_offsets_load: u32 CPU count, per CPU {u32 count, s64 times[count], offsets[count],
    scalings[count]}, then (if bytes remain) per CPU s64 fractions[count]. [_Samples] by CPU."""
    pos = 0

    def take(fmt):
        nonlocal pos
        size = struct.calcsize(e + fmt)
        if pos + size > len(raw):
            raise FormatError(path, at, "its TIME_SHIFT option (the guest's clock on the host's) "
                              "ends inside its table of samples: damaged")
        v = struct.unpack_from(e + fmt, raw, pos)
        pos += size
        return v
    (cpus,) = take("i")
    if cpus <= 0:
        return None
    rows = []
    for cpu in range(cpus):
        (count,) = take("i")
        if count <= 0:
            raise FormatError(path, at, "its TIME_SHIFT option holds no sample for CPU %d, whose "
                              "times trace-cmd cannot shift" % cpu)
        if count * 24 > len(raw) - pos:
            take("%dq" % (count * 3))            # the error above
        times, offsets, scalings = (take("%dq" % count) for _ in range(3))
        rows.append([list(times), list(offsets), list(scalings), [0] * count])
    if pos < len(raw):
        for r in rows:
            r[3] = list(take("%dq" % len(r[0])))
    out = []
    for times, offsets, scalings, fractions in rows:
        for f in fractions:
            if not 0 <= f < 64:
                raise FormatError(path, at, "its TIME_SHIFT option scales by a fraction of %d "
                                  "bits, which trace-cmd cannot apply (0 to 63)" % f)
        ordered = sorted(zip(times, offsets, scalings, fractions), key=lambda r: r[0])
        kept = [r for i, r in enumerate(ordered) if i == 0 or r[0] != ordered[i - 1][0]]
        out.append(_Samples(kept))
    return out
