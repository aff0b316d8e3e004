/* test_writer.c - the buffered record writer (writer.c): O_EXCL creation,
 * write / write_many / write_raw / flush / close against slg_frame of each
 * payload, the stats counters, many threads at once (every record intact,
 * each thread's records in order, each write_many batch contiguous), the
 * durability modes, on_full = DROP, injected write faults (the batch is
 * lost and counted, the file is cut back to the last good batch and still
 * scans clean, later writes succeed), and the calls after close.
 *
 * Files go to a fresh directory under $TMPDIR (or /tmp), removed at the end. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "summarylog_api.h"
#include "test_files.h"
#include "test_main.h"

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Expected file bytes, built with slg_frame. */
typedef struct {
    char *b;
    uint64_t len, cap, records;
} bytes;

static void b_frame(bytes *e, const char *payload, uint64_t len) {
    if (e->len + len + 16 > e->cap) {
        while (e->len + len + 16 > e->cap) e->cap = e->cap ? 2 * e->cap : 4096;
        e->b = realloc(e->b, (size_t)e->cap);
        if (!e->b) abort();
    }
    e->len += slg_frame(e->b + e->len, payload, len);
    e->records++;
}

static int file_equals(const char *path, const bytes *e) {
    uint64_t n;
    char *got = read_file(path, &n);
    int ok = CHECK(got != NULL);
    ok = ok && CHECK_EQ(n, e->len);
    ok = ok && CHECK_MEM(got, e->b, e->len);
    free(got);
    return ok;
}

/* Scan a whole file: must end cleanly with no damage; returns the spans. */
static slg_span *scan_file(const char *b, uint64_t len, uint64_t *n_spans) {
    uint64_t cap = len / 16 + 1;
    slg_span *sp = xmalloc((size_t)cap * sizeof *sp);
    slg_damage dm[4];
    slg_scan_state st = {0};
    st.verify_data = 1;
    uint64_t nd = 0;
    int rc = slg_scan(&st, b, len, 0, len, 1, sp, cap, n_spans, dm, 4, &nd);
    CHECK_EQ(rc, SLG_SCAN_END);
    CHECK_EQ(nd, 0);
    CHECK_EQ(st.pos, len);
    return sp;
}

static void fill_payload(char *p, uint64_t len, uint64_t seed) {
    for (uint64_t i = 0; i < len; i++) p[i] = (char)((seed * 131 + i * 7 + (i >> 8)) & 0xFF);
}

static slg_writer *open_ok(const char *path, double flush_secs, uint64_t flush_bytes,
                           uint64_t max_buffer, int durability, int on_full) {
    slg_writer *w = NULL;
    int rc = slg_writer_open(path, 0600, flush_secs, flush_bytes, max_buffer, durability, on_full,
                             &w);
    if (!CHECK_EQ(rc, 0) || !CHECK(w != NULL)) {
        fprintf(stderr, "cannot open %s: %s\n", path, strerror(-rc));
        exit(1);
    }
    return w;
}

/* fdatasync(2) as writer.c sees it: this program's definition takes the
 * place of libc's, so a test can make the next calls fail (STYLE.md §6.12:
 * "a hook makes the next write/fdatasync fail"; the writer's own hook only
 * covers write(2)). */
static int fdatasync_fail_err, fdatasync_fail_count;

static void fail_fdatasync(int err, int count) {
    __atomic_store_n(&fdatasync_fail_err, err, __ATOMIC_SEQ_CST);
    __atomic_store_n(&fdatasync_fail_count, count, __ATOMIC_SEQ_CST);
}

