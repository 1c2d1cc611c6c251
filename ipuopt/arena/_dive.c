/* One dive of the arena's exact search (ipuopt/arena/search.py), compiled.

   The same depth-first searches as search._Dive (skyline branching, `dfs`; buffer branching,
   `dfs_buffers`), decision for decision: the same placements in the same order, the same
   node count, so a dive here and there give the same answer (tests/test_arena.py compares
   them). Written in C
   because the search's nodes cost 0.1-0.3 ms in numpy, about a hundred times this.

   The GIL is released while the dive runs and taken back (every 128 nodes, at most every
   20 ms) to ask the caller's `expired()`, so a race beside it (CP-SAT's thread) and Ctrl-C
   go on as before. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int64_t i64;

#define BIG ((i64)1 << 62)
enum { FOUND = 0, EXHAUSTED = 1, STOPPED = 2 };
/* Levels of recursion at most: a frame pair is a few hundred bytes, this keeps a dive within
   a thread's 8 MB stack with room to spare; deeper dives stop as cut short. */
#define MAX_DEPTH 12000

typedef struct {
    i64 item;
    Py_ssize_t floors, mins;
} Entry;

typedef struct {
    /* the problem */
    Py_ssize_t n, nsec;
    const i64 *size, *lo, *hi, *align;
    const i64 *ov_start, *ov_idx;  /* items live at the same time as each item (CSR) */
    const i64 *cv_start, *cv_idx;  /* items live in each section (CSR) */
    i64 cap, node_limit;
    int longest, sweep;
    const i64 *rank;  /* each item's place in the dive's order */
    int buffers;      /* buffer branching (dfs_buffers), else skyline branching */
    PyObject *expired;
    /* the state */
    i64 *offset, *min_off, *floor, *total;
    char *unplaced;
    i64 nodes;
    /* the undo log: placements (item >= 0) and raised floors (item < 0), each with where its
       saved floors and min offsets start on their stacks */
    Entry *log;
    i64 *saved_min, *saved_floor;
    Py_ssize_t log_len, saved_min_len, saved_floor_len;
    Py_ssize_t log_cap, saved_min_cap, saved_floor_cap;
    Py_ssize_t raised;   /* sections raised by a waste decision, still in force */
    /* the failed states: two 64-bit hashes each, open addressing */
    uint64_t *failed;
    Py_ssize_t failed_cap, failed_len;
    /* scratch of the branching choice (not needed across a recursion) */
    i64 *pos, *eff;
    char *at_f;
    i64 depth;
    double next_ask;  /* when expired() may be asked again */
    PyThreadState *thread;
    int error;
} Dive;

