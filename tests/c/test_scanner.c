/* test_scanner.c - the record scanner (scanner.c): clean streams, every
 * truncation point, zero-filled tails, each damage class with its offset,
 * length and kind, chunked scanning that must agree with one-shot scanning,
 * tiny output arrays, a growing file, and a seeded fuzz loop.
 *
 * Every window handed to slg_scan is copied into a heap block of exactly its
 * size, so AddressSanitizer reports any read outside [base, base+len).
 *
 * The fuzz loop runs SLG_FUZZ_ITERS iterations (argv[1] wins; default
 * 20000) from seed SLG_FUZZ_SEED (default 1).  A failure prints the
 * iteration's seed and stream; `test_scanner 1 <seed>` replays that one. */
#include <errno.h>
#include <stdlib.h>

#include "summarylog_api.h"
#include "test_main.h"

/* ---- little helpers --------------------------------------------------------- */

static uint64_t get_le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static uint32_t get_le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static int all_zero(const unsigned char *p, uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

static int header_valid(const unsigned char *p) {
    return slg_masked_crc32c((const char *)p, 8) == get_le32(p + 8);
}

/* The record at q has a valid header whose record fits in [0, total). */
static int fitting_header(const unsigned char *buf, uint64_t total, uint64_t q) {
    if (q > total || total - q < SLG_HEADER_SIZE) return 0;
    if (!header_valid(buf + q)) return 0;
    uint64_t L = get_le64(buf + q);
    return total - q >= SLG_FRAME_OVERHEAD && L <= total - q - SLG_FRAME_OVERHEAD;
}

static int data_valid(const unsigned char *buf, uint64_t q, uint64_t L) {
    return slg_masked_crc32c((const char *)buf + q + 12, (size_t)L) == get_le32(buf + q + 12 + L);
}

/* Give a record at p a new length with a valid length CRC. */
static void set_length(unsigned char *p, uint64_t L) {
    put_le64(p, L);
    put_le32(p + 8, slg_masked_crc32c((const char *)p, 8));
}

static const char *status_name(int rc) {
    switch (rc) {
    case SLG_SCAN_SPANS_FULL: return "SPANS_FULL";
    case SLG_SCAN_NEED_MORE: return "NEED_MORE";
    case SLG_SCAN_END: return "END";
    case SLG_SCAN_TORN: return "TORN";
    case SLG_SCAN_ZERO_TAIL: return "ZERO_TAIL";
    default: return "?";
    }
}

/* ---- building streams ---------------------------------------------------------- */

#define MAX_RECS 64

typedef struct {
    unsigned char *b;
    uint64_t len, cap;
    int n;                  /* records framed */
    uint64_t off[MAX_RECS]; /* record starts */
    uint64_t plen[MAX_RECS];
} stream;

static void s_reserve(stream *s, uint64_t more) {
    if (s->len + more <= s->cap) return;
    uint64_t cap = s->cap ? s->cap : 256;
    while (cap < s->len + more) cap *= 2;
    s->b = realloc(s->b, (size_t)cap);
    if (!s->b) abort();
    s->cap = cap;
}

static void s_bytes(stream *s, const void *p, uint64_t n) {
    s_reserve(s, n);
    if (n) memcpy(s->b + s->len, p, (size_t)n);
    s->len += n;
}

static void s_zeros(stream *s, uint64_t n) {
    s_reserve(s, n);
    memset(s->b + s->len, 0, (size_t)n);
    s->len += n;
}

static void s_record(stream *s, const void *payload, uint64_t n) {
    s_reserve(s, n + 16);
    if (s->n < MAX_RECS) {
        s->off[s->n] = s->len;
        s->plen[s->n] = n;
        s->n++;
    }
    s->len += slg_frame((char *)s->b + s->len, payload, n);
}

static void s_random_record(stream *s, t_rng *r, uint64_t n) {
    unsigned char *p = xmalloc((size_t)n);
    rng_fill(r, p, (size_t)n);
    s_record(s, p, n);
    free(p);
}

static void s_free(stream *s) {
    free(s->b);
    memset(s, 0, sizeof *s);
}

/* ---- scanning drivers ---------------------------------------------------------- */

typedef struct {
    slg_span *spans;
    uint64_t ns, cs;
    slg_damage *dmg;
    uint64_t nd, cd;
    int status;
    uint64_t pos;
    uint64_t calls, full, need_more;
    int broken; /* the driver gave up (protocol violation) */
} result;

static void r_free(result *r) {
    free(r->spans);
    free(r->dmg);
    memset(r, 0, sizeof *r);
}

static void r_push(result *r, const slg_span *sp, uint64_t ns, const slg_damage *dm, uint64_t nd) {
    if (r->ns + ns > r->cs) {
        while (r->ns + ns > r->cs) r->cs = r->cs ? 2 * r->cs : 16;
        r->spans = realloc(r->spans, (size_t)r->cs * sizeof *r->spans);
        if (!r->spans) abort();
    }
    if (r->nd + nd > r->cd) {
        while (r->nd + nd > r->cd) r->cd = r->cd ? 2 * r->cd : 16;
        r->dmg = realloc(r->dmg, (size_t)r->cd * sizeof *r->dmg);
        if (!r->dmg) abort();
    }
    if (ns) memcpy(r->spans + r->ns, sp, (size_t)ns * sizeof *sp);
    if (nd) memcpy(r->dmg + r->nd, dm, (size_t)nd * sizeof *dm);
    r->ns += ns;
    r->nd += nd;
}

typedef struct {
    uint64_t window;      /* 0: one-shot, the whole buffer at base 0 every call */
    uint64_t max_spans;   /* 0: enough for anything */
    uint64_t max_damage;  /* 0: enough for anything */
    int unknown_end;      /* pass SLG_UNKNOWN_END rather than the total size */
    int no_verify;        /* state.verify_data = 0 */
} scan_opts;

/* Scan buf[0:total] to a final status.  In window mode each call gets
 * [state.pos, state.pos + w) and w doubles while NEED_MORE makes no progress
 * (a record longer than the window), as a chunked reader refills from pos. */
static void scan(const unsigned char *buf, uint64_t total, const scan_opts *o, result *r) {
    memset(r, 0, sizeof *r);
    r->status = -1;
    uint64_t ms = o->max_spans ? o->max_spans : total / 16 + 2;
    uint64_t md = o->max_damage ? o->max_damage : total + 2;
    slg_span *sp = xmalloc((size_t)ms * sizeof *sp);
    slg_damage *dm = xmalloc((size_t)md * sizeof *dm);
    slg_scan_state st;
    memset(&st, 0, sizeof st);
    st.verify_data = !o->no_verify;
    uint64_t w = o->window;
    uint64_t data_end = o->unknown_end ? SLG_UNKNOWN_END : total;
    /* the one-shot buffer: exactly total bytes */
    unsigned char *whole = NULL;
    if (!o->window) {
        whole = xmalloc((size_t)total);
        if (total) memcpy(whole, buf, (size_t)total);
    }
    for (;;) {
        if (r->calls > 4 * total + 64) {
            t_fail(__FILE__, __LINE__, "scanner makes no progress (pos %llu of %llu)",
                   (unsigned long long)st.pos, (unsigned long long)total);
            r->broken = 1;
            break;
        }
        uint64_t start = st.pos;
        if (!CHECK(start <= total)) {
            r->broken = 1;
            break;
        }
        uint64_t base, n;
        unsigned char *win;
        if (whole) {
            base = 0;
            n = total;
            win = whole;
        } else {
            base = start;
            n = total - start < w ? total - start : w;
            win = xmalloc((size_t)n);
            if (n) memcpy(win, buf + start, (size_t)n);
        }
        int at_end = base + n == total;
        uint64_t ns = 99, nd = 99;
        int rc = slg_scan(&st, (const char *)win, n, base, data_end, at_end, sp, ms, &ns, dm, md,
                          &nd);
        if (!whole) free(win);
        r->calls++;
        if (!CHECK(ns <= ms && nd <= md)) {
            r->broken = 1;
            break;
        }
        r_push(r, sp, ns, dm, nd);
        if (rc == SLG_SCAN_SPANS_FULL) {
            r->full++;
            if (!CHECK(ns == ms || nd == md)) {
                r->broken = 1;
                break;
            }
            continue;
        }
        if (rc == SLG_SCAN_NEED_MORE) {
            r->need_more++;
            if (!CHECK(!at_end)) {
                r->broken = 1;
                break;
            }
            if (st.pos == start && !whole) w = 2 * w + 1;
            else w = o->window;
            continue;
        }
        if (rc == SLG_SCAN_END || rc == SLG_SCAN_TORN || rc == SLG_SCAN_ZERO_TAIL) {
            CHECK(at_end);
            CHECK_EQ(st.resyncing, 0);
            r->status = rc;
            r->pos = st.pos;
            break;
        }
        t_fail(__FILE__, __LINE__, "slg_scan returned %d", rc);
        r->broken = 1;
        break;
    }
    free(whole);
    free(sp);
    free(dm);
}

static void scan_oneshot(const unsigned char *buf, uint64_t total, result *r) {
    scan_opts o = {0};
    scan(buf, total, &o, r);
}

static int same_result(const result *a, const result *b, const char *what) {
    const char *why = NULL;
    uint64_t i = 0;
    if (a->status != b->status) why = "status";
    else if (a->pos != b->pos) why = "final pos";
    else if (a->ns != b->ns) why = "span count";
    else if (a->nd != b->nd) why = "damage count";
    else {
        for (i = 0; i < a->ns && !why; i++)
            if (a->spans[i].offset != b->spans[i].offset ||
                a->spans[i].length != b->spans[i].length)
                why = "span";
        for (i = 0; i < a->nd && !why; i++)
            if (a->dmg[i].offset != b->dmg[i].offset || a->dmg[i].length != b->dmg[i].length ||
                a->dmg[i].kind != b->dmg[i].kind)
                why = "damage";
    }
    T_COUNT(t_checks);
    if (!why) return 1;
    t_fail(__FILE__, __LINE__,
           "%s differs from one-shot: %s (item %llu); status %s/%s pos %llu/%llu "
           "spans %llu/%llu damage %llu/%llu",
           what, why, (unsigned long long)(i ? i - 1 : 0), status_name(a->status),
           status_name(b->status), (unsigned long long)a->pos, (unsigned long long)b->pos,
           (unsigned long long)a->ns, (unsigned long long)b->ns, (unsigned long long)a->nd,
           (unsigned long long)b->nd);
    return 0;
}

static int same_spans(const result *a, const result *b, const char *what) {
    int ok = a->ns == b->ns;
    for (uint64_t i = 0; ok && i < a->ns; i++)
        ok = a->spans[i].offset == b->spans[i].offset && a->spans[i].length == b->spans[i].length;
    T_COUNT(t_checks);
    if (!ok)
        t_fail(__FILE__, __LINE__, "%s: spans differ from one-shot (%llu vs %llu spans)", what,
               (unsigned long long)a->ns, (unsigned long long)b->ns);
    return ok;
}

/* ---- the model: what a one-shot scan of a whole file must report ----------------
 * Walk the result from offset 0.  At each cursor the header there decides the
 * next item: a valid header whose record fits -> a span (or BAD_DATA_CRC
 * damage when the data CRC is wrong and verified); an invalid header ->
 * BAD_LENGTH_CRC damage (ZERO_FILL if all its bytes are zero); a valid
 * header whose record does not fit -> LENGTH_PAST_EOF damage.  A resync
 * damage ends at the first later offset holding a fitting header.  Items tile
 * [0, pos) with no gap or overlap; the status describes [pos, total). */
#define U(x) ((unsigned long long)(x))

static int model_check(const unsigned char *buf, uint64_t total, const result *r, int verify) {
    unsigned long long before = t_failures;
#define MFAIL(...)                                                                      \
    do {                                                                                \
        t_fail(__FILE__, __LINE__, __VA_ARGS__);                                        \
        return 0;                                                                       \
    } while (0)
    if (r->broken) MFAIL("scan did not finish");
    uint64_t cur = 0, i = 0, j = 0;
    while (i < r->ns || j < r->nd) {
        int take_span;
        if (i < r->ns && r->spans[i].offset >= 12 && r->spans[i].offset - 12 == cur) take_span = 1;
        else if (j < r->nd && r->dmg[j].offset == cur) take_span = 0;
        else
            MFAIL("no span or damage starts at offset %llu (next span %llu, next damage %llu)",
                  U(cur), U(i < r->ns ? r->spans[i].offset : 0),
                  U(j < r->nd ? r->dmg[j].offset : 0));
        if (take_span) {
            const slg_span *s = &r->spans[i++];
            if (!fitting_header(buf, total, cur)) MFAIL("span at %llu: no fitting header", U(cur));
            if (get_le64(buf + cur) != s->length)
                MFAIL("span at %llu: length %llu, header says %llu", U(cur), U(s->length),
                      U(get_le64(buf + cur)));
            if (verify && !data_valid(buf, cur, s->length))
                MFAIL("span at %llu has a bad data CRC", U(cur));
            cur += s->length + 16;
            continue;
        }
        const slg_damage *d = &r->dmg[j++];
        if (d->length == 0 || d->length > total - cur)
            MFAIL("damage at %llu: length %llu outside the data", U(cur), U(d->length));
        if (d->_pad != 0) MFAIL("damage _pad is %d", d->_pad);
        uint64_t end = cur + d->length;
        if (d->kind == SLG_DAMAGE_BAD_DATA_CRC) {
            if (!verify) MFAIL("BAD_DATA_CRC damage with verify_data = 0");
            if (!fitting_header(buf, total, cur) || get_le64(buf + cur) + 16 != d->length ||
                data_valid(buf, cur, d->length - 16))
                MFAIL("BAD_DATA_CRC damage at %llu is not a record with a bad data CRC", U(cur));
            cur = end;
            continue;
        }
        /* resync damage: what started it */
        if (total - cur < 12) MFAIL("resync damage at %llu within 12 bytes of the end", U(cur));
        int hv = header_valid(buf + cur);
        switch (d->kind) {
        case SLG_DAMAGE_BAD_LENGTH_CRC:
            if (hv) MFAIL("BAD_LENGTH_CRC damage at %llu but the length CRC is valid", U(cur));
            if (all_zero(buf + cur, d->length))
                MFAIL("BAD_LENGTH_CRC damage at %llu is all zero", U(cur));
            break;
        case SLG_DAMAGE_ZERO_FILL:
            if (!all_zero(buf + cur, d->length))
                MFAIL("ZERO_FILL damage at %llu is not all zero", U(cur));
            break;
        case SLG_DAMAGE_LENGTH_PAST_EOF:
            if (!hv || fitting_header(buf, total, cur))
                MFAIL("LENGTH_PAST_EOF damage at %llu: header does not claim too much", U(cur));
            break;
        default:
            MFAIL("damage at %llu has kind %d", U(cur), d->kind);
        }
        for (uint64_t q = cur + 1; q < end; q++)
            if (fitting_header(buf, total, q))
                MFAIL("damage [%llu, %llu) skips the valid record at %llu", U(cur), U(end), U(q));
        if (end < total) {
            if (!fitting_header(buf, total, end))
                MFAIL("damage [%llu, %llu) does not end at a valid record", U(cur), U(end));
        } else if (d->kind != SLG_DAMAGE_BAD_LENGTH_CRC) {
            MFAIL("damage of kind %d runs to the end of the data", d->kind);
        }
        cur = end;
    }
    if (cur != r->pos) MFAIL("items end at %llu but pos is %llu", U(cur), U(r->pos));
    uint64_t rem = total - cur;
    switch (r->status) {
    case SLG_SCAN_END:
        if (rem) MFAIL("END with %llu bytes left", U(rem));
        break;
    case SLG_SCAN_ZERO_TAIL:
        if (!rem || !all_zero(buf + cur, rem))
            MFAIL("ZERO_TAIL at %llu: tail not all zero", U(cur));
        break;
    case SLG_SCAN_TORN:
        if (!rem) MFAIL("TORN with nothing left");
        if (rem < 12) {
            if (all_zero(buf + cur, rem)) MFAIL("TORN tail of zeros (want ZERO_TAIL)");
            break;
        }
        if (!header_valid(buf + cur) || fitting_header(buf, total, cur))
            MFAIL("TORN at %llu: not a header claiming past the end", U(cur));
        for (uint64_t q = cur + 1; q + 12 <= total; q++)
            if (fitting_header(buf, total, q))
                MFAIL("TORN at %llu hides the valid record at %llu", U(cur), U(q));
        break;
    default:
        MFAIL("final status %d", r->status);
    }
#undef MFAIL
    return t_failures == before;
}

/* ---- expected results for hand-made cases ---------------------------------------- */

static void expect_spans_except(const stream *s, const result *r, int skip) {
    uint64_t k = 0;
    for (int i = 0; i < s->n; i++) {
        if (i == skip) continue;
        if (!CHECK(k < r->ns)) return;
        CHECK_EQ(r->spans[k].offset, s->off[i] + 12);
        CHECK_EQ(r->spans[k].length, s->plen[i]);
        k++;
    }
    CHECK_EQ(r->ns, k);
}

static void expect_one_damage(const result *r, uint64_t off, uint64_t len, int kind) {
    if (!CHECK_EQ(r->nd, 1)) return;
    CHECK_EQ(r->dmg[0].offset, off);
    CHECK_EQ(r->dmg[0].length, len);
    CHECK_EQ(r->dmg[0].kind, kind);
}

/* Scan one-shot, check against the model, and compare a few chunked runs. */
static void scan_all_ways(const unsigned char *buf, uint64_t total, result *r) {
    scan_oneshot(buf, total, r);
    model_check(buf, total, r, 1);
    static const uint64_t windows[] = {1, 5, 12, 13, 16, 17, 64, 1000};
    for (size_t k = 0; k < sizeof windows / sizeof windows[0]; k++) {
        scan_opts o = {.window = windows[k]};
        result c;
        scan(buf, total, &o, &c);
        if (!same_result(&c, r, "chunked"))
            fprintf(stderr, "    window %llu\n", (unsigned long long)windows[k]);
        r_free(&c);
        o.max_spans = o.max_damage = 1;
        scan(buf, total, &o, &c);
        if (!same_result(&c, r, "chunked, 1-entry arrays"))
            fprintf(stderr, "    window %llu\n", (unsigned long long)windows[k]);
        r_free(&c);
    }
}

static void mixed_stream(stream *s, t_rng *r) {
    static const uint64_t lens[] = {0, 5, 24, 0, 40, 1, 300, 7, 0, 64};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) s_random_record(s, r, lens[i]);
}