int fdatasync(int fd) {
    int left = __atomic_load_n(&fdatasync_fail_count, __ATOMIC_SEQ_CST);
    while (left > 0) {
        if (__atomic_compare_exchange_n(&fdatasync_fail_count, &left, left - 1, 0,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
            errno = __atomic_load_n(&fdatasync_fail_err, __ATOMIC_SEQ_CST);
            return -1;
        }
    }
    return (int)syscall(SYS_fdatasync, fd);
}

/* ---- tests --------------------------------------------------------------------- */

static void test_open_exclusive(void) {
    char path[4200];
    tmp_path(path, sizeof path, "excl.tfevents");
    slg_writer *w = open_ok(path, 1.0, 1 << 16, 1 << 20, SLG_DURABILITY_NONE, SLG_ON_FULL_BLOCK);
    struct stat st;
    if (CHECK_EQ(stat(path, &st), 0)) CHECK_EQ(st.st_mode & 0777, 0600);

    slg_writer *w2 = (slg_writer *)&st; /* must be reset to NULL */
    CHECK_EQ(slg_writer_open(path, 0600, 1.0, 1 << 16, 1 << 20, 0, 0, &w2), -EEXIST);
    CHECK(w2 == NULL);
    CHECK_EQ(slg_writer_close(w), 0);
    slg_writer_free(w);
    CHECK_EQ(slg_writer_open(path, 0600, 1.0, 1 << 16, 1 << 20, 0, 0, &w2), -EEXIST);

    /* an existing file is never truncated or appended to */
    char keep[4200];
    tmp_path(keep, sizeof keep, "keep");
    int fd = open(keep, O_WRONLY | O_CREAT | O_EXCL, 0600);
    CHECK(fd >= 0 && write(fd, "keep", 4) == 4);
    close(fd);
    CHECK_EQ(slg_writer_open(keep, 0600, 1.0, 1 << 16, 1 << 20, 0, 0, &w2), -EEXIST);
    uint64_t n;
    char *b = read_file(keep, &n);
    CHECK_EQ(n, 4);
    if (b && n == 4) CHECK_MEM(b, "keep", 4);
    free(b);

    char nodir[4200];
    snprintf(nodir, sizeof nodir, "%s/no/such/dir/f", dir);
    CHECK_EQ(slg_writer_open(nodir, 0600, 1.0, 1 << 16, 1 << 20, 0, 0, &w2), -ENOENT);

    /* bad arguments: -EINVAL, and no file left behind */
    char bad[4200];
    tmp_path(bad, sizeof bad, "never-created");
    const double nan = __builtin_nan("");
    struct {
        double secs;
        uint64_t fb, mb;
        int dur, full;
    } cases[] = {
        {0.0, 1024, 1 << 20, 0, 0},  {-1.0, 1024, 1 << 20, 0, 0}, {nan, 1024, 1 << 20, 0, 0},
        {2e6, 1024, 1 << 20, 0, 0},  {1.0, 0, 1 << 20, 0, 0},     {1.0, 1024, 63, 0, 0},
        {1.0, 1024, 1 << 20, 3, 0},  {1.0, 1024, 1 << 20, -1, 0}, {1.0, 1024, 1 << 20, 0, 2},
        {1.0, 1024, 1 << 20, 0, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        w2 = (slg_writer *)&st;
        if (!CHECK_EQ(slg_writer_open(bad, 0600, cases[i].secs, cases[i].fb, cases[i].mb,
                                      cases[i].dur, cases[i].full, &w2),
                      -EINVAL))
            fprintf(stderr, "    case %zu\n", i);
        CHECK(w2 == NULL);
        CHECK(access(bad, F_OK) != 0);
    }
}

/* docs/format.md §1.2: the complete 40-byte record */
static const unsigned char RECORD40[40] = {
    0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xa3, 0x7f, 0x4b, 0x22, 0x09, 0x00,
    0x00, 0x80, 0x38, 0x99, 0xd6, 0xd7, 0x41, 0x1a, 0x0d, 0x62, 0x72, 0x61, 0x69, 0x6e,
    0x2e, 0x45, 0x76, 0x65, 0x6e, 0x74, 0x3a, 0x32, 0x12, 0x4b, 0x36, 0xab};

static void test_write_flush_close(void) {
    char path[4200];
    tmp_path(path, sizeof path, "content.tfevents");
    slg_writer *w = open_ok(path, 1000.0, 1 << 22, 1 << 23, SLG_DURABILITY_NONE, SLG_ON_FULL_BLOCK);
    bytes e = {0};
    slg_writer_stats s;
    slg_writer_get_stats(w, &s);
    CHECK_EQ(s.records_accepted + s.bytes_written + s.flushes + s.file_size + s.closed, 0);

    /* the docs/format.md §1.2 record first, byte for byte */
    CHECK_EQ(slg_writer_write(w, (const char *)RECORD40 + 12, 24), 0);
    b_frame(&e, (const char *)RECORD40 + 12, 24);
    /* sizes around the buffer's first 64 KiB allocation */
    static const uint64_t lens[] = {0, 1, 1000, 65536 - 16, 65536, 70000, 3, 0};
    char *p = xmalloc(70000);
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        fill_payload(p, lens[i], i);
        CHECK_EQ(slg_writer_write(w, lens[i] ? p : NULL, lens[i]), 0);
        b_frame(&e, p, lens[i]);
    }
    /* write_many: n payloads back to back */
    uint64_t many_lens[5] = {10, 0, 200, 1, 5000};
    uint64_t tot = 0;
    for (int i = 0; i < 5; i++) tot += many_lens[i];
    char *concat = xmalloc((size_t)tot);
    fill_payload(concat, tot, 99);
    uint64_t accepted = 77;
    CHECK_EQ(slg_writer_write_many(w, concat, many_lens, 5, &accepted), 0);
    CHECK_EQ(accepted, 5);
    for (uint64_t i = 0, o = 0; i < 5; o += many_lens[i], i++)
        b_frame(&e, concat + o, many_lens[i]);
    CHECK_EQ(slg_writer_write_many(w, concat, many_lens, 0, &accepted), 0);
    CHECK_EQ(accepted, 0);
    /* write_raw: bytes as they are, counted as 2 records */
    bytes raw = {0};
    b_frame(&raw, "raw one", 7);
    b_frame(&raw, "raw two", 7);
    CHECK_EQ(slg_writer_write_raw(w, raw.b, raw.len, 2), 0);
    b_frame(&e, "raw one", 7);
    b_frame(&e, "raw two", 7);

    slg_writer_get_stats(w, &s);
    CHECK_EQ(s.records_accepted, e.records);
    CHECK_EQ(s.buffered_bytes, e.len); /* nothing flushed yet: timer 1000 s, threshold 4 MiB */
    CHECK_EQ(s.records_written, 0);

    CHECK_EQ(slg_writer_flush(w), 0);
    slg_writer_get_stats(w, &s);
    CHECK_EQ(s.records_accepted, e.records);
    CHECK_EQ(s.records_written, e.records);
    CHECK_EQ(s.bytes_written, e.len);
    CHECK_EQ(s.file_size, e.len);
    CHECK_EQ(s.buffered_bytes, 0);
    CHECK_EQ(s.flushes, 1);
    CHECK_EQ(s.records_dropped + s.records_lost + s.bytes_lost + s.errors + s.fsyncs, 0);
    CHECK_EQ(s.last_errno, 0);
    CHECK_EQ(s.closed, 0);
    /* flushed bytes are in the file while it is still open */
    file_equals(path, &e);
    uint64_t n;
    char *b = read_file(path, &n);
    if (b && n >= 40) CHECK_MEM(b, RECORD40, 40);
    free(b);

    CHECK_EQ(slg_writer_flush(w), 0); /* nothing buffered: still fine */
    slg_writer_get_stats(w, &s);
    CHECK_EQ(s.flushes, 1);

    /* more after a flush, then close flushes the rest */
    for (int i = 0; i < 10; i++) {
        fill_payload(p, (uint64_t)i * 10, (uint64_t)i + 1000);
        CHECK_EQ(slg_writer_write(w, p, (uint64_t)i * 10), 0);
        b_frame(&e, p, (uint64_t)i * 10);
    }
    CHECK_EQ(slg_writer_close(w), 0);
    slg_writer_get_stats(w, &s);
    CHECK_EQ(s.closed, 1);
    CHECK_EQ(s.records_written, e.records);
    CHECK_EQ(s.bytes_written, e.len);
    CHECK_EQ(s.file_size, e.len);
    CHECK_EQ(s.buffered_bytes, 0);
    CHECK_EQ(s.fsyncs, 0); /* durability NONE */
    file_equals(path, &e);
    b = read_file(path, &n);
    uint64_t ns = 0;
    slg_span *sp = scan_file(b, n, &ns);
    CHECK_EQ(ns, e.records);
    free(sp);
    free(b);
    slg_writer_free(w);
    free(p);
    free(concat);
    free(raw.b);
    free(e.b);
}

static void test_after_close(void) {
    char path[4200];
    tmp_path(path, sizeof path, "closed.tfevents");
    slg_writer *w = open_ok(path, 1.0, 1 << 16, 1 << 20, SLG_DURABILITY_FLUSH, SLG_ON_FULL_BLOCK);
    CHECK_EQ(slg_writer_write(w, "x", 1), 0);
    CHECK_EQ(slg_writer_close(w), 0);
    CHECK_EQ(slg_writer_close(w), 0); /* idempotent */
    CHECK_EQ(slg_writer_close(w), 0);
    CHECK_EQ(slg_writer_flush(w), -EBADF);
    CHECK_EQ(slg_writer_write(w, "y", 1), -EBADF);
    uint64_t lens[2] = {1, 1}, acc = 9;
    CHECK_EQ(slg_writer_write_many(w, "ab", lens, 2, &acc), -EBADF);
    CHECK_EQ(acc, 0);
    CHECK_EQ(slg_writer_write_raw(w, "zzzz", 4, 0), -EBADF);
    CHECK_EQ(slg_writer_take_error(w), 0);
    slg_writer_stats s;
    slg_writer_get_stats(w, &s);
    CHECK_EQ(s.closed, 1);
    CHECK_EQ(s.records_accepted, 1);
    CHECK_EQ(s.records_written, 1);
    CHECK_EQ(s.fsyncs, 1); /* durability FLUSH: one fdatasync at close */
    slg_writer_free(w);
    slg_writer_free(NULL);

    /* free without close closes, flushing what was buffered */
    tmp_path(path, sizeof path, "freed.tfevents");
    w = open_ok(path, 1000.0, 1 << 16, 1 << 20, SLG_DURABILITY_NONE, SLG_ON_FULL_BLOCK);
    bytes e = {0};
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(slg_writer_write(w, "payload", 7), 0);
        b_frame(&e, "payload", 7);
    }
    slg_writer_free(w);
    file_equals(path, &e);
    free(e.b);
}

