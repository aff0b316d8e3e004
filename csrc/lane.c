/* lane.c - a collector's lane: a ring of private copies of the same tensors,
 * each collection copied and queued on the binner in one call on the
 * training thread, with no system call.  A slot is reused only once its job
 * is done (else SLG_LANE_BUSY): a slow binner never sees a copy overwritten. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "binner.h"
#include "summarylog_api.h"

typedef struct {
    slg_hist_job job;
    slg_hist_item *items;
    char *mem; /* the copies: n tensors, each at a 64-byte boundary */
} lane_slot;

struct slg_lane {
    slg_binner *b;
    uint64_t n, nslots, next;
    uint64_t *copy_jobs; /* (dst, src, bytes) for slot 0; others by offset */
    char *tags;
    char *scalar_tag;
    char *arena; /* every slot's copies (NULL unless mapped) */
    size_t arena_len;
    lane_slot *slots;
    pthread_mutex_t mu; /* the stats and the error: collect() and another thread's stats */
    uint64_t settled;   /* collections accounted in the stats (in order) */
    slg_lane_stats st;
    int pending_err;
};

static uint64_t aligned64(uint64_t n) { return (n + 63) & ~(uint64_t)63; }

int slg_lane_open(slg_binner *b, slg_writer *w, uint64_t n, const uint64_t *srcs,
                  const uint64_t *counts, const uint8_t *is_f64, const char *tags,
                  const uint64_t *tag_lens, const char *scalar_tag, uint64_t scalar_tag_len,
                  uint64_t slots, int dialect, slg_lane **out) {
    *out = NULL;
    if (!b || !w || slots == 0 || slots > 4096 || n > (1u << 20)) return -EINVAL;
    if (dialect != SLG_DIALECT_TB && dialect != SLG_DIALECT_MS) return -EINVAL;
    if (slg_binner_forked(b)) return -ECHILD;
    if (n && (!srcs || !counts || !is_f64 || !tag_lens || !tags)) return -EINVAL;
    if (scalar_tag_len > (1u << 30) || (scalar_tag_len && !scalar_tag)) return -EINVAL;
    uint64_t slot_bytes = 0, tags_len = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (counts[i] > (UINT64_MAX >> 5) || tag_lens[i] > (1u << 30)) return -EINVAL;
        uint64_t bytes = aligned64(counts[i] * (is_f64[i] ? 8u : 4u));
        if (slot_bytes > UINT64_MAX / 2 - bytes) return -EINVAL;
        slot_bytes += bytes;
        tags_len += tag_lens[i]; /* <= 2^20 tags of <= 2^30 bytes: no overflow */
    }
    if (slot_bytes > (UINT64_MAX >> 16) / slots) return -EINVAL;
    slg_lane *l = calloc(1, sizeof *l);
    if (!l) return -ENOMEM;
    l->b = b;
    l->n = n;
    l->nslots = slots;
    pthread_mutex_init(&l->mu, NULL);
    l->slots = calloc((size_t)slots, sizeof *l->slots);
    l->copy_jobs = calloc((size_t)(3 * n + 1), sizeof *l->copy_jobs);
    l->tags = malloc((size_t)tags_len + 1);
    l->scalar_tag = malloc((size_t)scalar_tag_len + 1);
    /* the copies in one mapping the kernel may back with 2 MiB pages (one
     * page fault per 2 MiB instead of per 4 KiB on the training thread) */
    l->arena_len = (size_t)(slot_bytes * slots);
    if (l->arena_len) {
        void *m = mmap(NULL, l->arena_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (m != MAP_FAILED) {
            l->arena = m;
#ifdef MADV_HUGEPAGE
            (void)madvise(m, l->arena_len, MADV_HUGEPAGE);
#endif
        }
    }
    int ok = l->slots && l->copy_jobs && l->tags && l->scalar_tag && (l->arena || !l->arena_len);
    for (uint64_t k = 0; ok && k < slots; k++) {
        l->slots[k].items = calloc((size_t)(n ? n : 1), sizeof(slg_hist_item));
        ok = l->slots[k].items != NULL;
    }
    if (!ok) {
        slg_lane_free(l);
        return -ENOMEM;
    }
    if (tags_len) memcpy(l->tags, tags, (size_t)tags_len);
    if (scalar_tag_len) memcpy(l->scalar_tag, scalar_tag, (size_t)scalar_tag_len);
    for (uint64_t k = 0; k < slots; k++) {
        lane_slot *s = &l->slots[k];
        s->mem = l->arena + k * slot_bytes;
        uint64_t off = 0, toff = 0;
        for (uint64_t i = 0; i < n; i++) {
            slg_hist_item *it = &s->items[i];
            uint64_t bytes = counts[i] * (is_f64[i] ? 8u : 4u);
            it->values = s->mem + off;
            it->n = counts[i];
            it->bins = 0; /* MindSpore's rule, as the collectors' histograms */
            it->tag = l->tags + toff;
            it->tag_len = tag_lens[i];
            it->is_f64 = is_f64[i] ? 1 : 0;
            if (k == 0) {
                l->copy_jobs[3 * i] = (uint64_t)(uintptr_t)(s->mem + off);
                l->copy_jobs[3 * i + 1] = srcs[i];
                l->copy_jobs[3 * i + 2] = bytes;
            }
            off += aligned64(bytes);
            toff += tag_lens[i];
        }
        s->job.writer = w;
        s->job.items = s->items;
        s->job.n = n;
        s->job.scalar_tag = l->scalar_tag;
        s->job.scalar_tag_len = scalar_tag_len;
        s->job.dialect = dialect;
    }
    l->st.slots = slots;
    l->st.slot_bytes = slot_bytes;
    *out = l;
    return 0;
}

