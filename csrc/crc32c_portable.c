/* crc32c_portable.c - slicing-by-8 CRC32C for any CPU; also the reference
 * the hardware paths are tested against.  Tables are built once at start-up
 * by the dispatcher (crc32c.c). */
#include <string.h>

#include "crc32c_internal.h"
#include "record.h"

static uint32_t table[8][256];

void slg_crc32c_portable_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (SLG_CRC32C_POLY & (0u - (c & 1u)));
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xFF];
}

uint32_t slg_crc32c_portable_raw(uint32_t crc, const uint8_t *p, size_t n) {
    while (n && ((uintptr_t)p & 7)) {
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xFF];
        n--;
    }
    while (n >= 8) {
        uint64_t v = slg_get_le64((const char *)p) ^ crc;
        crc = table[7][v & 0xFF] ^ table[6][(v >> 8) & 0xFF] ^ table[5][(v >> 16) & 0xFF] ^
              table[4][(v >> 24) & 0xFF] ^ table[3][(v >> 32) & 0xFF] ^
              table[2][(v >> 40) & 0xFF] ^ table[1][(v >> 48) & 0xFF] ^ table[0][v >> 56];
        p += 8;
        n -= 8;
    }
    while (n--) crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xFF];
    return crc;
}

/* GF(2) polynomial multiplication modulo P, bit-reflected (x^0 is bit 31). */
static uint32_t gf2_mulmod(uint32_t a, uint32_t b) {
    uint32_t prod = 0;
    for (int i = 0; i < 32; i++) {
        if (a & 0x80000000u) prod ^= b;
        a <<= 1;
        b = (b >> 1) ^ (SLG_CRC32C_POLY & (0u - (b & 1u)));
    }
    return prod;
}

uint32_t slg_crc32c_shift_portable(uint32_t crc, size_t n) {
    /* x^(8n) by square-and-multiply; x^1 is 0x40000000 in reflected form. */
    uint32_t result = 0x80000000u; /* x^0 */
    uint32_t sq = 0x00800000u;     /* x^8: one zero byte */
    while (n) {
        if (n & 1) result = gf2_mulmod(result, sq);
        sq = gf2_mulmod(sq, sq);
        n >>= 1;
    }
    return gf2_mulmod(crc, result);
}
