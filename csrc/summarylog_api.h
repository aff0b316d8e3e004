/* summarylog_api.h - the public C surface of the native core.  cffi parses
 * it between the CDEF markers, so it holds only prototypes, fixed-width types
 * and integer constants.  Returns: 0 or a positive status, or -errno. */
#ifndef SUMMARYLOG_API_H
#define SUMMARYLOG_API_H

#include <stddef.h>
#include <stdint.h>

/* CDEF-BEGIN */

/* ---- CRC32C (crc32c.c) ------------------------------------------------ */
#define SLG_CRC_AUTO -1
#define SLG_CRC_PORTABLE 0
#define SLG_CRC_SSE42 1
#define SLG_CRC_ARM64 2

/* Extend a finished CRC32C `crc` (0 for a fresh start) over data[0:n]. */
uint32_t slg_crc32c(uint32_t crc, const char *data, size_t n);
/* TFRecord's masked CRC32C of data[0:n]. */
uint32_t slg_masked_crc32c(const char *data, size_t n);
uint32_t slg_crc_mask(uint32_t crc);
uint32_t slg_crc_unmask(uint32_t masked);
/* The implementation slg_crc32c uses now (SLG_CRC_*). */
int slg_crc32c_impl(void);
/* 1 if this build and CPU can run `impl`, else 0. */
int slg_crc32c_has_impl(int impl);
/* Select an implementation (SLG_CRC_AUTO re-probes); -ENOTSUP if unavailable. */
int slg_crc32c_select(int impl);
/* Run one named implementation (tests); the caller checks has_impl first. */
uint32_t slg_crc32c_with(int impl, uint32_t crc, const char *data, size_t n);

/* ---- TFRecord framing (record.c) -------------------------------------- */
#define SLG_HEADER_SIZE 12
#define SLG_FOOTER_SIZE 4
#define SLG_FRAME_OVERHEAD 16

/* Frame one payload into out (which holds len + 16 bytes); returns bytes written. */
uint64_t slg_frame(char *out, const char *payload, uint64_t len);
/* Frame the len-byte payload an encoder wrote at out + 12 where it lies:
 * the header before it, the footer after it; returns len + 16. */
uint64_t slg_frame_in_place(char *out, uint64_t len);
/* Frame n payloads stored back to back in concat (lengths in lens) into out,
 * which holds sum(lens) + 16 n bytes; returns bytes written. */
uint64_t slg_frame_many(char *out, const char *concat, const uint64_t *lens, uint64_t n);

/* ---- Buffered record writer (writer.c) -------------------------------- */
#define SLG_DURABILITY_NONE 0
#define SLG_DURABILITY_FLUSH 1
#define SLG_DURABILITY_FSYNC 2
#define SLG_ON_FULL_BLOCK 0
#define SLG_ON_FULL_DROP 1
#define SLG_DROPPED 1          /* write() status: record dropped, buffer full */
/* The largest payload: protobuf's message limit (no reader could decode a
 * larger event).  The write calls refuse a larger one with -EMSGSIZE. */
#define SLG_MAX_PAYLOAD 0x7FFFFFFF

/* After fork(), a child's copy refuses every call with -ECHILD (close() only
 * closes the child's descriptor): the parent owns the file. */
typedef struct slg_writer slg_writer;

typedef struct {
    uint64_t records_accepted;   /* records framed into the buffer */
    uint64_t records_written;    /* records that reached the OS */
    uint64_t bytes_written;      /* file bytes that reached the OS */
    uint64_t records_dropped;    /* dropped: buffer full (on_full=drop) */
    uint64_t records_lost;       /* lost to I/O errors */
    uint64_t bytes_lost;
    uint64_t flushes;            /* write rounds that wrote something */
    uint64_t fsyncs;             /* fdatasync calls */
    uint64_t errors;             /* I/O errors seen */
    uint64_t blocked_ns;         /* time callers spent waiting for space */
    uint64_t buffered_bytes;     /* bytes accepted but not yet at the OS */
    uint64_t file_size;          /* bytes in the file as far as we know */
    int32_t last_errno;          /* errno of the latest I/O error, 0 if none */
    int32_t closed;
} slg_writer_stats;

