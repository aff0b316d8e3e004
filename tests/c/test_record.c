/* test_record.c - TFRecord framing (record.c): slg_frame and slg_frame_many
 * against the complete 40-byte record of docs/format.md §1.2 (TensorBoard's
 * tf_record.rs doc-test), the empty record, and frame_many against back-to-
 * back slg_frame calls.  Every output buffer is exactly sized on the heap so
 * AddressSanitizer catches a byte written past the frame. */
#include <stdlib.h>

#include "summarylog_api.h"
#include "test_main.h"

/* docs/format.md §1.2: Event{wall_time = 1599759586.0, file_version = "brain.Event:2"} */
static const unsigned char RECORD40[40] = {
    0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* length = 24 */
    0xa3, 0x7f, 0x4b, 0x22,                         /* length_crc */
    0x09, 0x00, 0x00, 0x80, 0x38, 0x99, 0xd6, 0xd7, 0x41, 0x1a, 0x0d, 0x62,
    0x72, 0x61, 0x69, 0x6e, 0x2e, 0x45, 0x76, 0x65, 0x6e, 0x74, 0x3a, 0x32, /* data */
    0x12, 0x4b, 0x36, 0xab,                                                 /* data_crc */
};

static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void test_constants(void) {
    CHECK_EQ(SLG_HEADER_SIZE, 12);
    CHECK_EQ(SLG_FOOTER_SIZE, 4);
    CHECK_EQ(SLG_FRAME_OVERHEAD, SLG_HEADER_SIZE + SLG_FOOTER_SIZE);
}

static void test_frame_40_byte_record(void) {
    char *out = xmalloc(40);
    CHECK_EQ(slg_frame(out, (const char *)RECORD40 + 12, 24), 40);
    CHECK_MEM(out, RECORD40, 40);
    /* the pieces, as docs/format.md §1.2 lists them */
    CHECK_EQ(le64((unsigned char *)out), 24);
    CHECK_EQ(le32((unsigned char *)out + 8), 0x224B7FA3u);
    CHECK_EQ(le32((unsigned char *)out + 36), 0xAB364B12u);
    CHECK_EQ(slg_masked_crc32c(out, 8), 0x224B7FA3u);
    CHECK_EQ(slg_masked_crc32c(out + 12, 24), 0xAB364B12u);
    free(out);

    /* an unaligned destination and source give the same bytes */
    char *raw = xmalloc(41 + 25);
    memcpy(raw + 41, RECORD40 + 12, 24);
    CHECK_EQ(slg_frame(raw + 1, raw + 41, 24), 40);
    CHECK_MEM(raw + 1, RECORD40, 40);
    free(raw);

    /* frame_many of one payload is the same record */
    uint64_t len = 24;
    out = xmalloc(40);
    CHECK_EQ(slg_frame_many(out, (const char *)RECORD40 + 12, &len, 1), 40);
    CHECK_MEM(out, RECORD40, 40);
    free(out);
}

static void test_frame_empty_payload(void) {
    static const unsigned char want[16] = {
        0, 0, 0, 0, 0, 0, 0, 0,  /* length 0 */
        0x29, 0x03, 0x98, 0x07,  /* masked_crc32c(8 x 0x00) = 0x07980329 */
        0xd8, 0xea, 0x82, 0xa2,  /* masked_crc32c("") = mask(0) = 0xA282EAD8 */
    };
    char *out = xmalloc(16);
    CHECK_EQ(slg_frame(out, "", 0), 16);
    CHECK_MEM(out, want, 16);
    memset(out, 0x55, 16);
    CHECK_EQ(slg_frame(out, NULL, 0), 16); /* no payload pointer needed for 0 bytes */
    CHECK_MEM(out, want, 16);
    free(out);

    uint64_t lens[3] = {0, 0, 0};
    out = xmalloc(48);
    CHECK_EQ(slg_frame_many(out, "", lens, 3), 48);
    for (int i = 0; i < 3; i++) CHECK_MEM(out + 16 * i, want, 16);
    free(out);

    char guard = 0x7f;
    CHECK_EQ(slg_frame_many(&guard, "", lens, 0), 0); /* n = 0 writes nothing */
    CHECK_EQ(guard, 0x7f);
}