/* A payload over SLG_MAX_PAYLOAD (2 GiB - 1) is refused before anything is
 * read or written; the lengths are checked, the bytes never touched. */
static void test_oversized_payload_refused(void) {
    char path[4200];
    tmp_path(path, sizeof path, "oversized.tfevents");
    slg_writer *w = open_ok(path, 1.0, 1 << 16, 1 << 20, SLG_DURABILITY_NONE, SLG_ON_FULL_BLOCK);
    CHECK_EQ(slg_writer_write(w, "a", 1), 0);
    CHECK_EQ(slg_writer_write(w, "tiny", (uint64_t)SLG_MAX_PAYLOAD + 1), -EMSGSIZE);
    CHECK_EQ(slg_writer_write(w, "tiny", UINT64_MAX), -EMSGSIZE);
    uint64_t lens[3] = {1, (uint64_t)SLG_MAX_PAYLOAD + 1, 1}, acc = 9;
    CHECK_EQ(slg_writer_write_many(w, "bcd", lens, 3, &acc), -EMSGSIZE);
    CHECK_EQ(acc, 0); /* all or nothing */
    CHECK_EQ(slg_writer_write(w, "e", 1), 0);
    CHECK_EQ(slg_writer_close(w), 0);
    slg_writer_free(w);
    bytes e = {0};
    b_frame(&e, "a", 1);
    b_frame(&e, "e", 1);
    file_equals(path, &e);
    free(e.b);
}

static void test_durability_modes(void) {
    for (int dur = SLG_DURABILITY_NONE; dur <= SLG_DURABILITY_FSYNC; dur++) {
        char path[4200];
        tmp_path(path, sizeof path, "durability.tfevents");
        slg_writer *w = open_ok(path, 1000.0, 1 << 16, 1 << 20, dur, SLG_ON_FULL_BLOCK);
        bytes e = {0};
        slg_writer_stats s;
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < 4; i++) {
                CHECK_EQ(slg_writer_write(w, "durable", 7), 0);
                b_frame(&e, "durable", 7);
            }
            CHECK_EQ(slg_writer_flush(w), 0);
        }
        slg_writer_get_stats(w, &s);
        CHECK_EQ(s.flushes, 3);
        CHECK_EQ(s.fsyncs, dur == SLG_DURABILITY_FSYNC ? 3 : 0); /* group commit per round */
        CHECK_EQ(s.records_written, 12);
        CHECK_EQ(slg_writer_close(w), 0);
        slg_writer_get_stats(w, &s);
        /* FLUSH: one fdatasync at close; FSYNC: every round already synced */
        CHECK_EQ(s.fsyncs, dur == SLG_DURABILITY_NONE ? 0 : dur == SLG_DURABILITY_FLUSH ? 1 : 3);
        file_equals(path, &e);
        slg_writer_free(w);
        free(e.b);

        /* nothing written: nothing to sync */
        tmp_path(path, sizeof path, "durability-empty.tfevents");
        w = open_ok(path, 1000.0, 1 << 16, 1 << 20, dur, SLG_ON_FULL_BLOCK);
        CHECK_EQ(slg_writer_close(w), 0);
        slg_writer_get_stats(w, &s);
        CHECK_EQ(s.fsyncs, 0);
        CHECK_EQ(s.flushes, 0);
        slg_writer_free(w);
    }
}

