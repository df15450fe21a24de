"""The kernel's %pI printk extensions as libtraceevent prints them (src/event-parse.c
print_ip_arg: print_ipv4_arg, print_ipv6_arg, print_ipsa_arg, print_ip4_addr, print_ip6_addr,
print_ip6c_addr), for a tracepoint's ``trace`` text (print_fmt.py).

    %pI4 %pi4        a 4-byte field: 1.2.3.4 / 001.002.003.004 ([hnbl] after 4: byte order)
    %pI6 %pi6 %pI6c  a 16-byte field: colons every two bytes / none / compressed (RFC 5952-like)
    %pIS[p][c]       a sockaddr (AF_INET or AF_INET6) field or dynamic array; p adds the port
"""
AF_INET, AF_INET6 = 2, 10


def consumed(ext):
    """parse_arg_format_pointer for I/i: how many characters after "%p" the conversion takes."""
    ret, index = 0, 2
    kind = ext[1:2]
    if kind == "S":
        while ext[index:index + 1] in ("p", "f", "s") and ext[index:index + 1]:
            ret += 1
            index += 1
    if kind in ("S", "4"):
        if ext[index:index + 1] in ("h", "n", "l", "b") and ext[index:index + 1]:
            ret += 1
            index += 1
        if kind == "4":
            return ret + 2
    if kind in ("S", "6"):
        if ext[index:index + 1] == "c":
            ret += 1
        ret += 1
    return ret + 1


def _reverse(flag, big_endian):
    """parse_ip4_print_args: h (host order), l (little) reverse the bytes; n, b do not."""
    return (flag == "h" and not big_endian) or flag == "l"


def ip4(i, reverse, buf):
    b = list(buf[:4])
    if reverse:
        b.reverse()
    return ("%03d.%03d.%03d.%03d" if i == "i" else "%d.%d.%d.%d") % tuple(b)


def ip6(i, buf):
    words = ["%02x%02x" % (buf[j], buf[j + 1]) for j in range(0, 16, 2)]
    return (":" if i == "I" else "").join(words)


def ip6c(addr):
    """print_ip6c_addr: the longest run of zero words as "::", an IPv4-mapped or ISATAP address
    with its last four bytes dotted."""
    w = [addr[j] << 8 | addr[j + 1] for j in range(0, 16, 2)]
    mapped = w[0] == w[1] == w[2] == w[3] == w[4] == 0 and w[5] == 0xffff
    isatap = bytes([addr[8] | 0x02]) + bytes(addr[9:12]) == b"\x02\x00\x5e\xfe"
    use4 = mapped or isatap
    rng = 6 if use4 else 8
    zero = [0] * 8
    for i in range(rng):
        for j in range(i, rng):
            if w[j] != 0:
                break
            zero[i] += 1
    longest, colonpos = 1, -1
    for i in range(rng):
        if zero[i] > longest:
            longest, colonpos = zero[i], i
    out, need, i = [], False, 0
    while i < rng:
        if i == colonpos:
            if need or i == 0:
                out.append(":")
            out.append(":")
            need = False
            i += longest
            continue
        if need:
            out.append(":")
        out.append("%x" % w[i])
        need = True
        i += 1
    if use4:
        if need:
            out.append(":")
        out.append(ip4("I", False, addr[12:16]))
    return "".join(out)


def text(ext, data, big_endian):
    """The text of conversion "%p" + ``ext`` (I4, i6, I6c, ISpc, ...) of a field's bytes."""
    i, kind, rest = ext[0], ext[1:2], ext[2:]
    if kind == "4":
        if len(data) != 4:
            return "INVALIDIPv4"
        return ip4(i, _reverse(rest[:1], big_endian), data)
    if kind == "6":
        if len(data) != 16:
            return "INVALIDIPv6"
        return ip6c(data) if i == "I" and rest[:1] == "c" else ip6(i, data)
    # S: a sockaddr
    have_p = have_c = False
    if i == "I":
        if rest[:1] == "p":
            have_p, rest = True, rest[1:]
        if rest[:1] == "c":
            have_c, rest = True, rest[1:]
    reverse = _reverse(rest[:1], big_endian)
    family = int.from_bytes(bytes(data[:2]), "big" if big_endian else "little") if len(data) >= 2 else -1
    if family == AF_INET:
        if len(data) < 16:
            return "INVALIDIPv4"
        out = ip4(i, reverse, data[4:8])
        return out + (":%d" % (data[2] << 8 | data[3]) if have_p else "")
    if family == AF_INET6:
        if len(data) < 28:
            return "INVALIDIPv6"
        addr = data[8:24]
        out = ip6c(addr) if have_c else ip6(i, addr)
        return "[%s]:%d" % (out, data[2] << 8 | data[3]) if have_p else out
    return ""
