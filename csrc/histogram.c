/* histogram.c - statistics and equal-width bucket counts of float32 or
 * float64 values, without the GIL, for both dialects' histogram encoders.
 * Counts match np.histogram(x, bins=edges).  Each routine is one loop
 * instantiated per dtype (the STATS and COUNTS macros), so it vectorises. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "summarylog_api.h"

/* A branch-free pass first; the non-finite values are counted in a second
 * pass only when there are any.  LANES partial sums and extremes (combined
 * in a fixed order: reproducible) break the chain of dependent adds. */
#define LANES 8

/* The loops below also in an AVX2 build, chosen at load time where the CPU
 * has it (the same operations in the same order: results are identical). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) && \
    !defined(SLG_NO_MULTIVERSION)
#define SLG_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SLG_CLONES
#endif
/* Eight lanes as two vectors of four doubles (GCC/clang vector extensions:
 * SSE2 pairs, or one AVX register each in the AVX2 clone).  Lane j takes
 * the values at i = j mod 8, as a scalar loop over j would. */
typedef double v4d __attribute__((vector_size(32)));
typedef long long v4l __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));

/* (macros, not functions: a 32-byte vector argument has no fixed ABI) */
#define LOAD4_F32(p, out)                                                              \
    do {                                                                               \
        v4f t_;                                                                        \
        memcpy(&t_, (p), sizeof t_);                                                   \
        (out) = __builtin_convertvector(t_, v4d);                                      \
    } while (0)
#define LOAD4_F64(p, out) memcpy(&(out), (p), sizeof(v4d))
#define VSEL(m, a, b) ((v4d)(((v4l)(a) & (m)) | ((v4l)(b) & ~(m)))) /* m ? a : b */

#define STATS(T, LOAD4, NAME)                                                          \
    SLG_CLONES static void NAME(const T *v, uint64_t n, slg_value_stats_t *out) {      \
        double ls[LANES], lq[LANES], llo[LANES], lhi[LANES];                           \
        v4d s0 = {0, 0, 0, 0}, s1 = s0, q0 = s0, q1 = s0;                              \
        v4d lo0 = {INFINITY, INFINITY, INFINITY, INFINITY}, lo1 = lo0;                 \
        v4d hi0 = -lo0, hi1 = -lo0;                                                    \
        uint64_t i = 0;                                                                \
        for (; i + LANES <= n; i += LANES) {                                           \
            v4d a, b;                                                                  \
            LOAD4(v + i, a);                                                           \
            LOAD4(v + i + 4, b);                                                       \
            lo0 = VSEL(a < lo0, a, lo0);                                               \
            lo1 = VSEL(b < lo1, b, lo1);                                               \
            hi0 = VSEL(a > hi0, a, hi0);                                               \
            hi1 = VSEL(b > hi1, b, hi1);                                               \
            s0 += a;                                                                   \
            s1 += b;                                                                   \
            q0 += a * a;                                                               \
            q1 += b * b;                                                               \
        }                                                                              \
        for (int j = 0; j < 4; j++) {                                                  \
            ls[j] = s0[j], ls[j + 4] = s1[j], lq[j] = q0[j], lq[j + 4] = q1[j];        \
            llo[j] = lo0[j], llo[j + 4] = lo1[j], lhi[j] = hi0[j], lhi[j + 4] = hi1[j]; \
        }                                                                              \
        for (int j = 0; i < n; i++, j++) {                                             \
            double x = (double)v[i];                                                   \
            llo[j] = x < llo[j] ? x : llo[j];                                          \
            lhi[j] = x > lhi[j] ? x : lhi[j];                                          \
            ls[j] += x;                                                                \
            lq[j] += x * x;                                                            \
        }                                                                              \
        double sum = 0, sum_sq = 0, lo = INFINITY, hi = -INFINITY;                     \
        for (int j = 0; j < LANES; j++) {                                              \
            sum += ls[j];                                                              \
            sum_sq += lq[j];                                                           \
            lo = llo[j] < lo ? llo[j] : lo;                                            \
            hi = lhi[j] > hi ? lhi[j] : hi;                                            \
        }                                                                              \
        uint64_t finite = n;                                                           \
        if (!(isfinite(sum) && isfinite(sum_sq) && isfinite(lo) && isfinite(hi))) {    \
            /* something is not finite (or the sums overflowed): the careful pass */   \
            sum = sum_sq = 0;                                                          \
            lo = INFINITY;                                                             \
            hi = -INFINITY;                                                            \
            finite = 0;                                                                \
            for (uint64_t i = 0; i < n; i++) {                                         \
                double x = (double)v[i];                                               \
                if (isnan(x)) {                                                        \
                    out->nan_count++;                                                  \
                } else if (isinf(x)) {                                                 \
                    if (x > 0) out->pos_inf_count++;                                   \
                    else out->neg_inf_count++;                                         \
                } else {                                                               \
                    finite++;                                                          \
                    if (x < lo) lo = x;                                                \
                    if (x > hi) hi = x;                                                \
                    sum += x;                                                          \
                    sum_sq += x * x;                                                   \
                }                                                                      \
            }                                                                          \
        }                                                                              \
        out->finite = finite;                                                          \
        out->min = finite ? lo : 0;                                                    \
        out->max = finite ? hi : 0;                                                    \
        out->sum = sum;                                                                \
        out->sum_squares = sum_sq;                                                     \
    }

STATS(float, LOAD4_F32, stats_f32)
STATS(double, LOAD4_F64, stats_f64)

