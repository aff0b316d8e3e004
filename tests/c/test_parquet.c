/* test_parquet.c - the export's Parquet encodings (parquet_encode.c), each
 * against a decoder written here from the format's description: random and
 * extreme int64 steps (equal, sorted, random, wrapping deltas, every length
 * around the block and miniblock edges) round-trip through
 * DELTA_BINARY_PACKED within slg_pq_delta_bound bytes, with their min and
 * max; a too-small buffer or no values are refused; BYTE_STREAM_SPLIT puts
 * byte k of value i at k*n+i, and the min and max leave NaN out (none when
 * every value is NaN).  Both read their values from segments: every input is
 * also cut at random places (empty segments among them), with the same bytes
 * out as in one piece. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "summarylog_api.h"
#include "test_main.h"

static int get_uvarint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (*p >= end) return 0;
        uint8_t b = *(*p)++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 1;
        }
    }
    return 0;
}

static int64_t unzigzag(uint64_t u) { return (int64_t)((u >> 1) ^ ((uint64_t)0 - (u & 1))); }

/* bit i of the little-endian bit stream at p */
static uint64_t bits_at(const uint8_t *p, uint64_t first, unsigned w) {
    uint64_t v = 0;
    for (unsigned b = 0; b < w; b++) {
        uint64_t at = first + b;
        v |= (uint64_t)((p[at >> 3] >> (at & 7)) & 1) << b;
    }
    return v;
}

/* Decode a DELTA_BINARY_PACKED stream of len bytes; the values, or -1. */
static int64_t decode_delta(const uint8_t *p, uint64_t len, int64_t *out, uint64_t cap) {
    const uint8_t *end = p + len;
    uint64_t block, minis, total, zz;
    if (!get_uvarint(&p, end, &block) || !get_uvarint(&p, end, &minis) ||
        !get_uvarint(&p, end, &total) || !get_uvarint(&p, end, &zz))
        return -1;
    if (block != 128 || minis != 4 || total > cap || total == 0) return -1;
    uint64_t per = block / minis, n = 0;
    out[n++] = unzigzag(zz);
    while (n < total) {
        uint64_t mz;
        if (!get_uvarint(&p, end, &mz) || end - p < (ptrdiff_t)minis) return -1;
        uint64_t lo = (uint64_t)unzigzag(mz);
        const uint8_t *widths = p;
        p += minis;
        for (uint64_t j = 0; j < minis && n < total; j++) {
            unsigned w = widths[j];
            if (w > 64 || (uint64_t)(end - p) < per * w / 8) return -1;
            for (uint64_t k = 0; k < per && n < total; k++, n++)
                out[n] = (int64_t)((uint64_t)out[n - 1] + lo + bits_at(p, k * w, w));
            p += per * w / 8;
        }
    }
    return p == end ? (int64_t)n : -1;
}

enum { MAX_CUTS = 6 };

/* n values cut into segments at up to MAX_CUTS random places (repeats give
 * empty segments); the number of segments. */
static uint64_t cut(const void *v, size_t width, uint64_t n, t_rng *r, const void **seg,
                    uint64_t *len) {
    uint64_t at[MAX_CUTS + 2], cuts = rng_below(r, MAX_CUTS + 1);
    at[0] = 0;
    for (uint64_t k = 1; k <= cuts; k++) at[k] = rng_below(r, n + 1);
    at[cuts + 1] = n;
    for (uint64_t k = 2; k <= cuts; k++) /* sorted: insertion */
        for (uint64_t j = k; j > 1 && at[j] < at[j - 1]; j--) {
            uint64_t t = at[j];
            at[j] = at[j - 1], at[j - 1] = t;
        }
    for (uint64_t k = 0; k <= cuts; k++) {
        seg[k] = (const char *)v + at[k] * width;
        len[k] = at[k + 1] - at[k];
    }
    return cuts + 1;
}

static int64_t delta(const int64_t *v, uint64_t n, uint8_t *out, uint64_t cap, int64_t *mm) {
    const int64_t *seg[1] = {v};
    uint64_t len[1] = {n};
    return slg_pq_delta_int64(seg, len, 1, out, cap, mm);
}

static void roundtrip(const int64_t *v, uint64_t n, t_rng *r) {
    uint64_t cap = slg_pq_delta_bound(n);
    uint8_t *buf = malloc(cap), *buf2 = malloc(cap);
    int64_t *back = malloc(n * sizeof *back);
    int64_t mm[2] = {0, 0}, mm2[2] = {0, 0}, lo = v[0], hi = v[0];
    for (uint64_t i = 1; i < n; i++) lo = v[i] < lo ? v[i] : lo, hi = v[i] > hi ? v[i] : hi;
    int64_t len = delta(v, n, buf, cap, mm);
    CHECK_EQ(mm[0], lo);
    CHECK_EQ(mm[1], hi);
    if (CHECK(len > 0 && (uint64_t)len <= cap)) {
        CHECK_EQ(decode_delta(buf, (uint64_t)len, back, n), n);
        CHECK(memcmp(back, v, n * sizeof *v) == 0);
    }
    const void *seg[MAX_CUTS + 1];
    uint64_t lens[MAX_CUTS + 1];
    uint64_t nseg = cut(v, sizeof *v, n, r, seg, lens);
    int64_t len2 = slg_pq_delta_int64((const int64_t *const *)seg, lens, nseg, buf2, cap, mm2);
    if (CHECK_EQ(len2, len) && len > 0) CHECK(memcmp(buf, buf2, (size_t)len) == 0);
    CHECK(mm2[0] == lo && mm2[1] == hi);
    free(buf);
    free(buf2);
    free(back);
}

