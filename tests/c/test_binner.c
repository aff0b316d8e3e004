/* test_binner.c - the binner and the collectors' lanes (binner.c): jobs are
 * written in order as the single-call encoder frames them, a job's scalar
 * event comes first, two threads' jobs each land whole, flush/wait/close
 * finish what was queued, misuse is refused (a queued job again, a ticket
 * never given, a closed binner), a lane's collections are the values at
 * collect() time (sources changed right after), a lane whose slots are all
 * queued says busy instead of overwriting one (a stalled disk), a failed
 * write's error reaches collect() or take_error() once, and a forked
 * child's calls are refused; a MindSpore-dialect lane writes one Event a
 * collection, its histograms slg_ms_histogram's.
 *
 * Files go to a fresh directory under $TMPDIR (or /tmp), removed at the end. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "record.h"
#include "summarylog_api.h"
#include "test_files.h"
#include "test_main.h"

static slg_writer *open_writer(const char *name, char *path, size_t n) {
    tmp_path(path, n, name);
    slg_writer *w = NULL;
    CHECK_EQ(slg_writer_open(path, 0644, 5.0, 1u << 20, 64u << 20, SLG_DURABILITY_NONE,
                             SLG_ON_FULL_BLOCK, &w), 0);
    return w;
}

/* The payloads of a file's records, in order (a file of whole records). */
typedef struct {
    uint64_t n;
    const char *p[4096];
    uint64_t len[4096];
} records;

static void split(const char *data, uint64_t len, records *r) {
    r->n = 0;
    uint64_t off = 0;
    while (off + SLG_FRAME_OVERHEAD <= len && r->n < 4096) {
        uint64_t n = slg_get_le64(data + off);
        if (off + SLG_FRAME_OVERHEAD + n > len) break;
        CHECK_EQ(slg_get_le32(data + off + 8), slg_masked_crc32c(data + off, 8));
        CHECK_EQ(slg_get_le32(data + off + 12 + n), slg_masked_crc32c(data + off + 12, n));
        r->p[r->n] = data + off + 12;
        r->len[r->n++] = n;
        off += n + SLG_FRAME_OVERHEAD;
    }
    CHECK_EQ(off, len);
}

/* The single-call event for (values, is_f64, n, bins, wall, step, tag). */
static int same_as_single(const char *got, uint64_t got_len, const void *v, int is_f64,
                          uint64_t n, int64_t bins, double wall, int64_t step, const char *tag) {
    uint64_t cap = slg_tb_histogram_event_bound(strlen(tag), bins);
    char *want = xmalloc(cap);
    int64_t len = slg_tb_encode_histogram_event(v, is_f64, n, bins, wall, step, tag, strlen(tag),
                                                want, cap);
    int ok = CHECK(len > 0 && len != SLG_HIST_FALLBACK) && CHECK_EQ(got_len, (uint64_t)len) &&
             CHECK_MEM(got, want, (size_t)len);
    free(want);
    return ok;
}

static int same_scalar(const char *got, uint64_t got_len, double value, double wall,
                       int64_t step, const char *tag) {
    uint32_t count = 1, id = 0;
    uint64_t offs[2] = {0, strlen(tag)};
    int64_t need = slg_tb_encode_scalars(NULL, 0, 1, &wall, &step, &count, &id, &value, tag,
                                         offs, 1);
    char *want = xmalloc((size_t)need);
    CHECK_EQ(slg_tb_encode_scalars(want, (uint64_t)need, 1, &wall, &step, &count, &id, &value,
                                   tag, offs, 1), need);
    /* framed: the payload is after the 12-byte header */
    int ok = CHECK_EQ(got_len + SLG_FRAME_OVERHEAD, (uint64_t)need) &&
             CHECK_MEM(got, want + SLG_HEADER_SIZE, (size_t)got_len);
    free(want);
    return ok;
}

