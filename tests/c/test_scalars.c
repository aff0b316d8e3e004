/* test_scalars.c - the read-side C paths added for the Reader and the
 * histogram encoders: slg_tb_load_file (a small file in one call) against
 * slg_scan + slg_tb_decode_scalars on the same bytes, for clean, torn,
 * zero-tailed, damaged, empty, big and zstd-looking files, a directory and a
 * missing path; the MindSpore dialect switch; slg_columns_group against a
 * naive stable grouping; slg_value_stats and slg_histogram_counts against
 * plain loops; and a seeded fuzz loop of mutated files (SLG_FUZZ_ITERS).
 * Built and run by tests/test_c_core.py, also under ASan + UBSan. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record.h"
#include "summarylog_api.h"
#include "test_files.h"
#include "test_main.h"
#include "test_pb.h"

/* ---- scalar events --------------------------------------------------------- */

/* Event{wall_time, step, summary{value{tag, <scalar field> float}}}; field 2
 * (TensorBoard simple_value) or 3 (MindSpore scalar_value). */
static size_t scalar_event(unsigned char *out, double wall, int64_t step, const char *tag,
                           float value, int scalar_field) {
    unsigned char val[300], sum[320];
    size_t tl = strlen(tag), vn = 0, sn = 0, n = 0;
    val[vn++] = 0x0a;
    vn += put_varint(val + vn, tl);
    memcpy(val + vn, tag, tl);
    vn += tl;
    val[vn++] = (unsigned char)(scalar_field << 3 | 5);
    memcpy(val + vn, &value, 4);
    vn += 4;
    sum[sn++] = 0x0a;
    sn += put_varint(sum + sn, vn);
    memcpy(sum + sn, val, vn);
    sn += vn;
    out[n++] = 0x09;
    memcpy(out + n, &wall, 8);
    n += 8;
    out[n++] = 0x10;
    n += put_varint(out + n, (uint64_t)step);
    out[n++] = 0x2a;
    n += put_varint(out + n, sn);
    memcpy(out + n, sum, sn);
    return n + sn;
}

/* A file of `n` framed scalar events over tags a/b/c; returns its size. */
static size_t build_file(unsigned char *buf, int n, int scalar_field) {
    static const char *tags[] = {"a", "b", "loss/c"};
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        unsigned char ev[400];
        size_t el = scalar_event(ev, 1000.0 + i, i, tags[i % 3], (float)i * 0.5f, scalar_field);
        len += slg_frame((char *)buf + len, (const char *)ev, el);
    }
    return len;
}

/* ``data`` as the file ``name`` in the program's directory (overwritten
 * when the name is used again): its path, in a static buffer. */
