/* binner.c - histogram events (TensorBoard's, or MindSpore's step Event) binned, encoded and framed on a
 * native thread of low priority, then written into a writer.
 *
 * Binning is logging's CPU-heavy part.  On a Python thread it would compete
 * with training for the GIL and for a CPU with the framework's threads (which
 * lose more than it costs when one waits at a barrier for a preempted peer).
 * This thread never touches Python and runs at `nice`, so it gets the CPU
 * training leaves idle (and a small share of a busy machine: jobs finish).
 *
 * Jobs are the caller's memory, linked into a FIFO.  `done`, the latest
 * ticket finished, is read without the lock (acquire, paired with the
 * worker's release after the results are written).  The thread wakes when
 * someone waits, when WAKE_JOBS jobs are queued, and every poll_secs, so a
 * lane's collections (queued with no system call) reach the writer in time. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "summarylog_api.h"
#include "binner.h"
#include "writer.h"

#define WAKE_JOBS 4 /* queued lane jobs that wake the thread before its timer */
#define KEEP_BYTES (4u << 20) /* an encode buffer past this is freed after its job */

struct slg_binner {
    pthread_mutex_t mu;
    pthread_cond_t wake;    /* the worker waits here for jobs */
    pthread_cond_t settled; /* wait() waits here for tickets */
    pthread_t thread;
    int thread_started;
    int closing, joining, closed; /* (one closer joins the thread; others wait) */
    int urgent; /* someone waits: run the queue now */
    int nice;
    double poll_secs;
    unsigned fork_gen;
    slg_hist_job *head, *tail;
    uint64_t queued; /* jobs in the queue */
    uint64_t issued; /* the latest ticket given */
    uint64_t done;   /* the latest ticket finished (atomic) */
    char *buf;       /* the worker's encode buffer */
    uint64_t cap;
};

/* fork() copies a binner but not its thread (and maybe a locked mutex): in
 * the child every entry point refuses before locking, as writer.c does. */
#define FORKED(b) ((b)->fork_gen != slg_fork_generation())

/* The scalar event of a job (its loss), framed, at out (NULL: only size it). */
static int64_t encode_scalar(const slg_hist_job *job, char *out, uint64_t cap) {
    uint32_t count = 1, tag_id = 0;
    uint64_t offsets[2] = {0, job->scalar_tag_len};
    return slg_tb_encode_scalars(out, cap, 1, &job->scalar_wall_time, &job->scalar_step, &count,
                                 &tag_id, &job->scalar, job->scalar_tag, offsets, 1);
}

/* Make room for `need` bytes in the worker's buffer (with slack, so that the
 * next jobs seldom grow it).  0 or -ENOMEM. */
static int reserve(slg_binner *b, uint64_t need) {
    if (need <= b->cap) return 0;
    if (need >= UINT64_MAX / 2) return -ENOMEM;
    uint64_t want = need + need / 2;
    char *grown = realloc(b->buf, (size_t)want);
    if (!grown) return -ENOMEM;
    b->buf = grown;
    b->cap = want;
    return 0;
}

/* Hand `len` framed bytes holding `records` events to the job's writer. */
static void write_out(slg_hist_job *job, uint64_t len, uint64_t records, const char *src) {
    char *dst;
    int rc = slg_writer_begin(job->writer, len, records, &dst);
    if (rc) { /* not taken: SLG_DROPPED (a full buffer, on_full=drop) or -errno */
        job->write_status = rc;
        job->dropped = records;
        return;
    }
    memcpy(dst, src, (size_t)len);
    job->records = records;
    job->write_status = slg_writer_commit(job->writer, len, records); /* an earlier error */
}

/* A MindSpore-dialect job: the whole step in one Event, as a recorded step is. */
static void run_ms_job(slg_binner *b, slg_hist_job *job) {
    uint64_t bound = slg_ms_step_bound(job);
    int rc = bound > UINT64_MAX - SLG_FRAME_OVERHEAD ? -ENOMEM
                                                      : reserve(b, bound + SLG_FRAME_OVERHEAD);
    if (rc) {
        for (uint64_t i = 0; i < job->n; i++) job->items[i].status = rc;
        job->write_status = rc;
        job->dropped = 1;
        return;
    }
    int64_t len = slg_ms_encode_step(job, b->buf + SLG_HEADER_SIZE, b->cap - SLG_FRAME_OVERHEAD);
    if (len < 0) {
        job->write_status = (int)len;
        job->dropped = 1;
        return;
    }
    write_out(job, slg_frame_in_place(b->buf, (uint64_t)len), 1, b->buf);
}