/* Create path with O_CREAT|O_EXCL (never truncates or appends to a file it did
 * not create) and start the flusher thread.  flush_secs: timer period (s);
 * flush_bytes: buffered size that wakes the flusher early; max_buffer: cap on
 * buffered bytes; durability and on_full: SLG_* above. */
int slg_writer_open(const char *path, uint32_t mode, double flush_secs,
                    uint64_t flush_bytes, uint64_t max_buffer, int durability,
                    int on_full, slg_writer **out);
/* Frame and buffer one payload.  0, SLG_DROPPED, -EMSGSIZE (payload over
 * SLG_MAX_PAYLOAD: nothing written), or -errno of an I/O error not yet
 * reported (each error is reported once, then cleared). */
int slg_writer_write(slg_writer *w, const char *payload, uint64_t len);
/* Frame and buffer n payloads given back to back, in order (other threads'
 * records may land between 1 MiB chunks); *accepted: how many were buffered.
 * One payload over SLG_MAX_PAYLOAD refuses the batch (-EMSGSIZE). */
int slg_writer_write_many(slg_writer *w, const char *concat, const uint64_t *lens,
                          uint64_t n, uint64_t *accepted);
/* Buffer bytes as they are (already framed, or a compressed block). */
int slg_writer_write_raw(slg_writer *w, const char *data, uint64_t len, uint64_t records);
/* Return once everything buffered before the call reached the OS (and, with
 * SLG_DURABILITY_FSYNC, the disk).  0 or -errno. */
int slg_writer_flush(slg_writer *w);
/* Flush, fdatasync unless durability is NONE, close the file, stop the thread.
 * Idempotent.  0 or -errno of the first unreported error. */
int slg_writer_close(slg_writer *w);
/* Close if needed and free. */
void slg_writer_free(slg_writer *w);
void slg_writer_get_stats(slg_writer *w, slg_writer_stats *out);
/* -errno of an unreported I/O error (and clear it), else 0. */
int slg_writer_take_error(slg_writer *w);
/* Test hook: the next `count` write(2) calls fail with errno `err` (0 clears). */
void slg_writer_inject_fault(slg_writer *w, int err, int count);
/* Test hook: a stalled disk: while `stalled` nothing is written, so the
 * buffer fills and on_full applies; 0 or close() releases it. */
void slg_writer_inject_stall(slg_writer *w, int stalled);

/* ---- Record scanner (scanner.c) --------------------------------------- */
#define SLG_SCAN_SPANS_FULL 1   /* span array full: call again */
#define SLG_SCAN_NEED_MORE 2    /* need bytes from state.pos onward */
#define SLG_SCAN_END 3          /* clean end at state.pos */
#define SLG_SCAN_TORN 4         /* partial record at state.pos (not yet written) */
#define SLG_SCAN_ZERO_TAIL 5    /* zero bytes from state.pos to the end */

#define SLG_DAMAGE_BAD_LENGTH_CRC 1
#define SLG_DAMAGE_BAD_DATA_CRC 2
#define SLG_DAMAGE_LENGTH_PAST_EOF 3
#define SLG_DAMAGE_ZERO_FILL 4

#define SLG_UNKNOWN_END 0xFFFFFFFFFFFFFFFFULL

typedef struct {
    uint64_t offset;    /* payload offset (absolute) */
    uint64_t length;    /* payload length */
} slg_span;

typedef struct {
    uint64_t offset;    /* first damaged byte (absolute) */
    uint64_t length;    /* damaged bytes skipped */
    int32_t kind;       /* SLG_DAMAGE_* */
    int32_t _pad;
} slg_damage;

