/* scalar_codec.c - the TensorBoard dialect's hot path in C: scalar events
 * encoded straight from arrays into framed records, with no protobuf
 * objects.  The bytes are what protobuf itself serializes for
 *   Event{wall_time=1, step=2, summary=5{value=1{tag=1, simple_value=2}}}
 * (field numbers from tensorboard/compat/proto/{event,summary}.proto), so a
 * file mixes them freely with events the Python encoder makes. */
#include <string.h>

#include "record.h"
#include "summarylog_api.h"
#include "writer.h"

#define CHUNK_BYTES (1u << 20)

static inline uint64_t value_len(uint64_t tag_len) { return slg_len_field(tag_len) + 5; }

typedef struct {
    const double *wall_times;
    const int64_t *steps;
    const uint32_t *counts;
    const uint32_t *tag_ids;
    const double *values;
    const char *tag_data;
    const uint64_t *tag_offsets;
    uint64_t n_tags;
} scalar_batch;

/* Payload size of event i whose values start at v; 0 if a tag id is bad. */
static uint64_t event_len(const scalar_batch *b, uint64_t i, uint64_t v, uint64_t *summary_len) {
    uint64_t s = 0;
    for (uint32_t k = 0; k < b->counts[i]; k++) {
        uint32_t id = b->tag_ids[v + k];
        if (id >= b->n_tags) return 0;
        s += slg_len_field(value_len(b->tag_offsets[id + 1] - b->tag_offsets[id]));
    }
    *summary_len = s;
    uint64_t n = slg_len_field(s) + slg_double_field_len(b->wall_times[i]);
    if (b->steps[i]) n += 1 + slg_varint_len((uint64_t)b->steps[i]);
    return n;
}

/* Frame event i (its values from v on) at out; returns the end. */
static char *frame_event(const scalar_batch *b, uint64_t i, uint64_t v, char *out) {
    uint64_t summary_len, len = event_len(b, i, v, &summary_len);
    char *p = slg_put_double_field(out + SLG_HEADER_SIZE, 0x09, b->wall_times[i]);
    if (b->steps[i]) {
        *p++ = 0x10;
        p = slg_put_varint(p, (uint64_t)b->steps[i]);
    }
    p = slg_put_len_key(p, 0x2A, summary_len);
    for (uint32_t k = 0; k < b->counts[i]; k++) {
        uint32_t id = b->tag_ids[v + k];
        uint64_t tl = b->tag_offsets[id + 1] - b->tag_offsets[id];
        p = slg_put_len_key(p, 0x0A, value_len(tl));
        p = slg_put_len_key(p, 0x0A, tl);
        memcpy(p, b->tag_data + b->tag_offsets[id], (size_t)tl);
        p += tl;
        *p++ = 0x15;
        float f = (float)b->values[v + k];
        uint32_t fb;
        memcpy(&fb, &f, 4);
        slg_put_le32(p, fb);
        p += 4;
    }
    return out + slg_frame_in_place(out, len);
}

static int check_tags(const scalar_batch *b) {
    for (uint64_t t = 0; t < b->n_tags; t++)
        if (b->tag_offsets[t + 1] < b->tag_offsets[t]) return 0;
    return 1;
}

int64_t slg_tb_encode_scalars(char *out, uint64_t cap, uint64_t n_events, const double *wall_times,
                              const int64_t *steps, const uint32_t *counts, const uint32_t *tag_ids,
                              const double *values, const char *tag_data,
                              const uint64_t *tag_offsets, uint64_t n_tags) {
    scalar_batch b = {wall_times, steps, counts, tag_ids, values, tag_data, tag_offsets, n_tags};
    if (!check_tags(&b)) return -22;
    uint64_t total = 0, v = 0, s;
    for (uint64_t i = 0; i < n_events; i++) {
        uint64_t len = event_len(&b, i, v, &s);
        if (!len) return -22; /* EINVAL: bad tag id */
        total += len + SLG_FRAME_OVERHEAD;
        v += counts[i];
    }
    if (!out || total > cap) return (int64_t)total;
    char *p = out;
    v = 0;
    for (uint64_t i = 0; i < n_events; i++) {
        p = frame_event(&b, i, v, p);
        v += counts[i];
    }
    return (int64_t)(p - out);
}

int slg_writer_write_tb_scalars(slg_writer *w, uint64_t n_events, const double *wall_times,
                                const int64_t *steps, const uint32_t *counts,
                                const uint32_t *tag_ids, const double *values,
                                const char *tag_data, const uint64_t *tag_offsets, uint64_t n_tags,
                                uint64_t *accepted) {
    scalar_batch b = {wall_times, steps, counts, tag_ids, values, tag_data, tag_offsets, n_tags};
    *accepted = 0;
    if (!check_tags(&b)) return -22;
    uint64_t i = 0, v = 0, s;
    int rc = 0;
    while (i < n_events) {
        /* a chunk of whole events, at most CHUNK_BYTES (at least one event) */
        uint64_t j = i, vj = v, bytes = 0;
        do {
            uint64_t len = event_len(&b, j, vj, &s);
            if (!len) return rc ? rc : -22;
            bytes += len + SLG_FRAME_OVERHEAD;
            vj += counts[j];
            j++;
        } while (j < n_events && bytes < CHUNK_BYTES);
        char *p;
        rc = slg_writer_begin(w, bytes, n_events - i, &p); /* a drop drops the rest */
        if (rc != 0) return rc;
        for (uint64_t k = i; k < j; k++) {
            p = frame_event(&b, k, v, p);
            v += counts[k];
        }
        rc = slg_writer_commit(w, bytes, j - i);
        *accepted += j - i;
        i = j;
        if (rc != 0) return rc;
    }
    return 0;
}