/* Bin, encode and write one job (no lock held).  The events go into the
 * writer's buffer under its lock (slg_writer_begin/commit), so that whether
 * they were taken is known apart from an earlier error the writer reports. */
static void run_job(slg_binner *b, slg_hist_job *job) {
    job->records = job->dropped = 0;
    job->write_status = 0;
    if (job->dialect == SLG_DIALECT_MS) {
        run_ms_job(b, job);
        return;
    }
    int64_t scalar_len = job->has_scalar ? encode_scalar(job, NULL, 0) : 0;
    uint64_t hist = slg_tb_histogram_items_bound(job->items, job->n);
    int rc = scalar_len < 0 ? (int)scalar_len
             : hist > UINT64_MAX - (uint64_t)scalar_len ? -ENOMEM
                                                         : reserve(b, (uint64_t)scalar_len + hist);
    if (rc) {
        for (uint64_t i = 0; i < job->n; i++) job->items[i].status = rc; /* (not made) */
        job->write_status = rc;
        job->dropped = (uint64_t)(job->has_scalar != 0);
        return;
    }
    uint64_t len = 0, records = 0;
    if (job->has_scalar) {
        len = (uint64_t)encode_scalar(job, b->buf, b->cap);
        records = 1;
    }
    if (job->n) len += (uint64_t)slg_tb_encode_histogram_items(job->items, job->n, b->buf + len,
                                                               b->cap - len);
    for (uint64_t i = 0; i < job->n; i++)
        if (job->items[i].status >= 0 && job->items[i].status != SLG_HIST_FALLBACK) records++;
    if (len) write_out(job, len, records, b->buf);
}

static void *binner_main(void *arg) {
    slg_binner *b = arg;
#if defined(__linux__) && defined(SYS_gettid)
    if (b->nice > 0) /* this thread only (Linux keeps a nice value per thread) */
        (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), b->nice);