static void test_delta_shapes(void) {
    enum { N = 1200 };
    int64_t *v = malloc(N * sizeof *v);
    t_rng r;
    rng_seed(&r, 7);
    for (uint64_t n = 1; n <= N; n += (n < 300 ? 1 : 97)) {
        for (int shape = 0; shape < 6; shape++) {
            for (uint64_t i = 0; i < n; i++) {
                uint64_t x = rng_next(&r);
                switch (shape) {
                case 0: v[i] = 5; break;                                   /* all equal */
                case 1: v[i] = (int64_t)i; break;                          /* steps */
                case 2: v[i] = (int64_t)(i * 1000 + x % 7); break;         /* jittered */
                case 3: v[i] = (int64_t)x; break;                          /* any */
                case 4: v[i] = (x & 1) ? INT64_MAX : INT64_MIN; break;     /* wraps */
                default: v[i] = -(int64_t)i * 3 + (int64_t)(x % 2); break; /* descending */
                }
            }
            roundtrip(v, n, &r);
        }
    }
    free(v);
}

static void test_delta_fuzz(void) {
    const char *env = getenv("SLG_FUZZ_ITERS");
    uint64_t iters = (env ? strtoull(env, NULL, 10) : 100000) / 20;
    t_rng r;
    rng_seed(&r, 11);
    int64_t v[700];
    for (uint64_t it = 0; it < iters; it++) {
        uint64_t n = 1 + rng_below(&r, 700);
        unsigned bits = (unsigned)rng_below(&r, 65); /* deltas of every width */
        int64_t x = (int64_t)rng_next(&r);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t d = bits == 64 ? rng_next(&r) : rng_next(&r) & ((UINT64_C(1) << bits) - 1);
            x = (int64_t)((uint64_t)x + d);
            v[i] = x;
        }
        roundtrip(v, n, &r);
    }
}

static void test_delta_refusals(void) {
    int64_t v[3] = {1, 2, 3}, mm[2];
    uint8_t buf[2048];
    CHECK_EQ(delta(v, 0, buf, sizeof buf, mm), (uint64_t)-1);
    CHECK_EQ(delta(v, 3, buf, slg_pq_delta_bound(3) - 1, mm), (uint64_t)-1);
    CHECK(delta(v, 3, buf, slg_pq_delta_bound(3), mm) > 0);
    const int64_t *none[2] = {v, v};
    uint64_t zero[2] = {0, 0};
    CHECK_EQ(slg_pq_delta_int64(none, zero, 2, buf, sizeof buf, mm), (uint64_t)-1);
}

static void test_byte_split(void) {
    t_rng r;
    rng_seed(&r, 3);
    for (uint64_t n = 0; n < 70; n++) {
        for (int nans = 0; nans < 3; nans++) { /* none, some, all NaN */
            double x[70];
            uint8_t dst[8 * 70];
            double lo = INFINITY, hi = -INFINITY;
            for (uint64_t i = 0; i < n; i++) {
                x[i] = (double)(int64_t)rng_next(&r) / 1e15;
                if (nans == 2 || (nans == 1 && rng_below(&r, 3) == 0)) x[i] = NAN;
                if (!isnan(x[i])) lo = x[i] < lo ? x[i] : lo, hi = x[i] > hi ? x[i] : hi;
            }
            const void *seg[MAX_CUTS + 1];
            uint64_t lens[MAX_CUTS + 1];
            for (int pieces = 0; pieces < 2; pieces++) { /* one segment, then cut */
                uint64_t nseg = pieces ? cut(x, sizeof *x, n, &r, seg, lens) : 1;
                if (!pieces) seg[0] = x, lens[0] = n;
                double mm[2];
                memset(dst, 0xa5, sizeof dst);
                int any = slg_pq_split_f64((const double *const *)seg, lens, nseg, dst, mm);
                const uint8_t *src = (const uint8_t *)x;
                int ok = 1;
                for (uint64_t i = 0; i < n; i++)
                    for (unsigned k = 0; k < 8; k++) ok &= dst[k * n + i] == src[i * 8 + k];
                CHECK(ok);
                CHECK_EQ(any, lo <= hi);
                if (any) CHECK(mm[0] == lo && mm[1] == hi);
            }
        }
    }
}

int main(void) {
    RUN(test_delta_shapes);
    RUN(test_delta_fuzz);
    RUN(test_delta_refusals);
    RUN(test_byte_split);
    return TEST_SUMMARY();
}
