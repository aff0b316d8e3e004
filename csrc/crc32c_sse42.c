/* crc32c_sse42.c - CRC32C with the SSE4.2 crc32 instruction, in three
 * independent streams to hide its latency, joined by shifting the earlier CRC
 * by x^(8 block) with table lookups.  Only this file targets sse4.2, so the
 * rest of the library (and crc32c.c's CPU probe) stays baseline x86-64. */
#include "crc32c_internal.h"
#include "record.h"

#ifdef SLG_HAVE_SSE42_IMPL
#include <cpuid.h>
#include <nmmintrin.h>

#define LONG_BLOCK 8192
#define SHORT_BLOCK 256

static uint32_t shift_long[4][256];
static uint32_t shift_short[4][256];

static void build_shift_table(uint32_t t[4][256], size_t nbytes) {
    for (int k = 0; k < 4; k++)
        for (uint32_t b = 0; b < 256; b++)
            t[k][b] = slg_crc32c_shift_portable(b << (8 * k), nbytes);
}

void slg_crc32c_sse42_init(void) {
    build_shift_table(shift_long, LONG_BLOCK);
    build_shift_table(shift_short, SHORT_BLOCK);
}

int slg_cpu_has_sse42(void) {
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    return (ecx & bit_SSE4_2) != 0;
}

static inline uint32_t apply_shift(uint32_t t[4][256], uint32_t crc) {
    return t[0][crc & 0xFF] ^ t[1][(crc >> 8) & 0xFF] ^ t[2][(crc >> 16) & 0xFF] ^ t[3][crc >> 24];
}

/* Three streams of `block` bytes (at p, p + block, p + 2 block), joined. */
__attribute__((target("sse4.2"))) static inline uint64_t crc_3way(uint64_t c0, const uint8_t *p,
                                                                   size_t block,
                                                                   uint32_t t[4][256]) {
    uint64_t c1 = 0, c2 = 0;
    for (const uint8_t *end = p + block; p < end; p += 8) {
        c0 = _mm_crc32_u64(c0, slg_get_le64((const char *)p));
        c1 = _mm_crc32_u64(c1, slg_get_le64((const char *)p + block));
        c2 = _mm_crc32_u64(c2, slg_get_le64((const char *)p + 2 * block));
    }
    c0 = apply_shift(t, (uint32_t)c0) ^ (uint32_t)c1;
    return apply_shift(t, (uint32_t)c0) ^ (uint32_t)c2;
}

__attribute__((target("sse4.2"))) uint32_t slg_crc32c_sse42_raw(uint32_t crc, const uint8_t *p,
                                                                  size_t n) {
    uint64_t c0 = crc;
    while (n && ((uintptr_t)p & 7)) {
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
        n--;
    }
    for (; n >= 3 * LONG_BLOCK; p += 3 * LONG_BLOCK, n -= 3 * LONG_BLOCK)
        c0 = crc_3way(c0, p, LONG_BLOCK, shift_long);
    for (; n >= 3 * SHORT_BLOCK; p += 3 * SHORT_BLOCK, n -= 3 * SHORT_BLOCK)
        c0 = crc_3way(c0, p, SHORT_BLOCK, shift_short);
    for (; n >= 8; p += 8, n -= 8) c0 = _mm_crc32_u64(c0, slg_get_le64((const char *)p));
    while (n--) c0 = _mm_crc32_u8((uint32_t)c0, *p++);
    return (uint32_t)c0;
}
#endif /* SLG_HAVE_SSE42_IMPL */
