/* deferstitch._tracedat: a trace.dat's flyrecord data read page by page, every byte checked.
 *
 * The ring-buffer pages of each CPU (trace-cmd.dat(5), libtraceevent's kbuffer-parse.c, whose
 * walk this follows step for step), read with pread() into a buffer of our own, never mapped:
 *
 *     page   | u64 timestamp | long commit (bits 0-26 bytes of data, 31 MISSING_EVENTS,
 *            |               |              30 MISSING_STORED) | data[commit] | [long lost] |
 *     event  | u32 type_len:5 time_delta:27 | array[] |
 *            type_len 1..28: 4*type_len bytes of payload; 0: array[0] - 4 bytes after it;
 *            29 padding (array[0] bytes); 30 time extend; 31 absolute time stamp
 *
 *     CPU 0 pages ─► next record ─┐
 *     CPU 1 pages ─► next record ─┼─► the earliest (ties: the lower CPU) ─►
 *     CPU n pages ─► next record ─┘   (ts, cpu, missed, type, pid, file offset, payload)
 *
 * Each CPU holds its next record (as libtracecmd peeks every CPU); taking one reads the CPU's
 * next. Before anything is used it is checked: the page lies inside the file, its commit and
 * stored count inside the page, each event header and payload inside the commit, padding moves
 * forward, a record holds its common fields. The first failure on a CPU is Damaged(cpu, file
 * offset, why), raised when that CPU's next record is taken up (right after its last good
 * record was handed out), so the caller gets every good record before it. scan() walks each
 * CPU alone to its end and gives (good records, damage or None) per CPU: the budget that keeps
 * libtracecmd (the Python path, bridge.py) from ever loading a page we found damaged.
 *
 * Compressed CPU data (trace-cmd v7, zstd or zlib): each CPU's data is a table of chunks
 * (lib/trace-cmd/trace-compress.c, tracecmd_compress_copy_from: u32 count, then per chunk
 * u32 compressed size, u32 size, the compressed bytes; trace-output.c writes 10 pages a chunk),
 * found and bounds-checked by tracecmd/headers.py. One chunk per CPU is decompressed at a time
 * into a buffer of its own (trace-input.c's read_zpage holds chunks the same way), and its
 * pages walked as above. Offsets then count the decompressed data as libtracecmd counts them
 * (init_cpu_zpage: the first CPU's data at page_size, each next one page-aligned after the
 * last), so a record's offset is the one libtracecmd gives. zstd's and zlib's functions are
 * handed over by address (codecs(): tracecmd/pages.py finds them with ctypes), so there are no
 * -dev headers to build with, nothing bundled in the wheel and no libdl symbol linked; without
 * them the walker cannot be made for that compression (decompressor() says so).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "_tracedat.h"

static PyObject *Damaged;

static void damage(Cpu *c, int64_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void damage(Cpu *c, int64_t off, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    c->err_off = off;
    c->has_err = 1;
    c->done = 1;
    c->has = 0;
}

/* A chunk may hold at most this many pages (trace-cmd writes PAGES_IN_CHUNK, 10: trace-output.c):
 * the memory held is one such chunk per CPU. walk.py's MAX_CHUNK_PAGES. */
#define MAX_CHUNK_PAGES 16

/* The decompressors, by our own prototypes (zstd.h, zlib.h), set by codecs(): trace-cmd's
 * zstd plugin writes frames (ZSTD_compress2, trace-compress-zstd.c), its zlib plugin zlib-
 * wrapped deflate streams (compress2, trace-compress-zlib.c), read back by uncompress(). */
static size_t (*zstd_decompress)(void *, size_t, const void *, size_t);
static unsigned (*zstd_is_error)(size_t);
static int (*zlib_uncompress)(unsigned char *, unsigned long *, const unsigned char *,
                              unsigned long);

/* 1 where the functions of compression algo were handed over (TD_NONE: always), else 0. */
static int codec_ready(int algo) {
    return algo == TD_NONE || (algo == TD_ZSTD && zstd_decompress && zstd_is_error) ||
           (algo == TD_ZLIB && zlib_uncompress);
}

static int codec_of(const char *name) {
    if (!name)
        return TD_NONE;
    if (!strcmp(name, "zstd"))
        return TD_ZSTD;
    if (!strcmp(name, "zlib"))
        return TD_ZLIB;
    return -1;
}