/* Values with NaN, ±inf, repeats; n may be 0. */
static void fill(t_rng *r, void *v, int is_f64, uint64_t n) {
    for (uint64_t k = 0; k < n; k++) {
        uint64_t pick = rng_below(r, 40);
        double x = pick == 0 ? NAN : pick == 1 ? INFINITY : pick == 2 ? -INFINITY
                 : ((double)rng_below(r, 4001) - 2000.0) / 16.0;
        if (is_f64) ((double *)v)[k] = x;
        else ((float *)v)[k] = (float)x;
    }
}

/* A lane over one float32 tensor tagged "h", with the scalar tag given
 * ("" for none). */
static slg_lane *one_lane(slg_binner *b, slg_writer *w, const float *v, uint64_t n,
                          const char *scalar_tag, uint64_t slots) {
    uint64_t srcs[1] = {(uint64_t)(uintptr_t)v}, counts[1] = {n}, tag_lens[1] = {1};
    uint8_t f64[1] = {0};
    slg_lane *l = NULL;
    CHECK_EQ(slg_lane_open(b, w, 1, srcs, counts, f64, "h", tag_lens, scalar_tag,
                           strlen(scalar_tag), slots, SLG_DIALECT_TB, &l), 0);
    return l;
}

/* Jobs of random items (every kind of values, no finite one included) come
 * out in order, each item as the single call encodes it, after the job's
 * scalar when it has one; statuses and counts are right. */
static void test_jobs_in_order(void) {
    char path[4096];
    slg_writer *w = open_writer("jobs.tfevents", path, sizeof path);
    slg_binner *b = NULL;
    CHECK_EQ(slg_binner_open(19, 0.05, &b), 0);
    t_rng r;
    rng_seed(&r, 21);
    enum { JOBS = 40, MAXN = 5 };
    slg_hist_job jobs[JOBS];
    slg_hist_item items[JOBS][MAXN];
    void *vals[JOBS][MAXN];
    char tags[JOBS][MAXN][16];
    memset(jobs, 0, sizeof jobs);
    memset(items, 0, sizeof items);
    for (int j = 0; j < JOBS; j++) {
        jobs[j].writer = w;
        jobs[j].items = items[j];
        jobs[j].n = rng_below(&r, MAXN + 1);
        if (j == 3 && jobs[j].n == 0) jobs[j].n = 1;
        jobs[j].has_scalar = (int)rng_below(&r, 2);
        jobs[j].scalar_tag = "loss/auto";
        jobs[j].scalar_tag_len = 9;
        jobs[j].scalar = (double)j / 3.0;
        for (uint64_t i = 0; i < jobs[j].n; i++) {
            slg_hist_item *it = &items[j][i];
            it->n = rng_below(&r, 3) == 0 ? rng_below(&r, 4) : rng_below(&r, 3000);
            it->is_f64 = (int)rng_below(&r, 2);
            vals[j][i] = xmalloc(it->n * 8 + 8);
            fill(&r, vals[j][i], it->is_f64, it->n);
            it->values = vals[j][i];
            it->bins = (int64_t)rng_below(&r, 70) - 5;
            if (j == 3 && i == 0) /* a 4.8 MB event: the encode buffer is freed after it */
                it->bins = 300000;
            snprintf(tags[j][i], sizeof tags[j][i], "t%d/%d", j, (int)i);
            it->tag = tags[j][i];
            it->tag_len = strlen(tags[j][i]);
        }
        CHECK_EQ(slg_binner_submit(b, &jobs[j], 1, 100 + j, 1.5 + j), 0);
        CHECK_EQ(jobs[j].ticket, (uint64_t)j + 1);
    }
    CHECK_EQ(slg_binner_flush(b), 0);
    CHECK_EQ(slg_binner_done(b), (uint64_t)JOBS);
    CHECK_EQ(slg_writer_close(w), 0);
    uint64_t len;
    char *data = read_file(path, &len);
    static records rec;
    split(data, len, &rec);
    uint64_t k = 0, want_records = 0;
    for (int j = 0; j < JOBS; j++) {
        uint64_t jr = (uint64_t)jobs[j].has_scalar + jobs[j].n;
        CHECK_EQ(jobs[j].write_status, 0);
        CHECK_EQ(jobs[j].records, jr);
        want_records += jr;
        if (jobs[j].has_scalar && k < rec.n) {
            same_scalar(rec.p[k], rec.len[k], jobs[j].scalar, 1.5 + j, 100 + j, "loss/auto");
            k++;
        }
        for (uint64_t i = 0; i < jobs[j].n && k < rec.n; i++, k++) {
            slg_hist_item *it = &items[j][i];
            CHECK_EQ(it->step, 100 + j);
            CHECK_EQ((uint64_t)it->status, rec.len[k]);
            same_as_single(rec.p[k], rec.len[k], it->values, it->is_f64, it->n, it->bins,
                           1.5 + j, 100 + j, tags[j][i]);
        }
    }
    CHECK_EQ(rec.n, want_records);
    CHECK_EQ(k, rec.n);
    free(data);
    for (int j = 0; j < JOBS; j++)
        for (uint64_t i = 0; i < jobs[j].n; i++) free(vals[j][i]);
    slg_binner_free(b);
    slg_writer_free(w);
}

