/* writer.c - the buffered record writer.  Callers frame records into a
 * buffer (capped: when full they block or drop); one native flusher thread
 * swaps it out and writes it with pwrite(2), with no GIL, on a timer, past
 * flush_bytes, or when asked; with SLG_DURABILITY_FSYNC one fdatasync a round.
 *
 * I/O errors never leave half a batch behind: the file is truncated back to
 * the last good batch, the batch counted lost, the error reported once. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "record.h"
#include "summarylog_api.h"
#include "writer.h"

#define FRAME_CHUNK (1u << 20) /* write_many frames at most this much per lock hold */
#define DIRECT_MIN (256u << 10) /* records this big skip the buffer (written by the caller) */
#define SLG_MAX_RECORD (1ull << 40) /* no reservation past 1 TiB: sizes stay far from wrapping */

typedef struct {
    char *data;
    uint64_t len, cap, records;
} slg_buf;

struct slg_writer {
    pthread_mutex_t mu;
    pthread_cond_t wake; /* the flusher waits here */
    pthread_cond_t done; /* flush() and full-buffer waiters wait here */
    pthread_t thread;
    int fd;
    int thread_started;
    slg_buf cur, spare;
    uint64_t inflight;
    uint64_t flush_bytes, max_buffer;
    double flush_secs;
    int durability, on_full;
    uint64_t flush_req, flush_done;
    int urgent, closing, closed;
    int pending_err;
    uint64_t file_off;
    int fault_err, fault_count;
    int stalled; /* test hook: the disk accepts nothing until released */
    unsigned fork_gen; /* fork generation at open: a forked child sees a mismatch */
    int unsynced;      /* direct writes since the last fdatasync */
    slg_writer_stats st;
};

/* fork() copies a writer but not its flusher thread, and maybe a locked
 * mutex: in the child every entry point refuses (-ECHILD) before locking. */
static volatile unsigned fork_generation;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void on_fork_child(void) { fork_generation++; }
static void register_atfork(void) { pthread_atfork(NULL, NULL, on_fork_child); }
#define FORKED(w) ((w)->fork_gen != fork_generation)

unsigned slg_fork_generation(void) {
    pthread_once(&atfork_once, register_atfork);
    return fork_generation;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void record_error(slg_writer *w, int err) {
    w->st.errors++;
    w->st.last_errno = err;
    if (!w->pending_err) w->pending_err = -err;
}

static int take_error(slg_writer *w) {
    int e = w->pending_err;
    w->pending_err = 0;
    return e;
}

/* The test hook's next injected errno (0: none).  Lock held. */
static int take_fault(slg_writer *w) {
    if (w->fault_count <= 0) return 0;
    w->fault_count--;
    return w->fault_err;
}

/* Write the whole batch at w->file_off; on failure roll the file back. */
static int write_batch(int fd, uint64_t off, const char *data, uint64_t len, int fault) {
    uint64_t done = 0;
    while (done < len) {
        ssize_t n;
        size_t want = (size_t)(len - done);
        if (want > (1u << 30)) want = 1u << 30;
        if (fault) {
            /* test hook: write half, then fail */
            if (want > 1) (void)!pwrite(fd, data + done, want / 2, (off_t)(off + done));
            errno = fault;
            fault = 0;
            n = -1;
        } else {
            n = pwrite(fd, data + done, want, (off_t)(off + done));
        }
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int err = n < 0 ? errno : EIO;
            (void)!ftruncate(fd, (off_t)off);
            return err;
        }
        done += (uint64_t)n;
    }
    return 0;
}

void slg_cond_init_monotonic(pthread_cond_t *c) {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(c, &ca);
    pthread_condattr_destroy(&ca);
}