/* in[0:n] decompressed into out, exactly size bytes: 0, or -1 (it does not decompress, or to
 * another size; which of them is not told, so that walk.py's text is the same whatever the
 * library's reason). */
static int decompress(int algo, unsigned char *out, size_t size, const unsigned char *in,
                      size_t n) {
    if (algo == TD_ZSTD) {
        size_t r = zstd_decompress(out, size, in, n);
        return !zstd_is_error(r) && r == size ? 0 : -1;
    }
    unsigned long got = size;
    return zlib_uncompress(out, &got, in, n) == 0 && got == size ? 0 : -1;
}

static const char *codec_name(int algo) {
    return algo == TD_ZSTD ? "zstd" : "zlib";
}

/* Chunk c->chunk (at decompressed offset c->cstart) read and decompressed into c->zbuf: 0, or
 * -1 damage at c->cstart. */
static int load_chunk(Walker *w, Cpu *c) {
    int k = c->chunk;
    uint32_t len = c->zlen[k], zs = c->zsize[k];
    long long zoff = (long long)c->zoff[k];
    c->loaded = 0;
    if (len % (uint32_t)w->page_size) {
        damage(c, c->cstart, "its chunk at file offset %#llx holds %u bytes, not a whole number "
               "of %d-byte pages", zoff, len, w->page_size);
        return -1;
    }
    if ((uint64_t)len > (uint64_t)MAX_CHUNK_PAGES * w->page_size ||
        (uint64_t)zs > (uint64_t)len + len / 8 + 4096) {
        damage(c, c->cstart, "its chunk at file offset %#llx says %u bytes compressed to %u: "
               "more than a chunk of %d pages holds", zoff, len, zs, MAX_CHUNK_PAGES);
        return -1;
    }
    if (c->zbuf_cap < len) {
        unsigned char *b = PyMem_Realloc(c->zbuf, len);
        if (!b) {
            damage(c, c->cstart, "no memory for its chunk of %u bytes", len);
            return -1;
        }
        c->zbuf = b;
        c->zbuf_cap = len;
    }
    if (c->zin_cap < zs || !c->zin) {
        unsigned char *b = PyMem_Realloc(c->zin, zs ? zs : 1);
        if (!b) {
            damage(c, c->cstart, "no memory for its chunk of %u bytes", zs);
            return -1;
        }
        c->zin = b;
        c->zin_cap = zs ? zs : 1;
    }
    size_t got = 0;
    while (got < zs) {
        ssize_t n = pread(w->fd, c->zin + got, zs - got, (off_t)(zoff + (long long)got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            damage(c, c->cstart, "its chunk at file offset %#llx cannot be read (%s): the file "
                   "was cut while it was read?", zoff, n < 0 ? strerror(errno) : "end of file");
            return -1;
        }
        got += (size_t)n;
    }
    if (decompress(w->algo, c->zbuf, len, c->zin, zs) < 0) {
        damage(c, c->cstart, "its chunk at file offset %#llx (%u bytes) does not decompress to "
               "the %u bytes it says (%s)", zoff, zs, len, codec_name(w->algo));
        return -1;
    }
    c->loaded = 1;
    return 0;
}

/* c->buf pointed at the page at decompressed offset off (inside [first, end)): its chunk
 * decompressed if it is not the one held. Chunks follow one another and pages are read
 * forward, so the chunk is the held one or one after it. 0, or -1 damage. */
static int map_zpage(Walker *w, Cpu *c, int64_t off) {
    while (c->chunk < c->nchunks && off >= c->cstart + (int64_t)c->zlen[c->chunk]) {
        c->cstart += c->zlen[c->chunk];
        c->chunk++;
        c->loaded = 0;
    }
    if (c->chunk >= c->nchunks) {       /* not reached: end is the sum of the chunks' sizes */
        damage(c, off, "its page at %#llx lies in no chunk", (long long)off);
        return -1;
    }
    if (!c->loaded && load_chunk(w, c) < 0)
        return -1;
    c->buf = c->zbuf + (off - c->cstart);
    return 0;
}

/* Read the page at off into c->buf and check its header: 0 loaded, -1 damage (c->err). */
static int load_page(Walker *w, Cpu *c, int64_t off) {
    int64_t ps = w->page_size;
    if (w->algo != TD_NONE) {
        if (map_zpage(w, c, off) < 0)
            return -1;
    } else if (off > w->file_size - ps) {
        damage(c, off, "its page at %#llx runs past the end of the file (%lld bytes): truncated",
               (long long)off, (long long)w->file_size);
        return -1;
    }
    int64_t got = w->algo != TD_NONE ? ps : 0;
    while (got < ps) {
        ssize_t n = pread(w->fd, c->buf + got, (size_t)(ps - got), (off_t)(off + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            damage(c, off, "its page at %#llx cannot be read (%s): the file was cut while it "
                   "was read?", (long long)off, n < 0 ? strerror(errno) : "end of file");
            return -1;
        }
        got += n;
    }
    c->page_off = off;
    uint64_t flags = rdlong(w, c->buf + 8);
    c->ts = rd8(w, c->buf);
    c->commit = (uint32_t)flags & COMMIT_MASK;
    if ((int64_t)w->start + c->commit > ps) {
        damage(c, off + 8, "its page says it holds %u bytes of events, more than a %d-byte page "
               "has room for", c->commit, w->page_size);
        return -1;
    }
    if (flags & MISSING_EVENTS) {
        if (flags & MISSING_STORED) {
            if ((int64_t)w->start + c->commit + (w->long8 ? 8 : 4) > ps) {
                damage(c, off + 8, "its page's count of missed events lies past the page");
                return -1;
            }
            c->lost = (long long)rdlong(w, c->buf + w->start + c->commit);
        } else {
            c->lost = -1;
        }
    } else {
        c->lost = 0;
    }
    c->curr = c->next = c->index = 0;
    return 0;
}

/* The CPU's next data event (kbuffer's __next_event), loading pages as needed: 1 held, 0 at its
 * end, -1 damage. */
int td_advance(Walker *w, Cpu *c) {
    c->has = 0;
    if (c->done)
        return c->has_err ? -1 : 0;
    for (;;) {
        if (c->page_off < 0 || c->next >= c->commit) {
            int64_t off = c->page_off < 0 ? c->first : c->page_off + w->page_size;
            if (off >= c->end || off < c->first) {
                if (c->has_tail) {      /* the chunk table ended at damage (headers.py) */
                    damage(c, c->tail_off, "%s", c->tail);
                    return -1;
                }
                c->done = 1;
                return 0;
            }
            if (load_page(w, c, off) < 0)
                return -1;
            if (c->commit == 0)
                continue;
        }
        c->curr = c->next;
        unsigned char *d = c->buf + w->start;
        int64_t at = c->page_off + w->start + c->curr;
        if ((uint64_t)c->curr + 4 > c->commit) {
            damage(c, at, "an event header at byte %u of its page runs past the page's %u bytes "
                   "of events", w->start + c->curr, c->commit);
            return -1;
        }
        uint32_t tl = rd4(w, d + c->curr);
        uint32_t type_len = w->swap ? tl >> 27 : tl & 31;
        uint64_t delta = w->swap ? tl & ((1U << 27) - 1) : tl >> 5;
        int64_t index = c->curr + 4, length;
        if (type_len == 0 || type_len >= T_PADDING) {
            if ((uint64_t)c->curr + 8 > c->commit) {
                damage(c, at, "an event header at byte %u of its page runs past the page's %u "
                       "bytes of events", w->start + c->curr, c->commit);
                return -1;
            }
        }
        if (type_len == T_PADDING) {
            length = (int32_t)rd4(w, d + index);
        } else if (type_len == T_EXTEND || type_len == T_STAMP) {
            uint64_t msb = type_len == T_STAMP ? c->ts & TS_MSB : 0;
            uint64_t ext = (uint64_t)rd4(w, d + index) << 27;
            delta = (ext + delta) | msb;
            index += 4;
            length = 0;
        } else if (type_len == 0) {
            length = (int64_t)(int32_t)(rd4(w, d + index) - 4);
            length = (length + 3) & ~(int64_t)3;
            index += 4;
        } else {
            length = type_len * 4;
        }
        if (type_len == T_STAMP)
            c->ts = delta;
        else
            c->ts += delta;
        int64_t next = index + length;
        if (next <= c->curr) {
            damage(c, at, "an event at byte %u of its page says the next one begins before it",
                   w->start + c->curr);
            return -1;
        }
        c->index = (uint32_t)index;
        c->next = next > c->commit ? c->commit : (uint32_t)next;
        if (type_len >= T_PADDING)
            continue;               /* padding, time extend, time stamp: not records */
        if (length < 0 || next > c->commit) {
            damage(c, at, "an event of %lld bytes at byte %u of its page overruns the page's %u "
                   "bytes of events", (long long)(length & 0xFFFFFFFF), w->start + c->curr,
                   c->commit);
            return -1;
        }
        if (length < w->common_end) {
            damage(c, at, "a %lld-byte event is shorter than its common fields (%d bytes)",
                   (long long)length, w->common_end);
            return -1;
        }
        c->has = 1;
        c->rec_off = at;
        c->rec_ts = c->ts;
        /* only the page's first event carries the count (kbuffer_missed_events: an int) */
        c->rec_missed = c->curr == 0 ? (long long)(int)c->lost : 0;
        c->rec_index = (uint32_t)index;
        c->rec_size = (uint32_t)length;
        return 1;
    }
}

static void walker_dealloc(Walker *w) {
    if (w->cpus) {
        for (int i = 0; i < w->ncpus; i++)
        {
            Cpu *c = &w->cpus[i];
            PyMem_Free(c->own);
            PyMem_Free(c->zbuf);
            PyMem_Free(c->zin);
            PyMem_Free(c->zoff);
            PyMem_Free(c->zsize);
            PyMem_Free(c->zlen);
        }
        PyMem_Free(w->cpus);
    }
    Py_TYPE(w)->tp_free((PyObject *)w);
}

/* The chunk table of a compressed CPU: chunks [(file offset of the compressed bytes, compressed
 * size, size), ...] and tail None or (offset, why): the damage that ended the table. */
static int cpu_chunks(Cpu *c, PyObject *chunks, PyObject *tail) {
    if (!PyList_Check(chunks)) {
        PyErr_SetString(PyExc_TypeError, "Walker: a CPU's chunks must be a list");
        return -1;
    }
    Py_ssize_t n = PyList_GET_SIZE(chunks);
    if (n > INT32_MAX)
        return PyErr_NoMemory(), -1;
    c->zoff = PyMem_Calloc(n ? n : 1, sizeof(int64_t));
    c->zsize = PyMem_Calloc(n ? n : 1, sizeof(uint32_t));
    c->zlen = PyMem_Calloc(n ? n : 1, sizeof(uint32_t));
    if (!c->zoff || !c->zsize || !c->zlen)
        return PyErr_NoMemory(), -1;
    int64_t total = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        long long zoff;
        unsigned long long zs, len;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(chunks, k), "LKK", &zoff, &zs, &len))
            return -1;
        if (zoff < 0 || zs > UINT32_MAX || len > UINT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "Walker: a chunk's offset or sizes out of range");
            return -1;
        }
        c->zoff[k] = zoff;
        c->zsize[k] = (uint32_t)zs;
        c->zlen[k] = (uint32_t)len;
        total += (int64_t)len;
    }
    c->nchunks = (int)n;
    c->cstart = c->first;
    c->end = c->first <= INT64_MAX - total ? c->first + total : c->first;
    if (tail != Py_None) {
        long long off;
        const char *why;
        if (!PyArg_ParseTuple(tail, "Ls", &off, &why))
            return -1;
        c->has_tail = 1;
        c->tail_off = off;
        snprintf(c->tail, sizeof c->tail, "%s", why);
    }
    return 0;
}