static void test_timer_and_threshold_flush(void) {
    /* the flusher writes on its own: after flush_secs, or past flush_bytes */
    char path[4200];
    tmp_path(path, sizeof path, "timer.tfevents");
    slg_writer *w = open_ok(path, 0.01, 1 << 20, 1 << 22, SLG_DURABILITY_NONE, SLG_ON_FULL_BLOCK);
    CHECK_EQ(slg_writer_write(w, "tick", 4), 0);
    slg_writer_stats s;
    int waited = 0;
    do {
        sleep_ms(5);
        slg_writer_get_stats(w, &s);
    } while (s.records_written < 1 && (waited += 5) < 10000);
    CHECK_EQ(s.records_written, 1);
    CHECK_EQ(s.buffered_bytes, 0);
    slg_writer_free(w);

    tmp_path(path, sizeof path, "threshold.tfevents");
    w = open_ok(path, 1000.0, 1000, 1 << 20, SLG_DURABILITY_NONE, SLG_ON_FULL_BLOCK);
    char p[600];
    fill_payload(p, sizeof p, 5);
    CHECK_EQ(slg_writer_write(w, p, sizeof p), 0);
    CHECK_EQ(slg_writer_write(w, p, sizeof p), 0); /* passes 1000 bytes: wakes the flusher */
    waited = 0;
    do {
        sleep_ms(5);
        slg_writer_get_stats(w, &s);
    } while (s.records_written < 2 && (waited += 5) < 10000);
    CHECK_EQ(s.records_written, 2);
    slg_writer_free(w);
}

static void test_on_full_drop(void) {
    char path[4200];
    tmp_path(path, sizeof path, "drop.tfevents");
    /* 64-byte buffer; the flusher only runs when asked (63-byte threshold, 1000 s timer) */
    slg_writer *w = open_ok(path, 1000.0, 63, 64, SLG_DURABILITY_NONE, SLG_ON_FULL_DROP);
    bytes e = {0};
    char p[20];
    fill_payload(p, sizeof p, 1);
    CHECK_EQ(slg_writer_write(w, p, 20), 0); /* 36 bytes buffered */
    b_frame(&e, p, 20);
    CHECK_EQ(slg_writer_write(w, p, 20), SLG_DROPPED); /* 72 > 64 */
    char three[60];
    fill_payload(three, 60, 2);
    uint64_t lens[3] = {20, 20, 20}, acc = 9;
    CHECK_EQ(slg_writer_write_many(w, three, lens, 3, &acc), SLG_DROPPED);
    CHECK_EQ(acc, 0);
    bytes raw = {0};
    b_frame(&raw, p, 20);
    CHECK_EQ(slg_writer_write_raw(w, raw.b, raw.len, 1), SLG_DROPPED);
    slg_writer_stats s;
    slg_writer_get_stats(w, &s);
    CHECK_EQ(s.records_dropped, 5);
    CHECK_EQ(s.records_accepted, 1);
    CHECK_EQ(s.buffered_bytes, 36);

    CHECK_EQ(slg_writer_flush(w), 0);
    /* an empty buffer takes even a batch bigger than max_buffer */
    CHECK_EQ(slg_writer_write_many(w, three, lens, 3, &acc), 0);
    CHECK_EQ(acc, 3);
    for (int i = 0; i < 3; i++) b_frame(&e, three + 20 * i, 20);
    CHECK_EQ(slg_writer_flush(w), 0);
    CHECK_EQ(slg_writer_write(w, p, 20), 0);
    b_frame(&e, p, 20);
    CHECK_EQ(slg_writer_close(w), 0);
    slg_writer_get_stats(w, &s);
    CHECK_EQ(s.records_accepted, 5);
    CHECK_EQ(s.records_dropped, 5);
    CHECK_EQ(s.records_written, 5);
    CHECK_EQ(s.blocked_ns, 0);
    file_equals(path, &e);
    slg_writer_free(w);
    free(e.b);
    free(raw.b);

    /* a stream of writes into a tiny buffer: every call accepts or drops,
     * the counters agree, and the file holds exactly the accepted records */
    tmp_path(path, sizeof path, "drop-many.tfevents");
    w = open_ok(path, 0.001, 32, 128, SLG_DURABILITY_NONE, SLG_ON_FULL_DROP);
    bytes e2 = {0};
    uint64_t ok = 0, dropped = 0;
    char q[40];
    for (int i = 0; i < 5000; i++) {
        fill_payload(q, sizeof q, (uint64_t)i);
        int rc = slg_writer_write(w, q, sizeof q);
        if (rc == 0) {
            ok++;
            b_frame(&e2, q, sizeof q);
        } else if (rc == SLG_DROPPED) {
            dropped++;
        } else {
            CHECK_EQ(rc, 0);
            break;
        }
    }
    CHECK_EQ(slg_writer_close(w), 0);
    slg_writer_get_stats(w, &s);
    CHECK_EQ(s.records_accepted, ok);
    CHECK_EQ(s.records_dropped, dropped);
    CHECK_EQ(s.records_written, ok);
    CHECK_EQ(ok + dropped, 5000);
    printf("  drop: %llu accepted, %llu dropped into a 128-byte buffer\n",
           (unsigned long long)ok, (unsigned long long)dropped);
    file_equals(path, &e2);
    slg_writer_free(w);
    free(e2.b);
}

