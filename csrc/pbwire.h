/* pbwire.h - bounds-checked protobuf wire reading shared by the columnar
 * decoders (scalar_decode.c, histogram_decode.c): every length read is
 * checked against the enclosing message, never trusted. */
#ifndef SLG_PBWIRE_H
#define SLG_PBWIRE_H

#include <stdint.h>
#include <string.h>

#include "record.h"
#include "summarylog_api.h"


typedef struct {
    const unsigned char *p, *end;
} cursor;

static inline int read_varint(cursor *c, uint64_t *v) {
    uint64_t r = 0;
    for (int shift = 0; shift < 64 && c->p < c->end; shift += 7) {
        unsigned char b = *c->p++;
        r |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return 1;
        }
    }
    return 0;
}

/* The value of a field of wire type wt, its key read: a number in *v, or a
 * LEN field's body in *sub.  0 = malformed (or a group's wire type). */
static inline int read_value(cursor *c, int wt, uint64_t *v, cursor *sub) {
    switch (wt) {
    case 0:
        return read_varint(c, v);
    case 1:
    case 5: { /* I64 or I32, little-endian */
        const long k = wt == 1 ? 8 : 4;
        if (c->end - c->p < k) return 0;
        *v = k == 8 ? slg_get_le64((const char *)c->p) : slg_get_le32((const char *)c->p);
        c->p += k;
        return 1;
    }
    case 2: {
        uint64_t n;
        if (!read_varint(c, &n) || n > (uint64_t)(c->end - c->p)) return 0;
        sub->p = c->p;
        sub->end = c->p + n;
        c->p += n;
        return 1;
    }
    default:
        return 0;
    }
}

/* Skip a group's fields up to its END_GROUP (wire types 3/4, valid though
 * deprecated: protobuf keeps them as unknown fields).  Iterative, with a
 * depth limit like protobuf's own, so nesting cannot exhaust the stack. */
static inline int skip_group(cursor *c, uint32_t field) {
    int depth = 1;
    while (c->p < c->end) {
        uint64_t key, v;
        cursor sub;
        if (!read_varint(c, &key)) return 0;
        if ((key & 7) == 3) {
            if (++depth > SLG_MAX_GROUP_DEPTH) return 0;
        } else if ((key & 7) == 4) {
            if (--depth == 0) return (uint32_t)(key >> 3) == field;
        } else if (!read_value(c, (int)(key & 7), &v, &sub)) {
            return 0;
        }
    }
    return 0;
}

/* Read a field key; LEN fields give their body in *sub, groups are skipped
 * (wire type 3, no value).  0 = malformed/end. */
static inline int next_field(cursor *c, uint32_t *field, int *wt, uint64_t *v, cursor *sub) {
    uint64_t key;
    if (c->p >= c->end || !read_varint(c, &key) || key >> 3 == 0 || key >> 3 > 0x1FFFFFFF)
        return 0; /* field numbers are 1 .. 2^29 - 1 */
    *field = (uint32_t)(key >> 3);
    *wt = (int)(key & 7);
    if (*wt != 3) return read_value(c, *wt, v, sub);
    *v = 0;
    return skip_group(c, *field);
}

static inline double f32_bits(uint32_t b) {
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static inline double f64_bits(uint64_t b) {
    double d;
    memcpy(&d, &b, 8);
    return d;
}

/* The header of an Event: wall_time (1), step (2), whether it holds a Summary
 * (5) and, outside MindSpore, a SessionLog START (7).  0 = malformed. */
static inline int event_head(cursor ev, int ms, double *wall, int64_t *step, int *has_summary,
                             int *session_start) {
    uint32_t f;
    int wt;
    uint64_t v;
    cursor sub;
    *wall = 0;
    *step = 0;
    *has_summary = *session_start = 0;
    while (ev.p < ev.end) {
        if (!next_field(&ev, &f, &wt, &v, &sub)) return 0;
        if (f == 1 && wt == 1) *wall = f64_bits(v);
        else if (f == 2 && wt == 0) *step = (int64_t)v;
        else if (f == 5 && wt == 2) *has_summary = 1;
        else if (f == 7 && wt == 2 && !ms) {
            cursor sl = sub, s2;
            uint32_t f2; int wt2; uint64_t v2;
            while (sl.p < sl.end && next_field(&sl, &f2, &wt2, &v2, &s2))
                if (f2 == 1 && wt2 == 0 && v2 == 1) *session_start = 1;
        }
    }
    return 1;
}

#endif
