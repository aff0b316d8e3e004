/* binner.h - what lane.c uses of binner.c: its fork check, job stamping,
 * and queuing a job without waking the worker (the training thread makes
 * no system call; the worker's timer picks the job up). */
#ifndef SLG_BINNER_H
#define SLG_BINNER_H

#include <stdint.h>

#include "summarylog_api.h"

/* Whether `b` is a forked child's copy (its thread is not in this process). */
int slg_binner_forked(const slg_binner *b);
/* Give every item of `job` (and its scalar) this step and wall time. */
void slg_stamp_job(slg_hist_job *job, int64_t step, double wall_time);
/* Queue `job` without waking the worker: 0, or SLG_LANE_CLOSED. */
int slg_binner_enqueue_quiet(slg_binner *b, slg_hist_job *job);

#endif /* SLG_BINNER_H */
