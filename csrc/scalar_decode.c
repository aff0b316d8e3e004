/* scalar_decode.c - columnar scalars (tag id, step, wall time, value) straight
 * from many event records, with no protobuf objects: simple_value, or a tensor
 * of one number when the value's metadata names the "scalars" plugin (TF2
 * writes it with a tag's first value only: the tag table remembers it).
 * Every length read is bounded by the enclosing message.  Field numbers:
 * tensorboard/compat/proto/{event,summary,tensor}.proto. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pbwire.h"
#include "record.h"
#include "summarylog_api.h"
#include "tags.h"

/* Strict UTF-8, as Python's "utf-8" codec accepts it (no overlongs, no
 * surrogates, nothing past U+10FFFF): a tag that fails is kept under its own
 * bytes but reported, since proto3 strings must be UTF-8. */
static int utf8_ok(const unsigned char *p, uint64_t n) {
    uint64_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        if (c < 0x80) { i++; continue; }
        uint64_t k;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) { k = 1; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { k = 2; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { k = 3; cp = c & 0x07; }
        else return 0;
        if (n - i <= k) return 0;
        for (uint64_t j = 1; j <= k; j++) {
            if ((p[i + j] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i + j] & 0x3F);
        }
        if ((k == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return 0;
        i += k + 1;
    }
    return 1;
}

static uint64_t hash_bytes(const char *p, uint64_t n) {
    uint64_t h = 1469598103934665603ull;
    for (uint64_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ull;
    }
    return h;
}

slg_tags *slg_tags_new(void) {
    slg_tags *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->n_slots = 64;
    t->slots = calloc(t->n_slots, sizeof *t->slots);
    if (t->slots) return t;
    free(t);
    return NULL;
}

void slg_tags_free(slg_tags *t) {
    if (!t) return;
    free(t->arena);
    free(t->entries);
    free(t->slots);
    free(t);
}

int slg_tags_set_dialect(slg_tags *t, int dialect) {
    if (dialect != SLG_DIALECT_TB && dialect != SLG_DIALECT_MS) return -EINVAL;
    t->dialect = dialect;
    return 0;
}

void slg_tags_clear(slg_tags *t) {
    t->n = 0;
    t->arena_len = 0;
    memset(t->slots, 0, t->n_slots * sizeof *t->slots);
}

uint64_t slg_tags_count(const slg_tags *t) { return t->n; }

int slg_tags_get(const slg_tags *t, uint64_t id, const char **data, uint64_t *len, int32_t *kind) {
    if (id >= t->n) return -EINVAL;
    *data = t->arena + t->entries[id].off;
    *len = t->entries[id].len;
    *kind = t->entries[id].kind;
    return 0;
}

int slg_tags_flags(const slg_tags *t, uint64_t id) {
    if (id >= t->n) return -EINVAL;
    return t->entries[id].flags;
}

static int grow_slots(slg_tags *t) {
    uint64_t n = t->n_slots * 2;
    uint32_t *s = calloc(n, sizeof *s);
    if (!s) return -ENOMEM;
    for (uint64_t i = 0; i < t->n; i++) {
        uint64_t j = t->entries[i].hash & (n - 1);
        while (s[j]) j = (j + 1) & (n - 1);
        s[j] = (uint32_t)(i + 1);
    }
    free(t->slots);
    t->slots = s;
    t->n_slots = n;
    return 0;
}

int64_t slg_tags_intern(slg_tags *t, const char *p, uint64_t n) {
    uint64_t h = hash_bytes(p, n);
    uint64_t j = h & (t->n_slots - 1);
    while (t->slots[j]) {
        tag_entry *e = &t->entries[t->slots[j] - 1];
        if (e->hash == h && e->len == n && (n == 0 || memcmp(t->arena + e->off, p, (size_t)n) == 0))
            return t->slots[j] - 1;
        j = (j + 1) & (t->n_slots - 1);
    }
    if (t->n >= 0xFFFFFFF0u) return -ENOMEM;
    if (t->n == t->cap_entries) {
        uint64_t cap = t->cap_entries ? t->cap_entries * 2 : 16;
        tag_entry *e = realloc(t->entries, cap * sizeof *e);
        if (!e) return -ENOMEM;
        t->entries = e;
        t->cap_entries = cap;
    }
    if (t->arena_len + n > t->arena_cap) {
        uint64_t cap = t->arena_cap ? t->arena_cap : 1024;
        while (cap < t->arena_len + n) cap *= 2;
        char *a = realloc(t->arena, (size_t)cap);
        if (!a) return -ENOMEM;
        t->arena = a;
        t->arena_cap = cap;
    }
    if (n) memcpy(t->arena + t->arena_len, p, (size_t)n);
    tag_entry *e = &t->entries[t->n];
    e->off = t->arena_len;
    e->len = n;
    e->hash = h;
    e->kind = SLG_TAG_UNKNOWN;
    e->flags = utf8_ok((const unsigned char *)p, n) ? 0 : SLG_TAGF_BAD_UTF8;
    t->arena_len += n;
    t->slots[j] = (uint32_t)(t->n + 1);
    t->n++;
    if (t->n * 2 > t->n_slots && grow_slots(t) != 0) return -ENOMEM;
    return (int64_t)(t->n - 1);
}

static double half_bits(uint32_t h) {
    uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1F, man = h & 0x3FF;
    double v;
    if (exp == 0) v = ldexp((double)man, -24);
    else if (exp == 31) v = man ? NAN : INFINITY;
    else v = ldexp(1.0 + man / 1024.0, (int)exp - 15);
    return sign ? -v : v;
}

/* TensorFlow DataType numbers used by scalar tensors */
enum { DT_FLOAT = 1, DT_DOUBLE = 2, DT_INT32 = 3, DT_UINT8 = 4, DT_INT16 = 5, DT_INT8 = 6,
       DT_INT64 = 9, DT_BOOL = 10, DT_BFLOAT16 = 14, DT_UINT16 = 17, DT_HALF = 19,
       DT_UINT32 = 22, DT_UINT64 = 23 };

/* Bytes of one element of a scalar dtype in tensor_content; 0 for others. */
static uint64_t dtype_size(uint64_t dtype) {
    switch (dtype) {
    case DT_INT8: case DT_UINT8: case DT_BOOL: return 1;
    case DT_HALF: case DT_BFLOAT16: case DT_INT16: case DT_UINT16: return 2;
    case DT_FLOAT: case DT_INT32: case DT_UINT32: return 4;
    case DT_DOUBLE: case DT_INT64: case DT_UINT64: return 8;
    default: return 0;
    }
}

/* One element of type dtype, from its little-endian bits (unsigned for the
 * dtypes not named). */
static double dtype_number(uint64_t dtype, uint64_t b) {
    switch (dtype) {
    case DT_FLOAT: return f32_bits((uint32_t)b);
    case DT_DOUBLE: return f64_bits(b);
    case DT_HALF: return half_bits((uint32_t)b);
    case DT_BFLOAT16: return f32_bits((uint32_t)b << 16);
    case DT_INT8: return (int8_t)b;
    case DT_INT16: return (int16_t)b;
    case DT_INT32: return (int32_t)(uint32_t)b;
    case DT_INT64: return (double)(int64_t)b;
    default: return (double)b;
    }
}

/* The element type of a repeated number field of TensorProto (0: not one):
 * float_val 5, double_val 6, int_val 7, int64_val 10, bool_val 11, half_val
 * 13 (half or bfloat16 bits, by dtype), uint32_val 16, uint64_val 17. */
static uint64_t field_dtype(uint32_t f, uint64_t dtype) {
    switch (f) {
    case 5: return DT_FLOAT;
    case 6: return DT_DOUBLE;
    case 7: return DT_INT32;
    case 10: return DT_INT64;
    case 13: return dtype == DT_BFLOAT16 ? DT_BFLOAT16 : DT_HALF;
    case 11: case 16: case 17: return DT_UINT64;
    default: return 0;
    }
}

/* The one number in a TensorProto; 0 if it holds none or more than one. */
static int tensor_scalar(cursor c, double *out) {
    uint64_t dtype = 0, v, elements = 1, count = 0;
    double val = 0;
    cursor content = {0, 0}, sub;
    uint32_t f;
    int wt;
    while (c.p < c.end) {
        if (!next_field(&c, &f, &wt, &v, &sub)) return 0;
        uint64_t type = field_dtype(f, dtype);
        int one_wt = type == DT_FLOAT ? 5 : type == DT_DOUBLE ? 1 : 0; /* unpacked */
        if (f == 1 && wt == 0) dtype = v;
        else if (f == 2 && wt == 2) { /* shape: product of dims */
            uint32_t f2; int wt2; uint64_t v2; cursor dim, unused;
            while (sub.p < sub.end) {
                if (!next_field(&sub, &f2, &wt2, &v2, &dim)) return 0;
                if (f2 == 2 && wt2 == 2) {
                    uint64_t size = 1;
                    while (dim.p < dim.end) { /* (f2, wt2, v2 reused: a Dim's fields) */
                        if (!next_field(&dim, &f2, &wt2, &v2, &unused)) return 0;
                        if (f2 == 1 && wt2 == 0) size = v2;
                    }
                    /* a wrapped product could pass for 1 element: overflow is not a scalar */
                    if (size && elements > UINT64_MAX / size) return 0;
                    elements *= size;
                }
            }
        } else if (f == 4 && wt == 2) content = sub;
        else if (type && wt == one_wt) {
            val = dtype_number(type, v);
            count++;
        } else if (type && wt == 2) { /* packed */
            while (sub.p < sub.end) {
                cursor unused;
                if (!read_value(&sub, one_wt, &v, &unused)) return 0;
                val = dtype_number(type, v);
                count++;
            }
        }
    }
    if (elements != 1 || count > 1) return 0;
    if (count == 1) {
        *out = val;
        return 1;
    }
    uint64_t size = dtype_size(dtype), b = 0;
    if (!content.p || !size || (uint64_t)(content.end - content.p) != size) return 0;
    memcpy(&b, content.p, (size_t)size); /* little-endian, as on the wire */
    *out = dtype_number(dtype, b);
    return 1;
}

/* plugin name of a SummaryMetadata, as a cursor (empty if absent) */
static cursor plugin_name(cursor md) {
    cursor none = {0, 0}, sub, name;
    uint32_t f;
    int wt;
    uint64_t v;
    while (md.p < md.end) {
        if (!next_field(&md, &f, &wt, &v, &sub)) return none;
        if (f == 1 && wt == 2) {
            while (sub.p < sub.end) {
                if (!next_field(&sub, &f, &wt, &v, &name)) return none;
                if (f == 1 && wt == 2) return name;
            }
        }
    }
    return none;
}

int slg_tb_decode_scalars(const char *buf, uint64_t base, const slg_span *spans, uint64_t n_spans,
                          slg_tags *tags, uint32_t *tag_ids, int64_t *steps, double *walls,
                          double *values, uint64_t cap, slg_decode_result *res) {
    memset(res, 0, sizeof *res);
    const int ms = tags->dialect == SLG_DIALECT_MS;
    int64_t last_id = -1; /* most runs log few tags: try the previous one first */
    for (uint64_t i = 0; i < n_spans; i++) {
        const unsigned char *at = (const unsigned char *)buf + (spans[i].offset - base);
        const cursor event = {at, at + spans[i].length};
        double wall;
        int64_t step;
        int has_summary, session_start, bad = 0;
        uint32_t f;
        int wt;
        uint64_t v;
        cursor sub;
        if (!event_head(event, ms, &wall, &step, &has_summary, &session_start)) {
            res->bad_events++;
            res->spans_done = i + 1;
            continue;
        }
        uint64_t purges_before = res->n_purges;
        if (session_start) {
            if (res->n_purges < SLG_MAX_PURGES) {
                res->purge_index[res->n_purges] = res->n_values;
                res->purge_step[res->n_purges] = step;
                res->n_purges++;
            } else {
                res->spans_done = i; /* make room: the caller applies purges and resumes */
                return SLG_DECODE_PURGES_FULL;
            }
        }
        if (!has_summary) { res->other_events++; res->spans_done = i + 1; continue; }
        /* count the scalars first so an event is never split across calls */
        uint64_t start_values = res->n_values, bad_values_before = res->bad_values;
        int any_other = 0;
        /* every Summary field of the event (protobuf merges repeated ones);
         * the event parsed above */
        cursor evs = event, s;
        while (!bad && next_field(&evs, &f, &wt, &v, &s)) {
            if (f != 5 || wt != 2) continue;
            while (s.p < s.end) {
                cursor val;
                if (!next_field(&s, &f, &wt, &v, &val)) { bad = 1; break; }
                if (f != 1 || wt != 2) continue;
                cursor tag = {0, 0}, tensor = {0, 0}, md = {0, 0};
                int has_simple = 0, bad_value = 0;
                double x = 0;
                while (val.p < val.end) {
                    if (!next_field(&val, &f, &wt, &v, &sub)) { bad_value = 1; break; }
                    if (f == 1 && wt == 2) tag = sub;
                    else if (ms) { /* MindSpore: scalar_value = 3 (float); 4, 8-10: others */
                        if (f == 3 && wt == 5) { has_simple = 1; x = f32_bits((uint32_t)v); }
                    } else if (f == 2 && wt == 5) { has_simple = 1; x = f32_bits((uint32_t)v); }
                    else if (f == 8 && wt == 2) tensor = sub;
                    else if (f == 9 && wt == 2) md = sub;
                }
                /* a malformed value is its own loss: the event's other values
                 * stay (its bytes are bounded by the Summary, which parsed) */
                if (bad_value) { res->bad_values++; any_other = 1; continue; }
                if (!tag.p) tag.p = tag.end = val.end;
                uint64_t tag_len = (uint64_t)(tag.end - tag.p);
                int64_t id;
                /* (an empty tag may come first, with no arena yet: no memcmp on NULL) */
                const tag_entry *last = last_id >= 0 ? &tags->entries[last_id] : NULL;
                if (last && last->len == tag_len &&
                    (tag_len == 0 || memcmp(tags->arena + last->off, tag.p, tag_len) == 0)) {
                    id = last_id;
                } else {
                    id = slg_tags_intern(tags, (const char *)tag.p, tag_len);
                    if (id < 0) return (int)id;
                    last_id = id;
                }
                tag_entry *te = &tags->entries[id];
                if (te->flags & SLG_TAGF_BAD_UTF8) res->bad_values++; /* kept, and reported */
                if (md.p) {
                    cursor name = plugin_name(md);
                    if (name.p && name.end - name.p == 7 && memcmp(name.p, "scalars", 7) == 0)
                        te->kind = SLG_TAG_SCALAR;
                    else if (name.p && name.end > name.p && te->kind == SLG_TAG_UNKNOWN)
                        te->kind = SLG_TAG_OTHER;
                }
                int is_scalar = 0;
                if (has_simple) {
                    is_scalar = 1;
                    if (te->kind == SLG_TAG_UNKNOWN) te->kind = SLG_TAG_SCALAR;
                } else if (tensor.p && te->kind == SLG_TAG_SCALAR) {
                    is_scalar = tensor_scalar(tensor, &x);
                }
                if (!is_scalar) {
                    any_other = 1;
                    te->flags |= SLG_TAGF_OTHER;
                    continue;
                }
                if (res->n_values >= cap) {
                    res->n_values = start_values; /* undo this event; resume at it */
                    res->n_purges = purges_before;
                    res->bad_values = bad_values_before;
                    res->spans_done = i;
                    return SLG_DECODE_OUT_FULL;
                }
                tag_ids[res->n_values] = (uint32_t)id;
                steps[res->n_values] = step;
                walls[res->n_values] = wall;
                values[res->n_values] = x;
                res->n_values++;
            }
        }
        if (bad) {
            res->bad_events++;
            res->n_values = start_values;
            res->bad_values = bad_values_before;
        }
        else if (any_other) res->other_events++;
        res->spans_done = i + 1;
    }
    return 0;
}

/* ---- grouping the columns by tag ----------------------------------------------- */

static void permute(void *col, size_t width, const uint32_t *ids, uint64_t n,
                    const uint64_t *starts, uint64_t n_tags, uint64_t *next, char *tmp) {
    memcpy(next, starts, n_tags * sizeof *next);
    const char *src = col;
    for (uint64_t i = 0; i < n; i++) memcpy(tmp + width * next[ids[i]]++, src + width * i, width);
    memcpy(col, tmp, width * n);
}

int slg_columns_group(uint32_t *tag_ids, int64_t *steps, double *walls, double *values,
                      uint64_t n, uint64_t n_tags, uint64_t *counts) {
    memset(counts, 0, n_tags * sizeof *counts);
    for (uint64_t i = 0; i < n; i++) {
        if (tag_ids[i] >= n_tags) return -EINVAL;
        counts[tag_ids[i]]++;
    }
    /* one block: starts and next (n_tags each), then 8 n bytes of scratch */
    uint64_t *starts = malloc((2 * n_tags + n + 1) * sizeof *starts);
    if (!starts) return -ENOMEM;
    uint64_t *next = starts + n_tags, acc = 0;
    char *tmp = (char *)(next + n_tags);
    for (uint64_t t = 0; t < n_tags; t++) {
        starts[t] = acc;
        acc += counts[t];
    }
    permute(steps, 8, tag_ids, n, starts, n_tags, next, tmp);
    permute(walls, 8, tag_ids, n, starts, n_tags, next, tmp);
    permute(values, 8, tag_ids, n, starts, n_tags, next, tmp);
    permute(tag_ids, 4, tag_ids, n, starts, n_tags, next, tmp); /* last: it drives the others */
    free(starts);
    return 0;
}
