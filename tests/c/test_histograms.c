/* test_histograms.c - slg_decode_histograms, the columnar histogram decoder:
 * events made by the real encoder (slg_tb_encode_histogram_event) decode to
 * their values; output arrays too small for a record are reported full and
 * the decode resumes with nothing lost or doubled; protobuf's merge and oneof
 * rules; MindSpore buckets sorted; malformed values and events counted, not
 * read past; and a seeded fuzz loop (SLG_FUZZ_ITERS) of mutated streams
 * decoded into tiny, growing outputs.  Built and run by tests/test_c_core.py,
 * also under ASan + UBSan. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "record.h"
#include "summarylog_api.h"
#include "test_main.h"
#include "test_pb.h"

/* Event{wall 1, step 2, summary{value{tag, <fields>}}} around value fields vf[0:vn] */
static size_t event_of(unsigned char *out, int64_t step, const char *tag,
                       const unsigned char *vf, size_t vn) {
    unsigned char val[4096], sum[4200];
    size_t n = put_len(val, 1, (const unsigned char *)tag, strlen(tag));
    memcpy(val + n, vf, vn);
    n += vn;
    size_t sn = put_len(sum, 1, val, n);
    size_t en = put_f64(out, 1, 100.0 + (double)step);
    en += put_u64(out + en, 2, (uint64_t)step);
    return en + put_len(out + en, 5, sum, sn);
}

/* ---- decoding -------------------------------------------------------------- */

typedef struct {
    uint32_t ids[512];
    int64_t steps[512];
    double walls[512], stats[512 * SLG_HIST_STATS];
    uint64_t limit_ends[512], count_ends[512];
    double limits[65536], counts[65536];
    slg_hist_columns c;
} outbuf;

static void out_init(outbuf *o, uint64_t rows, uint64_t buckets) {
    memset(&o->c, 0, sizeof o->c);
    o->c.tag_ids = o->ids;
    o->c.steps = o->steps;
    o->c.walls = o->walls;
    o->c.stats = o->stats;
    o->c.limit_ends = o->limit_ends;
    o->c.count_ends = o->count_ends;
    o->c.limits = o->limits;
    o->c.counts = o->counts;
    o->c.cap_rows = rows;
    o->c.cap_limits = o->c.cap_counts = buckets;
}

/* Scan buf and decode all of it into o, growing the caps by `step_cap` each
 * time a call reports full (as the Python loader grows its arrays).  The
 * number of SLG_DECODE_OUT_FULL returns; -1 on an error, -2 when the test's
 * arrays could grow no more. */
static int decode_all(const unsigned char *buf, size_t size, int dialect, outbuf *o,
                      uint64_t grow, uint64_t *bad_values, uint64_t *bad_events) {
    slg_scan_state st;
    memset(&st, 0, sizeof st);
    st.verify_data = 1;
    slg_span *spans = malloc((size / 16 + 1) * sizeof *spans);
    slg_damage dmg[64];
    uint64_t nsp = 0, ndm = 0, done = 0;
    slg_scan(&st, (const char *)buf, size, 0, size, 0, spans, size / 16 + 1, &nsp, dmg, 64, &ndm);
    slg_tags *tags = slg_tags_new();
    slg_tags_set_dialect(tags, dialect);
    slg_decode_result res;
    int fulls = 0;
    *bad_values = *bad_events = 0;
    while (done < nsp) {
        int rc = slg_decode_histograms((const char *)buf, 0, spans + done, nsp - done, tags,
                                       &o->c, &res);
        if (rc < 0) { fulls = -1; break; }
        done += res.spans_done;
        *bad_values += res.bad_values;
        *bad_events += res.bad_events;
        if (rc == SLG_DECODE_OUT_FULL) {
            fulls++;
            if (o->c.cap_rows + grow > 512 || o->c.cap_limits + 64 * grow > 65536) { fulls = -2; break; }
            o->c.cap_rows += grow;
            o->c.cap_limits += 64 * grow;
            o->c.cap_counts += 64 * grow;
        }
    }
    slg_tags_free(tags);
    free(spans);
    return fulls;
}

/* n TensorBoard histogram events of 0..k values each, by the real encoder */
static size_t encoded_file(unsigned char *buf, int n) {
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        double v[40];
        int k = i % 40;
        for (int j = 0; j < k; j++) v[j] = (j * 7 % 11) - 3.5 + i;
        char ev[8192];
        int64_t el = slg_tb_encode_histogram_event(v, 1, (uint64_t)k, 8 + i % 5, 5.0 + i, i,
                                                   i % 2 ? "w" : "b", 1, ev, sizeof ev);
        CHECK(el > 0);
        len += slg_frame((char *)buf + len, ev, (uint64_t)el);
    }
    return len;
}