/* ---- tests --------------------------------------------------------------------- */

static void test_clean_stream(void) {
    t_rng r;
    rng_seed(&r, 10);
    stream s = {0};
    static const uint64_t lens[] = {0, 1, 24, 100, 3000, 7, 0};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) s_random_record(&s, &r, lens[i]);
    result res;
    scan_all_ways(s.b, s.len, &res);
    CHECK_EQ(res.status, SLG_SCAN_END);
    CHECK_EQ(res.pos, s.len);
    CHECK_EQ(res.nd, 0);
    expect_spans_except(&s, &res, -1);
    r_free(&res);
    s_free(&s);

    /* nothing at all */
    unsigned char one = 0;
    slg_scan_state st = {0};
    st.verify_data = 1;
    slg_span sp[1];
    slg_damage dm[1];
    uint64_t ns = 7, nd = 7;
    CHECK_EQ(slg_scan(&st, (const char *)&one, 0, 0, 0, 1, sp, 1, &ns, dm, 1, &nd), SLG_SCAN_END);
    CHECK_EQ(ns, 0);
    CHECK_EQ(nd, 0);
    CHECK_EQ(st.pos, 0);
    CHECK_EQ(slg_scan(&st, (const char *)&one, 0, 0, SLG_UNKNOWN_END, 0, sp, 1, &ns, dm, 1, &nd),
             SLG_SCAN_NEED_MORE);
}