/* Misuse: a job still queued, a ticket never given, no writer, a closed
 * binner; close() finishes what was queued and is idempotent. */
static void test_refusals_and_close(void) {
    char path[4096];
    slg_writer *w = open_writer("refuse.tfevents", path, sizeof path);
    slg_binner *b = NULL;
    CHECK_EQ(slg_binner_open(20, 0.1, &b), -EINVAL);
    CHECK_EQ(slg_binner_open(0, 0.0, &b), -EINVAL);
    CHECK_EQ(slg_binner_open(0, 10.0, &b), 0); /* a long timer: only wakes move it */
    float v[1000];
    for (int i = 0; i < 1000; i++) v[i] = (float)i;
    slg_hist_item it = {v, 1000, 0, 3, 1.0, "w", 1, 0, 0, 0};
    slg_hist_job job;
    memset(&job, 0, sizeof job);
    job.items = &it;
    job.n = 1;
    CHECK_EQ(slg_binner_submit(b, &job, 0, 0, 0), -EINVAL); /* no writer */
    job.writer = w;
    CHECK_EQ(slg_binner_wait(b, 1), -EINVAL); /* never given */
    CHECK_EQ(slg_binner_submit(b, &job, 0, 0, 0), 0);
    /* queued again before it finished: refused (its ticket is not done) */
    int again = slg_binner_submit(b, &job, 0, 0, 0);
    CHECK(again == -EINVAL || (again == 0 && job.ticket == 2));
    uint64_t want = again == 0 ? 5 : 4;
    CHECK_EQ(slg_binner_wait(b, job.ticket), 0);
    CHECK_EQ(job.records, 1);
    slg_hist_job more[3];
    memset(more, 0, sizeof more);
    for (int i = 0; i < 3; i++) {
        more[i].writer = w, more[i].items = &it, more[i].n = 1;
    }
    for (int i = 0; i < 3; i++) CHECK_EQ(slg_binner_submit(b, &more[i], 0, 0, 0), 0);
    CHECK_EQ(slg_binner_close(b), 0); /* finishes them */
    for (int i = 0; i < 3; i++) CHECK_EQ(more[i].records, 1);
    CHECK_EQ(slg_binner_done(b), more[2].ticket);
    CHECK_EQ(slg_binner_close(b), 0);
    slg_hist_job late;
    memset(&late, 0, sizeof late);
    late.writer = w, late.items = &it, late.n = 1;
    CHECK_EQ(slg_binner_submit(b, &late, 0, 0, 0), -EBADF);
    CHECK_EQ(slg_binner_flush(b), 0);
    slg_binner_free(b);
    /* a job into a closed writer: its status says so, nothing is torn */
    CHECK_EQ(slg_binner_open(0, 0.5, &b), 0);
    CHECK_EQ(slg_writer_close(w), 0);
    memset(&late, 0, sizeof late);
    late.writer = w, late.items = &it, late.n = 1;
    CHECK_EQ(slg_binner_submit(b, &late, 0, 0, 0), 0);
    CHECK_EQ(slg_binner_wait(b, late.ticket), 0);
    CHECK_EQ(late.write_status, -EBADF);
    CHECK_EQ(late.records, 0);
    slg_binner_free(b);
    slg_writer_free(w);
    uint64_t len;
    char *data = read_file(path, &len);
    static records rec;
    split(data, len, &rec);
    CHECK_EQ(rec.n, want);
    free(data);
}

