/* pyobjects.c - the two bulk paths over Python objects, so Python never
 * loops per record (built into the extension only).  cffi releases the GIL;
 * they take it back while they touch objects, and not while they frame. */
#include <Python.h>
#include <errno.h>

#include "../record.h"
#include "../summarylog_api.h"
#include "../writer.h"

#define CHUNK_ITEMS 8192
#define RUN_BYTES (1u << 20)  /* framed bytes per lock hold */
#define BIG_RECORD (256u << 10)  /* bigger payloads take the writer's direct path */

/* Frame k payloads into the writer: runs of small ones under one lock hold
 * each, big ones one by one.  Drops are counted by the writer and skipped. */
static int frame_runs(slg_writer *w, const char **ptrs, const uint64_t *lens, uint64_t k,
                      uint64_t *got) {
    uint64_t j = 0;
    while (j < k) {
        if (lens[j] >= BIG_RECORD) {
            int rc = slg_writer_write(w, ptrs[j], lens[j]);
            if (rc == 0) (*got)++;
            else if (rc != SLG_DROPPED) return rc;
            j++;
            continue;
        }
        uint64_t e = j, bytes = 0;
        while (e < k && lens[e] < BIG_RECORD && bytes < RUN_BYTES) {
            bytes += lens[e] + SLG_FRAME_OVERHEAD;
            e++;
        }
        char *p;
        int rc = slg_writer_begin(w, bytes, e - j, &p);
        if (rc == SLG_DROPPED) {
            j = e;
            continue;
        }
        if (rc != 0) return rc;
        for (uint64_t x = j; x < e; x++) p += slg_frame(p, ptrs[x], lens[x]);
        rc = slg_writer_commit(w, bytes, e - j);
        *got += e - j;
        j = e;
        if (rc != 0) return rc;
    }
    return 0;
}

int slg_writer_write_pylist(slg_writer *w, void *list_addr, uint64_t *accepted) {
    PyObject *list = (PyObject *)list_addr;
    const char *ptrs[CHUNK_ITEMS];
    uint64_t lens[CHUNK_ITEMS];
    PyObject *held[CHUNK_ITEMS];
    int rc = 0;
    *accepted = 0;
    PyGILState_STATE g = PyGILState_Ensure();
    if (!PyList_CheckExact(list)) rc = -EINVAL;
    Py_ssize_t n = rc ? 0 : PyList_GET_SIZE(list);
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) { /* all or nothing: the caller falls back */
        PyObject *b = PyList_GET_ITEM(list, i);
        if (!PyBytes_CheckExact(b)) rc = -EINVAL;
        else if ((uint64_t)PyBytes_GET_SIZE(b) > SLG_MAX_PAYLOAD) rc = -EMSGSIZE;
    }
    Py_ssize_t i = 0;
    while (i < n && rc == 0) {
        Py_ssize_t k = 0;
        for (; k < CHUNK_ITEMS && i + k < n && i + k < PyList_GET_SIZE(list); k++) {
            PyObject *b = PyList_GET_ITEM(list, i + k);
            if (!PyBytes_CheckExact(b)) break; /* the list changed under us: stop here */
            Py_INCREF(b); /* keep it alive while the GIL is released */
            held[k] = b;
            ptrs[k] = PyBytes_AS_STRING(b);
            lens[k] = (uint64_t)PyBytes_GET_SIZE(b);
        }
        if (k == 0) break;
        uint64_t got = 0;
        Py_BEGIN_ALLOW_THREADS
        rc = frame_runs(w, ptrs, lens, (uint64_t)k, &got);
        Py_END_ALLOW_THREADS
        for (Py_ssize_t j = 0; j < k; j++) Py_DECREF(held[j]);
        *accepted += got;
        i += k;
    }
    PyGILState_Release(g);
    return rc;
}

int slg_spans_to_pylist(const char *buf, uint64_t base, const slg_span *spans, uint64_t n,
                        void *list_addr) {
    PyObject *list = (PyObject *)list_addr;
    int rc = 0;
    PyGILState_STATE g = PyGILState_Ensure();
    if (!PyList_CheckExact(list)) rc = -EINVAL;
    for (uint64_t i = 0; i < n && rc == 0; i++) {
        PyObject *b = PyBytes_FromStringAndSize(buf + (spans[i].offset - base),
                                                (Py_ssize_t)spans[i].length);
        if (!b || PyList_Append(list, b) != 0) {
            PyErr_Clear();
            rc = -ENOMEM;
        }
        Py_XDECREF(b);
    }
    PyGILState_Release(g);
    return rc;
}