static void test_forty_byte_record(void) {
    static const unsigned char rec[40] = {
        0x18, 0, 0, 0, 0, 0, 0, 0, 0xa3, 0x7f, 0x4b, 0x22, 0x09, 0x00, 0x00, 0x80, 0x38, 0x99,
        0xd6, 0xd7, 0x41, 0x1a, 0x0d, 0x62, 0x72, 0x61, 0x69, 0x6e, 0x2e, 0x45, 0x76, 0x65,
        0x6e, 0x74, 0x3a, 0x32, 0x12, 0x4b, 0x36, 0xab};
    result res;
    scan_all_ways(rec, 40, &res);
    CHECK_EQ(res.status, SLG_SCAN_END);
    if (CHECK_EQ(res.ns, 1)) {
        CHECK_EQ(res.spans[0].offset, 12);
        CHECK_EQ(res.spans[0].length, 24);
    }
    r_free(&res);
}

static void test_every_truncation(void) {
    t_rng r;
    rng_seed(&r, 11);
    stream s = {0};
    static const uint64_t lens[] = {0, 5, 24, 0, 40, 1};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) s_random_record(&s, &r, lens[i]);
    int seen[6] = {0};
    for (uint64_t t = 0; t <= s.len; t++) {
        int k = 0; /* records entirely before t */
        while (k < s.n && s.off[k] + 16 + s.plen[k] <= t) k++;
        uint64_t b = k < s.n ? s.off[k] : s.len;
        int want;
        if (t == b) want = SLG_SCAN_END;
        else if (t - b < 12 && all_zero(s.b + b, t - b)) want = SLG_SCAN_ZERO_TAIL;
        else want = SLG_SCAN_TORN;
        seen[want]++;
        result res;
        scan_all_ways(s.b, t, &res);
        int ok = CHECK_EQ(res.status, want);
        ok &= CHECK_EQ(res.pos, want == SLG_SCAN_END ? t : b);
        ok &= CHECK_EQ(res.nd, 0);
        ok &= CHECK_EQ(res.ns, (uint64_t)k);
        for (int i = 0; i < k && i < (int)res.ns; i++) {
            ok &= CHECK_EQ(res.spans[i].offset, s.off[i] + 12);
            ok &= CHECK_EQ(res.spans[i].length, s.plen[i]);
        }
        if (!ok) fprintf(stderr, "    truncated at %llu of %llu\n", (unsigned long long)t,
                         (unsigned long long)s.len);
        r_free(&res);
    }
    /* the stream exercised all three outcomes (zero-length records' headers
     * start with 8 zero bytes, so cutting inside one leaves a zero tail) */
    CHECK(seen[SLG_SCAN_END] == s.n + 1);
    CHECK(seen[SLG_SCAN_TORN] > 0);
    CHECK(seen[SLG_SCAN_ZERO_TAIL] > 0);
    s_free(&s);
}