typedef struct {
    slg_binner *b;
    slg_writer *w;
    int id;
} submitter;

/* One thread's 50 jobs of 3 items each, tagged with its id. */
static void *submit_many(void *arg) {
    submitter *s = arg;
    enum { N = 50 };
    static float v[2][600];
    slg_hist_item *items = xmalloc(sizeof(slg_hist_item) * 3 * N);
    slg_hist_job *jobs = xmalloc(sizeof(slg_hist_job) * N);
    memset(items, 0, sizeof(slg_hist_item) * 3 * N);
    memset(jobs, 0, sizeof(slg_hist_job) * N);
    static const char *tags[2] = {"a", "b"};
    for (int i = 0; i < 600; i++) v[s->id][i] = (float)(i * (s->id + 1));
    for (int j = 0; j < N; j++) {
        for (int i = 0; i < 3; i++) {
            slg_hist_item *it = &items[3 * j + i];
            it->values = v[s->id];
            it->n = 600;
            it->tag = tags[s->id];
            it->tag_len = 1;
        }
        jobs[j].writer = s->w;
        jobs[j].items = &items[3 * j];
        jobs[j].n = 3;
        CHECK_EQ(slg_binner_submit(s->b, &jobs[j], 1, j, 0.5), 0);
    }
    CHECK_EQ(slg_binner_wait(s->b, jobs[N - 1].ticket), 0);
    for (int j = 0; j < N; j++) CHECK_EQ(jobs[j].records, 3);
    free(items);
    free(jobs);
    return NULL;
}

/* Two threads' jobs: every job's three events land together, in each
 * thread's order. */