/* Frame one payload by hand, independently of record.c. */
static void frame_by_hand(unsigned char *out, const unsigned char *payload, uint64_t len) {
    for (int i = 0; i < 8; i++) out[i] = (unsigned char)(len >> (8 * i));
    uint32_t lc = slg_masked_crc32c((const char *)out, 8);
    uint32_t dc = slg_masked_crc32c((const char *)payload, (size_t)len);
    for (int i = 0; i < 4; i++) out[8 + i] = (unsigned char)(lc >> (8 * i));
    if (len) memcpy(out + 12, payload, (size_t)len);
    for (int i = 0; i < 4; i++) out[12 + len + (uint64_t)i] = (unsigned char)(dc >> (8 * i));
}

static void test_frame_matches_layout(void) {
    t_rng r;
    rng_seed(&r, 7);
    static const uint64_t sizes[] = {1, 2, 7, 8, 9, 255, 256, 257, 4095, 65536, 1u << 20};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint64_t len = sizes[k];
        unsigned char *payload = xmalloc((size_t)len);
        rng_fill(&r, payload, (size_t)len);
        char *out = xmalloc((size_t)len + 16);
        unsigned char *want = xmalloc((size_t)len + 16);
        frame_by_hand(want, payload, len);
        CHECK_EQ(slg_frame(out, (const char *)payload, len), len + 16);
        if (!CHECK_MEM(out, want, len + 16)) fprintf(stderr, "    payload length %llu\n",
                                                     (unsigned long long)len);
        CHECK_EQ(le64((unsigned char *)out), len);
        CHECK_EQ(slg_crc_unmask(le32((unsigned char *)out + 12 + len)),
                 slg_crc32c(0, (const char *)payload, (size_t)len));
        free(payload);
        free(out);
        free(want);
    }
}

static void test_frame_many_equals_concatenated_frames(void) {
    t_rng r;
    rng_seed(&r, 8);
    for (int it = 0; it < 300; it++) {
        uint64_t n = rng_below(&r, 20);
        uint64_t *lens = xmalloc((size_t)(n ? n : 1) * sizeof *lens);
        uint64_t total = 0;
        for (uint64_t i = 0; i < n; i++) {
            switch (rng_below(&r, 4)) {
            case 0: lens[i] = 0; break;
            case 1: lens[i] = rng_below(&r, 16); break;
            case 2: lens[i] = rng_below(&r, 300); break;
            default: lens[i] = rng_below(&r, 5000); break;
            }
            total += lens[i];
        }
        /* odd iterations use a misaligned source */
        char *concat_mem = xmalloc((size_t)total + 1);
        char *concat = concat_mem + (it & 1);
        rng_fill(&r, concat, (size_t)total);
        uint64_t out_len = total + 16 * n;
        char *many = xmalloc((size_t)out_len);
        char *single = xmalloc((size_t)out_len);
        CHECK_EQ(slg_frame_many(many, concat, lens, n), out_len);
        uint64_t o = 0, c = 0;
        for (uint64_t i = 0; i < n; i++) {
            o += slg_frame(single + o, concat + c, lens[i]);
            c += lens[i];
        }
        CHECK_EQ(o, out_len);
        if (!CHECK_MEM(many, single, out_len))
            fprintf(stderr, "    iteration %d: %llu payloads\n", it, (unsigned long long)n);
        /* and every frame scans back to its payload */
        slg_scan_state st = {0};
        st.verify_data = 1;
        slg_span *spans = xmalloc((size_t)(n + 1) * sizeof *spans);
        slg_damage dmg[1];
        uint64_t ns = 0, nd = 0;
        int rc = slg_scan(&st, many, out_len, 0, out_len, 1, spans, n + 1, &ns, dmg, 1, &nd);
        CHECK_EQ(rc, SLG_SCAN_END);
        CHECK_EQ(ns, n);
        CHECK_EQ(nd, 0);
        c = 0;
        for (uint64_t i = 0; i < ns && i < n; i++) {
            CHECK_EQ(spans[i].length, lens[i]);
            CHECK_MEM(many + spans[i].offset, concat + c, lens[i]);
            c += lens[i];
        }
        free(spans);
        free(lens);
        free(concat_mem);
        free(many);
        free(single);
    }
}

int main(void) {
    RUN(test_constants);
    RUN(test_frame_40_byte_record);
    RUN(test_frame_empty_payload);
    RUN(test_frame_matches_layout);
    RUN(test_frame_many_equals_concatenated_frames);
    return TEST_SUMMARY();
}