static int grow(void **p, Py_ssize_t *cap, Py_ssize_t need, size_t elem) {
    if (need <= *cap) return 0;
    Py_ssize_t c = *cap ? *cap : 256;
    while (c < need) c *= 2;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

static i64 round_up(i64 v, i64 a) {
    i64 r = v % a;
    return r > 0 ? v + a - r : v;
}

/* ---------- placements and their undoing ---------- */

static int log_entry(Dive *d, i64 item, Py_ssize_t mins, Py_ssize_t floors) {
    if (grow((void **)&d->log, &d->log_cap, d->log_len + 1, sizeof(Entry)) ||
        grow((void **)&d->saved_min, &d->saved_min_cap, d->saved_min_len + mins, sizeof(i64)) ||
        grow((void **)&d->saved_floor, &d->saved_floor_cap, d->saved_floor_len + floors, sizeof(i64)))
        return -1;
    d->log[d->log_len].item = item;
    d->log[d->log_len].floors = d->saved_floor_len;
    d->log[d->log_len].mins = d->saved_min_len;
    d->log_len++;
    return 0;
}

static int place(Dive *d, i64 i, i64 off) {
    i64 top = off + d->size[i];
    i64 a = d->ov_start[i], b = d->ov_start[i + 1];
    if (log_entry(d, i, b - a, d->hi[i] - d->lo[i])) return -1;
    for (i64 k = a; k < b; k++) {
        i64 j = d->ov_idx[k];
        d->saved_min[d->saved_min_len++] = d->min_off[j];
        i64 v = d->min_off[j] > top ? d->min_off[j] : top;
        d->min_off[j] = round_up(v, d->align[j]);
    }
    for (i64 s = d->lo[i]; s < d->hi[i]; s++) {
        d->saved_floor[d->saved_floor_len++] = d->floor[s];
        if (d->floor[s] < top) d->floor[s] = top;
        d->total[s] -= d->size[i];
    }
    d->offset[i] = off;
    d->unplaced[i] = 0;
    return 0;
}

static int raise_floor(Dive *d, i64 s, i64 level) {
    if (log_entry(d, -1 - s, 0, 1)) return -1;
    d->saved_floor[d->saved_floor_len++] = d->floor[s];
    d->floor[s] = level;
    d->raised++;
    return 0;
}

static void rollback(Dive *d, Py_ssize_t mark) {
    while (d->log_len > mark) {
        d->log_len--;
        i64 i = d->log[d->log_len].item;
        Py_ssize_t fs = d->log[d->log_len].floors, ms = d->log[d->log_len].mins;
        if (i < 0) {
            d->floor[-1 - i] = d->saved_floor[fs];
            d->raised--;
        } else {
            for (i64 s = d->lo[i]; s < d->hi[i]; s++) {
                d->floor[s] = d->saved_floor[fs + (s - d->lo[i])];
                d->total[s] += d->size[i];
            }
            for (i64 k = d->ov_start[i]; k < d->ov_start[i + 1]; k++)
                d->min_off[d->ov_idx[k]] = d->saved_min[ms + (k - d->ov_start[i])];
            d->offset[i] = -1;
            d->unplaced[i] = 1;
        }
        d->saved_floor_len = fs;
        d->saved_min_len = ms;
    }
}

/* ---------- failed states ---------- */

static void state_hash(const Dive *d, uint64_t *h1, uint64_t *h2) {
    uint64_t a = 1469598103934665603ULL, b = 0x9E3779B97F4A7C15ULL;
#define MIX(v)                                                             \
    do {                                                                   \
        uint64_t x_ = (uint64_t)(v);                                       \
        a = (a ^ x_) * 1099511628211ULL;                                   \
        b ^= x_ + 0x9E3779B97F4A7C15ULL + (b << 6) + (b >> 2);             \
        b *= 0xBF58476D1CE4E5B9ULL;                                        \
    } while (0)
    for (Py_ssize_t i = 0; i < d->n; i++) MIX(d->unplaced[i] ? d->min_off[i] + 1 : 0);
    for (Py_ssize_t s = 0; s < d->nsec; s++) MIX(d->floor[s]);
    for (Py_ssize_t i = 0; i < d->n; i++) MIX(d->min_off[i]);
#undef MIX
    *h1 = a | 1;  /* 0 marks an empty slot */
    *h2 = b;
}

static int failed_has(const Dive *d, uint64_t h1, uint64_t h2) {
    if (!d->failed_cap) return 0;
    Py_ssize_t m = d->failed_cap - 1, k = (Py_ssize_t)(h1 & (uint64_t)m);
    while (d->failed[2 * k]) {
        if (d->failed[2 * k] == h1 && d->failed[2 * k + 1] == h2) return 1;
        k = (k + 1) & m;
    }
    return 0;
}

static int failed_add(Dive *d, uint64_t h1, uint64_t h2) {
    if (2 * (d->failed_len + 1) > d->failed_cap) {
        Py_ssize_t cap = d->failed_cap ? 2 * d->failed_cap : 1024;
        uint64_t *t = calloc((size_t)cap * 2, sizeof(uint64_t));
        if (!t) return -1;
        for (Py_ssize_t k = 0; k < d->failed_cap; k++) {
            if (!d->failed[2 * k]) continue;
            Py_ssize_t j = (Py_ssize_t)(d->failed[2 * k] & (uint64_t)(cap - 1));
            while (t[2 * j]) j = (j + 1) & (cap - 1);
            t[2 * j] = d->failed[2 * k];
            t[2 * j + 1] = d->failed[2 * k + 1];
        }
        free(d->failed);
        d->failed = t;
        d->failed_cap = cap;
    }
    Py_ssize_t m = d->failed_cap - 1, k = (Py_ssize_t)(h1 & (uint64_t)m);
    while (d->failed[2 * k]) k = (k + 1) & m;
    d->failed[2 * k] = h1;
    d->failed[2 * k + 1] = h2;
    d->failed_len++;
    return 0;
}

/* ---------- the search ---------- */

typedef struct {
    i64 item, off;
    int k0, k1, k2;
    i64 k3, order;
} Option;  /* a placement to try, with its sort keys (search._Dive.branch_point's value order) */

static int option_cmp(const void *pa, const void *pb) {
    const Option *a = pa, *b = pb;
    if (a->k0 != b->k0) return a->k0 - b->k0;
    if (a->k1 != b->k1) return a->k1 - b->k1;
    if (a->k2 != b->k2) return a->k2 - b->k2;
    if (a->k3 != b->k3) return a->k3 < b->k3 ? -1 : 1;
    return a->order < b->order ? -1 : (a->order > b->order);  /* stable */
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Asked every 128 nodes, at most every ASK_EVERY seconds: taking the GIL back waits for the
   thread holding it (up to Python's 5 ms switch interval: an import in CP-SAT's thread
   beside the dive made 300 asks cost a second). */
#define ASK_EVERY 0.02

static int expired(Dive *d) {
    double t = now();
    if (t < d->next_ask) return 0;
    d->next_ask = t + ASK_EVERY;
    PyEval_RestoreThread(d->thread);
    int out = 0;
    if (PyErr_CheckSignals() < 0) {
        d->error = 1;
        out = 1;
    } else {
        PyObject *r = PyObject_CallNoArgs(d->expired);
        if (!r) {
            d->error = 1;
            out = 1;
        } else {
            out = PyObject_IsTrue(r);
            Py_DECREF(r);
            if (out < 0) {
                d->error = 1;
                out = 1;
            }
        }
    }
    d->thread = PyEval_SaveThread();
    return out;
}

/* The branching choice (search._Dive.branch_point): returns 0 when a section bound shows
   that the candidates cannot fit or a section has no way, else 1 with the section, the
   waste level, whether wasting is allowed and the options (sorted) in `opts`/`nopt`. */
static int branch_point(Dive *d, const i64 *cand, Py_ssize_t nc, i64 *out_s, i64 *out_level,
                        int *out_waste, Option *opts, Py_ssize_t *nopt) {
    i64 *eff = d->eff;
    char *at_f = d->at_f;
    i64 s_lo = BIG, s_hi = -1, smallest = BIG;
    for (Py_ssize_t k = 0; k < nc; k++) {
        i64 i = cand[k];
        if (d->lo[i] < s_lo) s_lo = d->lo[i];
        if (d->hi[i] > s_hi) s_hi = d->hi[i];
        if (d->size[i] < smallest) smallest = d->size[i];
    }
    /* the lowest spot of the unplaced items live in each section: from the candidates alone
       (the other unplaced items are in parts that share no time with them), each over its
       sections, which costs less than every section's items as the dive goes deeper */
    for (i64 s = s_lo; s < s_hi; s++) eff[s] = BIG;
    for (Py_ssize_t k = 0; k < nc; k++) {
        i64 j = cand[k], m = d->min_off[j];
        for (i64 s = d->lo[j]; s < d->hi[j]; s++)
            if (m < eff[s]) eff[s] = m;
    }
    i64 f = BIG;
    for (i64 s = s_lo; s < s_hi; s++) {
        if (d->floor[s] > eff[s]) eff[s] = d->floor[s];
        if (d->total[s] > 0) {
            if (eff[s] + d->total[s] > d->cap) return 0;
            if (eff[s] < f) f = eff[s];
        }
    }
    if (f == BIG) return 0;
    for (i64 s = s_lo; s < s_hi; s++) at_f[s] = d->total[s] > 0 && eff[s] == f;
    /* per section at f: the items that fit there exactly, or the level its lowest free byte
       rises to if left empty; the chosen section is the first (in time, of the first 64)
       with at most one way when sweeping, else the first with the fewest */
    i64 s = -1, level = 0, ways = BIG, seen = 0;
    int waste = 0;
    for (i64 t = s_lo; t < s_hi && !(d->sweep && seen >= 64); t++) {
        if (!at_f[t]) continue;
        i64 n_fit = 0, lvl = d->cap;
        for (i64 k = d->cv_start[t]; k < d->cv_start[t + 1]; k++) {
            i64 j = d->cv_idx[k];
            if (!d->unplaced[j]) continue;
            i64 p = d->min_off[j] > f ? d->min_off[j] : f;
            if (d->raised) {
                for (i64 u = d->lo[j]; u < d->hi[j]; u++)
                    if (d->floor[u] > p) p = d->floor[u];
            }
            p = round_up(p, d->align[j]);
            d->pos[j] = p;
            if (p - f < d->align[j])
                n_fit++;
            else if (p < lvl)
                lvl = p;
        }
        if (n_fit > 0 && f + smallest < lvl) lvl = f + smallest;
        int w = lvl + d->total[t] <= d->cap;
        seen++;
        if (n_fit + w < ways) {
            s = t;
            level = lvl;
            waste = w;
            ways = n_fit + w;
        }
        if (d->sweep && ways <= 1) break;
    }
    if (s < 0 || ways == 0) return 0;
    Py_ssize_t m = 0;
    for (i64 k = d->cv_start[s]; k < d->cv_start[s + 1]; k++) {
        i64 j = d->cv_idx[k];
        if (d->unplaced[j] && d->pos[j] - f < d->align[j]) {
            opts[m].item = j;
            opts[m].off = d->pos[j];
            opts[m].order = d->rank[j];  /* ties: rank order, as the numpy dive lists them */
            m++;
        }
    }
    i64 run_lo = s, run_hi = s + 1;
    while (run_lo > s_lo && at_f[run_lo - 1]) run_lo--;
    while (run_hi < s_hi && at_f[run_hi]) run_hi++;
    for (Py_ssize_t k = 0; k < m; k++) {
        i64 j = opts[k].item;
        opts[k].k0 = !(d->lo[j] == run_lo && d->hi[j] == run_hi);
        opts[k].k1 = d->lo[j] != run_lo;
        opts[k].k2 = d->hi[j] != run_hi;
        opts[k].k3 = d->longest ? -(d->hi[j] - d->lo[j]) : 0;
    }
    qsort(opts, (size_t)m, sizeof(Option), option_cmp);
    *out_s = s;
    *out_level = level;
    *out_waste = waste;
    *nopt = m;
    return 1;
}

static int dfs(Dive *d, const i64 *members, Py_ssize_t nm, i64 min_offset, i64 min_rank);

/* The unplaced `members` into `cand`, their count. Members come sorted by start (the first
   by py_dive, parts as runs of that order), and so do the candidates: the numpy dive sorts
   them at every split, which orders the parts alike (items of one start share a part). */
static Py_ssize_t candidates(const Dive *d, const i64 *members, Py_ssize_t nm, i64 *cand) {
    Py_ssize_t nc = 0;
    for (Py_ssize_t k = 0; k < nm; k++)
        if (d->unplaced[members[k]]) cand[nc++] = members[k];
    return nc;
}

/* Candidates that fall into parts sharing no time are solved part by part (a failure in one
   is final): 1 all placed, 0 one failed, -1/-2 as dfs; 2 when they form one part. */
static int by_parts(Dive *d, const i64 *by, Py_ssize_t nc) {
    i64 end = d->hi[by[0]];
    Py_ssize_t k = 1;
    for (; k < nc && d->lo[by[k]] < end; k++)
        if (d->hi[by[k]] > end) end = d->hi[by[k]];
    if (k == nc) return 2;
    Py_ssize_t mark = d->log_len, start = 0;
    end = d->hi[by[0]];
    for (k = 1; k <= nc; k++) {
        if (k == nc || d->lo[by[k]] >= end) {
            int r = dfs(d, by + start, k - start, 0, -1);
            if (r < 0) return r;
            if (!r) {
                rollback(d, mark);
                return 0;
            }
            start = k;
        }
        if (k < nc && d->hi[by[k]] > end) end = d->hi[by[k]];
    }
    return 1;
}

/* search._Dive.dfs */
static int dfs_skyline(Dive *d, const i64 *members, Py_ssize_t nm, i64 *cand, Option *opts) {
    Py_ssize_t nc = candidates(d, members, nm, cand);
    if (nc == 0) return 1;
    int split = by_parts(d, cand, nc);
    if (split != 2) return split;
    uint64_t h1, h2;
    state_hash(d, &h1, &h2);
    if (failed_has(d, h1, h2)) return 0;
    i64 s, level;
    int waste;
    Py_ssize_t nopt;
    if (branch_point(d, cand, nc, &s, &level, &waste, opts, &nopt)) {
        i64 *shapes = cand + nc;  /* an item of each shape tried: equal items are interchangeable */
        Py_ssize_t nshape = 0;
        for (Py_ssize_t k = 0; k < nopt; k++) {
            i64 i = opts[k].item, off = opts[k].off;
            int dup = 0;
            for (Py_ssize_t q = 0; q < nshape && !dup; q++) {
                i64 o = shapes[q];
                dup = d->lo[o] == d->lo[i] && d->hi[o] == d->hi[i] && d->size[o] == d->size[i] &&
                      d->align[o] == d->align[i];
            }
            if (dup) continue;
            shapes[nshape++] = i;
            if (off + d->size[i] > d->cap) continue;
            Py_ssize_t mark = d->log_len;
            if (place(d, i, off)) return -1;
            int r = dfs(d, cand, nc, 0, -1);
            if (r) return r;
            rollback(d, mark);
        }
        if (waste) {
            Py_ssize_t mark = d->log_len;
            if (raise_floor(d, s, level)) return -1;
            int r = dfs(d, cand, nc, 0, -1);
            if (r) return r;
            rollback(d, mark);
        }
    }
    if (failed_add(d, h1, h2)) return -1;
    return 0;
}

static int by_offset_then_rank(const void *pa, const void *pb) {
    const Option *a = pa, *b = pb;
    if (a->off != b->off) return a->off < b->off ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* search._Dive.dfs_buffers */
static int dfs_buffers(Dive *d, const i64 *members, Py_ssize_t nm, i64 min_offset, i64 min_rank,
                       i64 *cand, Option *opts) {
    Py_ssize_t nc = candidates(d, members, nm, cand);
    if (nc == 0) return 1;
    int split = by_parts(d, cand, nc);
    if (split != 2) return split;
    i64 min_height = BIG, s_lo = BIG, s_hi = -1;
    for (Py_ssize_t k = 0; k < nc; k++) {
        i64 i = cand[k];
        if (d->min_off[i] + d->size[i] < min_height) min_height = d->min_off[i] + d->size[i];
        if (d->lo[i] < s_lo) s_lo = d->lo[i];
        if (d->hi[i] > s_hi) s_hi = d->hi[i];
    }
    /* the items that may go next: in canonical order and below every item's lowest top (else
       that one would go first); few, so they alone are sorted */
    Py_ssize_t m = 0;
    for (Py_ssize_t k = 0; k < nc; k++) {
        i64 i = cand[k], off = d->min_off[i];
        if (off < min_offset || (off == min_offset && d->rank[i] < min_rank) || off >= min_height ||
            off + d->size[i] > d->cap)
            continue;
        opts[m].item = i;
        opts[m].off = off;
        opts[m].order = d->rank[i];
        m++;
    }
    qsort(opts, (size_t)m, sizeof(Option), by_offset_then_rank);
    for (Py_ssize_t k = 0; k < m; k++) {
        i64 i = opts[k].item, off = opts[k].off;
        Py_ssize_t mark = d->log_len;
        if (place(d, i, off)) return -1;
        /* every section's unplaced bytes fit above its skyline, this offset and the lowest
           spot of its unplaced items: the last checked only until one item is low enough */
        int ok = 1;
        for (i64 s = s_lo; s < s_hi && ok; s++) {
            if (d->total[s] == 0) continue;
            i64 room = d->cap - d->total[s];
            ok = d->floor[s] <= room && off <= room;
            if (!ok) break;
            ok = 0;
            for (i64 q = d->cv_start[s]; q < d->cv_start[s + 1] && !ok; q++) {
                i64 j = d->cv_idx[q];
                ok = d->unplaced[j] && d->min_off[j] <= room;
            }
        }
        if (ok) {
            int r = dfs(d, cand, nc, off, d->rank[i]);
            if (r) return r;
        }
        rollback(d, mark);
    }
    return 0;
}

/* 1 found, 0 not, -1 out of memory, -2 stopped (a limit, the caller's expired(), an error, or
   a dive deeper than MAX_DEPTH: the C stack's share, as numpy's dive stops at Python's
   recursion limit) */
static int dfs(Dive *d, const i64 *members, Py_ssize_t nm, i64 min_offset, i64 min_rank) {
    d->nodes++;
    if (d->nodes > d->node_limit || d->depth >= MAX_DEPTH ||
        ((d->nodes & 127) == 0 && expired(d))) {
        return -2;
    }
    i64 *cand = malloc((size_t)(2 * nm + 1) * sizeof(i64));  /* candidates, then shapes */
    Option *opts = malloc((size_t)(nm + 1) * sizeof(Option));  /* options are candidates */
    int r = -1;
    d->depth++;
    if (cand && opts)
        r = d->buffers ? dfs_buffers(d, members, nm, min_offset, min_rank, cand, opts)
                    : dfs_skyline(d, members, nm, cand, opts);
    d->depth--;
    free(cand);
    free(opts);
    return r;
}

static const i64 *lo_of;  /* for by_start: set under the GIL, one dive at a time */

static int by_start(const void *pa, const void *pb) {
    i64 a = *(const i64 *)pa, b = *(const i64 *)pb;
    if (lo_of[a] != lo_of[b]) return lo_of[a] < lo_of[b] ? -1 : 1;
    return a < b ? -1 : a > b;
}

static int get_buffer(PyObject *o, Py_buffer *b, Py_ssize_t want, const char *name) {
    if (PyObject_GetBuffer(o, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) return -1;
    if (b->itemsize != 8 || (b->format && strcmp(b->format, "q") && strcmp(b->format, "l"))) {
        PyErr_Format(PyExc_TypeError, "%s: int64 array wanted", name);
        PyBuffer_Release(b);
        return -1;
    }
    if (want >= 0 && b->len / 8 != want) {
        PyErr_Format(PyExc_ValueError, "%s: %zd items wanted, got %zd", name, want, b->len / 8);
        PyBuffer_Release(b);
        return -1;
    }
    return 0;
}

/* dive(size, lo, hi, align, total, ov_start, ov_idx, cv_start, cv_idx, fixed_item, fixed_off,
        cap, node_limit, longest, sweep, expired, offsets_out, rank, buffers) -> (status, nodes)
   (`buffers`: buffer branching, `longest` and `sweep` unused)
   status 0: found (offsets_out holds them), 1: exhausted without a limit, 2: cut short. */
static PyObject *py_dive(PyObject *self, PyObject *args) {
    PyObject *objs[11], *expired_fn, *out_obj, *rank_obj;
    long long cap, node_limit;
    int longest, sweep, buffers;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOLLppOOOp", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                          &objs[5], &objs[6], &objs[7], &objs[8], &objs[9], &objs[10], &cap, &node_limit,
                          &longest, &sweep, &expired_fn, &out_obj, &rank_obj, &buffers))
        return NULL;
    static const char *names[11] = {"size", "lo", "hi", "align", "total", "ov_start", "ov_idx",
                                    "cv_start", "cv_idx", "fixed_item", "fixed_off"};
    Py_buffer bufs[13];
    int got = 0;
    PyObject *result = NULL;
    Dive d;
    memset(&d, 0, sizeof d);
    for (; got < 11; got++)
        if (get_buffer(objs[got], &bufs[got], -1, names[got]) < 0) goto done;
    Py_ssize_t n = bufs[0].len / 8, nsec = bufs[4].len / 8, nfixed = bufs[9].len / 8;
    if (get_buffer(out_obj, &bufs[11], n, "offsets") < 0) goto done;
    got = 12;
    if (get_buffer(rank_obj, &bufs[12], n, "rank") < 0) goto done;
    got = 13;
    d.rank = bufs[12].buf;
    d.buffers = buffers;
    d.n = n;
    d.nsec = nsec;
    d.size = bufs[0].buf;
    d.lo = bufs[1].buf;
    d.hi = bufs[2].buf;
    d.align = bufs[3].buf;
    d.ov_start = bufs[5].buf;
    d.ov_idx = bufs[6].buf;
    d.cv_start = bufs[7].buf;
    d.cv_idx = bufs[8].buf;
    d.cap = cap;
    d.node_limit = node_limit;
    d.longest = longest;
    d.sweep = sweep;
    d.expired = expired_fn;
    d.offset = bufs[11].buf;
    d.total = malloc((size_t)(nsec + 1) * sizeof(i64));
    d.floor = calloc((size_t)nsec + 1, sizeof(i64));
    d.min_off = calloc((size_t)n + 1, sizeof(i64));
    d.unplaced = malloc((size_t)n + 1);
    d.pos = calloc((size_t)n + 1, sizeof(i64));
    d.eff = malloc((size_t)(nsec + 1) * sizeof(i64));
    d.at_f = malloc((size_t)nsec + 1);
    i64 *members = malloc((size_t)(n + 1) * sizeof(i64));
    if (!d.total || !d.floor || !d.min_off || !d.unplaced || !d.pos || !d.eff || !d.at_f || !members) {
        free(members);
        PyErr_NoMemory();
        goto done;
    }
    memcpy(d.total, bufs[4].buf, (size_t)nsec * sizeof(i64));
    memset(d.unplaced, 1, (size_t)n);
    for (Py_ssize_t i = 0; i < n; i++) d.offset[i] = -1;
    int status = EXHAUSTED, r = 0;
    const i64 *fixed_item = bufs[9].buf, *fixed_off = bufs[10].buf;
    for (Py_ssize_t k = 0; k < nfixed && r == 0; k++) {  /* reserved memory first */
        if (fixed_off[k] < d.min_off[fixed_item[k]]) r = 1;
        else if (place(&d, fixed_item[k], fixed_off[k])) r = -1;
    }
    if (r == 0) {
        Py_ssize_t nm = 0;
        for (Py_ssize_t i = 0; i < n; i++)
            if (d.unplaced[i]) members[nm++] = i;
        lo_of = d.lo;
        qsort(members, (size_t)nm, sizeof(i64), by_start);
        d.thread = PyEval_SaveThread();
        r = dfs(&d, members, nm, 0, -1);
        PyEval_RestoreThread(d.thread);
        status = r == 1 ? FOUND : r == 0 ? EXHAUSTED : STOPPED;
    } else if (r == 1) {
        status = EXHAUSTED;
        r = 0;
    }
    free(members);
    if (d.error) goto done;  /* expired() raised, or a signal's handler did (Ctrl-C) */
    if (r == -1) {
        PyErr_NoMemory();
        goto done;
    }
    result = Py_BuildValue("iL", status, (long long)d.nodes);
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&bufs[k]);
    free(d.total);
    free(d.floor);
    free(d.min_off);
    free(d.unplaced);
    free(d.pos);
    free(d.eff);
    free(d.at_f);
    free(d.log);
    free(d.saved_min);
    free(d.saved_floor);
    free(d.failed);
    return result;
}

static PyMethodDef methods[] = {
    {"dive", py_dive, METH_VARARGS, "One dive of the arena's exact search (see search._Dive)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_dive", NULL, -1, methods};

PyMODINIT_FUNC PyInit__dive(void) { return PyModule_Create(&module); }