void slg_deadline_after(struct timespec *ts, double secs) {
    clock_gettime(CLOCK_MONOTONIC, ts);
    time_t whole = (time_t)secs;
    long frac = (long)((secs - (double)whole) * 1e9);
    ts->tv_sec += whole;
    ts->tv_nsec += frac;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Count `records` records of `bytes` at off as written, or as lost to err. */
static void account(slg_writer *w, uint64_t off, uint64_t bytes, uint64_t records, int err) {
    if (err) {
        record_error(w, err);
        w->st.records_lost += records;
        w->st.bytes_lost += bytes;
        return;
    }
    w->file_off = off + bytes;
    w->st.records_written += records;
    w->st.bytes_written += bytes;
    w->st.flushes++;
}

/* Ask the flusher for a write round and wait (lock held) for it, or for close. */
static void flush_round(slg_writer *w) {
    uint64_t my = ++w->flush_req;
    pthread_cond_signal(&w->wake);
    while (w->flush_done < my && !w->closed) pthread_cond_wait(&w->done, &w->mu);
}

/* The test hook's stalled disk: wait (lock held) until released or closing. */
static void wait_unstalled(slg_writer *w) {
    while (w->stalled && !w->closing && !w->closed) pthread_cond_wait(&w->done, &w->mu);
}

static void *flusher_main(void *arg) {
    slg_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        struct timespec deadline;
        slg_deadline_after(&deadline, w->flush_secs);
        while (!w->closing && !w->urgent && w->flush_req == w->flush_done &&
               w->cur.len < w->flush_bytes) {
            if (pthread_cond_timedwait(&w->wake, &w->mu, &deadline) == ETIMEDOUT) break;
        }
        wait_unstalled(w);
        uint64_t req = w->flush_req;
        int closing = w->closing;
        w->urgent = 0;
        if (w->cur.len > 0) {
            slg_buf batch = w->cur;
            w->cur = w->spare;
            w->cur.len = 0;
            w->cur.records = 0;
            w->inflight = batch.len;
            int fault = take_fault(w);
            uint64_t off = w->file_off; /* only this thread changes file_off */
            pthread_mutex_unlock(&w->mu);

            int err = write_batch(w->fd, off, batch.data, batch.len, fault);
            int synced = 0;
            if (!err && w->durability == SLG_DURABILITY_FSYNC) {
                if (fdatasync(w->fd) != 0) {
                    err = errno;
                    /* the batch is counted lost: do not leave it in the file */
                    (void)!ftruncate(w->fd, (off_t)off);
                } else {
                    synced = 1;
                }
            }

            pthread_mutex_lock(&w->mu);
            account(w, off, batch.len, batch.records, err);
            if (synced) w->unsynced = 0;
            w->st.fsyncs += (uint64_t)synced;
            w->inflight = 0;
            if (batch.cap > w->max_buffer) { /* an oversized record grew it: give it back */
                free(batch.data);
                batch = (slg_buf){0};
            }
            w->spare = batch; /* (its len and records are reset when it becomes cur) */
        } else if (w->unsynced && w->durability == SLG_DURABILITY_FSYNC) {
            /* direct writes (big records) since the last sync: one fdatasync */
            w->unsynced = 0;
            pthread_mutex_unlock(&w->mu);
            int err = fdatasync(w->fd) != 0 ? errno : 0;
            pthread_mutex_lock(&w->mu);
            if (err) record_error(w, err);
            else w->st.fsyncs++;
        }
        w->flush_done = req;
        pthread_cond_broadcast(&w->done);
        if (closing && w->cur.len == 0) break;
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int slg_writer_open(const char *path, uint32_t mode, double flush_secs, uint64_t flush_bytes,
                    uint64_t max_buffer, int durability, int on_full, slg_writer **out) {
    *out = NULL;
    if (!(flush_secs > 0) || flush_secs > 1e6 || max_buffer < 64 || flush_bytes == 0) return -EINVAL;
    if (durability < SLG_DURABILITY_NONE || durability > SLG_DURABILITY_FSYNC) return -EINVAL;
    if (on_full != SLG_ON_FULL_BLOCK && on_full != SLG_ON_FULL_DROP) return -EINVAL;
    slg_writer *w = calloc(1, sizeof *w);
    if (!w) return -ENOMEM;
    w->fork_gen = slg_fork_generation();
    w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, (mode_t)mode);
    if (w->fd < 0) {
        int err = errno;
        free(w);
        return -err;
    }
    w->flush_secs = flush_secs;
    w->flush_bytes = flush_bytes < max_buffer ? flush_bytes : max_buffer / 2;
    w->max_buffer = max_buffer;
    w->durability = durability;
    w->on_full = on_full;
    pthread_mutex_init(&w->mu, NULL);
    slg_cond_init_monotonic(&w->wake);
    pthread_cond_init(&w->done, NULL);
    int rc = pthread_create(&w->thread, NULL, flusher_main, w);
    if (rc != 0) {
        slg_writer_free(w); /* (no thread to join, nothing written: closes the file) */
        unlink(path);
        return -rc;
    }
    w->thread_started = 1;
    *out = w;
    return 0;
}

/* Lock w for a write: 0 with the lock held, else -ECHILD or -EBADF (closed)
 * unlocked.  lint: returns locked */
static int lock_open(slg_writer *w) {
    if (FORKED(w)) return -ECHILD;
    pthread_mutex_lock(&w->mu);
    if (w->closing || w->closed) {
        pthread_mutex_unlock(&w->mu);
        return -EBADF;
    }
    return 0;
}

/* Make room for `need` more bytes in w->cur.  Called with the lock held. */
static int reserve(slg_writer *w, uint64_t need) {
    uint64_t t0 = 0;
    if (need > SLG_MAX_RECORD) return -EFBIG;
    while (w->cur.len + w->inflight + need > w->max_buffer &&
           !(w->cur.len == 0 && w->inflight == 0)) {
        if (w->on_full == SLG_ON_FULL_DROP) return SLG_DROPPED;
        if (!t0) t0 = now_ns();
        w->urgent = 1;
        pthread_cond_signal(&w->wake);
        pthread_cond_wait(&w->done, &w->mu);
        if (w->closing || w->closed) return -EBADF;
    }
    if (t0) w->st.blocked_ns += now_ns() - t0;
    if (w->cur.len + need > w->cur.cap) {
        uint64_t cap = w->cur.cap ? w->cur.cap : 65536;
        while (cap < w->cur.len + need) cap *= 2;
        if (cap > w->max_buffer && w->cur.len + need <= w->max_buffer) cap = w->max_buffer;
        char *p = realloc(w->cur.data, (size_t)cap);
        if (!p) return -ENOMEM;
        w->cur.data = p;
        w->cur.cap = cap;
    }
    return 0;
}

static void after_append(slg_writer *w, uint64_t before) {
    if (before < w->flush_bytes && w->cur.len >= w->flush_bytes) pthread_cond_signal(&w->wake);
}

/* A big record goes from the caller's memory to the file with one pwritev
 * (no copy into the buffer), after everything buffered before it; the lock is
 * held throughout (by the caller) so nothing can be written between. */
static int write_direct(slg_writer *w, const char *header, const char *payload, uint64_t len,
                        const char *footer) {
    while (w->cur.len || w->inflight) { /* keep order: what came first goes first */
        flush_round(w);
        if (w->closed) return -EBADF;
    }
    wait_unstalled(w);
    if (w->closed) return -EBADF;
    uint64_t off = w->file_off, need = len + SLG_FRAME_OVERHEAD, done = 0;
    int err = take_fault(w);
    while (!err && done < need) {
        struct iovec iov[3];
        int k = 0;
        uint64_t skip = done;
        const char *parts[3] = {header, payload, footer};
        uint64_t sizes[3] = {12, len, 4};
        for (int i = 0; i < 3; i++) {
            if (skip >= sizes[i]) {
                skip -= sizes[i];
                continue;
            }
            iov[k].iov_base = (void *)(parts[i] + skip);
            iov[k].iov_len = (size_t)(sizes[i] - skip);
            skip = 0;
            k++;
        }
        ssize_t n = pwritev(w->fd, iov, k, (off_t)(off + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) err = n < 0 ? errno : EIO;
        else done += (uint64_t)n;
    }
    w->st.records_accepted++;
    if (err) (void)!ftruncate(w->fd, (off_t)off);
    account(w, off, need, 1, err);
    if (!err) {
        w->unsynced = 1;
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
        if (w->durability == SLG_DURABILITY_FSYNC) /* start write-back now: the sync is shorter */
            (void)sync_file_range(w->fd, (off_t)off, (off_t)need, SYNC_FILE_RANGE_WRITE);
#endif
    }
    return take_error(w);
}

int slg_writer_write(slg_writer *w, const char *payload, uint64_t len) {
    char header[12], footer[4];
    if (len > SLG_MAX_PAYLOAD) return -EMSGSIZE;
    slg_put_le64(header, len);
    slg_put_le32(header + 8, slg_masked_crc32c(header, 8));
    slg_put_le32(footer, slg_masked_crc32c(payload, (size_t)len));
    uint64_t need = len + SLG_FRAME_OVERHEAD;
    if (need >= DIRECT_MIN) {
        int rc = lock_open(w);
        if (rc != 0) return rc;
        rc = write_direct(w, header, payload, len, footer);
        pthread_mutex_unlock(&w->mu);
        return rc;
    }
    char *o;
    int rc = slg_writer_begin(w, need, 1, &o);
    if (rc != 0) return rc;
    memcpy(o, header, 12);
    if (len) memcpy(o + 12, payload, (size_t)len);
    memcpy(o + 12 + len, footer, 4);
    return slg_writer_commit(w, need, 1);
}

int slg_writer_write_many(slg_writer *w, const char *concat, const uint64_t *lens, uint64_t n,
                          uint64_t *accepted) {
    uint64_t i = 0;
    int rc = 0;
    *accepted = 0;
    if (FORKED(w)) return -ECHILD;
    for (uint64_t k = 0; k < n; k++)
        if (lens[k] > SLG_MAX_PAYLOAD) return -EMSGSIZE;
    pthread_mutex_lock(&w->mu);
    while (i < n) {
        if (w->closing || w->closed) {
            rc = -EBADF;
            break;
        }
        /* take as many records as fit in one chunk (at least one) */
        uint64_t j = i, bytes = 0;
        do {
            bytes += lens[j] + SLG_FRAME_OVERHEAD;
            j++;
        } while (j < n && bytes + lens[j] + SLG_FRAME_OVERHEAD <= FRAME_CHUNK);
        rc = reserve(w, bytes);
        if (rc != 0) {
            if (rc == SLG_DROPPED) w->st.records_dropped += n - i;
            break;
        }
        uint64_t before = w->cur.len;
        w->cur.len += slg_frame_many(w->cur.data + before, concat, lens + i, j - i);
        concat += bytes - (j - i) * SLG_FRAME_OVERHEAD;
        w->cur.records += j - i;
        w->st.records_accepted += j - i;
        *accepted += j - i;
        after_append(w, before);
        i = j;
        if (i < n) { /* let other threads and the flusher in between chunks */
            pthread_mutex_unlock(&w->mu);
            pthread_mutex_lock(&w->mu);
        }
    }
    if (rc == 0) rc = take_error(w);
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int slg_writer_write_raw(slg_writer *w, const char *data, uint64_t len, uint64_t records) {
    char *o;
    int rc = slg_writer_begin(w, len, records, &o);
    if (rc != 0) return rc;
    if (len) memcpy(o, data, (size_t)len);
    return slg_writer_commit(w, len, records);
}

int slg_writer_flush(slg_writer *w) {
    if (FORKED(w)) return -ECHILD;
    pthread_mutex_lock(&w->mu);
    int rc = w->closed ? -EBADF : 0;
    if (!rc) {
        flush_round(w);
        rc = take_error(w);
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int slg_writer_close(slg_writer *w) {
    if (FORKED(w)) {
        /* the parent owns the file and the buffered records: only let go of
         * our copy of the descriptor */
        if (w->fd >= 0) close(w->fd);
        w->fd = -1;
        return -ECHILD;
    }
    pthread_mutex_lock(&w->mu);
    if (w->closed || w->closing) {
        /* idempotent; a concurrent close waits for the first to finish */
        while (!w->closed) pthread_cond_wait(&w->done, &w->mu);
        int rc = take_error(w);
        pthread_mutex_unlock(&w->mu);
        return rc;
    }
    w->closing = 1;
    pthread_cond_broadcast(&w->wake);
    pthread_cond_broadcast(&w->done); /* blocked writers give up */
    pthread_mutex_unlock(&w->mu);

    if (w->thread_started) pthread_join(w->thread, NULL);

    pthread_mutex_lock(&w->mu);
    if ((w->durability == SLG_DURABILITY_FLUSH && w->st.bytes_written > 0) ||
        (w->durability == SLG_DURABILITY_FSYNC && w->unsynced)) {
        if (fdatasync(w->fd) != 0) record_error(w, errno);
        else w->st.fsyncs++;
    }
    if (close(w->fd) != 0 && errno != EINTR) record_error(w, errno);
    w->fd = -1;
    w->closed = 1;
    w->st.closed = 1;
    pthread_cond_broadcast(&w->done);
    int rc = take_error(w);
    pthread_mutex_unlock(&w->mu);
    return rc;
}

void slg_writer_free(slg_writer *w) {
    if (!w) return;
    (void)slg_writer_close(w); /* (in a forked child: only its descriptor) */
    free(w->cur.data);
    free(w->spare.data);
    if (FORKED(w)) return; /* no thread to join, and the mutex may be held: leak it */
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->wake);
    pthread_cond_destroy(&w->done);
    free(w);
}

void slg_writer_get_stats(slg_writer *w, slg_writer_stats *out) {
    if (FORKED(w)) {
        memset(out, 0, sizeof *out);
        out->closed = 1;
        return;
    }
    pthread_mutex_lock(&w->mu);
    *out = w->st;
    out->buffered_bytes = w->cur.len + w->inflight;
    out->file_size = w->file_off;
    pthread_mutex_unlock(&w->mu);
}

int slg_writer_take_error(slg_writer *w) {
    if (FORKED(w)) return -ECHILD;
    pthread_mutex_lock(&w->mu);
    int rc = take_error(w);
    pthread_mutex_unlock(&w->mu);
    return rc;
}

void slg_writer_inject_stall(slg_writer *w, int stalled) {
    if (FORKED(w)) return;
    pthread_mutex_lock(&w->mu);
    w->stalled = stalled;
    pthread_cond_broadcast(&w->done);
    pthread_cond_broadcast(&w->wake);
    pthread_mutex_unlock(&w->mu);
}

void slg_writer_inject_fault(slg_writer *w, int err, int count) {
    if (FORKED(w)) return;
    pthread_mutex_lock(&w->mu);
    w->fault_err = err;
    w->fault_count = err ? count : 0;
    pthread_mutex_unlock(&w->mu);
}

/* lint: returns locked (on success; see writer.h) */
int slg_writer_begin(slg_writer *w, uint64_t bytes, uint64_t records, char **out) {
    int rc = lock_open(w);
    if (rc != 0) return rc;
    rc = reserve(w, bytes);
    if (rc != 0) {
        if (rc == SLG_DROPPED) w->st.records_dropped += records;
        pthread_mutex_unlock(&w->mu);
        return rc;
    }
    *out = w->cur.data + w->cur.len;
    return 0;
}

int slg_writer_commit(slg_writer *w, uint64_t bytes, uint64_t records) {
    uint64_t before = w->cur.len;
    w->cur.len += bytes;
    w->cur.records += records;
    w->st.records_accepted += records;
    after_append(w, before);
    int rc = take_error(w);
    pthread_mutex_unlock(&w->mu);
    return rc;
}