#endif
    pthread_mutex_lock(&b->mu);
    for (;;) {
        struct timespec deadline;
        slg_deadline_after(&deadline, b->poll_secs);
        while (!b->closing && !b->urgent && b->queued < WAKE_JOBS)
            if (pthread_cond_timedwait(&b->wake, &b->mu, &deadline) == ETIMEDOUT) break;
        b->urgent = 0;
        slg_hist_job *job;
        while ((job = b->head) != NULL) { /* everything queued, in order */
            b->head = job->next;
            if (!b->head) b->tail = NULL;
            b->queued--;
            pthread_mutex_unlock(&b->mu);

            run_job(b, job);
            if (b->cap > KEEP_BYTES) { /* a rare big job: its memory goes back */
                free(b->buf);
                b->buf = NULL;
                b->cap = 0;
            }

            pthread_mutex_lock(&b->mu);
            job->next = NULL;
            __atomic_store_n(&b->done, job->ticket, __ATOMIC_RELEASE);
            pthread_cond_broadcast(&b->settled);
        }
        if (b->closing) break;
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

int slg_binner_open(int nice, double poll_secs, slg_binner **out) {
    *out = NULL;
    if (nice < 0 || nice > 19 || !(poll_secs > 0) || poll_secs > 1e6) return -EINVAL;
    slg_binner *b = calloc(1, sizeof *b);
    if (!b) return -ENOMEM;
    b->nice = nice;
    b->poll_secs = poll_secs;
    b->fork_gen = slg_fork_generation();
    pthread_mutex_init(&b->mu, NULL);
    slg_cond_init_monotonic(&b->wake);
    pthread_cond_init(&b->settled, NULL);
    int rc = pthread_create(&b->thread, NULL, binner_main, b);
    if (rc != 0) {
        slg_binner_free(b); /* (no thread to join yet) */
        return -rc;
    }
    b->thread_started = 1;
    *out = b;
    return 0;
}

/* Link a job (lock held); the caller checked it.  Wakes the worker when
 * asked to or when WAKE_JOBS are queued. */
static void enqueue(slg_binner *b, slg_hist_job *job, int urgent) {
    job->next = NULL;
    job->ticket = ++b->issued;
    job->records = 0;
    job->write_status = 0;
    if (b->tail) b->tail->next = job;
    else b->head = job;
    b->tail = job;
    b->queued++;
    if (urgent) b->urgent = 1;
    if (urgent || b->queued == WAKE_JOBS) pthread_cond_signal(&b->wake);
}

void slg_stamp_job(slg_hist_job *job, int64_t step, double wall_time) {
    for (uint64_t i = 0; i < job->n; i++) {
        job->items[i].step = step;
        job->items[i].wall_time = wall_time;
    }
    job->scalar_step = step;
    job->scalar_wall_time = wall_time;
}

int slg_binner_submit(slg_binner *b, slg_hist_job *job, int stamp, int64_t step,
                      double wall_time) {
    if (FORKED(b)) return -ECHILD;
    if (!job || !job->writer || (job->n && !job->items)) return -EINVAL;
    if (job->has_scalar && job->scalar_tag_len && !job->scalar_tag) return -EINVAL;
    pthread_mutex_lock(&b->mu);
    int rc = 0;
    if (b->closing || b->closed) {
        rc = -EBADF;
    } else if (job->ticket > __atomic_load_n(&b->done, __ATOMIC_RELAXED)) {
        rc = -EINVAL; /* still queued (its ticket not done): never linked twice */
    } else {
        if (stamp) slg_stamp_job(job, step, wall_time);
        enqueue(b, job, 1);
    }
    pthread_mutex_unlock(&b->mu);
    return rc;
}

uint64_t slg_binner_done(slg_binner *b) {
    if (FORKED(b)) return 0;
    return __atomic_load_n(&b->done, __ATOMIC_ACQUIRE);
}

/* Wake the worker now and wait (lock held) until `ticket` is done. */
static void wait_done(slg_binner *b, uint64_t ticket) {
    if (__atomic_load_n(&b->done, __ATOMIC_ACQUIRE) < ticket) {
        b->urgent = 1;
        pthread_cond_signal(&b->wake);
    }
    while (__atomic_load_n(&b->done, __ATOMIC_ACQUIRE) < ticket)
        pthread_cond_wait(&b->settled, &b->mu);
}

int slg_binner_wait(slg_binner *b, uint64_t ticket) {
    if (FORKED(b)) return -ECHILD;
    if (__atomic_load_n(&b->done, __ATOMIC_ACQUIRE) >= ticket) return 0;
    pthread_mutex_lock(&b->mu);
    int rc = ticket > b->issued ? -EINVAL : 0; /* never given: it would never come */
    if (!rc) wait_done(b, ticket);
    pthread_mutex_unlock(&b->mu);
    return rc;
}

int slg_binner_flush(slg_binner *b) {
    if (FORKED(b)) return -ECHILD;
    pthread_mutex_lock(&b->mu);
    wait_done(b, b->issued);
    pthread_mutex_unlock(&b->mu);
    return 0;
}

int slg_binner_close(slg_binner *b) {
    if (FORKED(b)) return 0;
    pthread_mutex_lock(&b->mu);
    if (b->joining || b->closed) { /* another closer joins the thread: wait for it */
        while (!b->closed) pthread_cond_wait(&b->settled, &b->mu);
        pthread_mutex_unlock(&b->mu);
        return 0;
    }
    b->closing = b->joining = 1;
    pthread_cond_signal(&b->wake);
    pthread_mutex_unlock(&b->mu);
    if (b->thread_started) pthread_join(b->thread, NULL); /* it finishes the queue first */
    pthread_mutex_lock(&b->mu);
    b->thread_started = 0;
    b->closed = 1;
    pthread_cond_broadcast(&b->settled);
    pthread_mutex_unlock(&b->mu);
    return 0;
}

void slg_binner_free(slg_binner *b) {
    if (!b || FORKED(b)) return;
    slg_binner_close(b);
    pthread_cond_destroy(&b->settled);
    pthread_cond_destroy(&b->wake);
    pthread_mutex_destroy(&b->mu);
    free(b->buf);
    free(b);
}

int slg_binner_forked(const slg_binner *b) { return FORKED(b); }

int slg_binner_enqueue_quiet(slg_binner *b, slg_hist_job *job) {
    pthread_mutex_lock(&b->mu);
    int rc = b->closing || b->closed ? SLG_LANE_CLOSED : 0;
    if (!rc) enqueue(b, job, 0);
    pthread_mutex_unlock(&b->mu);
    return rc;
}
