/* pages_fuzz.c - libFuzzer over the trace.dat page reader, deferstitch/_tracedat.c.
 *
 * _tracedat.c is compiled into this binary with coverage (-fsanitize=fuzzer), AddressSanitizer
 * and UBSan, and registered as the built-in module deferstitch._tracedat; an embedded Python
 * runs fuzz/cases.py pages_case on each input (raw ring-buffer pages, no libtracecmd). A memory
 * error or undefined behaviour in the reader, a crash, or a failed check (a Python exception:
 * abort) is saved under -artifact_prefix.
 *
 * Build and run (make fuzz-engine does this):
 *   clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
 *     $(python3-config --includes) fuzz/pages_fuzz.c deferstitch/_tracedat.c \
 *     $(python3-config --embed --ldflags) -o pages_fuzz
 *   DEFERSTITCH_ROOT=. PYTHONMALLOC=malloc ASAN_OPTIONS=detect_leaks=0 \
 *     ./pages_fuzz CORPUS SEEDS -artifact_prefix=CRASHES/pages-
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

PyMODINIT_FUNC PyInit__tracedat(void);

static PyObject *pages_case;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (PyImport_AppendInittab("deferstitch._tracedat", PyInit__tracedat) < 0)
        abort();
    Py_Initialize();
    if (PyRun_SimpleString(
            "import os, sys\n"
            "root = os.path.abspath(os.environ.get('DEFERSTITCH_ROOT', '.'))\n"
            "sys.path[:0] = [root, os.path.join(root, 'fuzz')]\n"
            "import deferstitch._tracedat as t\n"
            "assert t.__spec__.origin == 'built-in', t.__spec__\n") != 0)
        abort();
    PyObject *m = PyImport_ImportModule("cases");
    if (m == NULL || (pages_case = PyObject_GetAttrString(m, "pages_case")) == NULL) {
        PyErr_Print();
        abort();
    }
    Py_DECREF(m);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    PyObject *b = PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)size);
    PyObject *r = b ? PyObject_CallOneArg(pages_case, b) : NULL;
    Py_XDECREF(b);
    if (r == NULL) {                 /* a failed check or a stray exception: save the input */
        PyErr_Print();
        abort();
    }
    Py_DECREF(r);
    return 0;
}