typedef struct {
    uint64_t pos;           /* next offset to examine */
    uint64_t damage_start;  /* start of the damage being resynchronised */
    int32_t resyncing;      /* 1 while searching for the next valid header */
    int32_t damage_kind;    /* kind of that damage */
    int32_t all_zero;       /* damage bytes seen so far are all zero */
    int32_t verify_data;    /* check data CRCs (default 1) */
} slg_scan_state;

/* Scan buf (file bytes [base, base+len)) from state->pos, appending payload
 * spans and damage; returns SLG_SCAN_*.  data_end: the file size if known,
 * else SLG_UNKNOWN_END; at_end: 1 if buf's end is the data's end for now. */
int slg_scan(slg_scan_state *state, const char *buf, uint64_t len, uint64_t base,
             uint64_t data_end, int at_end, slg_span *spans, uint64_t max_spans,
             uint64_t *n_spans, slg_damage *damage, uint64_t max_damage,
             uint64_t *n_damage);

/* ---- TensorBoard scalar events (scalar_codec.c) ------------------------ */
/* Event i: wall_times[i], steps[i], and the next counts[i] of tag_ids/values
 * (each a Summary.Value{tag, simple_value}); tag t is
 * tag_data[tag_offsets[t] : tag_offsets[t+1]].  Frames the events into out
 * (cap bytes) if not NULL and they fit; returns the bytes needed, -EINVAL
 * for a bad tag id. */
int64_t slg_tb_encode_scalars(char *out, uint64_t cap, uint64_t n_events,
                              const double *wall_times, const int64_t *steps,
                              const uint32_t *counts, const uint32_t *tag_ids,
                              const double *values, const char *tag_data,
                              const uint64_t *tag_offsets, uint64_t n_tags);
/* The same, framed straight into a writer's buffer (as write_many). */
int slg_writer_write_tb_scalars(slg_writer *w, uint64_t n_events, const double *wall_times,
                                const int64_t *steps, const uint32_t *counts,
                                const uint32_t *tag_ids, const double *values,
                                const char *tag_data, const uint64_t *tag_offsets,
                                uint64_t n_tags, uint64_t *accepted);

/* ---- Columnar scalars from TensorBoard events (scalar_decode.c) -------- */
#define SLG_TAG_UNKNOWN 0
#define SLG_TAG_SCALAR 1        /* simple_value, or tensors of the scalars plugin */
#define SLG_TAG_OTHER 2
#define SLG_TAGF_OTHER 1        /* slg_tags_flags: the tag also holds values that are not scalars */
#define SLG_TAGF_BAD_UTF8 2     /* ...its bytes are not UTF-8 (kept apart, reported) */
#define SLG_MAX_GROUP_DEPTH 100 /* nested protobuf groups skipped (protobuf's own limit) */
#define SLG_MAX_PURGES 16
#define SLG_DECODE_OUT_FULL 1    /* output arrays full: resume at spans_done */
#define SLG_DECODE_PURGES_FULL 2 /* purge list full: apply, resume at spans_done */

typedef struct slg_tags slg_tags; /* interned tags: id <-> bytes, and kind */

typedef struct {
    uint64_t n_values;      /* values appended */
    uint64_t spans_done;    /* records consumed (whole events only) */
    uint64_t bad_events;    /* records that are not well-formed Events */
    uint64_t other_events;  /* events with values that are not scalars */
    uint64_t n_purges;      /* SessionLog.START markers seen, in order: */
    uint64_t purge_index[16];  /* ...the number of values before the marker */
    int64_t purge_step[16];    /* ...and its step */
    uint64_t bad_values;    /* malformed values (or non-UTF-8 tags) in events otherwise read */
} slg_decode_result;

slg_tags *slg_tags_new(void);
void slg_tags_free(slg_tags *t);
#define SLG_DIALECT_TB 0          /* TensorBoard events (the default) */
#define SLG_DIALECT_MS 1          /* MindSpore summary events */
/* How the following decode calls read events: the Reader sets it per file
 * (a file never mixes dialects).  -EINVAL for an unknown dialect. */