static void test_zero_tail(void) {
    t_rng r;
    rng_seed(&r, 12);
    static const uint64_t zs[] = {1, 5, 11, 12, 13, 16, 17, 100, 4096};
    for (size_t z = 0; z < sizeof zs / sizeof zs[0]; z++) {
        stream s = {0};
        mixed_stream(&s, &r);
        uint64_t end = s.len;
        s_zeros(&s, zs[z]);
        result res;
        scan_all_ways(s.b, s.len, &res);
        CHECK_EQ(res.status, SLG_SCAN_ZERO_TAIL);
        CHECK_EQ(res.pos, end);
        CHECK_EQ(res.nd, 0);
        expect_spans_except(&s, &res, -1);
        r_free(&res);

        /* zeros followed by one stray byte are not a zero tail */
        s_bytes(&s, "\x01", 1);
        scan_all_ways(s.b, s.len, &res);
        if (zs[z] + 1 < 12) {
            CHECK_EQ(res.status, SLG_SCAN_TORN);
            CHECK_EQ(res.pos, end);
            CHECK_EQ(res.nd, 0);
        } else {
            CHECK_EQ(res.status, SLG_SCAN_END);
            expect_one_damage(&res, end, zs[z] + 1, SLG_DAMAGE_BAD_LENGTH_CRC);
        }
        r_free(&res);
        s_free(&s);

        /* zeros between records: ZERO_FILL damage, every record kept */
        stream m = {0};
        s_random_record(&m, &r, 30);
        s_random_record(&m, &r, 0);
        uint64_t hole = m.len;
        s_zeros(&m, zs[z]);
        s_random_record(&m, &r, 9);
        s_random_record(&m, &r, 0);
        scan_all_ways(m.b, m.len, &res);
        CHECK_EQ(res.status, SLG_SCAN_END);
        expect_one_damage(&res, hole, zs[z], SLG_DAMAGE_ZERO_FILL);
        expect_spans_except(&m, &res, -1);
        r_free(&res);
        s_free(&m);
    }
    /* a file of nothing but zeros */
    unsigned char zeros[64] = {0};
    for (uint64_t n = 1; n <= 64; n++) {
        result res;
        scan_all_ways(zeros, n, &res);
        CHECK_EQ(res.status, SLG_SCAN_ZERO_TAIL);
        CHECK_EQ(res.pos, 0);
        CHECK_EQ(res.ns + res.nd, 0);
        r_free(&res);
    }
}