static void test_two_threads(void) {
    char path[4096];
    slg_writer *w = open_writer("threads.tfevents", path, sizeof path);
    slg_binner *b = NULL;
    CHECK_EQ(slg_binner_open(19, 0.5, &b), 0);
    pthread_t t[2];
    submitter s[2] = {{b, w, 0}, {b, w, 1}};
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, submit_many, &s[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    slg_binner_free(b);
    CHECK_EQ(slg_writer_close(w), 0);
    uint64_t len;
    char *data = read_file(path, &len);
    static records rec;
    split(data, len, &rec);
    CHECK_EQ(rec.n, 300);
    int64_t next[2] = {0, 0};
    for (uint64_t k = 0; k + 2 < rec.n; k += 3) {
        for (int i = 1; i < 3; i++) /* a job's three events land together */
            CHECK(rec.len[k + i] == rec.len[k] && !memcmp(rec.p[k + i], rec.p[k], rec.len[k]));
        /* Event{wall_time = 1 (9 bytes), step = 2 (varint, omitted when 0), ...} */
        const uint8_t *p = (const uint8_t *)rec.p[k] + 9;
        int64_t step = 0;
        if (*p == 0x10) {
            p++;
            int shift = 0;
            for (; *p & 0x80; shift += 7) step |= (int64_t)(*p++ & 0x7f) << shift;
            step |= (int64_t)*p << shift;
        }
        const char *tag = memmem(rec.p[k], rec.len[k], "\x0a\x01", 2); /* tag: 1 byte */
        int id = tag != NULL && tag[2] == 'b';
        CHECK_EQ(step, next[id]); /* each thread's jobs in its order */
        next[id]++;
    }
    CHECK_EQ(next[0] + next[1], 100);
    free(data);
    slg_writer_free(w);
}

/* A lane: each collection is the sources' values at collect() time (they
 * change right after), the scalar first, steps and wall times stamped;
 * the stats count collections and events. */
static void test_lane_collections(void) {
    char path[4096];
    slg_writer *w = open_writer("lane.tfevents", path, sizeof path);
    slg_binner *b = NULL;
    CHECK_EQ(slg_binner_open(19, 0.02, &b), 0);
    t_rng r;
    rng_seed(&r, 5);
    enum { N = 3, ROUNDS = 30 };
    uint64_t counts[N] = {1000, 17, 4097};
    uint8_t f64[N] = {0, 1, 0};
    void *src[N];
    uint64_t srcs[N];
    for (int i = 0; i < N; i++) {
        src[i] = xmalloc(counts[i] * 8);
        srcs[i] = (uint64_t)(uintptr_t)src[i];
    }
    const char tags[] = "w/autob/autolonger/name/auto";
    uint64_t tag_lens[N] = {6, 6, 16};
    slg_lane *l = NULL;
    CHECK_EQ(slg_lane_open(b, w, N, srcs, counts, f64, tags, tag_lens, "loss/auto", 9, 3,
                           SLG_DIALECT_TB, &l), 0);
    /* the values each collection saw, kept to check the file */
    void *seen[ROUNDS][N];
    int taken[ROUNDS];
    for (int k = 0; k < ROUNDS; k++) {
        for (int i = 0; i < N; i++) {
            fill(&r, src[i], f64[i], counts[i]);
            seen[k][i] = xmalloc(counts[i] * 8);
            memcpy(seen[k][i], src[i], counts[i] * (f64[i] ? 8 : 4));
        }
        int rc;
        do { /* a busy lane: wait for the binner, then again */
            rc = slg_lane_collect(l, k % 4 != 3, 0.25 * k, 10 * k, 100.0 + k);
            if (rc == SLG_LANE_BUSY) slg_binner_flush(b);
        } while (rc == SLG_LANE_BUSY);
        CHECK_EQ(rc, 0);
        taken[k] = rc == 0;
        for (int i = 0; i < N; i++) memset(src[i], 0x7f, counts[i] * (f64[i] ? 8 : 4));
    }
    CHECK_EQ(slg_binner_flush(b), 0);
    slg_lane_stats st;
    slg_lane_get_stats(l, &st);
    CHECK_EQ(st.collections, ROUNDS);
    CHECK_EQ(st.slots, 3);
    CHECK_EQ(st.failed, 0);
    uint64_t want_events = 0;
    for (int k = 0; k < ROUNDS; k++) want_events += (uint64_t)(k % 4 != 3) + N;
    CHECK_EQ(st.events, want_events);
    CHECK_EQ(slg_lane_take_error(l), 0);
    slg_lane_free(l);
    slg_binner_free(b);
    CHECK_EQ(slg_writer_close(w), 0);
    uint64_t len;
    char *data = read_file(path, &len);
    static records rec;
    split(data, len, &rec);
    CHECK_EQ(rec.n, want_events);
    uint64_t k = 0;
    const char *tag_at[N] = {"w/auto", "b/auto", "longer/name/auto"};
    for (int c = 0; c < ROUNDS && k < rec.n; c++) {
        if (!taken[c]) continue;
        if (c % 4 != 3) {
            same_scalar(rec.p[k], rec.len[k], 0.25 * c, 100.0 + c, 10 * c, "loss/auto");
            k++;
        }
        for (int i = 0; i < N && k < rec.n; i++, k++)
            same_as_single(rec.p[k], rec.len[k], seen[c][i], f64[i], counts[i], 0, 100.0 + c,
                           10 * c, tag_at[i]);
    }
    CHECK_EQ(k, rec.n);
    free(data);
    for (int c = 0; c < ROUNDS; c++)
        for (int i = 0; i < N; i++) free(seen[c][i]);
    for (int i = 0; i < N; i++) free(src[i]);
    slg_writer_free(w);
}

/* A varint at *p (a well-formed file: the writer's own). */
static uint64_t get_varint(const char **p) {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
        unsigned char c = (unsigned char)*(*p)++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (c < 0x80) return v;
    }
}

/* A MindSpore-dialect lane: each collection is one Event holding the scalar
 * (when given) and every histogram, which is slg_ms_histogram's of the values
 * at collect() time; tensors of one value, specials and tiny sizes included. */