/* Walker(fd, file_size, page_size, long_size, big_endian, (type_off, type_size, pid_off,
 * pid_size, common_end), [(cpu id, first, size), ...], compression=None). With compression
 * ("zstd", "zlib"): [(cpu id, first, size, chunks, tail), ...], offsets and sizes counting the
 * decompressed data (cpu_chunks); ValueError where that library cannot be loaded. */
static int walker_init(Walker *w, PyObject *args, PyObject *kw) {
    int fd, page_size, long_size, big;
    long long file_size;
    PyObject *cpus;
    const char *compression = NULL;
    if (!PyArg_ParseTuple(args, "iLiip(iiiii)O!|z", &fd, &file_size, &page_size, &long_size,
                          &big, &w->type_off, &w->type_size, &w->pid_off, &w->pid_size,
                          &w->common_end, &PyList_Type, &cpus, &compression))
        return -1;
    if (page_size < 32 || page_size > (1 << 26) || (long_size != 4 && long_size != 8)) {
        PyErr_Format(PyExc_ValueError, "page size %d / long size %d", page_size, long_size);
        return -1;
    }
    w->algo = codec_of(compression);
    if (w->algo < 0 || !codec_ready(w->algo)) {
        PyErr_Format(PyExc_ValueError, "cannot decompress %s data (%s)", compression,
                     w->algo < 0 ? "unknown compression" : "its library cannot be loaded");
        return -1;
    }
    w->fd = fd;
    w->file_size = file_size;
    w->page_size = page_size;
    w->long8 = long_size == 8;
    w->start = long_size == 8 ? 16 : 12;
    w->swap = big != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
    Py_ssize_t n = PyList_GET_SIZE(cpus);
    w->cpus = PyMem_Calloc(n ? n : 1, sizeof(Cpu));
    if (!w->cpus)
        return PyErr_NoMemory(), -1;
    w->ncpus = (int)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        Cpu *c = &w->cpus[i];
        long long first, size;
        PyObject *chunks = NULL, *tail = Py_None;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(cpus, i), w->algo ? "iLLOO" : "iLL", &c->id,
                              &first, &size, &chunks, &tail))
            return -1;
        c->first = first;
        c->end = size > 0 && first <= INT64_MAX - size ? first + size : first;
        c->page_off = -1;
        if (w->algo) {
            if (cpu_chunks(c, chunks, tail) < 0)
                return -1;
            continue;
        }
        c->buf = c->own = PyMem_Malloc((size_t)page_size);
        if (!c->buf)
            return PyErr_NoMemory(), -1;
    }
    for (int i = 0; i < w->ncpus; i++)     /* every CPU holds its first record */
        td_advance(w, &w->cpus[i]);
    return 0;
}