int slg_tags_set_dialect(slg_tags *t, int dialect);
/* Forget every tag (memory is kept for reuse; the dialect stays). */
void slg_tags_clear(slg_tags *t);
uint64_t slg_tags_count(const slg_tags *t);
/* id of the tag p[0:n], interned if new (-ENOMEM on failure) */
int64_t slg_tags_intern(slg_tags *t, const char *p, uint64_t n);
int slg_tags_get(const slg_tags *t, uint64_t id, const char **data, uint64_t *len, int32_t *kind);
/* SLG_TAGF_* bits of tag id (-EINVAL for an unknown id) */
int slg_tags_flags(const slg_tags *t, uint64_t id);
/* Decode the scalars of n_spans event records (buf: file bytes from offset
 * base), in the table's dialect, into the four arrays (cap entries).  0 when
 * all spans were consumed, else SLG_DECODE_*; -errno on failure. */
int slg_tb_decode_scalars(const char *buf, uint64_t base, const slg_span *spans,
                          uint64_t n_spans, slg_tags *tags, uint32_t *tag_ids,
                          int64_t *steps, double *walls, double *values, uint64_t cap,
                          slg_decode_result *res);

/* Sort the four columns stably by tag id, in place (8 n bytes of scratch);
 * counts[t]: tag t's number of values (its slice follows tag t-1's).  0,
 * -EINVAL (an id >= n_tags), -ENOMEM. */
int slg_columns_group(uint32_t *tag_ids, int64_t *steps, double *walls, double *values,
                      uint64_t n, uint64_t n_tags, uint64_t *counts);

/* ---- Histogram values, columnar (histogram_decode.c) ------------------- */
/* TensorBoard's HistogramProto (Summary.Value.histo) and MindSpore's
 * Histogram (Summary.Value.histogram) of many event records as rows: row r
 * has tag_ids[r], steps[r], walls[r], SLG_HIST_STATS stats, and its bucket
 * right edges limits[limit_ends[r-1] : limit_ends[r]] and counts
 * counts[count_ends[r-1] : count_ends[r]] (MindSpore buckets sorted by
 * (left, width, count), each edge left + width).  Every other value marks its
 * tag SLG_TAGF_OTHER and its event is counted in other_events. */
#define SLG_HIST_STATS 8 /* min, max, num, sum, sum_squares (NaN in MindSpore's), nan, +inf, -inf counts */
typedef struct {
    uint32_t *tag_ids;
    int64_t *steps;
    double *walls;
    double *stats;          /* SLG_HIST_STATS per row */
    uint64_t *limit_ends, *count_ends;
    double *limits, *counts;
    uint64_t cap_rows, cap_limits, cap_counts;
    uint64_t n_rows, n_limits, n_counts; /* filled so far: decode appends after them */
} slg_hist_columns;

/* Decode the histograms of n_spans event records (buf: file bytes from
 * offset base), in the table's dialect, appending to out.  res->n_values:
 * rows appended; purge_index relative to the rows before the call.  0 when
 * all spans were consumed, else SLG_DECODE_* (OUT_FULL: an array is full,
 * nothing of span spans_done was appended); -errno on failure. */
int slg_decode_histograms(const char *buf, uint64_t base, const slg_span *spans,
                          uint64_t n_spans, slg_tags *tags, slg_hist_columns *out,
                          slg_decode_result *res);

/* ---- Histograms (histogram.c) ------------------------------------------ */
typedef struct {
    uint64_t finite, nan_count, pos_inf_count, neg_inf_count;
    double min, max;        /* over finite values (0 when there are none) */
    double sum, sum_squares;
} slg_value_stats_t;

/* Statistics of n float32 (is_f64 = 0) or float64 values. */
void slg_value_stats(const void *values, int is_f64, uint64_t n, slg_value_stats_t *out);
/* Counts of the values in each of `bins` equal-width buckets between
 * edges[0..bins] (as np.histogram(values, bins=edges)); -EINVAL unless
 * bins > 0 and edges[bins] > edges[0]. */
int slg_histogram_counts(const void *values, int is_f64, uint64_t n, const double *edges,
                         uint64_t bins, int64_t *counts);