static void test_on_full_block(void) {
    char path[4200];
    tmp_path(path, sizeof path, "block.tfevents");
    slg_writer *w = open_ok(path, 0.001, 128, 256, SLG_DURABILITY_NONE, SLG_ON_FULL_BLOCK);
    bytes e = {0};
    char p[100];
    for (int i = 0; i < 2000; i++) {
        fill_payload(p, sizeof p, (uint64_t)i);
        if (!CHECK_EQ(slg_writer_write(w, p, sizeof p), 0)) break;
        b_frame(&e, p, sizeof p);
    }
    /* a record bigger than the whole buffer still goes through */
    char *big = xmalloc(10000);
    fill_payload(big, 10000, 3);
    CHECK_EQ(slg_writer_write(w, big, 10000), 0);
    b_frame(&e, big, 10000);
    CHECK_EQ(slg_writer_write(w, p, 10), 0);
    b_frame(&e, p, 10);
    CHECK_EQ(slg_writer_close(w), 0);
    slg_writer_stats s;
    slg_writer_get_stats(w, &s);
    CHECK_EQ(s.records_accepted, e.records);
    CHECK_EQ(s.records_written, e.records);
    CHECK_EQ(s.records_dropped, 0);
    printf("  block: %llu records through a 256-byte buffer, %llu flushes, blocked %.3f ms\n",
           (unsigned long long)s.records_written, (unsigned long long)s.flushes,
           (double)s.blocked_ns / 1e6);
    file_equals(path, &e);
    slg_writer_free(w);
    free(big);
    free(e.b);
}

static void test_fault_enospc(void) {
    for (int dur = SLG_DURABILITY_NONE; dur <= SLG_DURABILITY_FSYNC; dur += 2) {
        char path[4200];
        tmp_path(path, sizeof path, "enospc.tfevents");
        slg_writer *w = open_ok(path, 1000.0, 1 << 22, 1 << 23, dur, SLG_ON_FULL_BLOCK);
        bytes e = {0};
        char p[300];
        for (int i = 0; i < 5; i++) { /* batch 1: reaches the file */
            fill_payload(p, 50 + (uint64_t)i, (uint64_t)i);
            CHECK_EQ(slg_writer_write(w, p, 50 + (uint64_t)i), 0);
            b_frame(&e, p, 50 + (uint64_t)i);
        }
        CHECK_EQ(slg_writer_flush(w), 0);
        uint64_t good = e.len;

        slg_writer_inject_fault(w, ENOSPC, 1);
        uint64_t lost_bytes = 0;
        for (int i = 0; i < 7; i++) { /* batch 2: half written, then ENOSPC */
            fill_payload(p, 200 + (uint64_t)i, 100 + (uint64_t)i);
            CHECK_EQ(slg_writer_write(w, p, 200 + (uint64_t)i), 0);
            lost_bytes += 216 + (uint64_t)i;
        }
        CHECK_EQ(slg_writer_flush(w), -ENOSPC);
        CHECK_EQ(slg_writer_flush(w), 0); /* reported once */
        CHECK_EQ(slg_writer_take_error(w), 0);
        slg_writer_stats s;
        slg_writer_get_stats(w, &s);
        CHECK_EQ(s.records_lost, 7);
        CHECK_EQ(s.bytes_lost, lost_bytes);
        CHECK_EQ(s.errors, 1);
        CHECK_EQ(s.last_errno, ENOSPC);
        CHECK_EQ(s.records_written, 5);
        CHECK_EQ(s.bytes_written, good);
        CHECK_EQ(s.file_size, good);
        CHECK_EQ(s.buffered_bytes, 0);
        /* the half-written batch was cut off: the file is batch 1, clean */
        file_equals(path, &e);
        uint64_t n, ns;
        char *b = read_file(path, &n);
        free(scan_file(b, n, &ns));
        CHECK_EQ(ns, 5);
        free(b);

        for (int i = 0; i < 4; i++) { /* batch 3: fine again */
            fill_payload(p, 30 + (uint64_t)i, 200 + (uint64_t)i);
            CHECK_EQ(slg_writer_write(w, p, 30 + (uint64_t)i), 0);
            b_frame(&e, p, 30 + (uint64_t)i);
        }
        CHECK_EQ(slg_writer_flush(w), 0);
        CHECK_EQ(slg_writer_close(w), 0);
        slg_writer_get_stats(w, &s);
        CHECK_EQ(s.records_accepted, 16);
        CHECK_EQ(s.records_written, 9);
        CHECK_EQ(s.records_lost, 7);
        CHECK_EQ(s.errors, 1);
        CHECK_EQ(s.fsyncs, dur == SLG_DURABILITY_FSYNC ? 2 : 0);
        file_equals(path, &e);
        slg_writer_free(w);
        free(e.b);
    }
}

