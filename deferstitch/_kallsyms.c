/* deferstitch._tracedat.Kallsyms: a trace.dat's kallsyms as libtraceevent 1.7.1 keeps it, the C
 * twin of tracecmd/formats.py's Kallsyms (the definition: every rule below is written there
 * first). tep_parse_kallsyms (libtraceevent src/event-parse.c) reads the text line by line with
 * sscanf("%16llx %c %n%*s%n"), stops at the first line it cannot read, drops '$' names and A/a
 * symbols; func_map_init sorts the addresses (equal ones in the reverse of the file's order);
 * tep_find_function is __find_func's bsearch with func_bcmp.
 *
 * Memory: for each symbol its address and its name's place in one block of names in the file's
 * order (16 bytes, sorted in place), and that block; no object a symbol, no copy of the text
 * kept. */
#include "_tracedat.h"
#include <stdlib.h>

typedef struct {
    uint64_t addr;
    uint32_t start, len;    /* its name: blob[start:start + len]; names are never empty, so
                             * start grows with the symbol's place in the file */
} KsSym;

typedef struct {
    PyObject_HEAD
    Py_ssize_t n;
    KsSym *sym;             /* sorted */
    char *blob;
} Kallsyms;

/* formats._SPACE: what glibc's isspace() takes in the C locale */
static inline int ks_space(unsigned char c) {
    return c == ' ' || (c >= '\t' && c <= '\r');
}

static inline int ks_hex(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* formats._scan_hex: sscanf's %16llx at p[i:n] (glibc vfscanf): 1 with *val and *next, or 0. */
static int ks_scan_hex(const unsigned char *p, Py_ssize_t i, Py_ssize_t n, int width,
                       uint64_t *val, Py_ssize_t *next) {
    while (i < n && ks_space(p[i]))
        i++;
    int neg = 0, digits = 0;
    uint64_t v = 0;
    if (width && i < n && (p[i] == '+' || p[i] == '-')) {
        neg = p[i] == '-';
        i++, width--;
    }
    if (width && i < n && p[i] == '0') {                /* "0", then maybe "x" */
        digits = 1, i++, width--;
        if (width && i < n && (p[i] == 'x' || p[i] == 'X'))
            i++, width--;
    }
    int d;
    while (width && i < n && (d = ks_hex(p[i])) >= 0) {
        v = v << 4 | (uint64_t)d;                       /* 16 digits at most: no overflow */
        digits++, i++, width--;
    }
    if (!digits)
        return 0;
    *val = neg ? (uint64_t)0 - v : v;                   /* modulo 2**64, as the Python */
    *next = i;
    return 1;
}

/* formats._kallsyms_line on line p[0:n] (no '\n' in it): 1 with addr, type, name, or 0. */
static int ks_line(const unsigned char *p, Py_ssize_t n, uint64_t *addr, unsigned char *type,
                   Py_ssize_t *name, Py_ssize_t *name_len) {
    Py_ssize_t i;
    if (!ks_scan_hex(p, 0, n, 16, addr, &i))
        return 0;
    while (i < n && ks_space(p[i]))                     /* " %c" */
        i++;
    if (i >= n)
        return 0;
    *type = p[i++];
    while (i < n && ks_space(p[i]))                     /* " %n%*s%n" */
        i++;
    Py_ssize_t start = i;
    while (i < n && !ks_space(p[i]))
        i++;
    if (i == start)
        return 0;
    *name = start, *name_len = i - start;
    return 1;
}

/* address order; equal addresses in the reverse of the file's order (formats.Kallsyms' keys):
 * the later name in the block first */
static int ks_cmp(const void *a, const void *b) {
    const KsSym *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->start < y->start ? 1 : x->start > y->start ? -1 : 0;
}

static int ks_grow(void **p, size_t *cap, size_t need, size_t item) {
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * item);
    if (!q)
        return -1;
    *p = q, *cap = c;
    return 0;
}

/* Fill k from the text (cut at its first NUL, as strdup does): 0, or -1 with an error set. */
static int ks_build(Kallsyms *k, const unsigned char *text, Py_ssize_t size) {
    const unsigned char *nul = memchr(text, 0, (size_t)size);
    if (nul)
        size = nul - text;
    KsSym *sym = NULL;
    size_t n = 0, cap_sym = 0, cap_blob = 0, nblob = 0;
    char *blob = NULL;
    Py_ssize_t pos = 0;
    while (pos < size) {                /* strtok_r(, "\n"): no empty lines */
        const unsigned char *eol = memchr(text + pos, '\n', (size_t)(size - pos));
        Py_ssize_t end = eol ? eol - text : size;
        if (end > pos) {
            uint64_t addr;
            unsigned char type;
            Py_ssize_t name, nlen;
            if (!ks_line(text + pos, end - pos, &addr, &type, &name, &nlen))
                break;                  /* "Failed to parse kallsyms" */
            if (text[pos + name] != '$' && type != 'A' && type != 'a') {
                if (nblob + (size_t)nlen > UINT32_MAX) {
                    PyErr_SetString(PyExc_OverflowError, "kallsyms: names past 4 GiB");
                    goto fail;
                }
                if (ks_grow((void **)&sym, &cap_sym, n + 1, sizeof *sym) < 0 ||
                    ks_grow((void **)&blob, &cap_blob, nblob + (size_t)nlen, 1) < 0) {
                    PyErr_NoMemory();
                    goto fail;
                }
                sym[n].addr = addr;
                sym[n].start = (uint32_t)nblob;
                sym[n].len = (uint32_t)nlen;
                memcpy(blob + nblob, text + pos + name, (size_t)nlen);
                nblob += (size_t)nlen;
                n++;
            }
        }
        pos = end + 1;
    }
    if (n) {
        qsort(sym, n, sizeof *sym, ks_cmp);
        KsSym *s = realloc(sym, n * sizeof *sym);       /* the spare room given back */
        if (s)
            sym = s;
        char *b = realloc(blob, nblob);
        if (b)
            blob = b;
    }
    k->sym = sym, k->blob = blob, k->n = (Py_ssize_t)n;
    return 0;
fail:
    free(sym);
    free(blob);
    return -1;
}

