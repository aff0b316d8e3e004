/* histogram_event.c - a whole TensorBoard histogram event in one call, no GIL
 * held: statistics, numpy-exact edges, counts, and the protobuf bytes of
 *   Event{wall_time=1, step=2, summary=5{value=1{tag=1, histo=5{min=1,
 *     max=2, num=3, sum=4, sum_squares=5, bucket_limit=6, bucket=7}}}}
 * as protobuf serializes them.  dialects/tensorboard.py:histogram_proto is
 * the reference (and takes SLG_HIST_FALLBACK's case: edges that collapsed). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "summarylog_api.h"

uint64_t slg_tb_histogram_event_bound(uint64_t tag_len, int64_t bins) {
    /* (more than 2^20 buckets are refused before anything is written) */
    uint64_t k = bins > (1 << 20) ? (1 << 20) : bins > 0 ? (uint64_t)bins : SLG_MS_MAX_BINS;
    return 64 + 3 * 11 + 11 + tag_len + 5 * 9 + 2 * (1 + 10 + 8 * k);
}

int64_t slg_ms_bins(uint64_t finite) {
    if (finite == 0) return 1;
    if (finite <= 5) return 2;
    if (finite <= 10) return 3;
    return finite <= 880 ? (int64_t)(finite / 10 + 1) : SLG_MS_MAX_BINS;
}

uint64_t slg_ms_buckets(const double *left, const double *width, const int64_t *count,
                        uint64_t n, char *out) {
    uint64_t len = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = slg_varint_len((uint64_t)count[i]);
        if (out) {
            char *p = out + len;
            p[0] = 0x0A, p[1] = (char)(19 + v), p[2] = 0x09, p[11] = 0x11, p[20] = 0x18;
            slg_put_le64(p + 3, slg_double_bits(left[i]));
            slg_put_le64(p + 12, slg_double_bits(width[i]));
            slg_put_varint(p + 21, (uint64_t)count[i]);
        }
        len += 21 + v;
    }
    return len;
}

/* np.linspace(lo, hi, bins + 1) in float64, then cast to the values' dtype:
 * y[i] = i * step + lo (two roundings, never fused), y[bins] = hi; a step
 * that underflows to 0 takes numpy's other branch, y[i] = i / bins * delta + lo. */
static void linspace_edges(double lo, double hi, uint64_t bins, int is_f64, double *edges) {
    volatile double delta = hi - lo;
    volatile double step = delta / (double)bins;
    for (uint64_t i = 0; i < bins; i++) {
        volatile double y;
        if (step == 0) {
            volatile double q = (double)i / (double)bins;
            y = q * delta;
        } else {
            y = (double)i * step;
        }
        y = y + lo;
        edges[i] = is_f64 ? y : (double)(float)y;
    }
    edges[bins] = is_f64 ? hi : (double)(float)hi;
}

