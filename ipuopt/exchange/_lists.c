/* The list greedy of ipuopt/exchange/greedy.py (greedy_schedule with an order), compiled.

   Each transfer, in a topological order of its priority key (ties by index), is put at its
   earliest completion over its widths: the least start at or after its dependencies'
   completions where every check admits it (a fixpoint, as greedy._earliest), then its
   intervals are committed. The checks and holds come packed by exchange/packed.py (from
   greedy._uses), so the rules of the model stay in Python; this file only keeps interval
   sets. It makes the
   same decisions as the Python greedy, transfer for transfer (tests/test_exact.py compares
   them), some twenty times faster or more: a fragment-level phase's pass in a fraction
   of a second instead of seconds, so that passes can be repeated (exchange/justify.py).

   `check()` is called every CHECK_EVERY placements and may raise (Ctrl-C, a deadline). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t i64;

#define CHECK_EVERY 2048

/* Sorted, pairwise-disjoint half-open intervals (greedy.IntervalSet). */
typedef struct {
    i64 *s, *e;
    Py_ssize_t n, cap;
} Set;

/* The last index i with s[i] <= x, or -1. */
static Py_ssize_t last_at_or_before(const Set *st, i64 x) {
    Py_ssize_t lo = 0, hi = st->n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (st->s[mid] <= x) lo = mid + 1;
        else hi = mid;
    }
    return lo - 1;
}

static i64 earliest_fit(const Set *st, i64 s, i64 length, i64 margin) {
    i64 lo = s - margin;
    Py_ssize_t i = last_at_or_before(st, lo);
    if (i < 0 || st->e[i] <= lo) i++;
    i64 span = length + 2 * margin;
    while (i < st->n && st->s[i] < lo + span) {
        lo = st->e[i];
        i++;
    }
    return lo + margin;
}

static int add(Set *st, i64 s, i64 e) {
    Py_ssize_t i = last_at_or_before(st, s);
    if (i >= 0 && st->e[i] >= s) {
        s = st->s[i];
        if (st->e[i] > e) e = st->e[i];
    } else {
        i++;
    }
    Py_ssize_t j = i;
    while (j < st->n && st->s[j] <= e) {
        if (st->e[j] > e) e = st->e[j];
        j++;
    }
    /* replace [i, j) by one interval */
    Py_ssize_t removed = j - i;
    if (removed == 0) {
        if (st->n == st->cap) {
            Py_ssize_t cap = st->cap ? 2 * st->cap : 8;
            i64 *ns = realloc(st->s, (size_t)cap * sizeof(i64));
            if (!ns) return -1;
            st->s = ns;
            i64 *ne = realloc(st->e, (size_t)cap * sizeof(i64));
            if (!ne) return -1;
            st->e = ne;
            st->cap = cap;
        }
        memmove(st->s + i + 1, st->s + i, (size_t)(st->n - i) * sizeof(i64));
        memmove(st->e + i + 1, st->e + i, (size_t)(st->n - i) * sizeof(i64));
        st->n++;
    } else if (removed > 1) {
        memmove(st->s + i + 1, st->s + j, (size_t)(st->n - j) * sizeof(i64));
        memmove(st->e + i + 1, st->e + j, (size_t)(st->n - j) * sizeof(i64));
        st->n -= removed - 1;
    }
    st->s[i] = s;
    st->e[i] = e;
    return 0;
}

/* A binary heap of (key, index), least first, ties by index (greedy.topological_by). */
typedef struct {
    double key;
    i64 i;
} Item;

static int less(Item a, Item b) { return a.key < b.key || (a.key == b.key && a.i < b.i); }

static void push(Item *h, Py_ssize_t *n, Item x) {
    Py_ssize_t k = (*n)++;
    while (k > 0) {
        Py_ssize_t p = (k - 1) / 2;
        if (!less(x, h[p])) break;
        h[k] = h[p];
        k = p;
    }
    h[k] = x;
}

