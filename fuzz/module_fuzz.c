/* module_fuzz.c - libFuzzer over one of our C modules: the engine (deferstitch/_accel.c) or the
 * trace.dat page reader (deferstitch/_tracedat.c), chosen at build time.
 *
 * The module is compiled into this binary with coverage (-fsanitize=fuzzer), AddressSanitizer
 * and UBSan, and registered as the built-in deferstitch.FUZZ_MODULE; an embedded Python runs
 * fuzz/cases.py's FUZZ_CASE on each input: perf_case (a perf.data through the engine, as the CLI
 * takes it, and the Python path, whose reports must be equal) or pages_case (raw ring-buffer
 * pages straight into the page reader). A memory error or undefined behaviour, a crash, or a
 * failed check (a Python exception: abort) is saved under -artifact_prefix.
 *
 * Build and run (make fuzz-engine does this, for both):
 *   clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
 *     -DFUZZ_MODULE=_accel -DFUZZ_CASE=perf_case \
 *     $(python3-config --includes) fuzz/module_fuzz.c deferstitch/_accel.c \
 *     $(python3-config --embed --ldflags) -o engine_fuzz
 *   DEFERSTITCH_ROOT=. PYTHONMALLOC=malloc ASAN_OPTIONS=detect_leaks=0 \
 *     ./engine_fuzz CORPUS SEEDS -artifact_prefix=CRASHES/engine-
 * (-DFUZZ_MODULE=_tracedat -DFUZZ_CASE=pages_case with deferstitch/_tracedat.c: pages_fuzz;
 * -DFUZZ_MODULE=_dwarf -DFUZZ_CASE=dwarf_case with deferstitch/_dwarf.c: dwarf_fuzz)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

#if !defined(FUZZ_MODULE) || !defined(FUZZ_CASE)
#error "build with -DFUZZ_MODULE=_accel -DFUZZ_CASE=perf_case (or _tracedat, pages_case)"
#endif
#define STR_(x) #x
#define STR(x) STR_(x)
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

PyMODINIT_FUNC CAT(PyInit_, FUZZ_MODULE)(void);

static PyObject *fuzz_case;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (PyImport_AppendInittab("deferstitch." STR(FUZZ_MODULE), CAT(PyInit_, FUZZ_MODULE)) < 0)
        abort();
    Py_Initialize();
    /* the checkout (DEFERSTITCH_ROOT, default the current directory) and fuzz/ on sys.path;
     * the module must be this binary's instrumented one, not a built .so beside the sources */
    if (PyRun_SimpleString(
            "import os, sys, importlib\n"
            "root = os.path.abspath(os.environ.get('DEFERSTITCH_ROOT', '.'))\n"
            "sys.path[:0] = [root, os.path.join(root, 'fuzz')]\n"
            "m = importlib.import_module('deferstitch." STR(FUZZ_MODULE) "')\n"
            "assert m.__spec__.origin == 'built-in', m.__spec__\n") != 0)
        abort();
    PyObject *m = PyImport_ImportModule("cases");
    if (m == NULL || (fuzz_case = PyObject_GetAttrString(m, STR(FUZZ_CASE))) == NULL) {
        PyErr_Print();
        abort();
    }
    Py_DECREF(m);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    PyObject *b = PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)size);
    PyObject *r = b ? PyObject_CallOneArg(fuzz_case, b) : NULL;
    Py_XDECREF(b);
    if (r == NULL) {                 /* a failed check or a stray exception: save the input */
        PyErr_Print();
        abort();
    }
    Py_DECREF(r);
    return 0;
}
