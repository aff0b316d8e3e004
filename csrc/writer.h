/* writer.h - what other C files (encoders) use to put records straight into
 * a writer's buffer: reserve space under the writer's lock, fill it, commit. */
#ifndef SLG_WRITER_H
#define SLG_WRITER_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "summarylog_api.h"

/* Lock the writer and make room for `bytes`; on success (0) *out points at
 * the space and the lock is held until slg_writer_commit.  On failure
 * (SLG_DROPPED or -errno) the lock is released and nothing is reserved;
 * `records` is what a drop counts. */
int slg_writer_begin(slg_writer *w, uint64_t bytes, uint64_t records, char **out);
/* Account `bytes` and `records` written into the reserved space and unlock.
 * Returns an unreported I/O error (-errno) or 0. */
int slg_writer_commit(slg_writer *w, uint64_t bytes, uint64_t records);

/* Bumped in a forked child: objects made before the fork (whose threads the
 * child does not have) refuse to run there. */
unsigned slg_fork_generation(void);

/* The native threads' timers (writer.c's flusher, binner.c's worker): a
 * condition variable on CLOCK_MONOTONIC, and the deadline `secs` from now. */
void slg_cond_init_monotonic(pthread_cond_t *c);
void slg_deadline_after(struct timespec *ts, double secs);

#endif /* SLG_WRITER_H */
