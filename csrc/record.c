/* record.c - TFRecord framing: u64 LE length, masked CRC32C of those 8
 * bytes, the payload, masked CRC32C of the payload.  Byte layout per
 * docs/format.md §1 (TensorFlow's record_writer.cc). */
#include <string.h>

#include "record.h"
#include "summarylog_api.h"

uint64_t slg_frame_in_place(char *out, uint64_t len) {
    slg_put_le64(out, len);
    slg_put_le32(out + 8, slg_masked_crc32c(out, 8));
    slg_put_le32(out + SLG_HEADER_SIZE + len,
                 slg_masked_crc32c(out + SLG_HEADER_SIZE, (size_t)len));
    return len + SLG_FRAME_OVERHEAD;
}

uint64_t slg_frame(char *out, const char *payload, uint64_t len) {
    if (len) memcpy(out + SLG_HEADER_SIZE, payload, (size_t)len);
    return slg_frame_in_place(out, len);
}

uint64_t slg_frame_many(char *out, const char *concat, const uint64_t *lens, uint64_t n) {
    char *o = out;
    for (uint64_t i = 0; i < n; i++) {
        o += slg_frame(o, concat, lens[i]);
        concat += lens[i];
    }
    return (uint64_t)(o - out);
}