static void test_encoded_events_round_trip(void) {
    static unsigned char buf[1 << 18];
    static outbuf big, small;
    size_t len = encoded_file(buf, 60);
    uint64_t bv, be;
    out_init(&big, 512, 65536);
    CHECK_EQ(decode_all(buf, len, SLG_DIALECT_TB, &big, 1, &bv, &be), 0);
    CHECK_EQ(big.c.n_rows, 60);
    CHECK_EQ(bv, 0);
    CHECK_EQ(be, 0);
    for (int i = 0; i < 60; i++) {
        CHECK_EQ(big.steps[i], i);
        CHECK(big.walls[i] == 5.0 + i);
        CHECK_EQ(big.ids[i], i % 2 ? 1 : 0); /* "b" interned first */
        double *st = big.stats + SLG_HIST_STATS * i;
        CHECK(st[2] == (double)(i % 40)); /* num */
        uint64_t l0 = i ? big.limit_ends[i - 1] : 0, c0 = i ? big.count_ends[i - 1] : 0;
        CHECK_EQ(big.limit_ends[i] - l0, big.count_ends[i] - c0);
        double total = 0;
        for (uint64_t j = c0; j < big.count_ends[i]; j++) total += big.counts[j];
        CHECK(total == st[2]);
        for (uint64_t j = l0 + 1; j < big.limit_ends[i]; j++) CHECK(big.limits[j] >= big.limits[j - 1]);
    }
    /* room for one row at a time: every record reported full, then resumed */
    out_init(&small, 1, 64);
    int fulls = decode_all(buf, len, SLG_DIALECT_TB, &small, 1, &bv, &be);
    CHECK(fulls > 0);
    CHECK_EQ(small.c.n_rows, 60);
    CHECK_MEM(small.stats, big.stats, 60 * SLG_HIST_STATS * sizeof(double));
    CHECK_MEM(small.limit_ends, big.limit_ends, 60 * sizeof(uint64_t));
    CHECK_MEM(small.limits, big.limits, big.c.n_limits * sizeof(double));
    CHECK_MEM(small.counts, big.counts, big.c.n_counts * sizeof(double));
}

static void test_protobuf_rules(void) {
    static unsigned char buf[1 << 14];
    static outbuf o;
    unsigned char vf[512], h1[128], h2[128], packed[24];
    size_t len = 0, n, a, b;
    double three[3] = {1.0, 2.0, 3.0};
    memcpy(packed, three, 24);
    /* a histo seen twice: numbers replaced, buckets appended (one unpacked) */
    a = put_f64(h1, 1, -1.0);
    a += put_len(h1 + a, 6, packed, 16);
    a += put_len(h1 + a, 7, packed, 16);
    b = put_f64(h2, 1, -2.0);
    b += put_f64(h2 + b, 6, 9.0);
    b += put_f64(h2 + b, 7, 4.0);
    n = put_len(vf, 5, h1, a);
    n += put_len(vf + n, 5, h2, b);
    unsigned char ev[1024];
    size_t el = event_of(ev, 1, "m", vf, n);
    len += slg_frame((char *)buf + len, (const char *)ev, el);
    /* a histo then a simple_value: the oneof's last member wins, no row */
    n = put_len(vf, 5, h1, a);
    vf[n++] = 2 << 3 | 5;
    memset(vf + n, 0, 4);
    n += 4;
    el = event_of(ev, 2, "s", vf, n);
    len += slg_frame((char *)buf + len, (const char *)ev, el);
    /* fields of wire types protobuf does not expect are unknown fields: a histo
     * field as a varint switches nothing, buckets as varints are skipped */
    n = put_u64(vf, 5, 9);
    a = put_f64(h1, 1, -3.0);
    a += put_u64(h1 + a, 6, 4);
    n += put_len(vf + n, 5, h1, a);
    n += put_u64(vf + n, 2, 1); /* simple_value as a varint: not the float member */
    el = event_of(ev, 5, "odd", vf, n);
    len += slg_frame((char *)buf + len, (const char *)ev, el);
    /* a packed field whose length is no multiple of 8: a bad value */
    a = put_len(h1, 6, packed, 12);
    n = put_len(vf, 5, h1, a);
    el = event_of(ev, 3, "bad", vf, n);
    len += slg_frame((char *)buf + len, (const char *)ev, el);
    /* a length past the end of the value: a bad value, not a read past it */
    n = put_len(vf, 5, h1, a);
    vf[1] = 0x7f;
    el = event_of(ev, 4, "bad", vf, n);
    len += slg_frame((char *)buf + len, (const char *)ev, el);
    uint64_t bv, be;
    out_init(&o, 512, 65536);
    CHECK_EQ(decode_all(buf, len, SLG_DIALECT_TB, &o, 1, &bv, &be), 0);
    CHECK_EQ(o.c.n_rows, 2);
    CHECK(o.stats[0] == -2.0);
    CHECK_EQ(o.limit_ends[0], 3);
    CHECK(o.limits[0] == 1.0 && o.limits[1] == 2.0 && o.limits[2] == 9.0);
    CHECK(o.counts[2] == 4.0);
    CHECK_EQ(o.steps[1], 5);
    CHECK(o.stats[SLG_HIST_STATS] == -3.0 && o.stats[SLG_HIST_STATS + 2] == 0.0);
    CHECK_EQ(o.limit_ends[1], 3); /* no bucket from the varint field */
    CHECK_EQ(bv, 2);
    CHECK_EQ(be, 0);
}