static void test_bad_length_crc(void) {
    t_rng r;
    rng_seed(&r, 13);
    stream s = {0};
    mixed_stream(&s, &r);
    static const int bytes[] = {0, 3, 7, 8, 11};
    for (int k = 0; k < s.n; k++) {
        for (size_t bi = 0; bi < sizeof bytes / sizeof bytes[0]; bi++) {
            unsigned char *b = xmalloc((size_t)s.len);
            memcpy(b, s.b, (size_t)s.len);
            b[s.off[k] + (uint64_t)bytes[bi]] ^= (unsigned char)(1u << rng_below(&r, 8));
            uint64_t next = k + 1 < s.n ? s.off[k + 1] : s.len;
            result res;
            scan_all_ways(b, s.len, &res);
            int ok = CHECK_EQ(res.status, SLG_SCAN_END);
            ok &= CHECK_EQ(res.pos, s.len);
            if (CHECK_EQ(res.nd, 1)) {
                ok &= CHECK_EQ(res.dmg[0].offset, s.off[k]);
                ok &= CHECK_EQ(res.dmg[0].length, next - s.off[k]);
                ok &= CHECK_EQ(res.dmg[0].kind, SLG_DAMAGE_BAD_LENGTH_CRC);
            } else {
                ok = 0;
            }
            expect_spans_except(&s, &res, k);
            if (!ok) fprintf(stderr, "    record %d, header byte %d\n", k, bytes[bi]);
            r_free(&res);
            free(b);
        }
    }
    /* junk between records: resync at the next record, junk reported */
    static const uint64_t junk[] = {1, 2, 7, 11, 12, 13, 100, 1000};
    for (size_t jz = 0; jz < sizeof junk / sizeof junk[0]; jz++) {
        stream m = {0};
        s_random_record(&m, &r, 20);
        uint64_t at = m.len;
        unsigned char *g = xmalloc((size_t)junk[jz]);
        rng_fill(&r, g, (size_t)junk[jz]);
        g[0] |= 1; /* not a zero fill */
        s_bytes(&m, g, junk[jz]);
        free(g);
        s_random_record(&m, &r, 3);
        s_random_record(&m, &r, 0);
        result res;
        scan_all_ways(m.b, m.len, &res);
        CHECK_EQ(res.status, SLG_SCAN_END);
        expect_one_damage(&res, at, junk[jz], SLG_DAMAGE_BAD_LENGTH_CRC);
        expect_spans_except(&m, &res, -1);
        r_free(&res);
        s_free(&m);
    }
    s_free(&s);
}

static void test_bad_data_crc(void) {
    t_rng r;
    rng_seed(&r, 14);
    stream s = {0};
    mixed_stream(&s, &r);
    for (int k = 0; k < s.n; k++) {
        /* a payload byte when there is one, else a data CRC byte */
        for (int where = 0; where < 2; where++) {
            if (where == 0 && s.plen[k] == 0) continue;
            unsigned char *b = xmalloc((size_t)s.len);
            memcpy(b, s.b, (size_t)s.len);
            uint64_t at = where == 0 ? s.off[k] + 12 + rng_below(&r, s.plen[k])
                                     : s.off[k] + 12 + s.plen[k] + rng_below(&r, 4);
            b[at] ^= (unsigned char)(1u << rng_below(&r, 8));
            result res;
            scan_all_ways(b, s.len, &res);
            CHECK_EQ(res.status, SLG_SCAN_END);
            CHECK_EQ(res.pos, s.len);
            expect_one_damage(&res, s.off[k], s.plen[k] + 16, SLG_DAMAGE_BAD_DATA_CRC);
            expect_spans_except(&s, &res, k);
            r_free(&res);

            /* verify_data = 0 keeps the record and reports nothing */
            scan_opts o = {.no_verify = 1};
            scan(b, s.len, &o, &res);
            CHECK_EQ(res.status, SLG_SCAN_END);
            CHECK_EQ(res.nd, 0);
            expect_spans_except(&s, &res, -1);
            r_free(&res);
            free(b);
        }
    }
    s_free(&s);
}

static void test_length_past_eof(void) {
    t_rng r;
    rng_seed(&r, 15);
    stream s = {0};
    mixed_stream(&s, &r);
    for (int k = 0; k < s.n; k++) {
        uint64_t p = s.off[k];
        uint64_t lens[] = {
            1ull << 63,
            UINT64_MAX,
            UINT64_MAX - 15,
            UINT64_MAX - 16 - p + 1, /* p + 16 + L wraps to exactly 0 */
            s.len - p - 16 + 1,      /* one byte past the end */
            1ull << 32,
        };
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            unsigned char *b = xmalloc((size_t)s.len);
            memcpy(b, s.b, (size_t)s.len);
            set_length(b + p, lens[li]);
            result res;
            scan_all_ways(b, s.len, &res);
            int ok;
            if (k + 1 < s.n) {
                /* good records follow: damage up to the next one, then resync */
                ok = CHECK_EQ(res.status, SLG_SCAN_END);
                ok &= CHECK_EQ(res.pos, s.len);
                if (CHECK_EQ(res.nd, 1)) {
                    ok &= CHECK_EQ(res.dmg[0].offset, p);
                    ok &= CHECK_EQ(res.dmg[0].length, s.off[k + 1] - p);
                    ok &= CHECK_EQ(res.dmg[0].kind, SLG_DAMAGE_LENGTH_PAST_EOF);
                } else {
                    ok = 0;
                }
            } else {
                /* nothing valid after it: a torn final record */
                ok = CHECK_EQ(res.status, SLG_SCAN_TORN);
                ok &= CHECK_EQ(res.pos, p);
                ok &= CHECK_EQ(res.nd, 0);
            }
            expect_spans_except(&s, &res, k);
            if (!ok) fprintf(stderr, "    record %d, length %llu\n", k, U(lens[li]));
            r_free(&res);

            /* a follower that does not know the end waits for more bytes,
             * with pos at the record start, until it is told it has all */
            slg_scan_state st = {0};
            st.verify_data = 1;
            slg_span sp[MAX_RECS];
            slg_damage dm[4];
            uint64_t ns, nd;
            int rc = slg_scan(&st, (const char *)b, s.len, 0, SLG_UNKNOWN_END, 0, sp, MAX_RECS,
                              &ns, dm, 4, &nd);
            CHECK_EQ(rc, SLG_SCAN_NEED_MORE);
            if (lens[li] <= UINT64_MAX - 16 - p) {
                CHECK_EQ(st.pos, p);
                CHECK_EQ(ns, (uint64_t)k);
                CHECK_EQ(nd, 0);
            } else if (k + 1 < s.n) {
                /* the record's end overflows u64, so it cannot exist anywhere:
                 * damage at once, and the records after it */
                CHECK_EQ(ns, (uint64_t)s.n - 1);
                if (CHECK_EQ(nd, 1)) {
                    CHECK_EQ(dm[0].offset, p);
                    CHECK_EQ(dm[0].kind, SLG_DAMAGE_LENGTH_PAST_EOF);
                }
            } else {
                CHECK_EQ(ns, (uint64_t)k);
                CHECK_EQ(nd, 0);
                CHECK_EQ(st.resyncing, 1);
            }
            free(b);
        }
    }
    /* a length that fits the file but not this record: the record claims the
     * rest of the file, its data CRC fails, and that is all there is */
    {
        unsigned char *b = xmalloc((size_t)s.len);
        memcpy(b, s.b, (size_t)s.len);
        set_length(b + s.off[1], s.len - s.off[1] - 16);
        result res;
        scan_all_ways(b, s.len, &res);
        CHECK_EQ(res.status, SLG_SCAN_END);
        expect_one_damage(&res, s.off[1], s.len - s.off[1], SLG_DAMAGE_BAD_DATA_CRC);
        CHECK_EQ(res.ns, 1);
        r_free(&res);
        free(b);
    }
    s_free(&s);
}

