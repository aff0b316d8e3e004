/* speedups.c - summarylog._speedups: CPython fast paths for the Writer's hot
 * calls, where a cffi call would cost more than the work.  pack_log() packs
 * Writer.log()'s record (u32 kidx, u32 0, i64 step, f64 walltime, f64
 * value[n], as the drain reads it) when scalars has exactly the tags keys with
 * plain float/int values; else None, and the caller's careful path explains. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define HEAD_BYTES 24

static PyObject *pack_log(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "pack_log expects 5 arguments");
        return NULL;
    }
    PyObject *scalars = args[0], *keys = args[1];
    if (!PyDict_CheckExact(scalars) || !PyTuple_CheckExact(keys)) Py_RETURN_NONE;
    Py_ssize_t n = PyTuple_GET_SIZE(keys);
    if (PyDict_GET_SIZE(scalars) != n || n == 0) Py_RETURN_NONE;
    if (!PyLong_CheckExact(args[3]) || !PyFloat_CheckExact(args[4])) Py_RETURN_NONE;
    unsigned long kidx = PyLong_AsUnsignedLong(args[2]);
    if (kidx == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    int overflow = 0;
    long long step = PyLong_AsLongLongAndOverflow(args[3], &overflow);
    if (overflow) Py_RETURN_NONE;
    if (step == -1 && PyErr_Occurred()) return NULL;
    double wall = PyFloat_AS_DOUBLE(args[4]);

    PyObject *out = PyBytes_FromStringAndSize(NULL, HEAD_BYTES + 8 * n);
    if (out == NULL) return NULL;
    char *p = PyBytes_AS_STRING(out);
    uint32_t k32 = (uint32_t)kidx, zero = 0;
    int64_t s64 = (int64_t)step;
    memcpy(p, &k32, 4);  /* x86-64 and aarch64 Linux are little-endian */
    memcpy(p + 4, &zero, 4);
    memcpy(p + 8, &s64, 8);
    memcpy(p + 16, &wall, 8);
    p += HEAD_BYTES;

    Py_ssize_t pos = 0, i = 0;
    PyObject *key, *value;
    while (PyDict_Next(scalars, &pos, &key, &value)) {
        PyObject *want = PyTuple_GET_ITEM(keys, i);
        if (key != want) {  /* usually the very same str objects, step after step */
            if (!PyUnicode_CheckExact(key)) goto fallback;
            int eq = PyUnicode_Compare(key, want) == 0;
            if (PyErr_Occurred()) goto error;
            if (!eq) goto fallback;
        }
        double v;
        if (PyFloat_CheckExact(value)) {
            v = PyFloat_AS_DOUBLE(value);
        } else if (PyLong_CheckExact(value)) {
            v = PyLong_AsDouble(value);
            if (v == -1.0 && PyErr_Occurred()) {  /* too big for a double */
                PyErr_Clear();
                goto fallback;
            }
        } else {
            goto fallback;
        }
        memcpy(p + 8 * i, &v, 8);
        i++;
    }
    if (i != n) goto fallback;  /* the dict changed size while we read it */
    return out;

fallback:
    Py_DECREF(out);
    Py_RETURN_NONE;
error:
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"pack_log", (PyCFunction)(void (*)(void))pack_log, METH_FASTCALL,
     "pack_log(scalars, keys, kidx, step, walltime) -> bytes | None\n\n"
     "Writer.log()'s packed record when scalars has exactly the tags keys (in\n"
     "order) and plain float/int values; None otherwise."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "summarylog._speedups",
    "CPython fast paths for Writer hot calls (csrc/pyext/speedups.c).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__speedups(void) {
    return PyModule_Create(&module);
}