int64_t slg_tb_encode_histogram_event(const void *values, int is_f64, uint64_t n, int64_t bins,
                                      double wall_time, int64_t step, const char *tag,
                                      uint64_t tag_len, char *out, uint64_t cap) {
    slg_value_stats_t st;
    slg_value_stats(values, is_f64, n, &st);
    if (bins <= 0) bins = slg_ms_bins(st.finite);
    if ((uint64_t)bins > (1u << 20)) return -22; /* -EINVAL */
    if (cap < slg_tb_histogram_event_bound(tag_len, bins)) return -28; /* -ENOSPC */

    uint64_t k; /* buckets written */
    double two_limits[2], *limits = two_limits;
    int64_t two_counts[2], *counts = two_counts;
    if (st.finite == 0) {
        /* only NaN and ±inf (or nothing): ±inf in one bucket per sign, at
         * limits 0 and +inf when both come; NaN only in num; no sums */
        uint64_t neg = st.neg_inf_count, pos = st.pos_inf_count;
        st.min = neg ? -INFINITY : pos ? INFINITY : 0.0;
        st.max = pos ? INFINITY : neg ? -INFINITY : 0.0;
        st.sum = st.sum_squares = 0.0;
        if (neg && pos) {
            k = 2;
            two_limits[0] = 0.0, two_limits[1] = INFINITY;
            two_counts[0] = (int64_t)neg, two_counts[1] = (int64_t)pos;
        } else {
            k = neg || pos ? 1 : 0;
            two_limits[0] = st.max;
            two_counts[0] = (int64_t)(neg + pos);
        }
    } else if (st.min == st.max) { /* one distinct value: one zero-width bucket holding all */
        k = 1;
        two_limits[0] = st.max;
        two_counts[0] = (int64_t)(st.finite + st.neg_inf_count + st.pos_inf_count);
    } else {
        k = (uint64_t)bins;
        /* one block: k + 1 edges, then k counts (both 8-byte types) */
        limits = malloc((2 * k + 1) * sizeof *limits);
        if (!limits) return -12; /* -ENOMEM */
        counts = (int64_t *)(limits + k + 1);
        linspace_edges(st.min, st.max, k, is_f64, limits);
        if (slg_histogram_counts(values, is_f64, n, limits, k, counts) != 0) {
            free(limits);
            return SLG_HIST_FALLBACK; /* edges collapsed in float32: Python's rules */
        }
        counts[0] += (int64_t)st.neg_inf_count;
        counts[k - 1] += (int64_t)st.pos_inf_count;
        limits++; /* bucket_limit holds the right edges */
    }

    uint64_t packed = 8 * k; /* (proto3 omits an empty repeated field) */
    uint64_t histo = slg_double_field_len(st.min) + slg_double_field_len(st.max) +
                     slg_double_field_len((double)n) + slg_double_field_len(st.sum) +
                     slg_double_field_len(st.sum_squares) + (k ? 2 * slg_len_field(packed) : 0);
    uint64_t value = (tag_len ? slg_len_field(tag_len) : 0) + slg_len_field(histo);
    uint64_t summary = slg_len_field(value);
    uint64_t event = slg_double_field_len(wall_time) +
                     (step ? 1 + slg_varint_len((uint64_t)step) : 0) + slg_len_field(summary);

    char *p = slg_put_double_field(out, 0x09, wall_time);
    if (step) {
        *p++ = 0x10;
        p = slg_put_varint(p, (uint64_t)step);
    }
    p = slg_put_len_key(p, 0x2A, summary);
    p = slg_put_len_key(p, 0x0A, value);
    if (tag_len) {
        p = slg_put_len_key(p, 0x0A, tag_len);
        memcpy(p, tag, tag_len);
        p += tag_len;
    }
    p = slg_put_len_key(p, 0x2A, histo);
    p = slg_put_double_field(p, 0x09, st.min);
    p = slg_put_double_field(p, 0x11, st.max);
    p = slg_put_double_field(p, 0x19, (double)n);
    p = slg_put_double_field(p, 0x21, st.sum);
    p = slg_put_double_field(p, 0x29, st.sum_squares);
    if (k) {
        p = slg_put_len_key(p, 0x32, packed);
        for (uint64_t i = 0; i < k; i++, p += 8) slg_put_le64(p, slg_double_bits(limits[i]));
        p = slg_put_len_key(p, 0x3A, packed);
        for (uint64_t i = 0; i < k; i++, p += 8)
            slg_put_le64(p, slg_double_bits((double)counts[i]));
    }
    if (counts != two_counts) free(limits - 1);
    return (int64_t)event == p - out ? (int64_t)event : -5; /* -EIO: a size mismatch (a bug) */
}

/* Many histogram events in one call: the binner's job (csrc/binner.c), with
 * no GIL held (a Python loop of single calls took it back between values,
 * and every time it did, the training thread could wait for it). */
uint64_t slg_tb_histogram_items_bound(const slg_hist_item *items, uint64_t n) {
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t one = slg_tb_histogram_event_bound(items[i].tag_len, items[i].bins);
        if (one > UINT64_MAX - SLG_FRAME_OVERHEAD - total) return UINT64_MAX;
        total += one + SLG_FRAME_OVERHEAD;
    }
    return total;
}

int64_t slg_tb_encode_histogram_items(slg_hist_item *items, uint64_t n, char *out, uint64_t cap) {
    char *o = out;
    for (uint64_t i = 0; i < n; i++) {
        slg_hist_item *it = &items[i];
        uint64_t room = cap - (uint64_t)(o - out);
        int64_t len = -28; /* -ENOSPC */
        if (room > SLG_FRAME_OVERHEAD)
            len = slg_tb_encode_histogram_event(it->values, it->is_f64, it->n, it->bins,
                                                it->wall_time, it->step, it->tag, it->tag_len,
                                                o + SLG_HEADER_SIZE, room - SLG_FRAME_OVERHEAD);
        it->status = len;
        if (len >= 0 && len != SLG_HIST_FALLBACK) o += slg_frame_in_place(o, (uint64_t)len);
    }
    return (int64_t)(o - out);
}

/* ---- MindSpore's dialect ------------------------------------------------- */

/* MindSpore's Summary.Histogram of n float32/float64 values, as
 * dialects/mindspore.py laid it out: equal-width buckets over the finite
 * values' [min, max] (widened by 0.5 each side in the values' type when they
 * are one value), edges by np.linspace in float64 cast to that type (numpy 1's
 * result), widths taken in that type (`edges` and `widths`, when given, replace
 * them: float16 sources); then nan/+inf/-inf counts, max, min, sum (0 with no finite value)
 * and the count of all values. */
