/* scanner.c - validate and split a TFRecord byte stream, classifying damage,
 * a window of the file at a time (state in slg_scan_state).  A length is
 * checked against the known end of the data before anything is read or
 * requested for it.
 *
 *   torn record or zero-filled tail at the end  -> SLG_SCAN_TORN / _ZERO_TAIL
 *                                                   (pos stays at its start)
 *   bad length CRC        -> resynchronise at the next offset whose length
 *                            CRC validates and whose length fits the data
 *   length past the end, with valid records after it -> damage, resync
 *   bad data CRC          -> damage, skip that record */
#include <errno.h>

#include "record.h"
#include "summarylog_api.h"

enum { CONTINUE = 0 };

static int all_zero(const char *p, uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

/* Does a record of payload length L starting at p fit in the data? */
static int fits(uint64_t p, uint64_t L, uint64_t data_end) {
    if (L > UINT64_MAX - SLG_FRAME_OVERHEAD - p) return 0;
    return p + SLG_FRAME_OVERHEAD + L <= data_end;
}

static int header_ok(const char *h, uint64_t *L) {
    *L = slg_get_le64(h);
    return slg_masked_crc32c(h, 8) == slg_get_le32(h + 8);
}

static void emit_damage(slg_damage *d, uint64_t *n, uint64_t off, uint64_t len, int kind) {
    d[(*n)++] = (slg_damage){.offset = off, .length = len, .kind = kind};
}

static void start_resync(slg_scan_state *s, uint64_t p, int kind, int zero) {
    s->resyncing = 1;
    s->damage_start = p;
    s->damage_kind = kind;
    s->all_zero = zero;
    s->pos = p + 1;
}

static int resync(slg_scan_state *s, const char *buf, uint64_t base, uint64_t buf_end,
                  uint64_t data_end, int at_end, slg_damage *dmg, uint64_t *n_dmg) {
    uint64_t q = s->pos;
    for (; q + SLG_HEADER_SIZE <= buf_end; q++) {
        uint64_t L;
        const char *h = buf + (q - base);
        int ok = header_ok(h, &L);
        if (ok && data_end == SLG_UNKNOWN_END && !fits(q, L, buf_end)) {
            /* End of data unknown (zstd): whether this record fits cannot be
             * decided yet.  Ask for the record (or the end of the data). */
            s->pos = q;
            return SLG_SCAN_NEED_MORE;
        }
        if (ok && fits(q, L, data_end)) {
            int kind = s->damage_kind;
            if (kind == SLG_DAMAGE_BAD_LENGTH_CRC && s->all_zero) kind = SLG_DAMAGE_ZERO_FILL;
            emit_damage(dmg, n_dmg, s->damage_start, q - s->damage_start, kind);
            s->resyncing = 0;
            s->pos = q;
            return CONTINUE;
        }
        if (*h) s->all_zero = 0;
    }
    s->pos = q;
    if (!at_end) return SLG_SCAN_NEED_MORE;
    /* No valid record after the damage: decide what the tail is. */
    if (s->all_zero && !all_zero(buf + (q - base), buf_end - q)) s->all_zero = 0;
    s->resyncing = 0;
    if (s->damage_kind == SLG_DAMAGE_LENGTH_PAST_EOF || s->all_zero) {
        s->pos = s->damage_start;
        return s->damage_kind == SLG_DAMAGE_LENGTH_PAST_EOF ? SLG_SCAN_TORN : SLG_SCAN_ZERO_TAIL;
    }
    emit_damage(dmg, n_dmg, s->damage_start, buf_end - s->damage_start, s->damage_kind);
    s->pos = buf_end;
    return SLG_SCAN_END;
}

int slg_scan(slg_scan_state *s, const char *buf, uint64_t len, uint64_t base, uint64_t data_end,
             int at_end, slg_span *spans, uint64_t max_spans, uint64_t *n_spans, slg_damage *dmg,
             uint64_t max_damage, uint64_t *n_damage) {
    *n_spans = 0;
    *n_damage = 0;
    if (s->pos < base || s->pos - base > len || max_spans == 0 || max_damage == 0) return -EINVAL;
    uint64_t buf_end = base + len;
    if (data_end != SLG_UNKNOWN_END && buf_end >= data_end) at_end = 1;
    if (at_end) data_end = buf_end;

    for (;;) {
        if (*n_spans == max_spans || *n_damage == max_damage) return SLG_SCAN_SPANS_FULL;
        if (s->resyncing) {
            int rc = resync(s, buf, base, buf_end, data_end, at_end, dmg, n_damage);
            if (rc != CONTINUE) return rc;
            continue;
        }
        uint64_t p = s->pos;
        uint64_t rem = buf_end - p;
        const char *h = buf + (p - base);
        if (rem < SLG_HEADER_SIZE) {
            if (!at_end) return SLG_SCAN_NEED_MORE;
            if (rem == 0) return SLG_SCAN_END;
            return all_zero(h, rem) ? SLG_SCAN_ZERO_TAIL : SLG_SCAN_TORN;
        }
        uint64_t L;
        if (!header_ok(h, &L)) {
            start_resync(s, p, SLG_DAMAGE_BAD_LENGTH_CRC, *h == 0);
            continue;
        }
        if (!fits(p, L, data_end)) {
            start_resync(s, p, SLG_DAMAGE_LENGTH_PAST_EOF, 0);
            continue;
        }
        if (buf_end - p < SLG_FRAME_OVERHEAD || L > buf_end - p - SLG_FRAME_OVERHEAD)
            return SLG_SCAN_NEED_MORE;
        const char *payload = h + SLG_HEADER_SIZE;
        if (s->verify_data &&
            slg_masked_crc32c(payload, (size_t)L) != slg_get_le32(payload + L)) {
            emit_damage(dmg, n_damage, p, L + SLG_FRAME_OVERHEAD, SLG_DAMAGE_BAD_DATA_CRC);
        } else {
            spans[(*n_spans)++] = (slg_span){.offset = p + SLG_HEADER_SIZE, .length = L};
        }
        s->pos = p + SLG_FRAME_OVERHEAD + L;
    }
}