static void test_fault_fdatasync(void) {
    /* durability FSYNC: the batch's fdatasync fails.  The batch is lost and
     * counted, and, as for a failed write, the file is cut back to the last
     * good batch: no unsynced records left behind for a later, shorter batch
     * to half overwrite. */
    char path[4200];
    tmp_path(path, sizeof path, "fdatasync-fault.tfevents");
    slg_writer *w =
        open_ok(path, 1000.0, 1 << 22, 1 << 23, SLG_DURABILITY_FSYNC, SLG_ON_FULL_BLOCK);
    bytes e = {0};
    char p[300];
    for (int i = 0; i < 5; i++) {
        fill_payload(p, 40, (uint64_t)i);
        CHECK_EQ(slg_writer_write(w, p, 40), 0);
        b_frame(&e, p, 40);
    }
    CHECK_EQ(slg_writer_flush(w), 0);
    uint64_t good = e.len;
    fail_fdatasync(EIO, 1);
    for (int i = 0; i < 7; i++) {
        fill_payload(p, 250, 50 + (uint64_t)i);
        CHECK_EQ(slg_writer_write(w, p, 250), 0);
    }
    CHECK_EQ(slg_writer_flush(w), -EIO);
    slg_writer_stats s;
    slg_writer_get_stats(w, &s);
    CHECK_EQ(s.records_lost, 7);
    CHECK_EQ(s.errors, 1);
    CHECK_EQ(s.last_errno, EIO);
    CHECK_EQ(s.records_written, 5);
    CHECK_EQ(s.file_size, good);
    CHECK_EQ(s.fsyncs, 1);
    if (!file_equals(path, &e))
        fprintf(stderr, "    the batch whose fdatasync failed is still in the file\n");
    for (int i = 0; i < 2; i++) { /* a later, shorter batch */
        fill_payload(p, 10, 90 + (uint64_t)i);
        CHECK_EQ(slg_writer_write(w, p, 10), 0);
        b_frame(&e, p, 10);
    }
    CHECK_EQ(slg_writer_flush(w), 0);
    CHECK_EQ(slg_writer_close(w), 0);
    if (!file_equals(path, &e))
        fprintf(stderr, "    later batch + leftovers of the failed one\n");
    uint64_t n, ns = 0, nd = 0;
    char *b = read_file(path, &n);
    {
        uint64_t cap = n / 16 + 1;
        slg_span *sp = xmalloc((size_t)cap * sizeof *sp);
        slg_damage dm[8];
        slg_scan_state st = {0};
        st.verify_data = 1;
        int rc = slg_scan(&st, b, n, 0, n, 1, sp, cap, &ns, dm, 8, &nd);
        if (!(CHECK_EQ(rc, SLG_SCAN_END) && CHECK_EQ(nd, 0) && CHECK_EQ(ns, 7)))
            fprintf(stderr, "    file scan: status %d, %llu records, %llu damaged ranges\n", rc,
                    (unsigned long long)ns, (unsigned long long)nd);
        free(sp);
    }
    free(b);
    slg_writer_free(w);
    free(e.b);

    /* durability FLUSH: the fdatasync at close fails; close reports it once */
    tmp_path(path, sizeof path, "fdatasync-close.tfevents");
    w = open_ok(path, 1000.0, 1 << 22, 1 << 23, SLG_DURABILITY_FLUSH, SLG_ON_FULL_BLOCK);
    CHECK_EQ(slg_writer_write(w, "reached the OS", 14), 0);
    CHECK_EQ(slg_writer_flush(w), 0);
    fail_fdatasync(EIO, 1);
    CHECK_EQ(slg_writer_close(w), -EIO);
    CHECK_EQ(slg_writer_close(w), 0);
    slg_writer_get_stats(w, &s);
    CHECK_EQ(s.errors, 1);
    CHECK_EQ(s.fsyncs, 0);
    CHECK_EQ(s.records_written, 1);
    slg_writer_free(w);
    fail_fdatasync(0, 0);
}

static void test_fault_twice_and_clear(void) {
    char path[4200];
    tmp_path(path, sizeof path, "eio.tfevents");
    slg_writer *w = open_ok(path, 1000.0, 1 << 22, 1 << 23, SLG_DURABILITY_NONE, SLG_ON_FULL_BLOCK);
    bytes e = {0};
    slg_writer_inject_fault(w, EIO, 2);
    for (int round = 0; round < 2; round++) {
        CHECK_EQ(slg_writer_write(w, "lost record", 11), 0);
        CHECK_EQ(slg_writer_flush(w), -EIO);
    }
    CHECK_EQ(slg_writer_write(w, "kept record", 11), 0);
    b_frame(&e, "kept record", 11);
    CHECK_EQ(slg_writer_flush(w), 0);
    /* count 0 / errno 0 clears a pending fault */
    slg_writer_inject_fault(w, EIO, 3);
    slg_writer_inject_fault(w, 0, 3);
    CHECK_EQ(slg_writer_write(w, "kept again", 10), 0);
    b_frame(&e, "kept again", 10);
    CHECK_EQ(slg_writer_flush(w), 0);
    slg_writer_inject_fault(w, EIO, 0);
    CHECK_EQ(slg_writer_write(w, "and again", 9), 0);
    b_frame(&e, "and again", 9);
    CHECK_EQ(slg_writer_close(w), 0);
    slg_writer_stats s;
    slg_writer_get_stats(w, &s);
    CHECK_EQ(s.errors, 2);
    CHECK_EQ(s.records_lost, 2);
    CHECK_EQ(s.records_written, 3);
    CHECK_EQ(s.last_errno, EIO);
    file_equals(path, &e);
    slg_writer_free(w);
    free(e.b);
}

static void test_fault_reported_by_write_and_close(void) {
    /* a background flush fails: the next write reports it, once */
    char path[4200];
    tmp_path(path, sizeof path, "bg-fault.tfevents");
    slg_writer *w = open_ok(path, 0.005, 1 << 20, 1 << 22, SLG_DURABILITY_NONE, SLG_ON_FULL_BLOCK);
    bytes e = {0};
    slg_writer_inject_fault(w, ENOSPC, 1);
    CHECK_EQ(slg_writer_write(w, "doomed", 6), 0);
    slg_writer_stats s;
    int waited = 0;
    do {
        sleep_ms(5);
        slg_writer_get_stats(w, &s);
    } while (s.errors == 0 && (waited += 5) < 10000);
    CHECK_EQ(s.errors, 1);
    CHECK_EQ(slg_writer_write(w, "second", 6), -ENOSPC); /* accepted; reports the old error */
    b_frame(&e, "second", 6);
    CHECK_EQ(slg_writer_write(w, "third", 5), 0);
    b_frame(&e, "third", 5);
    CHECK_EQ(slg_writer_close(w), 0);
    slg_writer_get_stats(w, &s);
    CHECK_EQ(s.records_accepted, 3);
    CHECK_EQ(s.records_lost, 1);
    CHECK_EQ(s.records_written, 2);
    file_equals(path, &e);
    slg_writer_free(w);
    free(e.b);

    /* the final flush at close fails: close reports it, a second close does not */
    tmp_path(path, sizeof path, "close-fault.tfevents");
    w = open_ok(path, 1000.0, 1 << 20, 1 << 22, SLG_DURABILITY_FLUSH, SLG_ON_FULL_BLOCK);
    CHECK_EQ(slg_writer_write(w, "never lands", 11), 0);
    slg_writer_inject_fault(w, EIO, 1);
    CHECK_EQ(slg_writer_close(w), -EIO);
    CHECK_EQ(slg_writer_close(w), 0);
    slg_writer_get_stats(w, &s);
    CHECK_EQ(s.records_lost, 1);
    CHECK_EQ(s.file_size, 0);
    uint64_t n;
    free(read_file(path, &n));
    CHECK_EQ(n, 0);
    slg_writer_free(w);
}