/* ---- A TensorBoard histogram event in one call (histogram_event.c) ------ */
#define SLG_HIST_FALLBACK 1     /* edges that collapsed: use the Python encoder */
#define SLG_MS_MAX_BINS 90      /* MindSpore's bucket rule: at most 90 buckets */

/* MindSpore's bucket count for `finite` finite values: 1 (none), 2 (<= 5),
 * 3 (<= 10), finite / 10 + 1 (<= 880), else 90. */
int64_t slg_ms_bins(uint64_t finite);
/* The repeated Bucket field (1) of MindSpore's Summary.Histogram: n (left, width,
 * count) messages framed at out (NULL: only size them); returns their bytes. */
uint64_t slg_ms_buckets(const double *left, const double *width, const int64_t *count,
                        uint64_t n, char *out);
/* Bytes a MindSpore Summary.Histogram (at most 90 buckets) may take. */
#define SLG_MS_HISTOGRAM_MAX 4096
/* MindSpore's Summary.Histogram of n float32/float64 values by its bucket rule
 * (edges, widths: NULL, or the edge_bins + 1 edges and edge_bins widths to use)
 * into out (cap bytes, at least SLG_MS_HISTOGRAM_MAX).  The length, or -EINVAL
 * (edges that collapsed). */
int64_t slg_ms_histogram(const void *values, int is_f64, uint64_t n, const double *edges,
                         const double *widths, uint64_t edge_bins, char *out, uint64_t cap);
/* Bytes slg_tb_encode_histogram_event may need (bins <= 0: MindSpore's rule). */
uint64_t slg_tb_histogram_event_bound(uint64_t tag_len, int64_t bins);
/* A TensorBoard histogram Event of n float32/float64 values in `bins` buckets
 * (<= 0: MindSpore's rule) into out (cap bytes, at least the bound), as
 * dialects/tensorboard.py's histogram_proto.  The length, SLG_HIST_FALLBACK, -errno. */
int64_t slg_tb_encode_histogram_event(const void *values, int is_f64, uint64_t n, int64_t bins,
                                      double wall_time, int64_t step, const char *tag,
                                      uint64_t tag_len, char *out, uint64_t cap);
/* One histogram event to make (the binner's job items; see csrc/binner.c). */
typedef struct {
    const void *values;     /* n float32 (is_f64 = 0) or float64 values */
    uint64_t n;
    int64_t bins;           /* <= 0: MindSpore's rule */
    int64_t step;
    double wall_time;
    const char *tag;        /* tag_len bytes of UTF-8 */
    uint64_t tag_len;
    int32_t is_f64;
    int32_t _pad;
    int64_t status;         /* out: payload length, SLG_HIST_FALLBACK (not written:
                               the caller encodes it) or -errno (not written) */
} slg_hist_item;

/* Bytes slg_tb_encode_histogram_items may need (UINT64_MAX on overflow). */
uint64_t slg_tb_histogram_items_bound(const slg_hist_item *items, uint64_t n);
/* The items' histogram events, framed, back to back into out (cap bytes, at
 * least the bound); sets each item's status.  Returns the bytes written. */
int64_t slg_tb_encode_histogram_items(slg_hist_item *items, uint64_t n, char *out, uint64_t cap);

/* ---- Histogram events on a low-priority native thread (binner.c) ------- */
/* A job: items to bin, encode and write into `writer` as one batch, after an
 * optional scalar event.  The caller's memory: the binner reads it until
 * slg_binner_done() reaches the job's ticket, and writes only the out fields. */