/* decompressor(name): True where the walker can read data of that compression here. */
static PyObject *td_decompressor(PyObject *mod, PyObject *arg) {
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name)
        return NULL;
    int algo = codec_of(name);
    return PyBool_FromLong(algo > 0 && codec_ready(algo));
}

/* codecs(ZSTD_decompress, ZSTD_isError, uncompress): their addresses, 0 where the library is
 * not here. tracecmd/pages.py finds them with ctypes (Python's own dlopen): linking dlopen
 * here would take glibc 2.34's new version of it, and the wheel's manylinux tag with it. */
static PyObject *td_codecs(PyObject *mod, PyObject *args) {
    unsigned long long zd, ze, zu;
    if (!PyArg_ParseTuple(args, "KKK", &zd, &ze, &zu))
        return NULL;
    *(void **)&zstd_decompress = zd && ze ? (void *)(uintptr_t)zd : NULL;
    *(void **)&zstd_is_error = zd && ze ? (void *)(uintptr_t)ze : NULL;
    *(void **)&zlib_uncompress = zu ? (void *)(uintptr_t)zu : NULL;
    Py_RETURN_NONE;
}

static PyMethodDef td_functions[] = {
    {"codecs", td_codecs, METH_VARARGS,
     "codecs(ZSTD_decompress, ZSTD_isError, uncompress): their addresses (0: not here)"},
    {"decompressor", td_decompressor, METH_O,
     "decompressor(name): True where the walker can read CPU data of that compression"},
    {NULL}
};