/* ---- many threads ------------------------------------------------------------------ */

#define N_THREADS 8
#define PER_THREAD 3000

typedef struct {
    slg_writer *w;
    int tid;
    uint64_t batches;
} worker;

/* Payload of record `seq` of thread `tid`, part k of n of batch `batch`. */
static uint64_t make_record(char *out, int tid, int seq, int batch, int k, int n) {
    int h = snprintf(out, 64, "T%02d S%06d B%06d K%02d/%02d|", tid, seq, batch, k, n);
    uint64_t len = (uint64_t)h + (uint64_t)((seq * 7919 + tid * 104729) % 300);
    for (uint64_t i = (uint64_t)h; i < len; i++)
        out[i] = (char)('a' + (tid * 31 + seq + (int)i) % 26);
    return len;
}

static void *worker_main(void *arg) {
    worker *a = arg;
    char *buf = xmalloc(8 * 400);
    uint64_t lens[8];
    int seq = 0, batch = 0;
    while (seq < PER_THREAD) {
        int mode = (seq / 3 + a->tid) % 5;
        if (mode == 3) { /* write_many of up to 8 */
            int n = 1 + (seq + a->tid) % 8;
            if (n > PER_THREAD - seq) n = PER_THREAD - seq;
            uint64_t off = 0;
            for (int k = 0; k < n; k++) {
                lens[k] = make_record(buf + off, a->tid, seq + k, batch, k, n);
                off += lens[k];
            }
            uint64_t acc = 0;
            CHECK_EQ(slg_writer_write_many(a->w, buf, lens, (uint64_t)n, &acc), 0);
            CHECK_EQ(acc, (uint64_t)n);
            seq += n;
            batch++;
            a->batches++;
        } else if (mode == 4) { /* write_raw of one framed record */
            char payload[400];
            uint64_t len = make_record(payload, a->tid, seq, batch, 0, 1);
            uint64_t fl = slg_frame(buf, payload, len);
            CHECK_EQ(slg_writer_write_raw(a->w, buf, fl, 1), 0);
            seq++;
            batch++;
        } else {
            uint64_t len = make_record(buf, a->tid, seq, batch, 0, 1);
            CHECK_EQ(slg_writer_write(a->w, buf, len), 0);
            seq++;
            batch++;
        }
        if (a->tid == 0 && seq % 500 < 3) CHECK_EQ(slg_writer_flush(a->w), 0);
        if (a->tid == 1 && seq % 100 == 0) {
            slg_writer_stats s;
            slg_writer_get_stats(a->w, &s);
            CHECK(s.records_written <= s.records_accepted);
        }
    }
    free(buf);
    return NULL;
}

static void test_many_threads(void) {
    char path[4200];
    tmp_path(path, sizeof path, "threads.tfevents");
    slg_writer *w = open_ok(path, 0.002, 8192, 32768, SLG_DURABILITY_NONE, SLG_ON_FULL_BLOCK);
    pthread_t th[N_THREADS];
    worker args[N_THREADS];
    for (int t = 0; t < N_THREADS; t++) {
        args[t] = (worker){.w = w, .tid = t};
        CHECK_EQ(pthread_create(&th[t], NULL, worker_main, &args[t]), 0);
    }
    for (int t = 0; t < N_THREADS; t++) pthread_join(th[t], NULL);
    CHECK_EQ(slg_writer_close(w), 0);
    slg_writer_stats s;
    slg_writer_get_stats(w, &s);
    uint64_t total = (uint64_t)N_THREADS * PER_THREAD;
    CHECK_EQ(s.records_accepted, total);
    CHECK_EQ(s.records_written, total);
    CHECK_EQ(s.records_dropped + s.records_lost + s.errors, 0);

    uint64_t n, ns;
    char *b = read_file(path, &n);
    CHECK_EQ(s.bytes_written, n);
    CHECK_EQ(s.file_size, n);
    slg_span *sp = scan_file(b, n, &ns);
    CHECK_EQ(ns, total);
    int next[N_THREADS] = {0};
    int prev_tid = -1, prev_batch = -1, prev_k = -1, bad = 0;
    char want[400], got[400];
    for (uint64_t i = 0; i < ns && bad < 5; i++) {
        uint64_t len = sp[i].length;
        if (len >= sizeof got) len = sizeof got - 1;
        memcpy(got, b + sp[i].offset, (size_t)len);
        got[len] = 0;
        int tid, seq, batch, k, m;
        if (sscanf(got, "T%d S%d B%d K%d/%d|", &tid, &seq, &batch, &k, &m) != 5 || tid < 0 ||
            tid >= N_THREADS) {
            bad++;
            t_fail(__FILE__, __LINE__, "record %llu unparsable", (unsigned long long)i);
            continue;
        }
        /* each thread's records in its order, none missing, none doubled */
        if (!CHECK_EQ(seq, next[tid])) bad++;
        next[tid] = seq + 1;
        /* the content is exactly what the thread framed */
        uint64_t wl = make_record(want, tid, seq, batch, k, m);
        if (!CHECK_EQ(sp[i].length, wl) || !CHECK_MEM(b + sp[i].offset, want, wl)) bad++;
        /* a write_many batch is contiguous: part k follows part k - 1 */
        if (k > 0 && !(CHECK_EQ(prev_tid, tid) && CHECK_EQ(prev_batch, batch) &&
                       CHECK_EQ(prev_k, k - 1)))
            bad++;
        prev_tid = tid;
        prev_batch = batch;
        prev_k = k;
    }
    for (int t = 0; t < N_THREADS; t++) CHECK_EQ(next[t], PER_THREAD);
    printf("  threads: %d x %d records, %llu bytes, %llu flushes, blocked %.3f ms\n", N_THREADS,
           PER_THREAD, (unsigned long long)n, (unsigned long long)s.flushes,
           (double)s.blocked_ns / 1e6);
    free(sp);
    free(b);
    slg_writer_free(w);
}

