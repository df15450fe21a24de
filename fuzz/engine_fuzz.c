/* engine_fuzz.c - libFuzzer over the C engine, deferstitch/_accel.c.
 *
 * _accel.c is compiled into this binary with coverage (-fsanitize=fuzzer), AddressSanitizer
 * and UBSan, and registered as the built-in module deferstitch._accel; an embedded Python runs
 * fuzz/cases.py perf_case on each input: the engine through perfdata/engine.py (as the CLI
 * takes it) and the Python path, whose reports must be equal. A memory error or undefined
 * behaviour in the engine, a crash, or a failed check (a Python exception: abort) is saved
 * under -artifact_prefix.
 *
 * Build and run (make fuzz does this):
 *   clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
 *     $(python3-config --includes) fuzz/engine_fuzz.c deferstitch/_accel.c \
 *     $(python3-config --embed --ldflags) -o engine_fuzz
 *   DEFERSTITCH_ROOT=. PYTHONMALLOC=malloc ASAN_OPTIONS=detect_leaks=0 \
 *     ./engine_fuzz CORPUS SEEDS -artifact_prefix=CRASHES/engine-
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

PyMODINIT_FUNC PyInit__accel(void);

static PyObject *perf_case;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (PyImport_AppendInittab("deferstitch._accel", PyInit__accel) < 0)
        abort();
    Py_Initialize();
    /* the checkout (DEFERSTITCH_ROOT, default the current directory) and fuzz/ on sys.path;
     * the engine must be this binary's instrumented one, not a built .so beside the sources */
    if (PyRun_SimpleString(
            "import os, sys\n"
            "root = os.path.abspath(os.environ.get('DEFERSTITCH_ROOT', '.'))\n"
            "sys.path[:0] = [root, os.path.join(root, 'fuzz')]\n"
            "import deferstitch._accel as a\n"
            "assert a.__spec__.origin == 'built-in', a.__spec__\n") != 0)
        abort();
    PyObject *m = PyImport_ImportModule("cases");
    if (m == NULL || (perf_case = PyObject_GetAttrString(m, "perf_case")) == NULL) {
        PyErr_Print();
        abort();
    }
    Py_DECREF(m);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    PyObject *b = PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)size);
    PyObject *r = b ? PyObject_CallOneArg(perf_case, b) : NULL;
    Py_XDECREF(b);
    if (r == NULL) {                 /* a failed check or a stray exception: save the input */
        PyErr_Print();
        abort();
    }
    Py_DECREF(r);
    return 0;
}
