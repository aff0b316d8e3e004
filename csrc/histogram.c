/* histogram.c - one pass of statistics and one pass of equal-width bucket
 * counts over float32 or float64 values, for the histogram encoders of both
 * dialects (summarylog/dialects/*.py).  Runs without the GIL (cffi releases
 * it), so binning on the writer's thread does not stall the training thread.
 *
 * Counts match numpy's np.histogram(x, bins=edges) for equal-width edges:
 * values in [edges[i], edges[i+1]) go to bucket i, the last bucket is
 * closed, values outside [edges[0], edges[bins]] and non-finite values are
 * not counted. */
#include <math.h>
#include <string.h>

#include "summarylog_api.h"

#define VALUE(i) (is_f64 ? ((const double *)values)[i] : (double)((const float *)values)[i])

void slg_value_stats(const void *values, int is_f64, uint64_t n, slg_value_stats_t *out) {
    memset(out, 0, sizeof *out);
    double lo = INFINITY, hi = -INFINITY, sum = 0, sum_sq = 0;
    uint64_t finite = 0;
    for (uint64_t i = 0; i < n; i++) {
        double x = VALUE(i);
        if (isnan(x)) {
            out->nan_count++;
        } else if (isinf(x)) {
            if (x > 0) out->pos_inf_count++;
            else out->neg_inf_count++;
        } else {
            finite++;
            if (x < lo) lo = x;
            if (x > hi) hi = x;
            sum += x;
            sum_sq += x * x;
        }
    }
    out->finite = finite;
    out->min = finite ? lo : 0;
    out->max = finite ? hi : 0;
    out->sum = sum;
    out->sum_squares = sum_sq;
}

int slg_histogram_counts(const void *values, int is_f64, uint64_t n, const double *edges,
                         uint64_t bins, int64_t *counts) {
    if (bins == 0 || !(edges[bins] > edges[0])) return -22; /* -EINVAL */
    memset(counts, 0, bins * sizeof *counts);
    const double lo = edges[0], hi = edges[bins];
    const double norm = (double)bins / (hi - lo);
    for (uint64_t i = 0; i < n; i++) {
        double x = VALUE(i);
        if (!(x >= lo && x <= hi)) continue; /* outside, or NaN */
        double f = (x - lo) * norm;
        uint64_t k = f >= (double)bins ? bins - 1 : (uint64_t)f;
        /* the estimate can be one off near an edge: settle it on the edges */
        while (k > 0 && x < edges[k]) k--;
        while (k < bins - 1 && x >= edges[k + 1]) k++;
        counts[k]++;
    }
    return 0;
}