static void test_mindspore_buckets_sorted(void) {
    static unsigned char buf[1 << 14];
    static outbuf o;
    unsigned char vf[1024], h[900], bk[64];
    size_t n = 0, hn = 0;
    const double lefts[4] = {3.0, -1.0, 1.0, 0.0};
    for (int i = 0; i < 4; i++) {
        size_t bn = put_f64(bk, 1, lefts[i]);
        bn += put_f64(bk + bn, 2, 1.0);
        bn += put_u64(bk + bn, 3, (uint64_t)(10 + i));
        hn += put_len(h + hn, 1, bk, bn);
    }
    hn += put_u64(h + hn, 2, 7);  /* nan_count */
    hn += put_f64(h + hn, 5, 4.0);  /* max */
    hn += put_f64(h + hn, 6, -1.0); /* min */
    hn += put_u64(h + hn, 8, 46);   /* count */
    n = put_len(vf, 9, h, hn);
    unsigned char ev[2048];
    size_t el = event_of(ev, 7, "ms", vf, n);
    size_t len = slg_frame((char *)buf, (const char *)ev, el);
    uint64_t bv, be;
    out_init(&o, 512, 65536);
    CHECK_EQ(decode_all(buf, len, SLG_DIALECT_MS, &o, 1, &bv, &be), 0);
    CHECK_EQ(o.c.n_rows, 1);
    const double want_limits[4] = {0.0, 1.0, 2.0, 4.0}, want_counts[4] = {11, 13, 12, 10};
    CHECK_MEM(o.limits, want_limits, sizeof want_limits);
    CHECK_MEM(o.counts, want_counts, sizeof want_counts);
    CHECK(o.stats[0] == -1.0 && o.stats[1] == 4.0 && o.stats[2] == 46.0);
    CHECK(isnan(o.stats[4]));
    CHECK(o.stats[5] == 7.0);
}

static void test_fuzz_mutated_streams(void) {
    uint64_t iters = env_u64("SLG_FUZZ_ITERS", 20000) / 2;
    t_rng r;
    rng_seed(&r, env_u64("SLG_FUZZ_SEED", 1));
    static unsigned char base[1 << 18], buf[1 << 18];
    static outbuf o;
    size_t n = encoded_file(base, 24);
    uint64_t rows = 0, it;
    for (it = 0; it < iters; it++) {
        size_t len = n;
        memcpy(buf, base, n);
        int muts = 1 + (int)rng_below(&r, 6);
        for (int m = 0; m < muts; m++) {
            size_t at = rng_below(&r, len ? len : 1);
            switch (rng_below(&r, 3)) {
            case 0: buf[at] ^= (unsigned char)(1u << rng_below(&r, 8)); break;
            case 1: buf[at] = (unsigned char)rng_next(&r); break;
            default: len = rng_below(&r, len + 1); break;
            }
        }
        uint64_t bv, be;
        out_init(&o, 1 + rng_below(&r, 3), 1 + rng_below(&r, 64));
        /* verify = 1 drops records whose CRC the mutation broke; fuzz the
         * decoder itself with the CRCs fixed up */
        size_t off = 0;
        while (off + 16 <= len) {
            uint64_t rl = slg_get_le64((const char *)buf + off);
            if (rl > len - off - 16) break;
            slg_put_le32((char *)buf + off + 8, slg_masked_crc32c((const char *)buf + off, 8));
            slg_put_le32((char *)buf + off + 12 + rl,
                         slg_masked_crc32c((const char *)buf + off + 12, rl));
            off += 16 + rl;
        }
        int fulls = decode_all(buf, len, (int)(it & 1), &o, 2, &bv, &be);
        rows += o.c.n_rows;
        int ok = fulls != -1 && o.c.n_rows <= o.c.cap_rows && o.c.n_limits <= o.c.cap_limits;
        for (uint64_t i = 0; ok && i < o.c.n_rows; i++)
            ok = o.limit_ends[i] <= o.c.n_limits && o.count_ends[i] <= o.c.n_counts &&
                 (!i || (o.limit_ends[i] >= o.limit_ends[i - 1] &&
                         o.count_ends[i] >= o.count_ends[i - 1]));
        if (!CHECK(ok)) {
            printf("fuzz iteration %llu (seed %llu)\n", (unsigned long long)it,
                   (unsigned long long)env_u64("SLG_FUZZ_SEED", 1));
            break;
        }
    }
    printf("histogram fuzz: %llu cases from seed %llu: %llu rows decoded\n",
           (unsigned long long)it, (unsigned long long)env_u64("SLG_FUZZ_SEED", 1),
           (unsigned long long)rows);
}

int main(void) {
    RUN(test_encoded_events_round_trip);
    RUN(test_protobuf_rules);
    RUN(test_mindspore_buckets_sorted);
    RUN(test_fuzz_mutated_streams);
    return TEST_SUMMARY();
}