PyObject *td_raise_damage(Cpu *c) {
    PyObject *v = Py_BuildValue("(iLs)", c->id, (long long)c->err_off, c->err);
    if (v) {
        PyErr_SetObject(Damaged, v);
        Py_DECREF(v);
    }
    c->has_err = 0;         /* raised once; the CPU stays at its end */
    return NULL;
}

/* The CPU whose record goes out next (the earliest, ties: the lower CPU) in *best: 1, 0 at the
 * end, -1 with Damaged raised (a CPU's damage, once its good records are all out). */
int td_pick(Walker *w, Cpu **best) {
    *best = NULL;
    for (int i = 0; i < w->ncpus; i++) {
        Cpu *c = &w->cpus[i];
        if (c->has_err && !c->has)
            return td_raise_damage(c), -1;
        if (c->has && (!*best || c->rec_ts < (*best)->rec_ts))
            *best = c;
    }
    return *best != NULL;
}

/* The next record in time order: (ts, cpu, missed, type, pid, offset, payload), None at the end. */
static PyObject *walker_next(Walker *w, PyObject *unused) {
    Cpu *best;
    int got = td_pick(w, &best);
    if (got < 0)
        return NULL;
    if (!got)
        Py_RETURN_NONE;
    const unsigned char *p = best->buf + w->start + best->rec_index;
    int type = td_type(w, p), pid = td_pid(w, p);
    PyObject *r = Py_BuildValue("(KiLiiLy#)", (unsigned long long)best->rec_ts, best->id,
                                best->rec_missed, type, pid, (long long)best->rec_off, p,
                                (Py_ssize_t)best->rec_size);
    if (!r)
        return NULL;
    best->records++;
    td_advance(w, best);
    return r;
}