typedef struct {
    slg_writer *w;
    int tid;
    uint64_t accepted;
    int bad_rc;
} closer_arg;

static void *write_until_closed(void *arg) {
    closer_arg *a = arg;
    char buf[400];
    for (int seq = 0;; seq++) {
        uint64_t len = make_record(buf, a->tid, seq, seq, 0, 1);
        int rc = slg_writer_write(a->w, buf, len);
        if (rc == -EBADF) break;
        if (rc != 0) {
            a->bad_rc = rc;
            break;
        }
        a->accepted++;
    }
    return NULL;
}

static void test_close_while_writing(void) {
    char path[4200];
    tmp_path(path, sizeof path, "close-race.tfevents");
    /* a small buffer, so some writers are blocked waiting for room at close */
    slg_writer *w = open_ok(path, 0.001, 512, 1024, SLG_DURABILITY_NONE, SLG_ON_FULL_BLOCK);
    pthread_t th[4];
    closer_arg args[4];
    for (int t = 0; t < 4; t++) {
        args[t] = (closer_arg){.w = w, .tid = t};
        CHECK_EQ(pthread_create(&th[t], NULL, write_until_closed, &args[t]), 0);
    }
    sleep_ms(30);
    CHECK_EQ(slg_writer_close(w), 0);
    uint64_t accepted = 0;
    for (int t = 0; t < 4; t++) {
        pthread_join(th[t], NULL);
        CHECK_EQ(args[t].bad_rc, 0);
        accepted += args[t].accepted;
    }
    slg_writer_stats s;
    slg_writer_get_stats(w, &s);
    CHECK_EQ(s.records_accepted, accepted);
    CHECK_EQ(s.records_written, accepted); /* everything accepted reached the file */
    uint64_t n, ns;
    char *b = read_file(path, &n);
    slg_span *sp = scan_file(b, n, &ns);
    CHECK_EQ(ns, accepted);
    int next[4] = {0};
    for (uint64_t i = 0; i < ns; i++) {
        int tid = -1, seq = -1;
        char head[32];
        uint64_t l = sp[i].length < 31 ? sp[i].length : 31;
        memcpy(head, b + sp[i].offset, (size_t)l);
        head[l] = 0;
        if (sscanf(head, "T%d S%d", &tid, &seq) != 2 || tid < 0 || tid >= 4) {
            CHECK(0);
            break;
        }
        if (!CHECK_EQ(seq, next[tid])) break;
        next[tid]++;
    }
    for (int t = 0; t < 4; t++) CHECK_EQ((uint64_t)next[t], args[t].accepted);
    printf("  close race: %llu records accepted before close\n", (unsigned long long)accepted);
    free(sp);
    free(b);
    slg_writer_free(w);
}

/* After fork() the child's copy of a writer refuses every call with -ECHILD
 * (summarylog_api.h); the parent's writer carries on, and the file holds only
 * the parent's records. */
static void test_fork_child_refuses(void) {
    char path[4200];
    tmp_path(path, sizeof path, "fork.tfevents");
    slg_writer *w = open_ok(path, 1000.0, 1 << 20, 1 << 22, SLG_DURABILITY_NONE, SLG_ON_FULL_BLOCK);
    bytes e = {0};
    CHECK_EQ(slg_writer_write(w, "before fork", 11), 0); /* still buffered at fork */
    b_frame(&e, "before fork", 11);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int bad = 0;
        uint64_t lens[1] = {5}, acc = 9;
        slg_writer_stats s;
        bad |= slg_writer_write(w, "child", 5) != -ECHILD;
        bad |= (slg_writer_write_many(w, "child", lens, 1, &acc) != -ECHILD) << 1;
        bad |= (slg_writer_write_raw(w, "child", 5, 1) != -ECHILD) << 2;
        bad |= (slg_writer_flush(w) != -ECHILD) << 3;
        bad |= (slg_writer_take_error(w) != -ECHILD) << 4;
        slg_writer_get_stats(w, &s);
        bad |= (s.closed != 1) << 5;
        bad |= (slg_writer_close(w) != -ECHILD) << 6;
        slg_writer_free(w);
        _exit(bad); /* no atexit handlers: the parent owns everything else */
    }
    if (!CHECK(pid > 0)) return;
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    if (!(CHECK(WIFEXITED(status)) && CHECK_EQ(WEXITSTATUS(status), 0)))
        fprintf(stderr, "    child status 0x%x (bit k set: the k-th call did not give -ECHILD)\n",
                status);
    CHECK_EQ(slg_writer_write(w, "after fork", 10), 0);
    b_frame(&e, "after fork", 10);
    CHECK_EQ(slg_writer_close(w), 0);
    file_equals(path, &e);
    slg_writer_free(w);
    free(e.b);
}

/* ---- main ---------------------------------------------------------------------------- */

int main(void) {
    if (!files_begin("slg-test-writer")) return 2;
    printf("writer: files in %s\n", dir);
    RUN(test_open_exclusive);
    RUN(test_write_flush_close);
    RUN(test_after_close);
    RUN(test_oversized_payload_refused);
    RUN(test_durability_modes);
    RUN(test_timer_and_threshold_flush);
    RUN(test_on_full_drop);
    RUN(test_on_full_block);
    RUN(test_fault_enospc);
    RUN(test_fault_fdatasync);
    RUN(test_fault_twice_and_clear);
    RUN(test_fault_reported_by_write_and_close);
    RUN(test_many_threads);
    RUN(test_close_while_writing);
    RUN(test_fork_child_refuses);
    files_end();
    return TEST_SUMMARY();
}