static void test_ms_lane(void) {
    char path[4096];
    slg_writer *w = open_writer("lane_MS", path, sizeof path);
    slg_binner *b = NULL;
    CHECK_EQ(slg_binner_open(19, 0.02, &b), 0);
    t_rng r;
    rng_seed(&r, 11);
    enum { N = 4, ROUNDS = 60 };
    uint64_t counts[N] = {1, 900, 5, 3000};
    uint8_t f64[N] = {0, 1, 1, 0};
    void *src[N];
    uint64_t srcs[N];
    for (int i = 0; i < N; i++) {
        src[i] = xmalloc(counts[i] * 8);
        srcs[i] = (uint64_t)(uintptr_t)src[i];
    }
    const char tags[] = "a/autob/autoc/autod/auto";
    uint64_t tag_lens[N] = {6, 6, 6, 6};
    slg_lane *l = NULL;
    CHECK_EQ(slg_lane_open(b, w, N, srcs, counts, f64, tags, tag_lens, "loss/auto", 9, 3,
                           SLG_DIALECT_MS, &l), 0);
    static char want[ROUNDS][N][SLG_MS_HISTOGRAM_MAX];
    int64_t want_len[ROUNDS][N];
    for (int k = 0; k < ROUNDS; k++) {
        for (int i = 0; i < N; i++) {
            fill(&r, src[i], f64[i], counts[i]);
            if (k % 7 == 0) memset(src[i], 0, counts[i] * (f64[i] ? 8 : 4)); /* one value */
            want_len[k][i] = slg_ms_histogram(src[i], f64[i], counts[i], NULL, NULL, 0,
                                              want[k][i], SLG_MS_HISTOGRAM_MAX);
            CHECK(want_len[k][i] > 0);
        }
        int rc;
        do {
            rc = slg_lane_collect(l, k % 3 != 2, 0.5 * k, 5 * k, 10.0 + k);
            if (rc == SLG_LANE_BUSY) slg_binner_flush(b);
        } while (rc == SLG_LANE_BUSY);
        CHECK_EQ(rc, 0);
        for (int i = 0; i < N; i++) memset(src[i], 0x7f, counts[i] * (f64[i] ? 8 : 4));
    }
    CHECK_EQ(slg_binner_flush(b), 0);
    slg_lane_stats st;
    slg_lane_get_stats(l, &st);
    CHECK_EQ(st.collections, ROUNDS);
    CHECK_EQ(st.events, ROUNDS);
    CHECK_EQ(st.failed, 0);
    slg_lane_free(l);
    slg_binner_free(b);
    CHECK_EQ(slg_writer_close(w), 0);
    uint64_t len;
    char *data = read_file(path, &len);
    static records rec;
    split(data, len, &rec);
    CHECK_EQ(rec.n, ROUNDS);
    for (int k = 0; k < ROUNDS; k++) {
        const char *p = rec.p[k], *end = p + rec.len[k];
        CHECK_EQ((unsigned char)p[0], 0x09);
        double wall;
        memcpy(&wall, p + 1, 8);
        CHECK(wall == 10.0 + k);
        p += 9;
        CHECK_EQ((unsigned char)*p++, 0x10);
        CHECK_EQ(get_varint(&p), (uint64_t)(5 * k));
        CHECK_EQ((unsigned char)*p++, 0x2A);
        CHECK_EQ(get_varint(&p), (uint64_t)(end - p));
        if (k % 3 != 2) { /* value{tag "loss/auto", scalar_value 0.5k} */
            CHECK_EQ((unsigned char)*p++, 0x0A);
            CHECK_EQ(get_varint(&p), 2 + 9 + 5);
            CHECK(memcmp(p, "\x0a\x09loss/auto\x1d", 12) == 0);
            float f;
            memcpy(&f, p + 12, 4);
            CHECK(f == (float)(0.5 * k));
            p += 16;
        }
        for (int i = 0; i < N; i++) {
            CHECK_EQ((unsigned char)*p++, 0x0A);
            const char *value_end = p;
            uint64_t vlen = get_varint(&p);
            value_end = p + vlen;
            CHECK_EQ((unsigned char)*p++, 0x0A);
            CHECK_EQ(get_varint(&p), 6);
            CHECK(memcmp(p, tags + 6 * i, 6) == 0);
            p += 6;
            CHECK_EQ((unsigned char)*p++, 0x4A);
            CHECK_EQ(get_varint(&p), (uint64_t)want_len[k][i]);
            CHECK(memcmp(p, want[k][i], (size_t)want_len[k][i]) == 0);
            p += want_len[k][i];
            CHECK(p == value_end);
        }
        CHECK(p == end);
    }
    free(data);
    for (int i = 0; i < N; i++) free(src[i]);
    slg_writer_free(w);
}