/* A stream with one of everything, scanned in windows of every size. */
static void build_damaged_stream(stream *s, t_rng *r) {
    s_random_record(s, r, 10);
    s_random_record(s, r, 0);
    uint64_t a = s->len;
    s_random_record(s, r, 33); /* bad length CRC */
    s->b[a + 9] ^= 0x10;
    s_random_record(s, r, 5);
    uint64_t c = s->len;
    s_random_record(s, r, 70); /* bad data CRC */
    s->b[c + 40] ^= 0x01;
    uint64_t d = s->len;
    s_random_record(s, r, 20); /* length 2^63 */
    set_length(s->b + d, 1ull << 63);
    s_random_record(s, r, 2);
    s_zeros(s, 37); /* zero fill */
    s_random_record(s, r, 0);
    unsigned char junk[9];
    rng_fill(r, junk, sizeof junk);
    junk[0] |= 0x80;
    s_bytes(s, junk, sizeof junk); /* junk */
    s_random_record(s, r, 300);
    {
        /* a record whose payload is itself a framed record */
        unsigned char inner[16 + 12];
        unsigned char p[12];
        rng_fill(r, p, sizeof p);
        slg_frame((char *)inner, (const char *)p, sizeof p);
        s_record(s, inner, sizeof inner);
    }
    s_random_record(s, r, 8);
    uint64_t t = s->len;
    s_random_record(s, r, 50); /* torn final record */
    s->len = t + 30;
}

static void test_chunked_equals_oneshot(void) {
    t_rng r;
    rng_seed(&r, 16);
    stream s = {0};
    build_damaged_stream(&s, &r);
    result one;
    scan_oneshot(s.b, s.len, &one);
    model_check(s.b, s.len, &one, 1);
    CHECK_EQ(one.status, SLG_SCAN_TORN);
    CHECK_EQ(one.nd, 5);
    for (uint64_t w = 1; w <= s.len + 1; w++) {
        scan_opts o = {.window = w};
        result c;
        scan(s.b, s.len, &o, &c);
        if (!same_result(&c, &one, "chunked")) {
            fprintf(stderr, "    window %llu\n", (unsigned long long)w);
            r_free(&c);
            break;
        }
        r_free(&c);
        /* a follower without a known end finds the same records */
        o.unknown_end = 1;
        scan(s.b, s.len, &o, &c);
        if (!same_spans(&c, &one, "chunked, unknown end")) {
            fprintf(stderr, "    window %llu\n", (unsigned long long)w);
            r_free(&c);
            break;
        }
        r_free(&c);
    }
    r_free(&one);
    s_free(&s);
}

static void test_small_output_arrays(void) {
    t_rng r;
    rng_seed(&r, 17);
    stream s = {0};
    build_damaged_stream(&s, &r);
    result one;
    scan_oneshot(s.b, s.len, &one);
    static const uint64_t sizes[][2] = {{1, 1}, {1, 100}, {100, 1}, {2, 3}, {3, 2}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        for (int chunked = 0; chunked < 2; chunked++) {
            scan_opts o = {.window = chunked ? 23 : 0, .max_spans = sizes[k][0],
                           .max_damage = sizes[k][1]};
            result c;
            scan(s.b, s.len, &o, &c);
            if (!same_result(&c, &one, "small arrays"))
                fprintf(stderr, "    max_spans %llu max_damage %llu chunked %d\n",
                        (unsigned long long)sizes[k][0], (unsigned long long)sizes[k][1], chunked);
            /* SLG_SCAN_SPANS_FULL happened, and resuming worked (a 23-byte
             * window holds at most one record, so 2- and 3-entry arrays
             * only fill up one-shot) */
            if (!chunked || sizes[k][0] == 1 || sizes[k][1] == 1) CHECK(c.full > 0);
            r_free(&c);
        }
    }
    /* exactly: max_spans = 1 over a clean stream returns one span per call */
    stream m = {0};
    for (int i = 0; i < 5; i++) s_random_record(&m, &r, (uint64_t)i * 3);
    slg_scan_state st = {0};
    st.verify_data = 1;
    slg_span sp[1];
    slg_damage dm[1];
    for (int i = 0; i < 5; i++) {
        uint64_t ns = 0, nd = 0;
        int rc = slg_scan(&st, (const char *)m.b, m.len, 0, m.len, 1, sp, 1, &ns, dm, 1, &nd);
        CHECK_EQ(rc, SLG_SCAN_SPANS_FULL);
        CHECK_EQ(ns, 1);
        CHECK_EQ(sp[0].offset, m.off[i] + 12);
        CHECK_EQ(st.pos, m.off[i] + 16 + m.plen[i]);
    }
    uint64_t ns = 9, nd = 9;
    CHECK_EQ(slg_scan(&st, (const char *)m.b, m.len, 0, m.len, 1, sp, 1, &ns, dm, 1, &nd),
             SLG_SCAN_END);
    CHECK_EQ(ns, 0);
    r_free(&one);
    s_free(&s);
    s_free(&m);
}

static void test_invalid_arguments(void) {
    char buf[32] = {0};
    slg_span sp[2];
    slg_damage dm[2];
    uint64_t ns = 5, nd = 5;
    slg_scan_state st = {0};
    st.verify_data = 1;
    st.pos = 3;
    CHECK_EQ(slg_scan(&st, buf, 10, 4, SLG_UNKNOWN_END, 0, sp, 2, &ns, dm, 2, &nd), -EINVAL);
    CHECK_EQ(ns, 0);
    CHECK_EQ(nd, 0);
    st.pos = 15;
    CHECK_EQ(slg_scan(&st, buf, 10, 4, SLG_UNKNOWN_END, 0, sp, 2, &ns, dm, 2, &nd), -EINVAL);
    st.pos = 14; /* pos == base + len is fine */
    CHECK_EQ(slg_scan(&st, buf, 10, 4, SLG_UNKNOWN_END, 0, sp, 2, &ns, dm, 2, &nd),
             SLG_SCAN_NEED_MORE);
    st.pos = 0;
    CHECK_EQ(slg_scan(&st, buf, 10, 0, SLG_UNKNOWN_END, 0, sp, 0, &ns, dm, 2, &nd), -EINVAL);
    CHECK_EQ(slg_scan(&st, buf, 10, 0, SLG_UNKNOWN_END, 0, sp, 2, &ns, dm, 0, &nd), -EINVAL);
    CHECK_EQ(st.pos, 0);
}

/* A file growing a few bytes at a time; each look treats the current size as
 * the end (as follow() does).  Never any damage, pos always at a record
 * start, and in the end every record. */