int64_t slg_ms_histogram(const void *values, int is_f64, uint64_t n, const double *edges,
                         const double *widths, uint64_t edge_bins, char *out, uint64_t cap) {
    if (cap < SLG_MS_HISTOGRAM_MAX) return -28; /* -ENOSPC */
    slg_value_stats_t st;
    slg_value_stats(values, is_f64, n, &st);
    char *p = out;
    if (st.finite) {
        uint64_t bins = edges ? edge_bins : (uint64_t)slg_ms_bins(st.finite);
        if (bins == 0 || bins > SLG_MS_MAX_BINS || (edges && !widths)) return -22; /* -EINVAL */
        double own[SLG_MS_MAX_BINS + 1], left[SLG_MS_MAX_BINS], width[SLG_MS_MAX_BINS];
        int64_t counts[SLG_MS_MAX_BINS];
        if (!edges) {
            double lo = st.min, hi = st.max;
            if (lo == hi) {
                if (is_f64) lo -= 0.5, hi += 0.5;
                else lo = (double)((float)lo - 0.5f), hi = (double)((float)hi + 0.5f);
            }
            linspace_edges(lo, hi, bins, is_f64, own);
            edges = own;
        }
        if (slg_histogram_counts(values, is_f64, n, edges, bins, counts) != 0)
            return -22; /* edges that collapsed (huge values): not a histogram */
        for (uint64_t i = 0; i < bins; i++) {
            left[i] = edges[i];
            width[i] = widths ? widths[i]
                       : is_f64 ? edges[i + 1] - edges[i]
                                : (double)((float)edges[i + 1] - (float)edges[i]);
        }
        p += slg_ms_buckets(left, width, counts, bins, p);
    } else {
        st.max = st.min = st.sum = 0.0;
    }
    *p++ = 0x10;
    p = slg_put_varint(p, st.nan_count);
    *p++ = 0x18;
    p = slg_put_varint(p, st.pos_inf_count);
    *p++ = 0x20;
    p = slg_put_varint(p, st.neg_inf_count);
    const double stats[3] = {st.max, st.min, st.sum};
    for (int i = 0; i < 3; i++) {
        *p++ = (char)(0x29 + 8 * i);
        slg_put_le64(p, slg_double_bits(stats[i]));
        p += 8;
    }
    *p++ = 0x40;
    p = slg_put_varint(p, n);
    return p - out;
}

uint64_t slg_ms_step_bound(const slg_hist_job *job) {
    /* event head (wall, step, summary key) + the scalar value + each histogram value */
    uint64_t total = 9 + 11 + 11 + (job->has_scalar ? 11 + 11 + job->scalar_tag_len + 5 : 0);
    for (uint64_t i = 0; i < job->n; i++) {
        uint64_t one = 11 + 11 + job->items[i].tag_len + 11 + SLG_MS_HISTOGRAM_MAX;
        if (one > UINT64_MAX / 2 - total) return UINT64_MAX;
        total += one;
    }
    return total;
}

/* A job as one MindSpore Event of its step, as dialects/mindspore.py writes a
 * recorded step: Event{wall_time=1, step=2, summary=5{value=1{tag=1,
 * scalar_value=3} (the scalar first), value=1{tag=1, histogram=9}...}}.  Each
 * item's status: its Value's bytes or -errno (left out).  The length. */
int64_t slg_ms_encode_step(slg_hist_job *job, char *out, uint64_t cap) {
    if (cap < slg_ms_step_bound(job)) return -28; /* -ENOSPC */
    enum { HEAD = 9 + 11 + 11 };
    char *v = out + HEAD; /* the values first, then the head in front of them */
    if (job->has_scalar) {
        float f = (float)job->scalar;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        uint64_t value = slg_len_field(job->scalar_tag_len) + 5;
        v = slg_put_len_key(v, 0x0A, value);
        v = slg_put_len_key(v, 0x0A, job->scalar_tag_len);
        memcpy(v, job->scalar_tag, job->scalar_tag_len);
        v += job->scalar_tag_len;
        *v++ = 0x1D;
        slg_put_le32(v, bits);
        v += 4;
    }
    int64_t step = job->has_scalar ? job->scalar_step : job->n ? job->items[0].step : 0;
    double wall = job->has_scalar ? job->scalar_wall_time : job->n ? job->items[0].wall_time : 0;
    for (uint64_t i = 0; i < job->n; i++) {
        slg_hist_item *it = &job->items[i];
        /* the histogram first, at the end of the room its framing may take */
        uint64_t pre = 11 + slg_len_field(it->tag_len) + 11;
        int64_t h = slg_ms_histogram(it->values, it->is_f64, it->n, NULL, NULL, 0, v + pre,
                                     SLG_MS_HISTOGRAM_MAX);
        it->status = h;
        if (h < 0) continue;
        uint64_t hist = (uint64_t)h, value = slg_len_field(it->tag_len) + slg_len_field(hist);
        char *w = slg_put_len_key(v, 0x0A, value);
        w = slg_put_len_key(w, 0x0A, it->tag_len);
        memcpy(w, it->tag, it->tag_len);
        w += it->tag_len;
        w = slg_put_len_key(w, 0x4A, hist);
        memmove(w, v + pre, (size_t)hist);
        v = w + hist;
    }
    uint64_t summary = (uint64_t)(v - (out + HEAD));
    uint64_t head = 9 + 1 + slg_varint_len((uint64_t)step) + 1 + slg_varint_len(summary);
    char *p = out;
    *p++ = 0x09;
    slg_put_le64(p, slg_double_bits(wall));
    p += 8;
    *p++ = 0x10;
    p = slg_put_varint(p, (uint64_t)step);
    p = slg_put_len_key(p, 0x2A, summary);
    memmove(p, out + HEAD, (size_t)summary);
    return (int64_t)(head + summary);
}