/* (ts, missed) of the CPU's next record, not taken; None at its end or at damage. */
static PyObject *walker_peek(Walker *w, PyObject *arg) {
    long i = PyLong_AsLong(arg);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    for (int k = 0; k < w->ncpus; k++) {
        Cpu *c = &w->cpus[k];
        if (c->id == i && c->has)
            return Py_BuildValue("(KL)", (unsigned long long)c->rec_ts, c->rec_missed);
    }
    Py_RETURN_NONE;
}

/* Each CPU walked alone to its end: [(cpu id, good records, (offset, why) or None, first
 * record (ts, offset) or None)]. Leaves the walker at its end. */
static PyObject *walker_scan(Walker *w, PyObject *unused) {
    PyObject *out = PyList_New(0);
    if (!out)
        return NULL;
    for (int i = 0; i < w->ncpus; i++) {
        Cpu *c = &w->cpus[i];
        PyObject *first = NULL;
        long long n = 0;
        if (c->has && !(first = Py_BuildValue("(KL)", (unsigned long long)c->rec_ts,
                                              (long long)c->rec_off))) {
            Py_DECREF(out);
            return NULL;
        }
        while (c->has) {
            n++;
            td_advance(w, c);
        }
        PyObject *err = c->has_err ? Py_BuildValue("(Ls)", (long long)c->err_off, c->err)
                                   : (Py_INCREF(Py_None), Py_None);
        if (!first) {
            first = Py_None;
            Py_INCREF(first);
        }
        PyObject *t = Py_BuildValue("(iLNN)", c->id, n, err, first);
        if (!t || PyList_Append(out, t) < 0) {
            Py_XDECREF(t);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(t);
    }
    return out;
}

static PyObject *walker_iternext(Walker *w) {
    PyObject *r = walker_next(w, NULL);
    if (r == Py_None) {
        Py_DECREF(r);
        return NULL;
    }
    return r;
}

static PyObject *walker_records(Walker *w, void *unused) {
    long long n = 0;
    for (int i = 0; i < w->ncpus; i++)
        n += w->cpus[i].records;
    return PyLong_FromLongLong(n);
}

static PyGetSetDef walker_getset[] = {
    {"records", (getter)walker_records, NULL, "records handed out so far", NULL},
    {NULL}
};

static PyMethodDef walker_methods[] = {
    {"next", (PyCFunction)walker_next, METH_NOARGS, "the next record in time order, or None"},
    {"peek", (PyCFunction)walker_peek, METH_O, "(ts, missed) of a CPU's next record, or None"},
    {"scan", (PyCFunction)walker_scan, METH_NOARGS, "each CPU to its end: good records, damage"},
    {NULL}
};

PyTypeObject WalkerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "deferstitch._tracedat.Walker",
    .tp_basicsize = sizeof(Walker),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A trace.dat buffer's CPU data, its records in time order, every page checked.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)walker_init,
    .tp_dealloc = (destructor)walker_dealloc,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)walker_iternext,
    .tp_methods = walker_methods,
    .tp_getset = walker_getset,
};

/* The walker's type and its exception ready, for the module's init (_tracemodule.c). */
int td_walker_ready(PyObject *m) {
    if (PyType_Ready(&WalkerType) < 0)
        return -1;
    Damaged = PyErr_NewException("deferstitch._tracedat.Damaged", NULL, NULL);
    if (!Damaged)
        return -1;
    Py_INCREF(&WalkerType);
    Py_INCREF(Damaged);
    if (PyModule_AddObject(m, "Walker", (PyObject *)&WalkerType) < 0 ||
        PyModule_AddObject(m, "Damaged", Damaged) < 0 ||
        PyModule_AddFunctions(m, td_functions) < 0 ||
        PyModule_AddIntConstant(m, "MAX_CHUNK_PAGES", MAX_CHUNK_PAGES) < 0)
        return -1;
    return 0;
}