/* Fold the finished jobs into the stats, oldest first, the lane's lock
 * held; a slot's job is folded in before the slot is reused. */
static void settle(slg_lane *l, uint64_t done) {
    while (l->settled < l->st.collections) {
        lane_slot *s = &l->slots[l->settled % l->nslots];
        if (s->job.ticket > done) break;
        l->st.events += s->job.records;
        l->st.dropped += s->job.dropped;
        for (uint64_t i = 0; i < l->n; i++)
            if (s->items[i].status < 0 || s->items[i].status == SLG_HIST_FALLBACK) l->st.failed++;
        if (s->job.write_status < 0 && !l->pending_err) l->pending_err = s->job.write_status;
        l->settled++;
    }
    l->st.pending = l->st.collections - l->settled;
}

int slg_lane_collect(slg_lane *l, int has_scalar, double scalar, int64_t step,
                     double wall_time) {
    if (slg_binner_forked(l->b)) return -ECHILD; /* (open refuses a forked binner: same fork) */
    slg_binner *b = l->b;
    /* one reading of `done` for both: a slot is reused only once its last
     * job is accounted */
    uint64_t done = slg_binner_done(b);
    pthread_mutex_lock(&l->mu);
    settle(l, done);
    lane_slot *s = &l->slots[l->next % l->nslots];
    int busy = s->job.ticket > done; /* (0: never used) */
    l->st.busy += (uint64_t)busy;
    pthread_mutex_unlock(&l->mu);
    if (busy) return SLG_LANE_BUSY;
    /* the copy before the lock: the worker never reads a free slot */
    uint64_t delta = (uint64_t)(s->mem - l->slots[0].mem);
    uint64_t jobs[3 * 64];
    for (uint64_t i = 0; i < l->n; i += 64) {
        uint64_t m = l->n - i < 64 ? l->n - i : 64;
        memcpy(jobs, l->copy_jobs + 3 * i, 3 * m * sizeof *jobs);
        for (uint64_t j = 0; j < m; j++) jobs[3 * j] += delta; /* slot 0's destinations, moved */
        slg_copy_many(jobs, m);
    }
    s->job.has_scalar = has_scalar ? 1 : 0;
    s->job.scalar = scalar;
    slg_stamp_job(&s->job, step, wall_time);
    int rc = slg_binner_enqueue_quiet(b, &s->job);
    if (rc) return rc;
    pthread_mutex_lock(&l->mu);
    l->next++;
    l->st.collections++;
    l->st.pending++;
    int err = l->pending_err;
    l->pending_err = 0;
    pthread_mutex_unlock(&l->mu);
    return err;
}

void slg_lane_get_stats(slg_lane *l, slg_lane_stats *out) {
    if (slg_binner_forked(l->b)) { /* (the lock may be held by a thread the child does not have) */
        *out = l->st;
        return;
    }
    pthread_mutex_lock(&l->mu);
    settle(l, slg_binner_done(l->b));
    *out = l->st;
    pthread_mutex_unlock(&l->mu);
}

int slg_lane_take_error(slg_lane *l) {
    if (slg_binner_forked(l->b)) return -ECHILD;
    pthread_mutex_lock(&l->mu);
    settle(l, slg_binner_done(l->b));
    int err = l->pending_err;
    l->pending_err = 0;
    pthread_mutex_unlock(&l->mu);
    return err;
}

void slg_lane_free(slg_lane *l) {
    if (!l || slg_binner_forked(l->b)) return;
    if (l->slots && l->st.collections) { /* its jobs read the slots: let them finish */
        uint64_t last = l->slots[(l->next - 1) % l->nslots].job.ticket;
        slg_binner_wait(l->b, last); /* (a closed binner finished them all) */
    }
    if (l->slots)
        for (uint64_t k = 0; k < l->nslots; k++) free(l->slots[k].items);
    free(l->slots);
    free(l->copy_jobs);
    free(l->tags);
    free(l->scalar_tag);
    if (l->arena) munmap(l->arena, l->arena_len);
    pthread_mutex_destroy(&l->mu);
    free(l);
}
