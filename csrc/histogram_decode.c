/* histogram_decode.c - columnar histograms straight from many event records,
 * with no protobuf objects: TensorBoard's Summary.Value.histo
 * (HistogramProto) and MindSpore's Summary.Value.histogram.  Protobuf's
 * parsing rules are kept: a oneof's last member wins, a message field seen
 * twice is merged (numbers replaced, repeated fields appended), packed and
 * unpacked repeated numbers both accepted.  Every length is bounded by the
 * enclosing message.  Field numbers: docs/format.md sections 6.2 and 7.2. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pbwire.h"
#include "record.h"
#include "summarylog_api.h"
#include "tags.h"

/* Is field f with wire type wt a member of each dialect's Summary.Value `value` oneof?
 * (the float scalar is fixed32, the rest messages or bytes; with another wire type a
 * field is unknown to protobuf and switches nothing) */
static int tb_oneof(uint32_t f, int wt) {
    return f == 2 ? wt == 5 : (f == 3 || f == 4 || f == 5 || f == 6 || f == 8) && wt == 2;
}
static int ms_oneof(uint32_t f, int wt) {
    return f == 3 ? wt == 5 : (f == 4 || f == 8 || f == 9 || f == 10) && wt == 2;
}

typedef struct { double left, width, count; } ms_bucket;

/* what one decode call owns besides the output: MindSpore buckets to sort */
typedef struct {
    ms_bucket *b;
    uint64_t n, cap;
} scratch;

static int push_bucket(scratch *s, ms_bucket b) {
    if (s->n == s->cap) {
        uint64_t cap = s->cap ? s->cap * 2 : 128;
        ms_bucket *nb = realloc(s->b, cap * sizeof *nb);
        if (!nb) return -ENOMEM;
        s->b = nb;
        s->cap = cap;
    }
    s->b[s->n++] = b;
    return 0;
}

/* Python's tuple order, made total (NaN last) so qsort stays well-defined */
static int cmp_num(double a, double b) {
    if (a < b) return -1;
    if (a > b) return 1;
    if (a == b) return 0;
    return isnan(a) - isnan(b);
}

static int cmp_bucket(const void *x, const void *y) {
    const ms_bucket *a = x, *b = y;
    int c = cmp_num(a->left, b->left);
    if (!c) c = cmp_num(a->width, b->width);
    return c ? c : cmp_num(a->count, b->count);
}

/* Append the doubles of a repeated double field (packed or one unpacked); another
 * wire type is an unknown field to protobuf, skipped */
static int put_doubles(int wt, uint64_t v, cursor sub, double *arr, uint64_t cap, uint64_t *n) {
    if (wt != 1 && wt != 2) return 1;
    if (wt == 1) {
        if (*n >= cap) return -ENOSPC;
        arr[(*n)++] = f64_bits(v);
        return 1;
    }
    if ((sub.end - sub.p) % 8) return 0;
    uint64_t k = (uint64_t)(sub.end - sub.p) / 8;
    if (k > cap - *n) return -ENOSPC;
    for (uint64_t j = 0; j < k; j++) arr[*n + j] = f64_bits(slg_get_le64((const char *)sub.p + 8 * j));
    *n += k;
    return 1;
}

/* Merge one TensorBoard HistogramProto into row r (its buckets appended).
 * 1, 0 = malformed, -ENOSPC. */
static int tb_histo(cursor h, slg_hist_columns *o, uint64_t r) {
    double *st = o->stats + SLG_HIST_STATS * r;
    uint32_t f;
    int wt;
    uint64_t v;
    cursor sub;
    while (h.p < h.end) {
        if (!next_field(&h, &f, &wt, &v, &sub)) return 0;
        if (f >= 1 && f <= 5) {
            if (wt != 1) continue; /* a wrong wire type is an unknown field to protobuf */
            st[f - 1] = f64_bits(v);
        } else if (f == 6 || f == 7) {
            int rc = f == 6 ? put_doubles(wt, v, sub, o->limits, o->cap_limits, &o->n_limits)
                            : put_doubles(wt, v, sub, o->counts, o->cap_counts, &o->n_counts);
            if (rc <= 0) return rc;
        }
    }
    return 1;
}