static Item pop(Item *h, Py_ssize_t *n) {
    Item top = h[0], x = h[--(*n)];
    Py_ssize_t k = 0;
    for (;;) {
        Py_ssize_t c = 2 * k + 1;
        if (c >= *n) break;
        if (c + 1 < *n && less(h[c + 1], h[c])) c++;
        if (!less(h[c], x)) break;
        h[k] = h[c];
        k = c;
    }
    h[k] = x;
    return top;
}

enum {
    A_NW, A_CK_PTR, A_CK_SET, A_CK_OFF, A_CK_LEN, A_CK_MARGIN, A_CM_PTR, A_CM_SET, A_CM_OFF,
    A_CM_LEN, A_END, A_PAIRED, A_SAVING, A_BORROW, A_SRC, A_PARTNER, A_PRED_PTR, A_PRED, A_SUCC_PTR,
    A_SUCC, N_ARRAYS
};
static const char *NAMES[N_ARRAYS] = {
    "nw", "ck_ptr", "ck_set", "ck_off", "ck_len", "ck_margin", "cm_ptr", "cm_set", "cm_off",
    "cm_len", "end", "paired", "saving", "borrow", "src", "partner", "pred_ptr", "pred", "succ_ptr",
    "succ"};

static int get_buffer(PyObject *o, Py_buffer *b, const char *name, int fmt_double) {
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) return -1;
    int ok = b->itemsize == 8 && (!b->format || (fmt_double ? !strcmp(b->format, "d")
                                                           : (!strcmp(b->format, "q") || !strcmp(b->format, "l"))));
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s: %s array wanted", name, fmt_double ? "float64" : "int64");
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

/* place(arrays (a tuple in NAMES' order), nsets, ntiles, keys, borrow_aware, paired_credit,
         check, starts_out, slot_out) -> None
   keys: float64 per transfer; starts_out, slot_out: int64 per transfer (the width option
   chosen: 0 or 1, an index into the transfer's widths). */