static const char *write_tmp(const char *name, const void *data, size_t n) {
    static char path[2200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    if (n) fwrite(data, 1, n, f);
    fclose(f);
    return path;
}

/* What the general path gives on the same bytes. */
typedef struct {
    uint64_t n_values, records, n_damage;
    int scan_rc;
    uint32_t ids[4096];
    int64_t steps[4096];
    double walls[4096], values[4096];
} reference;

static void general_path(const unsigned char *buf, uint64_t size, int dialect, int verify,
                         reference *ref) {
    memset(ref, 0, sizeof *ref);
    slg_scan_state st;
    memset(&st, 0, sizeof st);
    st.verify_data = verify;
    slg_span *spans = malloc((size / 16 + 1) * sizeof *spans);
    slg_damage dmg[256];
    uint64_t nsp = 0, ndm = 0;
    ref->scan_rc = slg_scan(&st, (const char *)buf, size, 0, size, 0, spans, size / 16 + 1, &nsp,
                            dmg, 256, &ndm);
    ref->records = nsp;
    ref->n_damage = ndm;
    slg_tags *tags = slg_tags_new();
    slg_tags_set_dialect(tags, dialect);
    slg_decode_result res;
    slg_tb_decode_scalars((const char *)buf, 0, spans, nsp, tags, ref->ids, ref->steps,
                          ref->walls, ref->values, 4096, &res);
    ref->n_values = res.n_values;
    slg_tags_free(tags);
    free(spans);
}

static void check_same(const char *path, const unsigned char *buf, uint64_t size, int dialect,
                       int verify) {
    reference *ref = malloc(sizeof *ref);
    general_path(buf, size, dialect, verify, ref);
    slg_tags *tags = slg_tags_new();
    slg_tags_set_dialect(tags, dialect);
    uint32_t *ids = malloc(4096 * 4);
    int64_t *steps = malloc(4096 * 8);
    double *walls = malloc(4096 * 8), *values = malloc(4096 * 8);
    slg_damage dmg[256];
    slg_file_scalars out;
    int rc = slg_tb_load_file(path, verify, 1 << 20, tags, ids, steps, walls, values, 4096, dmg,
                              256, &out);
    CHECK_EQ(rc, 0);
    CHECK_EQ(out.size, size);
    CHECK_EQ(out.records, ref->records);
    CHECK_EQ(out.n_damage, ref->n_damage);
    CHECK_EQ(out.dec.n_values, ref->n_values);
    if (out.dec.n_values == ref->n_values && ref->n_values) {
        CHECK_MEM(steps, ref->steps, ref->n_values * 8);
        CHECK_MEM(values, ref->values, ref->n_values * 8);
        CHECK_MEM(ids, ref->ids, ref->n_values * 4);
    }
    if (ref->scan_rc == SLG_SCAN_TORN || ref->scan_rc == SLG_SCAN_ZERO_TAIL)
        CHECK_EQ(out.tail_kind, ref->scan_rc);
    else
        CHECK_EQ(out.tail_kind, 0);
    slg_tags_free(tags);
    free(ids), free(steps), free(walls), free(values), free(ref);
}

static void test_load_file_matches_general_path(void) {
    unsigned char *buf = calloc(1, 1 << 16);
    size_t n = build_file(buf, 60, 2);
    check_same(write_tmp("clean", buf, n), buf, n, SLG_DIALECT_TB, 1);
    check_same(write_tmp("torn", buf, n - 7), buf, n - 7, SLG_DIALECT_TB, 1);
    memset(buf + n, 0, 40);
    check_same(write_tmp("zeros", buf, n + 40), buf, n + 40, SLG_DIALECT_TB, 1);
    buf[n / 2] ^= 0x10; /* a flipped byte: damage, or a changed value without verify */
    check_same(write_tmp("flip", buf, n), buf, n, SLG_DIALECT_TB, 1);
    check_same(write_tmp("flip2", buf, n), buf, n, SLG_DIALECT_TB, 0);
    check_same(write_tmp("empty", buf, 0), buf, 0, SLG_DIALECT_TB, 1);
    free(buf);
}

static void test_mindspore_dialect(void) {
    unsigned char *buf = calloc(1, 1 << 16);
    size_t n = build_file(buf, 30, 3);
    const char *path = write_tmp("ms", buf, n);
    check_same(path, buf, n, SLG_DIALECT_MS, 1);
    /* read as TensorBoard, MindSpore's field 3 is no scalar */
    reference *ref = malloc(sizeof *ref);
    general_path(buf, n, SLG_DIALECT_TB, 1, ref);
    CHECK_EQ(ref->n_values, 0);
    general_path(buf, n, SLG_DIALECT_MS, 1, ref);
    CHECK_EQ(ref->n_values, 30);
    slg_tags *t = slg_tags_new();
    CHECK_EQ(slg_tags_set_dialect(t, 7), -EINVAL);
    slg_tags_free(t);
    free(ref);
    free(buf);
}

static void test_load_file_fallbacks_and_errors(void) {
    unsigned char *buf = calloc(1, 1 << 16);
    size_t n = build_file(buf, 60, 2);
    const char *path = write_tmp("big", buf, n);
    slg_tags *tags = slg_tags_new();
    uint32_t ids[64];
    int64_t steps[64];
    double walls[64], values[64];
    slg_damage dmg[4];
    slg_file_scalars out;
    CHECK_EQ(slg_tb_load_file(path, 1, 100, tags, ids, steps, walls, values, 64, dmg, 4, &out),
             SLG_LOAD_FALLBACK); /* bigger than max_size */
    CHECK_EQ(out.size, n);
    CHECK_EQ(slg_tb_load_file(path, 1, 1 << 20, tags, ids, steps, walls, values, 10, dmg, 4,
                              &out), SLG_LOAD_FALLBACK); /* columns too small */
    unsigned char zstd[16] = {0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3};
    path = write_tmp("z", zstd, sizeof zstd);
    CHECK_EQ(slg_tb_load_file(path, 1, 1 << 20, tags, ids, steps, walls, values, 64, dmg, 4,
                              &out), SLG_LOAD_FALLBACK);
    unsigned char junk[400];
    memset(junk, 0xab, sizeof junk); /* garbage everywhere: more damage than max_damage? */
    for (int i = 0; i < 400; i += 40) junk[i] = 0;
    path = write_tmp("junk", junk, sizeof junk);
    int rc = slg_tb_load_file(path, 1, 1 << 20, tags, ids, steps, walls, values, 64, dmg, 4, &out);
    CHECK(rc == 0 || rc == SLG_LOAD_FALLBACK);
    CHECK_EQ(slg_tb_load_file(dir, 1, 1 << 20, tags, ids, steps, walls, values, 64, dmg, 4,
                              &out), -EISDIR);
    char missing[2200];
    snprintf(missing, sizeof missing, "%s/no-such-file", dir);
    CHECK_EQ(slg_tb_load_file(missing, 1, 1 << 20, tags, ids, steps, walls, values, 64, dmg, 4,
                              &out), -ENOENT);
    slg_tags_free(tags);
    free(buf);
}

static void test_columns_group(void) {
    t_rng r;
    rng_seed(&r, 3);
    for (int round = 0; round < 200; round++) {
        uint64_t n = rng_below(&r, 300), ntags = 1 + rng_below(&r, 6);
        uint32_t *ids = malloc((n + 1) * 4);
        int64_t *steps = malloc((n + 1) * 8);
        double *walls = malloc((n + 1) * 8), *vals = malloc((n + 1) * 8);
        int64_t *want = malloc((n + 1) * 8);
        for (uint64_t i = 0; i < n; i++) {
            ids[i] = (uint32_t)rng_below(&r, ntags);
            steps[i] = (int64_t)i;
            walls[i] = (double)i + 0.5;
            vals[i] = (double)i * 2;
        }
        uint64_t k = 0; /* the naive stable grouping */
        for (uint32_t t = 0; t < ntags; t++)
            for (uint64_t i = 0; i < n; i++)
                if (ids[i] == t) want[k++] = steps[i];
        uint64_t counts[8];
        CHECK_EQ(slg_columns_group(ids, steps, walls, vals, n, ntags, counts), 0);
        uint64_t total = 0;
        for (uint32_t t = 0; t < ntags; t++) total += counts[t];
        CHECK_EQ(total, n);
        if (n) CHECK_MEM(steps, want, n * 8);
        for (uint64_t i = 0; i < n; i++) {
            if (walls[i] != (double)steps[i] + 0.5 || vals[i] != (double)steps[i] * 2) {
                CHECK(0); /* the columns moved together */
                break;
            }
        }
        if (n) {
            ids[0] = (uint32_t)ntags;
            CHECK_EQ(slg_columns_group(ids, steps, walls, vals, n, ntags, counts), -EINVAL);
        }
        free(ids), free(steps), free(walls), free(vals), free(want);
    }
}

static void test_histogram(void) {
    t_rng r;
    rng_seed(&r, 5);
    for (int round = 0; round < 200; round++) {
        uint64_t n = rng_below(&r, 500), bins = 1 + rng_below(&r, 90);
        float *f = malloc((n + 1) * 4);
        double *d = malloc((n + 1) * 8);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t pick = rng_below(&r, 40);
            double x = pick == 0 ? NAN : pick == 1 ? INFINITY : pick == 2 ? -INFINITY
                     : ((double)rng_below(&r, 2001) - 1000.0) / 8.0;
            d[i] = x;
            f[i] = (float)x;
        }
        slg_value_stats_t s;
        slg_value_stats(d, 1, n, &s);
        uint64_t finite = 0, nan = 0;
        double lo = INFINITY, hi = -INFINITY;
        for (uint64_t i = 0; i < n; i++) {
            if (isnan(d[i])) nan++;
            else if (isfinite(d[i])) {
                finite++;
                lo = d[i] < lo ? d[i] : lo;
                hi = d[i] > hi ? d[i] : hi;
            }
        }
        CHECK_EQ(s.finite, finite);
        CHECK_EQ(s.nan_count, nan);
        if (finite) CHECK(s.min == lo && s.max == hi);
        slg_value_stats_t s32;
        slg_value_stats(f, 0, n, &s32);
        CHECK_EQ(s32.finite, finite);
        if (finite && hi > lo) {
            double *edges = malloc((bins + 1) * 8);
            for (uint64_t i = 0; i <= bins; i++) edges[i] = lo + (hi - lo) * (double)i / (double)bins;
            edges[bins] = hi;
            int64_t *counts = malloc(bins * 8), *want = calloc(bins, 8);
            CHECK_EQ(slg_histogram_counts(d, 1, n, edges, bins, counts), 0);
            for (uint64_t i = 0; i < n; i++) { /* the plain rule: [e_k, e_k+1), last closed */
                if (!isfinite(d[i])) continue;
                for (uint64_t k = 0; k < bins; k++) {
                    if (d[i] >= edges[k] && (d[i] < edges[k + 1] || (k == bins - 1 && d[i] <= edges[k + 1]))) {
                        want[k]++;
                        break;
                    }
                }
            }
            CHECK_MEM(counts, want, bins * 8);
            free(edges), free(counts), free(want);
        }
        double bad[2] = {1.0, 1.0};
        int64_t c[1];
        CHECK_EQ(slg_histogram_counts(d, 1, n, bad, 1, c), -22);
        free(f), free(d);
    }
}

