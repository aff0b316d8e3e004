/* parquet_encode.c - the per-value work of the export's scalar table in
 * Parquet: steps as DELTA_BINARY_PACKED, doubles as BYTE_STREAM_SPLIT
 * (docs/datasets.md names the layout).  Pages, levels, compression and the
 * footer are built in Python around these: they cost per page, not per value. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "summarylog_api.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define BLOCK 128u                 /* values per block */
#define MINIS 4u                   /* miniblocks per block */
#define MINI (BLOCK / MINIS)       /* values per miniblock */

static uint8_t *put_uvarint(uint8_t *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static uint64_t zigzag(int64_t v) {
    return ((uint64_t)v << 1) ^ ((uint64_t)0 - ((uint64_t)v >> 63));
}

/* MINI values of w bits each, least significant bit first (the hybrid
 * encoding's bit packing); MINI * w is a whole number of bytes. */
static uint8_t *pack(uint8_t *p, const uint64_t *v, unsigned w) {
    if (w == 0) return p;
    unsigned __int128 acc = 0;
    unsigned bits = 0;
    for (unsigned i = 0; i < MINI; i++) {
        acc |= (unsigned __int128)v[i] << bits;
        bits += w;
        while (bits >= 8) {
            *p++ = (uint8_t)acc;
            acc >>= 8;
            bits -= 8;
        }
    }
    return p;
}

uint64_t slg_pq_delta_bound(uint64_t n) {
    /* header: four varints; a block: min delta, MINIS widths, MINIS full bodies */
    return 4 * 10 + (n / BLOCK + 1) * (10 + MINIS + BLOCK * 8);
}

/* Reads the values of segments one after another. */
typedef struct {
    const int64_t *const *seg;
    const uint64_t *len;
    uint64_t k, i; /* segment, index in it */
} cursor;

static int64_t next_value(cursor *c) {
    while (c->i == c->len[c->k]) c->k++, c->i = 0;
    return c->seg[c->k][c->i++];
}

int64_t slg_pq_delta_int64(const int64_t *const *seg, const uint64_t *len, uint64_t nseg,
                           uint8_t *out, uint64_t cap, int64_t *minmax) {
    uint64_t n = 0;
    for (uint64_t k = 0; k < nseg; k++) n += len[k];
    if (n == 0 || cap < slg_pq_delta_bound(n)) return -1;
    cursor c = {seg, len, 0, 0};
    int64_t prev = next_value(&c), vmin = prev, vmax = prev;
    uint8_t *p = out;
    p = put_uvarint(p, BLOCK);
    p = put_uvarint(p, MINIS);
    p = put_uvarint(p, n);
    p = put_uvarint(p, zigzag(prev));
    uint64_t d[BLOCK];
    for (uint64_t i = 1; i < n; i += BLOCK) {
        uint64_t m = n - i < BLOCK ? n - i : BLOCK;
        /* deltas wrap as two's complement, as readers add them back */
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (uint64_t k = 0; k < m; k++) {
            int64_t x = next_value(&c);
            vmin = x < vmin ? x : vmin;
            vmax = x > vmax ? x : vmax;
            d[k] = (uint64_t)x - (uint64_t)prev;
            prev = x;
            lo = (int64_t)d[k] < lo ? (int64_t)d[k] : lo;
            hi = (int64_t)d[k] > hi ? (int64_t)d[k] : hi;
        }
        if (lo == hi) { /* steps a constant apart (the usual case): nothing to pack */
            p = put_uvarint(p, zigzag(lo));
            memset(p, 0, MINIS);
            p += MINIS;
            continue;
        }
        for (uint64_t k = 0; k < m; k++) d[k] -= (uint64_t)lo;
        for (uint64_t k = m; k < BLOCK; k++) d[k] = 0; /* the last miniblock's padding */
        p = put_uvarint(p, zigzag(lo));
        uint8_t *widths = p;
        p += MINIS;
        uint64_t used = (m + MINI - 1) / MINI; /* unused miniblocks: width 0, no body */
        for (unsigned j = 0; j < MINIS; j++) {
            uint64_t any = 0;
            for (unsigned k = 0; j < used && k < MINI; k++) any |= d[j * MINI + k];
            unsigned w = any ? 64u - (unsigned)__builtin_clzll(any) : 0u;
            widths[j] = (uint8_t)w;
            p = pack(p, d + j * MINI, w);
        }
    }
    minmax[0] = vmin, minmax[1] = vmax;
    return (int64_t)(p - out);
}

/* m values of x into the n-byte streams of dst from position at; *lo and *hi
 * widened to their min and max.  NaN never replaces a bound (min/max keep
 * their second operand when one is NaN). */
static void split_part(const double *x, uint64_t m, uint8_t *dst, uint64_t n, uint64_t at,
                       double *lo_io, double *hi_io) {
    const uint8_t *src = (const uint8_t *)x;
    uint8_t *s0 = dst + at, *s1 = s0 + n, *s2 = s1 + n, *s3 = s2 + n;
    uint8_t *s4 = s3 + n, *s5 = s4 + n, *s6 = s5 + n, *s7 = s6 + n;
    uint64_t i = 0;
    double lo = *lo_io, hi = *hi_io;
#if defined(__SSE2__)
    __m128d vlo = _mm_set1_pd(lo), vhi = _mm_set1_pd(hi);
    /* 8 values at a time: an 8x8 byte transpose in three rounds of unpacks,
     * then 8 bytes to each stream (byte stores one by one cost several times more) */
    for (; i + 8 <= m; i += 8, src += 64) {
        __m128i a0 = _mm_loadu_si128((const __m128i *)src);
        __m128i a1 = _mm_loadu_si128((const __m128i *)(src + 16));
        __m128i a2 = _mm_loadu_si128((const __m128i *)(src + 32));
        __m128i a3 = _mm_loadu_si128((const __m128i *)(src + 48));
        vlo = _mm_min_pd(_mm_castsi128_pd(a0), vlo), vhi = _mm_max_pd(_mm_castsi128_pd(a0), vhi);
        vlo = _mm_min_pd(_mm_castsi128_pd(a1), vlo), vhi = _mm_max_pd(_mm_castsi128_pd(a1), vhi);
        vlo = _mm_min_pd(_mm_castsi128_pd(a2), vlo), vhi = _mm_max_pd(_mm_castsi128_pd(a2), vhi);
        vlo = _mm_min_pd(_mm_castsi128_pd(a3), vlo), vhi = _mm_max_pd(_mm_castsi128_pd(a3), vhi);
        /* byte k of the pair's two values side by side, k = 0..7 */
        __m128i t0 = _mm_unpacklo_epi8(a0, _mm_srli_si128(a0, 8));
        __m128i t1 = _mm_unpacklo_epi8(a1, _mm_srli_si128(a1, 8));
        __m128i t2 = _mm_unpacklo_epi8(a2, _mm_srli_si128(a2, 8));
        __m128i t3 = _mm_unpacklo_epi8(a3, _mm_srli_si128(a3, 8));
        /* byte k of four values: k = 0..3 (lo), 4..7 (hi) */
        __m128i u0 = _mm_unpacklo_epi16(t0, t1), u1 = _mm_unpackhi_epi16(t0, t1);
        __m128i u2 = _mm_unpacklo_epi16(t2, t3), u3 = _mm_unpackhi_epi16(t2, t3);
        /* byte k of all eight: two k per register */
        __m128i w0 = _mm_unpacklo_epi32(u0, u2), w1 = _mm_unpackhi_epi32(u0, u2);
        __m128i w2 = _mm_unpacklo_epi32(u1, u3), w3 = _mm_unpackhi_epi32(u1, u3);
        _mm_storel_epi64((__m128i *)(s0 + i), w0);
        _mm_storel_epi64((__m128i *)(s1 + i), _mm_srli_si128(w0, 8));
        _mm_storel_epi64((__m128i *)(s2 + i), w1);
        _mm_storel_epi64((__m128i *)(s3 + i), _mm_srli_si128(w1, 8));
        _mm_storel_epi64((__m128i *)(s4 + i), w2);
        _mm_storel_epi64((__m128i *)(s5 + i), _mm_srli_si128(w2, 8));
        _mm_storel_epi64((__m128i *)(s6 + i), w3);
        _mm_storel_epi64((__m128i *)(s7 + i), _mm_srli_si128(w3, 8));
    }
    double l2[2], h2[2];
    _mm_storeu_pd(l2, vlo);
    _mm_storeu_pd(h2, vhi);
    lo = l2[0] < l2[1] ? l2[0] : l2[1];
    hi = h2[0] > h2[1] ? h2[0] : h2[1];
#endif
    for (; i < m; i++, src += 8) {
        s0[i] = src[0], s1[i] = src[1], s2[i] = src[2], s3[i] = src[3];
        s4[i] = src[4], s5[i] = src[5], s6[i] = src[6], s7[i] = src[7];
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    *lo_io = lo, *hi_io = hi;
}

int slg_pq_split_f64(const double *const *seg, const uint64_t *len, uint64_t nseg,
                     uint8_t *dst, double *minmax) {
    uint64_t n = 0, at = 0;
    for (uint64_t k = 0; k < nseg; k++) n += len[k];
    double lo = INFINITY, hi = -INFINITY;
    for (uint64_t k = 0; k < nseg; k++) {
        split_part(seg[k], len[k], dst, n, at, &lo, &hi);
        at += len[k];
    }
    minmax[0] = lo, minmax[1] = hi;
    return lo <= hi;
}