typedef struct {
    slg_writer *writer;
    slg_hist_item *items;
    uint64_t n;
    const char *scalar_tag; /* has_scalar: one scalar event first */
    uint64_t scalar_tag_len;
    double scalar;
    int64_t scalar_step;
    double scalar_wall_time;
    int32_t has_scalar;
    int32_t dialect;        /* SLG_DIALECT_TB: an event per value; SLG_DIALECT_MS: one
                               MindSpore Event of the step (every item at its step) */
    int32_t write_status;   /* out: 0; SLG_DROPPED (buffer full); -errno: not
                               written or, with records > 0, written and the
                               writer reported an earlier error */
    uint64_t ticket;        /* out (at submit): done() reaches it when finished */
    uint64_t records;       /* out: events the writer took */
    uint64_t dropped;       /* out: events made but not written */
    void *next;             /* the binner's queue link */
} slg_hist_job;

#define SLG_DIALECT_TB 0
#define SLG_DIALECT_MS 1
/* Bytes slg_ms_encode_step may need for `job` (UINT64_MAX on overflow). */
uint64_t slg_ms_step_bound(const slg_hist_job *job);
/* The job as one MindSpore Event (unframed) at out; sets each item's status. */
int64_t slg_ms_encode_step(slg_hist_job *job, char *out, uint64_t cap);

typedef struct slg_binner slg_binner;

/* Start a binner thread at nice value `nice` (0..19) that looks for queued
 * lane jobs at least every poll_secs (0 < poll_secs <= 1e6). */
int slg_binner_open(int nice, double poll_secs, slg_binner **out);
/* Queue a job (FIFO) and wake the thread; stamp != 0: every item and the
 * scalar get step and wall_time first.  0, -EINVAL (no writer, or the job is
 * still queued), -EBADF (closed), -ECHILD (a forked child). */
int slg_binner_submit(slg_binner *b, slg_hist_job *job, int stamp, int64_t step,
                      double wall_time);
/* The latest ticket finished: every job with a ticket up to it is done. */
uint64_t slg_binner_done(slg_binner *b);
/* Return once `ticket` is done (the GIL released: the caller only waits). */
int slg_binner_wait(slg_binner *b, uint64_t ticket);
/* Return once every job queued before the call is done. */
int slg_binner_flush(slg_binner *b);
/* Finish every queued job and stop the thread.  Idempotent. */
int slg_binner_close(slg_binner *b);
/* Close if needed and free (in a forked child: nothing, the memory is left). */
void slg_binner_free(slg_binner *b);

/* ---- A collector's lane: copy and queue a collection in one call ------- */
#define SLG_LANE_BUSY 1         /* collect(): the next slot is still queued */
#define SLG_LANE_CLOSED 2       /* collect(): the binner is closed */

typedef struct slg_lane slg_lane;

typedef struct {
    uint64_t collections;   /* collections queued */
    uint64_t busy;          /* collect() calls that found no free slot */
    uint64_t events;        /* events written (of finished jobs) */
    uint64_t dropped;       /* events made but not written (full buffer, I/O error) */
    uint64_t failed;        /* histograms the encoder refused (not written) */
    uint64_t pending;       /* collections queued and not finished yet */
    uint64_t slots;
    uint64_t slot_bytes;
} slg_lane_stats;

/* A ring of `slots` private copies of n C-contiguous tensors (counts[i]
 * values at address srcs[i]) with their histogram tags, and an optional
 * scalar tag: each collect() copies the tensors into the next slot and queues
 * its job (the scalar, then the histograms by MindSpore's rule) on b, writing
 * into w, as TensorBoard events or (dialect SLG_DIALECT_MS) one MindSpore Event
 * a collection.  The caller keeps the sources, b and w alive while the lane is. */
int slg_lane_open(slg_binner *b, slg_writer *w, uint64_t n, const uint64_t *srcs,
                  const uint64_t *counts, const uint8_t *is_f64, const char *tags,
                  const uint64_t *tag_lens, const char *scalar_tag, uint64_t scalar_tag_len,
                  uint64_t slots, int dialect, slg_lane **out);
/* One collection at step and wall_time.  0: queued; SLG_LANE_BUSY (the next
 * slot's job is unfinished) and SLG_LANE_CLOSED: nothing queued; -errno:
 * queued, and an earlier job failed to write; -ECHILD: a forked child. */