/* One MindSpore Histogram.bucket, merged into *b. 0 = malformed. */
static int ms_bucket_of(cursor m, ms_bucket *b) {
    uint32_t f;
    int wt;
    uint64_t v;
    cursor sub;
    while (m.p < m.end) {
        if (!next_field(&m, &f, &wt, &v, &sub)) return 0;
        if (f == 1 && wt == 1) b->left = f64_bits(v);
        else if (f == 2 && wt == 1) b->width = f64_bits(v);
        else if (f == 3 && wt == 0) b->count = (double)(int64_t)v;
    }
    return 1;
}

/* Merge one MindSpore Histogram into row r: its buckets go to the scratch,
 * emitted when the value ends.  1, 0 = malformed, -ENOMEM. */
static int ms_histogram(cursor h, slg_hist_columns *o, uint64_t r, scratch *s) {
    double *st = o->stats + SLG_HIST_STATS * r;
    uint32_t f;
    int wt;
    uint64_t v;
    cursor sub;
    while (h.p < h.end) {
        if (!next_field(&h, &f, &wt, &v, &sub)) return 0;
        if (f == 1 && wt == 2) {
            ms_bucket b = {0, 0, 0};
            if (!ms_bucket_of(sub, &b)) return 0;
            if (push_bucket(s, b) < 0) return -ENOMEM;
        } else if (wt == 1 && f >= 5 && f <= 7) {
            st[f == 5 ? 1 : f == 6 ? 0 : 3] = f64_bits(v); /* max 5, min 6, sum 7 */
        } else if (wt == 0 && (f == 8 || (f >= 2 && f <= 4))) {
            st[f == 8 ? 2 : f + 3] = (double)(int64_t)v; /* count 8; nan, +inf, -inf 2-4 */
        }
    }
    return 1;
}

/* MindSpore's buckets of the value, sorted, as right edges and counts */
static int ms_emit(scratch *s, slg_hist_columns *o) {
    if (s->n > o->cap_limits - o->n_limits || s->n > o->cap_counts - o->n_counts)
        return -ENOSPC;
    int sorted = 1;
    for (uint64_t j = 1; j < s->n && sorted; j++) sorted = cmp_bucket(&s->b[j - 1], &s->b[j]) <= 0;
    if (!sorted) qsort(s->b, (size_t)s->n, sizeof *s->b, cmp_bucket);
    for (uint64_t j = 0; j < s->n; j++) {
        o->limits[o->n_limits++] = s->b[j].left + s->b[j].width;
        o->counts[o->n_counts++] = s->b[j].count;
    }
    return 0;
}

static void new_row(slg_hist_columns *o, uint64_t r, int ms) {
    double *st = o->stats + SLG_HIST_STATS * r;
    memset(st, 0, SLG_HIST_STATS * sizeof *st);
    if (ms) st[4] = NAN; /* MindSpore's histogram holds no sum of squares */
}

/* One Summary.Value: 1 if it is a histogram, appended as row o->n_rows (the
 * caller commits it); 2 if it holds something else; 0 malformed; <0 errno. */
static int decode_value(cursor val, int ms, slg_hist_columns *o, scratch *s, cursor *tag) {
    const uint64_t r = o->n_rows, l0 = o->n_limits, c0 = o->n_counts;
    const uint32_t hist_field = ms ? 9 : 5;
    uint32_t f, member = 0;
    int wt;
    uint64_t v;
    cursor sub;
    tag->p = tag->end = NULL;
    s->n = 0;
    while (val.p < val.end) {
        if (!next_field(&val, &f, &wt, &v, &sub)) return 0;
        if (f == 1 && wt == 2) { *tag = sub; continue; }
        if (!(ms ? ms_oneof(f, wt) : tb_oneof(f, wt))) continue;
        if (f != hist_field) { member = f; continue; }
        if (member != hist_field) { /* a new histogram: what came before is cleared */
            o->n_limits = l0;
            o->n_counts = c0;
            s->n = 0;
            new_row(o, r, ms);
            member = hist_field;
        }
        int rc = ms ? ms_histogram(sub, o, r, s) : tb_histo(sub, o, r);
        if (rc <= 0) return rc;
    }
    if (member != hist_field) {
        o->n_limits = l0;
        o->n_counts = c0;
        return 2;
    }
    if (ms) {
        int rc = ms_emit(s, o);
        if (rc < 0) return rc;
    }
    return 1;
}