/* The one-call histogram event: writes within its bound (checked by ASan on
 * a buffer of exactly that size), walks the whole event, and refuses a small
 * buffer.  Its bytes are checked against protobuf in tests/unit/test_histograms.py. */
static void test_histogram_event(void) {
    t_rng r;
    rng_seed(&r, 9);
    CHECK_EQ(slg_ms_bins(0), 1);
    CHECK_EQ(slg_ms_bins(5), 2);
    CHECK_EQ(slg_ms_bins(10), 3);
    CHECK_EQ(slg_ms_bins(880), 89);
    CHECK_EQ(slg_ms_bins(881), 90);
    CHECK_EQ(slg_ms_bins(1u << 30), 90);
    for (int round = 0; round < 300; round++) {
        uint64_t n = rng_below(&r, 400);
        int64_t bins = (int64_t)rng_below(&r, 120) - 10; /* <= 0: MindSpore's rule */
        double *d = malloc((n + 1) * 8);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t pick = rng_below(&r, 30);
            d[i] = pick == 0 ? NAN : pick == 1 ? INFINITY : pick == 2 ? -INFINITY
                 : pick == 3 ? 7.0 : ((double)rng_below(&r, 2001) - 1000.0) / 8.0;
        }
        uint64_t tag_len = rng_below(&r, 300);
        char *tag = malloc(tag_len + 1);
        memset(tag, 'g', tag_len);
        uint64_t cap = slg_tb_histogram_event_bound(tag_len, bins);
        char *out = malloc(cap);
        int64_t got = slg_tb_encode_histogram_event(d, 1, n, bins, 1.5, (int64_t)round - 5, tag,
                                                    tag_len, out, cap);
        /* every float input is encoded here, no finite value included
         * (its bytes: tests/unit/test_histograms.py against protobuf) */
        CHECK(got > 0 && got != SLG_HIST_FALLBACK && (uint64_t)got <= cap);
        if (cap > 1)
            CHECK_EQ(slg_tb_encode_histogram_event(d, 1, n, bins, 1.5, 0, tag, tag_len, out,
                                                   cap - 1 > 8 ? 8 : cap - 1), -28);
        free(out);
        free(tag);
        free(d);
    }
}

