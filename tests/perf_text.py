"""Parse `perf script -F tid,time,ip` text (any perf version) into (tid, usec, ips) samples."""
import re

HEAD = re.compile(r"^\s*(-?\d+)\s+(\d+)\.(\d+):")


def parse_tid_time_ip(text):
    out = []
    cur = None
    for line in text.split("\n"):
        if line.startswith("\t") or (line.startswith(" ") and cur is not None and not HEAD.match(line)):
            tok = line.split()
            if tok and cur is not None:
                cur[2].append(int(tok[0], 16))
            continue
        m = HEAD.match(line)
        if m:
            cur = (int(m.group(1)), int(m.group(2)) * 10**6 + int(m.group(3)), [])
            out.append(cur)
    return out

DUMP_SAMPLE = re.compile(r"^(?:-?\d+ )?(\d+) 0x[0-9a-f]+ \[0x[0-9a-f]+\]: PERF_RECORD_SAMPLE\(.*?\): (-?\d+)/(-?\d+):")
DUMP_IP = re.compile(r"^\.{5}\s+\d+: ([0-9a-f]+)")
CONTEXT_MAX = (1 << 64) - 4095


def parse_dump_samples(text):
    """(tid, usec, ips without context markers) of each PERF_RECORD_SAMPLE in `perf script -D`."""
    out = []
    cur = None
    for line in text.split("\n"):
        m = DUMP_SAMPLE.match(line)
        if m:
            cur = (int(m.group(3)), int(m.group(1)) // 1000, [])
            out.append(cur)
            continue
        if cur is not None:
            m = DUMP_IP.match(line)
            if m:
                ip = int(m.group(1), 16)
                if ip < CONTEXT_MAX:
                    cur[2].append(ip)
            elif line.startswith(" ..."):
                cur = None
    return out