int slg_decode_histograms(const char *buf, uint64_t base, const slg_span *spans,
                          uint64_t n_spans, slg_tags *tags, slg_hist_columns *out,
                          slg_decode_result *res) {
    memset(res, 0, sizeof *res);
    const int ms = tags->dialect == SLG_DIALECT_MS;
    const uint64_t rows_before = out->n_rows;
    scratch s = {NULL, 0, 0};
    int rc = 0;
    for (uint64_t i = 0; i < n_spans; i++) {
        const unsigned char *at = (const unsigned char *)buf + (spans[i].offset - base);
        const cursor event = {at, at + spans[i].length};
        double wall;
        int64_t step;
        int has_summary, session_start;
        if (!event_head(event, ms, &wall, &step, &has_summary, &session_start)) {
            res->bad_events++;
            res->spans_done = i + 1;
            continue;
        }
        const uint64_t purges_before = res->n_purges;
        if (session_start) {
            if (res->n_purges == SLG_MAX_PURGES) {
                res->spans_done = i; /* the caller applies the purges and resumes here */
                rc = SLG_DECODE_PURGES_FULL;
                break;
            }
            res->purge_index[res->n_purges] = out->n_rows - rows_before;
            res->purge_step[res->n_purges++] = step;
        }
        if (!has_summary) { res->other_events++; res->spans_done = i + 1; continue; }
        /* an event is never split across calls: its rows are undone when full */
        const uint64_t r0 = out->n_rows, l0 = out->n_limits, c0 = out->n_counts;
        const uint64_t bad_before = res->bad_values;
        int bad = 0, any_other = 0, full = 0;
        cursor evs = event, sm, val, tag;
        uint32_t f;
        int wt;
        uint64_t v;
        while (!bad && !full && next_field(&evs, &f, &wt, &v, &sm)) {
            if (f != 5 || wt != 2) continue;
            while (sm.p < sm.end) {
                if (!next_field(&sm, &f, &wt, &v, &val)) { bad = 1; break; }
                if (f != 1 || wt != 2) continue;
                if (out->n_rows >= out->cap_rows) { full = 1; break; }
                const uint64_t l1 = out->n_limits, c1 = out->n_counts;
                int got = decode_value(val, ms, out, &s, &tag);
                if (got == -ENOSPC) { full = 1; break; }
                if (got < 0) { rc = got; goto done; }
                if (got == 0) { /* a malformed value is its own loss; the others stay */
                    out->n_limits = l1;
                    out->n_counts = c1;
                    res->bad_values++;
                    any_other = 1;
                    continue;
                }
                if (!tag.p) tag.p = tag.end = val.end;
                int64_t id = slg_tags_intern(tags, (const char *)tag.p, (uint64_t)(tag.end - tag.p));
                if (id < 0) { rc = (int)id; goto done; }
                tag_entry *te = &tags->entries[id];
                if (te->flags & SLG_TAGF_BAD_UTF8) res->bad_values++; /* kept, and reported */
                if (got == 2) {
                    te->flags |= SLG_TAGF_OTHER;
                    any_other = 1;
                    continue;
                }
                const uint64_t r = out->n_rows++;
                out->tag_ids[r] = (uint32_t)id;
                out->steps[r] = step;
                out->walls[r] = wall;
                out->limit_ends[r] = out->n_limits;
                out->count_ends[r] = out->n_counts;
            }
        }
        if (full) {
            out->n_rows = r0;
            out->n_limits = l0;
            out->n_counts = c0;
            res->n_purges = purges_before;
            res->bad_values = bad_before;
            res->spans_done = i;
            rc = SLG_DECODE_OUT_FULL;
            break;
        }
        if (bad) {
            out->n_rows = r0;
            out->n_limits = l0;
            out->n_counts = c0;
            res->bad_values = bad_before;
            res->bad_events++;
        } else if (any_other) {
            res->other_events++;
        }
        res->spans_done = i + 1;
    }
done:
    res->n_values = out->n_rows - rows_before;
    free(s.b);
    return rc;
}