/* Many histogram events in one call (the binner's job): within the bound
 * (ASan: a buffer of exactly that size), each framed record holds the bytes
 * the single call makes, in the items' order, each item's status set. */
static void test_histogram_items_batch(void) {
    t_rng r;
    rng_seed(&r, 11);
    for (int round = 0; round < 200; round++) {
        uint64_t n = 1 + rng_below(&r, 6);
        slg_hist_item items[6];
        char tags[6 * 40];
        uint64_t tags_len = 0;
        memset(items, 0, sizeof items);
        for (uint64_t i = 0; i < n; i++) {
            slg_hist_item *it = &items[i];
            it->n = rng_below(&r, 300);
            it->is_f64 = (int32_t)rng_below(&r, 2);
            void *v = malloc(it->n * 8 + 8);
            for (uint64_t k = 0; k < it->n; k++) {
                double x = rng_below(&r, 50) == 0 ? NAN : ((double)rng_below(&r, 2001) - 1000.0) / 8.0;
                if (it->is_f64) ((double *)v)[k] = x;
                else ((float *)v)[k] = (float)x;
            }
            it->values = v;
            it->bins = (int64_t)rng_below(&r, 100) - 5;
            it->step = (int64_t)rng_below(&r, 1000) - 3;
            it->wall_time = (double)round + 0.5;
            it->tag_len = rng_below(&r, 40);
            memset(tags + tags_len, 'a' + (int)i, it->tag_len);
            it->tag = tags + tags_len;
            tags_len += it->tag_len;
        }
        uint64_t cap = slg_tb_histogram_items_bound(items, n);
        char *out = malloc(cap);
        int64_t total = slg_tb_encode_histogram_items(items, n, out, cap);
        CHECK(total >= 0 && (uint64_t)total <= cap);
        const char *o = out;
        for (uint64_t i = 0; i < n; i++) {
            slg_hist_item *it = &items[i];
            uint64_t one_cap = slg_tb_histogram_event_bound(it->tag_len, it->bins);
            char *one = malloc(one_cap);
            int64_t len = slg_tb_encode_histogram_event(it->values, it->is_f64, it->n, it->bins,
                                                        it->wall_time, it->step, it->tag,
                                                        it->tag_len, one, one_cap);
            CHECK_EQ(it->status, len);
            if (len >= 0 && len != SLG_HIST_FALLBACK) {
                CHECK_EQ(slg_get_le64(o), (uint64_t)len);
                CHECK_EQ(slg_get_le32(o + 8), slg_masked_crc32c(o, 8));
                CHECK(memcmp(o + 12, one, (size_t)len) == 0);
                CHECK_EQ(slg_get_le32(o + 12 + len), slg_masked_crc32c(o + 12, (size_t)len));
                o += len + SLG_FRAME_OVERHEAD;
            }
            free(one);
            free((void *)it->values);
        }
        CHECK_EQ((int64_t)(o - out), total);
        free(out);
    }
}

