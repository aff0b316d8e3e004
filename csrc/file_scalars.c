/* file_scalars.c - one call per small event file: read, scan and decode its
 * scalars, for a root of many runs, where per-file Python work would cost
 * more than reading the file.  Anything unusual returns SLG_LOAD_FALLBACK:
 * the caller's general path handles it all. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "summarylog_api.h"

static const unsigned char ZSTD_MAGIC[4] = {0x28, 0xb5, 0x2f, 0xfd};

static int read_all(int fd, char *buf, uint64_t size, uint64_t *got) {
    uint64_t n = 0;
    while (n < size) {
        ssize_t r = pread(fd, buf + n, size - n, (off_t)n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -errno;
        if (r == 0) break; /* the file shrank since fstat: read what is there */
        n += (uint64_t)r;
    }
    *got = n;
    return 0;
}

int slg_tb_load_file(const char *path, int verify, uint64_t max_size, slg_tags *tags,
                     uint32_t *tag_ids, int64_t *steps, double *walls, double *values,
                     uint64_t cap, slg_damage *damage, uint64_t max_damage,
                     slg_file_scalars *out) {
    memset(out, 0, sizeof *out);
    /* O_NONBLOCK: a FIFO (or device) planted under an event file's name must
     * not block the open; only regular files are read (fstat below) */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return -errno;
    struct stat st;
    char *buf = NULL;
    slg_span *spans = NULL;
    int rc = fstat(fd, &st) != 0 ? -errno : S_ISDIR(st.st_mode) ? -EISDIR : 0;
    if (rc < 0) goto done;
    uint64_t size = out->size = (uint64_t)st.st_size;
    if (!S_ISREG(st.st_mode) || size > max_size) {
        rc = SLG_LOAD_FALLBACK;
        goto done;
    }
    buf = malloc(size ? size : 1);
    /* at most one span per 16 bytes of file (the smallest record) */
    spans = malloc((size / SLG_FRAME_OVERHEAD + 1) * sizeof *spans);
    rc = !buf || !spans ? -ENOMEM : read_all(fd, buf, size, &size);
    if (rc < 0) goto done;
    out->size = size;
    /* zstd, or a skippable zstd frame (magic 0x184D2A50..5F) first */
    if (size >= 4 && (memcmp(buf, ZSTD_MAGIC, 4) == 0 ||
                      ((unsigned char)buf[0] >> 4 == 0x5 && (unsigned char)buf[1] == 0x2A &&
                       (unsigned char)buf[2] == 0x4D && (unsigned char)buf[3] == 0x18))) {
        rc = SLG_LOAD_FALLBACK;
        goto done;
    }
    slg_scan_state state = {.verify_data = verify ? 1 : 0};
    uint64_t n_spans = 0, n_damage = 0;
    int scan = slg_scan(&state, buf, size, 0, size, 0, spans, size / SLG_FRAME_OVERHEAD + 1,
                        &n_spans, damage, max_damage, &n_damage);
    if (scan < 0 || scan == SLG_SCAN_SPANS_FULL || scan == SLG_SCAN_NEED_MORE ||
        n_damage >= max_damage) {
        rc = scan < 0 ? scan : SLG_LOAD_FALLBACK;
        goto done;
    }
    out->records = n_spans;
    out->n_damage = n_damage;
    if (scan == SLG_SCAN_TORN || scan == SLG_SCAN_ZERO_TAIL) {
        out->tail_kind = scan;
        out->tail_offset = state.pos;
        out->tail_length = size - state.pos;
    }
    int dec = slg_tb_decode_scalars(buf, 0, spans, n_spans, tags, tag_ids, steps, walls, values,
                                    cap, &out->dec);
    if (dec < 0) rc = dec;
    else if (dec != 0) rc = SLG_LOAD_FALLBACK; /* columns or purge list full */
done:
    free(spans);
    free(buf);
    close(fd);
    return rc;
}