int slg_lane_collect(slg_lane *l, int has_scalar, double scalar, int64_t step,
                     double wall_time);
/* Account finished jobs and fill *out (thread-safe with collect()). */
void slg_lane_get_stats(slg_lane *l, slg_lane_stats *out);
/* An unreported write error of a finished job (-errno, then cleared), else 0. */
int slg_lane_take_error(slg_lane *l);
/* Wait for the lane's jobs and free it (in a forked child: nothing). */
void slg_lane_free(slg_lane *l);

/* ---- Private copies of a step's tensors (copy.c) ----------------------- */
/* n copies, each three words of jobs: destination, source (addresses as
 * integers: no pointer objects per copy), bytes; large ones bypass the cache. */
void slg_copy_many(const uint64_t *jobs, uint64_t n);

/* ---- Parquet column encodings of the export (parquet_encode.c) -------- */
/* The encoders read a page's rows from nseg segments one after another (a
 * row group's tags, each its own array: no joined copy). */
/* Bytes slg_pq_delta_int64 may write for n values. */
uint64_t slg_pq_delta_bound(uint64_t n);
/* The n >= 1 values of the segments as DELTA_BINARY_PACKED (blocks of 128, 4
 * miniblocks), and their min and max into minmax[0..1]; the bytes written,
 * or -1 when n is 0 or cap < slg_pq_delta_bound(n). */
int64_t slg_pq_delta_int64(const int64_t *const *seg, const uint64_t *len, uint64_t nseg,
                           uint8_t *out, uint64_t cap, int64_t *minmax);
/* The n doubles of the segments as BYTE_STREAM_SPLIT (8 * n bytes, byte k of
 * value i at k * n + i), and their min and max without NaN into minmax[0..1];
 * 0 when every value is NaN (or n is 0), else 1. */
int slg_pq_split_f64(const double *const *seg, const uint64_t *len, uint64_t nseg,
                     uint8_t *dst, double *minmax);

/* ---- Small event files in one call (file_scalars.c) -------------------- */
#define SLG_LOAD_FALLBACK 1     /* not handled here: use RecordReader + decode */

typedef struct {
    uint64_t size;          /* bytes read (the whole file) */
    uint64_t records;       /* valid records */
    uint64_t n_damage;      /* damage entries written */
    uint64_t tail_offset;   /* unfinished end, when tail_kind is set */
    uint64_t tail_length;
    int32_t tail_kind;      /* 0, SLG_SCAN_TORN or SLG_SCAN_ZERO_TAIL */
    int32_t _pad;
    slg_decode_result dec;  /* what slg_tb_decode_scalars found */
} slg_file_scalars;

/* Read a regular file of at most max_size bytes whole, scan it and decode its
 * scalars into the four arrays, as RecordReader + slg_tb_decode_scalars
 * would.  0; SLG_LOAD_FALLBACK when it needs the general path (the outputs
 * are then meaningless, though tags may be interned); -errno. */
int slg_tb_load_file(const char *path, int verify, uint64_t max_size, slg_tags *tags,
                     uint32_t *tag_ids, int64_t *steps, double *walls, double *values,
                     uint64_t cap, slg_damage *damage, uint64_t max_damage,
                     slg_file_scalars *out);

/* ---- Bulk paths over Python objects (python/pyobjects.c) ---------------- */
/* Objects as their CPython address (id(obj)), kept alive by the caller;
 * only in the extension, not in tests/c's build. */

/* Frame every item of a list of bytes into the writer, as write_many does
 * (-EINVAL, nothing written, unless all are exactly bytes). */
int slg_writer_write_pylist(slg_writer *w, void *list, uint64_t *accepted);
/* Append bytes objects for n payload spans of buf (file bytes from offset
 * base) to a list. */
int slg_spans_to_pylist(const char *buf, uint64_t base, const slg_span *spans, uint64_t n,
                        void *list);

/* ---- Build facts ------------------------------------------------------- */
const char *slg_version(void);

/* CDEF-END */

#endif /* SUMMARYLOG_API_H */