static void ks_free(Kallsyms *k) {
    free(k->sym);
    free(k->blob);
    k->sym = NULL, k->blob = NULL, k->n = 0;
}

static int Kallsyms_init(Kallsyms *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"text", NULL};
    PyObject *arg, *held = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O:Kallsyms", names, &arg))
        return -1;
    if (PyList_Check(arg)) {            /* a list holding the text gives it up, as the Python's */
        Py_ssize_t last = PyList_GET_SIZE(arg) - 1;
        if (last < 0) {
            PyErr_SetString(PyExc_IndexError, "pop from empty list");
            return -1;
        }
        held = PyList_GET_ITEM(arg, last);
        Py_INCREF(held);
        if (PyList_SetSlice(arg, last, last + 1, NULL) < 0) {
            Py_DECREF(held);
            return -1;
        }
        arg = held;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
        Py_XDECREF(held);
        return -1;
    }
    ks_free(self);
    int rc = ks_build(self, view.buf, view.len);
    PyBuffer_Release(&view);
    Py_XDECREF(held);                   /* the text freed here where the list held the last ref */
    return rc;
}

static void Kallsyms_dealloc(Kallsyms *self) {
    ks_free(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t Kallsyms_len(Kallsyms *self) {
    return self->n;
}

static PyObject *ks_name(Kallsyms *self, Py_ssize_t i) {
    return PyUnicode_DecodeUTF8(self->blob + self->sym[i].start, self->sym[i].len, "replace");
}

static PyObject *Kallsyms_name(Kallsyms *self, PyObject *arg) {
    Py_ssize_t i = PyNumber_AsSsize_t(arg, PyExc_IndexError);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (i < 0)
        i += self->n;
    if (i < 0 || i >= self->n) {
        PyErr_SetString(PyExc_IndexError, "array index out of range");
        return NULL;
    }
    return ks_name(self, i);
}

/* tep_find_function: glibc's bsearch with func_bcmp over the sorted map and its sentinel
 * (address 0): the symbol at addr or the last one below it, None past the last symbol. */
static PyObject *Kallsyms_function(Kallsyms *self, PyObject *arg) {
    PyObject *num = PyNumber_Index(arg);    /* `addr &= ULONG_MAX` in the Python: ints only */
    if (!num)
        return NULL;
    uint64_t addr = PyLong_AsUnsignedLongLongMask(num);
    Py_DECREF(num);
    if (addr == (uint64_t)-1 && PyErr_Occurred())
        return NULL;
    const KsSym *a = self->sym;
    Py_ssize_t lo = 0, hi = self->n, last = self->n - 1;
    while (lo < hi) {
        Py_ssize_t i = (lo + hi) / 2;
        uint64_t x = a[i].addr;
        if (addr == x || (addr > x && addr < (i < last ? a[i + 1].addr : 0)))
            return ks_name(self, i);
        if (addr < x)
            hi = i;
        else
            lo = i + 1;
    }
    Py_RETURN_NONE;
}

static PyMethodDef Kallsyms_methods[] = {
    {"function", (PyCFunction)Kallsyms_function, METH_O,
     "function(addr) -> str | None: the kernel function containing addr (tep_find_function)."},
    {"name", (PyCFunction)Kallsyms_name, METH_O,
     "name(i) -> str: the name of the i-th symbol in address order."},
    {NULL},
};

static PySequenceMethods Kallsyms_seq = {
    .sq_length = (lenfunc)Kallsyms_len,
};

static PyTypeObject KallsymsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "deferstitch._tracedat.Kallsyms",
    .tp_doc = "Kallsyms(text): a trace.dat's kallsyms as libtraceevent 1.7.1 keeps it, the twin "
              "of tracecmd.formats.Kallsyms.",
    .tp_basicsize = sizeof(Kallsyms),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Kallsyms_init,
    .tp_dealloc = (destructor)Kallsyms_dealloc,
    .tp_methods = Kallsyms_methods,
    .tp_as_sequence = &Kallsyms_seq,
};

int td_kallsyms_ready(PyObject *m) {
    if (PyType_Ready(&KallsymsType) < 0)
        return -1;
    Py_INCREF(&KallsymsType);
    if (PyModule_AddObject(m, "Kallsyms", (PyObject *)&KallsymsType) < 0) {
        Py_DECREF(&KallsymsType);
        return -1;
    }
    return 0;
}
