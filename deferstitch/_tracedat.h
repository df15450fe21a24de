/* The page walker of deferstitch._tracedat (_tracedat.c), shared with the ftrace feed that
 * runs on it (_tracefeed.c): a CPU's pages, its next record, the file's byte order. */
#ifndef DEFERSTITCH_TRACEDAT_H
#define DEFERSTITCH_TRACEDAT_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MISSING_EVENTS (1ULL << 31)
#define MISSING_STORED (1ULL << 30)
#define COMMIT_MASK ((1U << 27) - 1)
#define TS_MSB (0xf8ULL << 56)
#define T_PADDING 29
#define T_EXTEND 30
#define T_STAMP 31
#define TD_NONE 0
#define TD_ZLIB 1
#define TD_ZSTD 2

typedef struct {
    int64_t first, end;         /* this CPU's data in the file: [first, end) */
    int64_t page_off;           /* file offset of the page in buf, -1 before the first */
    unsigned char *buf;
    uint32_t commit;            /* bytes of event data on the page */
    long long lost;             /* the page's missed-events count (kbuffer's lost_events) */
    uint64_t ts;                /* time of the event at curr */
    uint32_t curr, next, index; /* as kbuffer: event start, next event, payload start */
    int has, done;              /* a record is held; the CPU is at its end (or damaged) */
    int64_t rec_off;
    uint64_t rec_ts;
    long long rec_missed;
    uint32_t rec_index, rec_size;
    long long records;          /* records taken from this CPU */
    int64_t err_off;            /* damage found: its offset and text (err set) */
    char err[160];
    int has_err;
    int id;                     /* the CPU's number as records carry it */
    unsigned char *own;         /* the page buffer of uncompressed data (buf points in it) */
    /* compressed data (trace-cmd v7): first, end and page_off count the decompressed bytes as
     * libtracecmd does; its chunks, one at a time decompressed into zbuf (buf points in it) */
    int nchunks, chunk, loaded; /* chunk: the one at cstart; loaded: it is in zbuf */
    int64_t *zoff;              /* file offset of each chunk's compressed bytes */
    uint32_t *zsize, *zlen;     /* its compressed and decompressed sizes */
    int64_t cstart;
    unsigned char *zbuf, *zin;  /* the decompressed chunk, its compressed bytes */
    size_t zbuf_cap, zin_cap;
    int has_tail;               /* the chunk table ended at damage: raised past the last chunk */
    int64_t tail_off;
    char tail[160];
} Cpu;

typedef struct {
    PyObject_HEAD
    int fd, page_size, start, long8, swap;
    int algo;                   /* TD_NONE, TD_ZLIB, TD_ZSTD: the compression of the CPU data */
    int64_t file_size;
    int type_off, type_size, pid_off, pid_size, common_end;
    int ncpus;
    Cpu *cpus;
} Walker;

static inline uint32_t rd4(const Walker *w, const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return w->swap ? __builtin_bswap32(v) : v;
}

static inline uint64_t rd8(const Walker *w, const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return w->swap ? __builtin_bswap64(v) : v;
}

static inline uint64_t rdlong(const Walker *w, const unsigned char *p) {
    return w->long8 ? rd8(w, p) : rd4(w, p);
}

/* An unsigned number of 1, 2, 4 or 8 bytes in the file's byte order (tep_read_number). */
static inline uint64_t td_rdnum(const Walker *w, const unsigned char *p, int size) {
    switch (size) {
    case 1: return p[0];
    case 2: { uint16_t v; memcpy(&v, p, 2); return w->swap ? __builtin_bswap16(v) : v; }
    case 4: return rd4(w, p);
    case 8: return rd8(w, p);
    }
    return 0;
}

/* A record's type and pid, at the common fields' offsets (-1 where the format has none). */
static inline int td_type(const Walker *w, const unsigned char *p) {
    return w->type_size > 0 ? (int)td_rdnum(w, p + w->type_off, w->type_size) : -1;
}

static inline int td_pid(const Walker *w, const unsigned char *p) {
    return w->pid_size > 0 ? (int)td_rdnum(w, p + w->pid_off, w->pid_size) : -1;
}

extern PyTypeObject WalkerType;
int td_pick(Walker *w, Cpu **best);         /* the CPU whose record is next: 1, 0 end, -1 damage */
int td_advance(Walker *w, Cpu *c);          /* the CPU's next record: 1 held, 0 end, -1 damage */
PyObject *td_raise_damage(Cpu *c);          /* Damaged(cpu, offset, why) set; NULL */
PyObject *td_feed_type(void);               /* _tracefeed.c's Feed type, ready */
int td_walker_ready(PyObject *m);           /* Walker and Damaged ready, added to module m */
int td_kallsyms_ready(PyObject *m);         /* _kallsyms.c's Kallsyms ready, added to module m */
#endif