static void test_growing_file(void) {
    t_rng r;
    rng_seed(&r, 18);
    stream s = {0};
    for (int i = 0; i < 40; i++) s_random_record(&s, &r, rng_below(&r, 4) ? rng_below(&r, 90) : 0);
    slg_scan_state st = {0};
    st.verify_data = 1;
    slg_span sp[8];
    slg_damage dm[8];
    uint64_t got = 0, size = 0;
    int bad = 0;
    while (size < s.len && !bad) {
        size += 1 + rng_below(&r, 7);
        if (size > s.len) size = s.len;
        for (;;) {
            uint64_t n = size - st.pos, ns, nd;
            char *win = xmalloc((size_t)n);
            memcpy(win, s.b + st.pos, (size_t)n);
            int rc = slg_scan(&st, win, n, st.pos, size, 1, sp, 8, &ns, dm, 8, &nd);
            free(win);
            for (uint64_t i = 0; i < ns; i++, got++) {
                bad |= !CHECK_EQ(sp[i].offset, s.off[got] + 12);
                bad |= !CHECK_EQ(sp[i].length, s.plen[got]);
            }
            bad |= !CHECK_EQ(nd, 0);
            if (rc == SLG_SCAN_SPANS_FULL) continue;
            bad |= !CHECK(rc == SLG_SCAN_END || rc == SLG_SCAN_TORN || rc == SLG_SCAN_ZERO_TAIL);
            bad |= !CHECK_EQ(st.pos, got < (uint64_t)s.n ? s.off[got] : s.len);
            break;
        }
        if (bad) fprintf(stderr, "    file size %llu\n", (unsigned long long)size);
    }
    CHECK_EQ(got, (uint64_t)s.n);
    s_free(&s);
}

/* ---- fuzz -------------------------------------------------------------------------- */

static void fuzz_build(stream *s, t_rng *r) {
    int n = (int)rng_below(r, 13);
    for (int i = 0; i < n; i++) {
        uint64_t len;
        switch (rng_below(r, 8)) {
        case 0: len = 0; break;
        case 1: len = rng_below(r, 2000); break;
        default: len = rng_below(r, 64); break;
        }
        switch (rng_below(r, 6)) {
        case 0: { /* zero payload */
            unsigned char *z = calloc(1, (size_t)len + 1);
            s_record(s, z, len);
            free(z);
            break;
        }
        case 1: { /* payload holding framed records: valid headers inside records */
            stream inner = {0};
            int m = 1 + (int)rng_below(r, 3);
            for (int k = 0; k < m; k++) s_random_record(&inner, r, rng_below(r, 20));
            s_record(s, inner.b, inner.len);
            s_free(&inner);
            break;
        }
        default: s_random_record(s, r, len); break;
        }
    }
}

static uint64_t pick_pos(stream *s, t_rng *r) {
    /* a record start half the time (offsets can be stale after edits) */
    if (s->n && rng_below(r, 2)) {
        uint64_t p = s->off[rng_below(r, (uint64_t)s->n)];
        if (p < s->len) return p;
    }
    return rng_below(r, s->len + 1);
}

static void fuzz_mutate(stream *s, t_rng *r) {
    s_reserve(s, 1); /* never a NULL buffer, even for an empty stream */
    int m = (int)rng_below(r, 5);
    for (int i = 0; i < m; i++) {
        uint64_t p = pick_pos(s, r);
        switch (rng_below(r, 10)) {
        case 0: /* bit flip */
            if (p < s->len) s->b[p] ^= (unsigned char)(1u << rng_below(r, 8));
            break;
        case 1: /* byte overwrite */
            if (p < s->len) s->b[p] = (unsigned char)rng_next(r);
            break;
        case 2: /* truncate */
            s->len = p;
            break;
        case 3: { /* zero-fill a range */
            uint64_t n = rng_below(r, 4) ? 1 + rng_below(r, 64) : s->len;
            if (n > s->len - p) n = s->len - p;
            memset(s->b + p, 0, (size_t)n);
            break;
        }
        case 4: { /* insert random bytes */
            uint64_t n = 1 + rng_below(r, 32);
            s_reserve(s, n);
            memmove(s->b + p + n, s->b + p, (size_t)(s->len - p));
            rng_fill(r, s->b + p, (size_t)n);
            if (rng_below(r, 3) == 0) memset(s->b + p, 0, (size_t)n);
            s->len += n;
            break;
        }
        case 5: { /* delete a range */
            uint64_t n = 1 + rng_below(r, 32);
            if (n > s->len - p) n = s->len - p;
            memmove(s->b + p, s->b + p + n, (size_t)(s->len - p - n));
            s->len -= n;
            break;
        }
        case 6:
        case 7: { /* a length with a valid length CRC: huge, just past the end, or wrong */
            if (s->len - p < 12) break;
            uint64_t L;
            switch (rng_below(r, 7)) {
            case 0: L = 1ull << 63; break;
            case 1: L = UINT64_MAX - rng_below(r, 20); break;
            case 2: L = UINT64_MAX - 16 - p + 1 - rng_below(r, 3); break;
            case 3: L = s->len - p >= 16 ? s->len - p - 16 + rng_below(r, 3) : 0; break;
            case 4: L = rng_next(r); break;
            case 5: L = rng_below(r, s->len); break;
            default: L = get_le64(s->b + p) + rng_below(r, 9) - 4; break;
            }
            set_length(s->b + p, L);
            break;
        }
        case 8: { /* append a zero tail */
            s_zeros(s, 1 + rng_below(r, 100));
            break;
        }
        default: { /* duplicate a slice (often a whole record) elsewhere */
            uint64_t q = pick_pos(s, r);
            uint64_t n = rng_below(r, 80);
            if (n > s->len - q) n = s->len - q;
            unsigned char *tmp = xmalloc((size_t)n);
            if (n) memcpy(tmp, s->b + q, (size_t)n);
            s_reserve(s, n);
            memmove(s->b + p + n, s->b + p, (size_t)(s->len - p));
            if (n) memcpy(s->b + p, tmp, (size_t)n);
            s->len += n;
            free(tmp);
            break;
        }
        }
    }
}

static void dump_stream(const unsigned char *b, uint64_t n) {
    fprintf(stderr, "    stream (%llu bytes):", (unsigned long long)n);
    for (uint64_t i = 0; i < n && i < 2048; i++)
        fprintf(stderr, "%s%02x", i % 32 ? "" : "\n      ", b[i]);
    fprintf(stderr, "%s\n", n > 2048 ? " ..." : "");
}