/* A stalled disk: the binner blocks in the writer, the lane's slots stay
 * queued, and collect() says busy instead of overwriting one; released,
 * everything is written.  Then write errors reach collect() once each. */
static void test_lane_busy_and_errors(void) {
    char path[4096];
    tmp_path(path, sizeof path, "busy.tfevents");
    slg_writer *w = NULL;
    /* a small buffer, so the binner's writes wait for the stalled disk */
    CHECK_EQ(slg_writer_open(path, 0644, 5.0, 1024, 4096, SLG_DURABILITY_NONE, SLG_ON_FULL_BLOCK,
                             &w), 0);
    slg_binner *b = NULL;
    CHECK_EQ(slg_binner_open(0, 0.01, &b), 0);
    float v[2000];
    for (int i = 0; i < 2000; i++) v[i] = (float)i;
    slg_lane *l = one_lane(b, w, v, 2000, "", 2);
    slg_writer_inject_stall(w, 1);
    int busy = 0, queued = 0;
    for (int k = 0; k < 20 && !busy; k++) {
        int rc = slg_lane_collect(l, 0, 0, k, 1.0);
        if (rc == SLG_LANE_BUSY) busy = 1;
        else if (CHECK_EQ(rc, 0)) queued++;
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    CHECK(busy);
    CHECK(queued >= 2); /* the writer's buffer took some before it filled */
    slg_writer_inject_stall(w, 0);
    CHECK_EQ(slg_binner_flush(b), 0);
    slg_lane_stats st;
    slg_lane_get_stats(l, &st);
    CHECK_EQ(st.collections, (uint64_t)queued);
    CHECK(st.busy >= 1);
    CHECK_EQ(st.events, (uint64_t)queued);
    CHECK_EQ(slg_lane_take_error(l), 0);
    /* the file closed under the lane: its jobs fail to write, and each
     * error comes back once, from a later collect() or take_error() */
    CHECK_EQ(slg_writer_close(w), 0);
    CHECK_EQ(slg_lane_collect(l, 0, 0, 100, 1.0), 0);
    CHECK_EQ(slg_binner_flush(b), 0);
    CHECK_EQ(slg_lane_collect(l, 0, 0, 101, 1.0), -EBADF); /* queued; the error is 100's */
    CHECK_EQ(slg_binner_flush(b), 0);
    CHECK_EQ(slg_lane_take_error(l), -EBADF); /* 101's */
    CHECK_EQ(slg_lane_take_error(l), 0);
    slg_lane_get_stats(l, &st);
    CHECK_EQ(st.events, (uint64_t)queued); /* nothing more was written */
    slg_lane_free(l);
    slg_binner_free(b);
    slg_writer_free(w);
    uint64_t len;
    char *data = read_file(path, &len);
    static records rec;
    split(data, len, &rec);
    CHECK_EQ(rec.n, (uint64_t)queued);
    free(data);
}

/* A forked child's copies refuse every call, and freeing them does nothing
 * (no thread to join, no lock to take); the parent's go on. */
static void test_fork_child_refuses(void) {
    char path[4096];
    slg_writer *w = open_writer("fork.tfevents", path, sizeof path);
    slg_binner *b = NULL;
    CHECK_EQ(slg_binner_open(19, 0.05, &b), 0);
    float v[100] = {1, 2, 3};
    slg_lane *l = one_lane(b, w, v, 100, "s", 2);
    CHECK_EQ(slg_lane_collect(l, 1, 1.0, 1, 1.0), 0);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int bad = 0;
        slg_hist_item it = {v, 100, 0, 0, 0, "x", 1, 0, 0, 0};
        slg_hist_job job;
        memset(&job, 0, sizeof job);
        job.writer = w, job.items = &it, job.n = 1;
        bad |= slg_binner_submit(b, &job, 0, 0, 0) != -ECHILD;
        bad |= slg_binner_wait(b, 1) != -ECHILD;
        bad |= slg_binner_flush(b) != -ECHILD;
        bad |= slg_lane_collect(l, 0, 0, 2, 1.0) != -ECHILD;
        bad |= slg_lane_take_error(l) != -ECHILD;
        slg_lane_free(l);
        slg_binner_free(b);
        _exit(bad ? 3 : 0);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ(slg_lane_collect(l, 1, 2.0, 2, 1.0), 0);
    CHECK_EQ(slg_binner_flush(b), 0);
    slg_lane_stats st;
    slg_lane_get_stats(l, &st);
    CHECK_EQ(st.events, 4);
    slg_lane_free(l);
    slg_binner_free(b);
    CHECK_EQ(slg_writer_close(w), 0);
    slg_writer_free(w);
}

static void *close_it(void *arg) {
    CHECK_EQ(slg_binner_close((slg_binner *)arg), 0);
    return NULL;
}

/* Two threads close at once (the shutdown handler and the owner): one joins
 * the thread, the other waits for it; both return once every queued job is
 * done.  A full buffer with on_full = DROP: the events are counted dropped
 * in the job and the lane, and the writer counts them too. */
static void test_two_closers_and_drops(void) {
    char path[4096];
    tmp_path(path, sizeof path, "drop.tfevents");
    slg_writer *w = NULL;
    CHECK_EQ(slg_writer_open(path, 0644, 5.0, 1024, 4096, SLG_DURABILITY_NONE, SLG_ON_FULL_DROP,
                             &w), 0);
    slg_binner *b = NULL;
    CHECK_EQ(slg_binner_open(19, 10.0, &b), 0);
    static float v[20000];
    for (int i = 0; i < 20000; i++) v[i] = (float)i;
    slg_lane *l = one_lane(b, w, v, 20000, "s", 4);
    slg_writer_inject_stall(w, 1); /* nothing leaves the buffer: it fills, then drops */
    for (int k = 0; k < 12; k++) {
        CHECK_EQ(slg_lane_collect(l, 1, (double)k, k, 1.0), 0);
        CHECK_EQ(slg_binner_flush(b), 0);
    }
    slg_lane_stats st;
    slg_lane_get_stats(l, &st);
    CHECK_EQ(st.events + st.dropped, 24);
    CHECK(st.dropped > 0);
    CHECK_EQ(st.pending, 0);
    slg_writer_stats ws;
    slg_writer_get_stats(w, &ws);
    CHECK_EQ(ws.records_dropped, st.dropped);
    slg_writer_inject_stall(w, 0);
    for (int k = 12; k < 16; k++) CHECK_EQ(slg_lane_collect(l, 1, (double)k, k, 1.0), 0);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, close_it, b);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    slg_lane_get_stats(l, &st);
    CHECK_EQ(st.pending, 0); /* the closers returned after the queue was done */
    CHECK_EQ(st.collections, 16);
    CHECK_EQ(slg_lane_collect(l, 1, 1.0, 99, 1.0), SLG_LANE_CLOSED);
    slg_lane_free(l);
    slg_binner_free(b);
    CHECK_EQ(slg_writer_close(w), 0);
    slg_writer_free(w);
}

int main(void) {
    if (!files_begin("slg-binner")) return 2;
    RUN(test_jobs_in_order);
    RUN(test_refusals_and_close);
    RUN(test_two_threads);
    RUN(test_lane_collections);
    RUN(test_ms_lane);
    RUN(test_lane_busy_and_errors);
    RUN(test_fork_child_refuses);
    RUN(test_two_closers_and_drops);
    files_end();
    return TEST_SUMMARY();
}