void slg_value_stats(const void *values, int is_f64, uint64_t n, slg_value_stats_t *out) {
    memset(out, 0, sizeof *out);
    if (is_f64) stats_f64((const double *)values, n, out);
    else stats_f32((const float *)values, n, out);
}

/* One value the careful way: [edges[k], edges[k+1]) from an estimate k. */
__attribute__((cold, noinline)) /* the rare path: out of the counting loop */
static void count_one(double y, const double *edges, uint64_t bins, double norm,
                      int64_t *counts) {
    const double lo = edges[0], hi = edges[bins];
    if (!(y >= lo && y <= hi)) return; /* outside, or NaN */
    const int64_t last = (int64_t)bins - 1;
    const double f = (y - lo) * norm; /* the start: NaN or inf when norm overflowed */
    int64_t k = f >= 0 && f < (double)bins ? (int64_t)f : (f >= 0 ? last : 0);
    while (k > 0 && y < edges[k]) k--;
    while (k < last && y >= edges[k + 1]) k++;
    counts[k]++;
}

/* Counts in blocks of BLOCK values.  A vectorised loop finds each value's
 * bucket floor(f), f = (y - lo) * bins / (hi - lo), or -1 when f is within
 * `eps` (the most the rounded edges can be off) of a whole number.  A scalar
 * pass then counts into SUB interleaved tables (so increments of one bucket
 * don't wait on each other) and settles the -1 values on the real edges:
 * exact whatever eps is, as no value is counted without the edges near it. */
#define BLOCK 256
#define SUB 4
#define COUNTS(T, NAME)                                                                \
    SLG_CLONES static void NAME(const T *v, uint64_t n, const double *edges,           \
                                uint64_t bins, double eps, int64_t *sub,               \
                                int64_t *counts) {                                     \
        const double lo = edges[0], hi = edges[bins];                                  \
        const double norm = (double)bins / (hi - lo);                                  \
        /* positions in the values' precision: T's rounding is in eps */               \
        const T tlo = (T)lo, tnorm = (T)norm, ttop = (T)bins, teps = (T)eps;           \
        int32_t est[BLOCK];                                                            \
        for (uint64_t b = 0; b < n; b += BLOCK) {                                      \
            const uint64_t m = n - b < BLOCK ? n - b : BLOCK;                          \
            const T *x = v + b;                                                        \
            for (uint64_t j = 0; j < m; j++) {                                         \
                T f = (x[j] - tlo) * tnorm;                                            \
                T c = f > (T)-1 ? f : (T)-1; /* NaN too */                             \
                c = c < ttop ? c : ttop;                                               \
                int32_t k = (int32_t)c;                                                \
                T d = c - (T)k;                                                        \
                int32_t near = (d < teps) | (d > (T)1 - teps) | (c >= ttop);           \
                est[j] = near ? -1 : k;                                                \
            }                                                                          \
            for (uint64_t j = 0; j < m; j++) {                                         \
                int32_t k = est[j];                                                    \
                if (__builtin_expect(k >= 0, 1)) {                                     \
                    sub[(j % SUB) * bins + (uint64_t)k]++;                             \
                } else {                                                               \
                    count_one((double)x[j], edges, bins, norm, counts);                \
                }                                                                      \
            }                                                                          \
        }                                                                              \
    }

COUNTS(float, counts_f32)
COUNTS(double, counts_f64)

int slg_histogram_counts(const void *values, int is_f64, uint64_t n, const double *edges,
                         uint64_t bins, int64_t *counts) {
    if (bins == 0 || bins > (1u << 30) || !(edges[bins] > edges[0])) return -22; /* -EINVAL */
    memset(counts, 0, bins * sizeof *counts);
    /* eps: twice the farthest any given edge lies from the exact grid
     * lo + k (hi - lo) / bins, in buckets (edges rounded to float32 or
     * float16 lie farther than float64 ones), plus the rounding of the
     * grid and of the positions themselves */
    const double lo = edges[0], hi = edges[bins];
    const double mag = fabs(lo) > fabs(hi) ? fabs(lo) : fabs(hi);
    const double width = (hi - lo) / (double)bins;
    double off = 0;
    for (uint64_t k = 1; k < bins; k++) {
        double o = fabs(edges[k] - (lo + (double)k * width));
        off = o > off ? o : off;
    }
    double eps = 2.0 * off / width + 16.0 * 0x1p-52 * (mag / width + (double)bins) + 1e-12;
    /* float32 values get their positions in float32: (y - lo) * norm is then
     * off by a few float32 roundings of numbers up to mag / width + bins */
    if (!is_f64) eps += 8.0 * 0x1p-24 * (mag / width + (double)bins);
    if (!(eps < 0.25)) { /* uneven or coarse edges: settle every value on them */
        const double norm = (double)bins / (hi - lo);
        for (uint64_t i = 0; i < n; i++)
            count_one(is_f64 ? ((const double *)values)[i] : (double)((const float *)values)[i],
                      edges, bins, norm, counts);
        return 0;
    }
    int64_t small[SUB * 128];
    int64_t *sub = bins <= 128 ? small : calloc(SUB * bins, sizeof *sub);
    if (!sub) return -12; /* -ENOMEM */
    if (sub == small) memset(small, 0, SUB * bins * sizeof *small);
    if (is_f64) counts_f64((const double *)values, n, edges, bins, eps, sub, counts);
    else counts_f32((const float *)values, n, edges, bins, eps, sub, counts);
    for (uint64_t k = 0; k < bins; k++)
        for (uint64_t j = 0; j < SUB; j++) counts[k] += sub[j * bins + k];
    if (sub != small) free(sub);
    return 0;
}