/* The collectors' copies: every size and alignment around the streaming
 * threshold, byte-exact, nothing written past the end (ASan). */
static void test_copy_many(void) {
    t_rng r;
    rng_seed(&r, 5);
    for (int round = 0; round < 300; round++) {
        uint64_t n = 1 + rng_below(&r, 4);
        void *dst[4];
        const void *src[4];
        uint64_t sizes[4], jobs[12];
        char *srcs[4], *dsts[4];
        for (uint64_t i = 0; i < n; i++) {
            sizes[i] = rng_below(&r, 3) == 0 ? rng_below(&r, 100) : 4000 + rng_below(&r, 70000);
            uint64_t so = rng_below(&r, 16), dof = rng_below(&r, 16);
            srcs[i] = malloc(sizes[i] + 16);
            dsts[i] = malloc(sizes[i] + 16);
            for (uint64_t k = 0; k < sizes[i] + 16; k++) srcs[i][k] = (char)rng_below(&r, 256);
            memset(dsts[i], 0x5a, sizes[i] + 16);
            src[i] = srcs[i] + so;
            dst[i] = dsts[i] + dof;
            jobs[3 * i] = (uint64_t)(uintptr_t)dst[i];
            jobs[3 * i + 1] = (uint64_t)(uintptr_t)src[i];
            jobs[3 * i + 2] = sizes[i];
        }
        slg_copy_many(jobs, n);
        for (uint64_t i = 0; i < n; i++) {
            CHECK(memcmp(dst[i], src[i], sizes[i]) == 0);
            char *end = (char *)dst[i] + sizes[i];
            while (end < dsts[i] + sizes[i] + 16) CHECK_EQ(*end++, 0x5a);
            free(srcs[i]);
            free(dsts[i]);
        }
    }
}