/* What the fuzz cases ran into, to show the loop is not vacuous. */
static uint64_t fz_status[6], fz_kind[5], fz_spans, fz_bytes, fz_calls;

/* One fuzz case; returns 0 on a failed check. */
static int fuzz_one(uint64_t seed) {
    unsigned long long before = t_failures;
    t_rng r;
    rng_seed(&r, seed);
    stream s = {0};
    fuzz_build(&s, &r);
    fuzz_mutate(&s, &r);
    const unsigned char *b = s.b ? s.b : (const unsigned char *)"";
    uint64_t total = s.len;

    result one;
    scan_oneshot(b, total, &one);
    model_check(b, total, &one, 1);
    if (one.status >= 0 && one.status < 6) fz_status[one.status]++;
    for (uint64_t d = 0; d < one.nd; d++)
        if (one.dmg[d].kind > 0 && one.dmg[d].kind < 5) fz_kind[one.dmg[d].kind]++;
    fz_spans += one.ns;
    fz_bytes += total;

    result c;
    scan_opts o = {.unknown_end = 1};
    scan(b, total, &o, &c); /* unknown end, but told it is at the end */
    same_result(&c, &one, "one-shot, unknown end");
    r_free(&c);

    o = (scan_opts){.max_spans = 1 + rng_below(&r, 3), .max_damage = 1 + rng_below(&r, 3)};
    scan(b, total, &o, &c);
    same_result(&c, &one, "one-shot, small arrays");
    r_free(&c);

    uint64_t w = rng_below(&r, 4) ? 1 + rng_below(&r, 64) : 1 + rng_below(&r, total + 1);
    o = (scan_opts){.window = w};
    if (rng_below(&r, 2)) {
        o.max_spans = 1 + rng_below(&r, 4);
        o.max_damage = 1 + rng_below(&r, 4);
    }
    scan(b, total, &o, &c);
    fz_calls += c.calls;
    if (!same_result(&c, &one, "chunked"))
        fprintf(stderr, "    window %llu, max_spans %llu, max_damage %llu\n",
                (unsigned long long)w, (unsigned long long)o.max_spans,
                (unsigned long long)o.max_damage);
    r_free(&c);

    o = (scan_opts){.window = w, .unknown_end = 1};
    scan(b, total, &o, &c);
    if (!same_spans(&c, &one, "chunked, unknown end"))
        fprintf(stderr, "    window %llu\n", (unsigned long long)w);
    r_free(&c);

    /* verify_data = 0: bad-data-CRC records become spans, nothing else moves */
    o = (scan_opts){.no_verify = 1};
    scan(b, total, &o, &c);
    model_check(b, total, &c, 0);
    {
        uint64_t i = 0, k = 0, dk = 0;
        int ok = 1;
        for (uint64_t d = 0; d < one.nd; d++) {
            const slg_damage *x = &one.dmg[d];
            if (x->kind != SLG_DAMAGE_BAD_DATA_CRC) {
                ok &= dk < c.nd && c.dmg[dk].offset == x->offset &&
                      c.dmg[dk].length == x->length && c.dmg[dk].kind == x->kind;
                dk++;
                continue;
            }
            /* the spans before it, then it as a span */
            while (i < one.ns && one.spans[i].offset < x->offset) {
                ok &= k < c.ns && c.spans[k].offset == one.spans[i].offset;
                i++, k++;
            }
            ok &= k < c.ns && c.spans[k].offset == x->offset + 12 &&
                  c.spans[k].length == x->length - 16;
            k++;
        }
        while (i < one.ns) {
            ok &= k < c.ns && c.spans[k].offset == one.spans[i].offset;
            i++, k++;
        }
        ok &= k == c.ns && dk == c.nd && c.status == one.status && c.pos == one.pos;
        if (!CHECK(ok)) fprintf(stderr, "    verify_data = 0 disagrees with verify_data = 1\n");
    }
    r_free(&c);

    int ok = t_failures == before;
    if (!ok) dump_stream(b, total);
    r_free(&one);
    s_free(&s);
    return ok;
}

static uint64_t fuzz_iters, fuzz_seed;

static void test_fuzz(void) {
    for (uint64_t it = 0; it < fuzz_iters; it++) {
        uint64_t seed = fuzz_seed + it;
        if (!fuzz_one(seed)) {
            fprintf(stderr, "    fuzz case failed: replay with `test_scanner 1 %llu`\n",
                    (unsigned long long)seed);
            return;
        }
    }
    printf("  fuzz: %llu cases from seed %llu: %llu bytes, %llu spans, %llu chunked calls\n"
           "        END %llu, TORN %llu, ZERO_TAIL %llu; damage: bad length CRC %llu, "
           "bad data CRC %llu, length past EOF %llu, zero fill %llu\n",
           (unsigned long long)fuzz_iters, (unsigned long long)fuzz_seed,
           (unsigned long long)fz_bytes, (unsigned long long)fz_spans,
           (unsigned long long)fz_calls, (unsigned long long)fz_status[SLG_SCAN_END],
           (unsigned long long)fz_status[SLG_SCAN_TORN],
           (unsigned long long)fz_status[SLG_SCAN_ZERO_TAIL],
           (unsigned long long)fz_kind[SLG_DAMAGE_BAD_LENGTH_CRC],
           (unsigned long long)fz_kind[SLG_DAMAGE_BAD_DATA_CRC],
           (unsigned long long)fz_kind[SLG_DAMAGE_LENGTH_PAST_EOF],
           (unsigned long long)fz_kind[SLG_DAMAGE_ZERO_FILL]);
    if (fuzz_iters >= 1000) {
        /* enough cases to have met every outcome */
        for (int k = SLG_SCAN_END; k <= SLG_SCAN_ZERO_TAIL; k++) CHECK(fz_status[k] > 0);
        for (int k = 1; k <= 4; k++) CHECK(fz_kind[k] > 0);
    }
}

int main(int argc, char **argv) {
    fuzz_iters = env_u64("SLG_FUZZ_ITERS", 20000);
    fuzz_seed = env_u64("SLG_FUZZ_SEED", 1);
    if (argc > 1) fuzz_iters = strtoull(argv[1], NULL, 0);
    if (argc > 2) fuzz_seed = strtoull(argv[2], NULL, 0);

    RUN(test_clean_stream);
    RUN(test_forty_byte_record);
    RUN(test_every_truncation);
    RUN(test_zero_tail);
    RUN(test_bad_length_crc);
    RUN(test_bad_data_crc);
    RUN(test_length_past_eof);
    RUN(test_chunked_equals_oneshot);
    RUN(test_small_output_arrays);
    RUN(test_invalid_arguments);
    RUN(test_growing_file);
    RUN(test_fuzz);
    return TEST_SUMMARY();
}