static PyObject *py_place(PyObject *self, PyObject *args) {
    PyObject *arrays, *keys_obj, *check, *starts_obj, *slot_obj;
    Py_ssize_t nsets, ntiles;
    int borrow_aware;
    double credit;
    if (!PyArg_ParseTuple(args, "O!nnOpdOOO", &PyTuple_Type, &arrays, &nsets, &ntiles, &keys_obj,
                          &borrow_aware, &credit, &check, &starts_obj, &slot_obj))
        return NULL;
    if (PyTuple_GET_SIZE(arrays) != N_ARRAYS) {
        PyErr_Format(PyExc_ValueError, "%d arrays wanted", N_ARRAYS);
        return NULL;
    }
    Py_buffer bufs[N_ARRAYS + 3];
    int got = 0;
    PyObject *result = NULL;
    Set *sets = NULL;
    i64 *finish = NULL, *indeg = NULL, *pending = NULL;
    Item *heap = NULL;
    for (; got < N_ARRAYS; got++)
        if (get_buffer(PyTuple_GET_ITEM(arrays, got), &bufs[got], NAMES[got], 0) < 0) goto done;
    if (get_buffer(keys_obj, &bufs[got], "keys", 1) < 0) goto done;
    got++;
    if (get_buffer(starts_obj, &bufs[got], "starts", 0) < 0) goto done;
    got++;
    if (get_buffer(slot_obj, &bufs[got], "slots", 0) < 0) goto done;
    got++;
    const i64 *a[N_ARRAYS];
    for (int k = 0; k < N_ARRAYS; k++) a[k] = bufs[k].buf;
    Py_ssize_t n = bufs[A_NW].len / 8;
    const double *keys = bufs[N_ARRAYS].buf;
    i64 *starts = bufs[N_ARRAYS + 1].buf, *slots = bufs[N_ARRAYS + 2].buf;
    if (bufs[N_ARRAYS].len / 8 != n || bufs[N_ARRAYS + 1].len / 8 != n || bufs[N_ARRAYS + 2].len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "keys, starts and slots need one item per transfer");
        goto done;
    }
    sets = calloc((size_t)nsets + 1, sizeof(Set));
    finish = malloc(((size_t)n + 1) * sizeof(i64));
    indeg = malloc(((size_t)n + 1) * sizeof(i64));
    pending = calloc((size_t)ntiles + 1, sizeof(i64));
    heap = malloc(((size_t)n + 1) * sizeof(Item));
    if (!sets || !finish || !indeg || !pending || !heap) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t nh = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        pending[a[A_SRC][i]]++;
        indeg[i] = a[A_PRED_PTR][i + 1] - a[A_PRED_PTR][i];
        if (indeg[i] == 0) push(heap, &nh, (Item){keys[i], i});
    }
    Py_ssize_t placed = 0;
    while (nh > 0) {
        i64 i = pop(heap, &nh).i;
        i64 lower = 0;
        for (i64 p = a[A_PRED_PTR][i]; p < a[A_PRED_PTR][i + 1]; p++)
            if (finish[a[A_PRED][p]] > lower) lower = finish[a[A_PRED][p]];
        double best_cost = 0;
        i64 best_s = 0, best_k = -1;
        for (i64 k = 0; k < a[A_NW][i]; k++) {
            i64 opt = 2 * i + k, start = lower;
            int moved = 1;
            while (moved) {
                moved = 0;
                for (i64 c = a[A_CK_PTR][opt]; c < a[A_CK_PTR][opt + 1]; c++) {
                    i64 off = a[A_CK_OFF][c];
                    i64 fit = earliest_fit(&sets[a[A_CK_SET][c]], start + off, a[A_CK_LEN][c],
                                           a[A_CK_MARGIN][c]) - off;
                    if (fit > start) {
                        start = fit;
                        moved = 1;
                    }
                }
            }
            double cost = (double)(start + a[A_END][opt]);
            if (borrow_aware && a[A_PAIRED][opt] && a[A_PARTNER][i] >= 0 && pending[a[A_PARTNER][i]])
                cost += (double)a[A_BORROW][opt];
            if (credit != 0.0 && a[A_PAIRED][opt] && a[A_SAVING][opt])
                cost -= credit * (double)a[A_SAVING][opt];
            if (best_k < 0 || cost < best_cost) {
                best_cost = cost;
                best_s = start;
                best_k = k;
            }
        }
        i64 opt = 2 * i + best_k;
        for (i64 c = a[A_CM_PTR][opt]; c < a[A_CM_PTR][opt + 1]; c++) {
            i64 s = best_s + a[A_CM_OFF][c];
            if (add(&sets[a[A_CM_SET][c]], s, s + a[A_CM_LEN][c]) < 0) {
                PyErr_NoMemory();
                goto done;
            }
        }
        pending[a[A_SRC][i]]--;
        starts[i] = best_s;
        slots[i] = best_k;
        finish[i] = best_s + a[A_END][opt];
        for (i64 p = a[A_SUCC_PTR][i]; p < a[A_SUCC_PTR][i + 1]; p++) {
            i64 j = a[A_SUCC][p];
            if (--indeg[j] == 0) push(heap, &nh, (Item){keys[j], j});
        }
        if (++placed % CHECK_EVERY == 0) {
            if (PyErr_CheckSignals() < 0) goto done;
            if (check != Py_None) {
                PyObject *r = PyObject_CallNoArgs(check);
                if (!r) goto done;
                Py_DECREF(r);
            }
        }
    }
    if (placed != n) {
        PyErr_SetString(PyExc_ValueError, "the dependencies have a cycle");
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&bufs[k]);
    if (sets) {
        for (Py_ssize_t k = 0; k < nsets; k++) {
            free(sets[k].s);
            free(sets[k].e);
        }
    }
    free(sets);
    free(finish);
    free(indeg);
    free(pending);
    free(heap);
    return result;
}

static PyMethodDef methods[] = {
    {"place", py_place, METH_VARARGS, "The list greedy over packed checks (see exchange/packed.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_lists", NULL, -1, methods};

PyMODINIT_FUNC PyInit__lists(void) { return PyModule_Create(&module); }