static void test_fuzz_mutated_files(void) {
    uint64_t iters = env_u64("SLG_FUZZ_ITERS", 20000) / 20;
    t_rng r;
    rng_seed(&r, env_u64("SLG_FUZZ_SEED", 1));
    unsigned char *base = calloc(1, 1 << 14), *buf = malloc(1 << 14);
    size_t n = build_file(base, 40, 2);
    uint32_t ids[256];
    int64_t steps[256];
    double walls[256], values[256];
    slg_damage dmg[16];
    slg_file_scalars out;
    slg_tags *tags = slg_tags_new();
    for (uint64_t it = 0; it < iters; it++) {
        size_t len = n;
        memcpy(buf, base, n);
        int muts = 1 + (int)rng_below(&r, 4);
        for (int m = 0; m < muts; m++) {
            switch (rng_below(&r, 4)) {
            case 0: buf[rng_below(&r, len)] ^= (unsigned char)(1u << rng_below(&r, 8)); break;
            case 1: len = rng_below(&r, len + 1); break;
            case 2: rng_fill(&r, buf + rng_below(&r, len ? len : 1), len ? 1 + rng_below(&r, 8) % (len - rng_below(&r, len) + 1) : 0); break;
            default: if (len) memset(buf + rng_below(&r, len), 0, 1 + rng_below(&r, 16) % len); break;
            }
            if (len > n) len = n;
        }
        const char *path = write_tmp("fuzz", buf, len);
        slg_tags_clear(tags);
        slg_tags_set_dialect(tags, (int)(it & 1));
        int rc = slg_tb_load_file(path, (int)(it >> 1 & 1), 1 << 20, tags, ids, steps, walls,
                                  values, 256, dmg, 16, &out);
        if (rc == 0) {
            if (!CHECK(out.dec.n_values <= 256 && out.records <= len / 16 + 1 &&
                       out.n_damage < 16)) {
                printf("fuzz iteration %llu (seed %llu)\n", (unsigned long long)it,
                       (unsigned long long)env_u64("SLG_FUZZ_SEED", 1));
                break;
            }
        } else {
            CHECK(rc == SLG_LOAD_FALLBACK);
        }
    }
    slg_tags_free(tags);
    free(base), free(buf);
}

int main(void) {
    if (!files_begin("slg-scalars")) return 2;
    RUN(test_load_file_matches_general_path);
    RUN(test_mindspore_dialect);
    RUN(test_load_file_fallbacks_and_errors);
    RUN(test_columns_group);
    RUN(test_histogram);
    RUN(test_histogram_event);
    RUN(test_histogram_items_batch);
    RUN(test_copy_many);
    RUN(test_fuzz_mutated_files);
    files_end();
    return TEST_SUMMARY();
}
