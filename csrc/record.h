/* record.h - little-endian and protobuf-wire helpers shared by the framer,
 * the scanner and the encoders. */
#ifndef SLG_RECORD_H
#define SLG_RECORD_H

#include <stdint.h>
#include <string.h>

static inline void slg_put_le64(char *p, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, 8);
}

static inline void slg_put_le32(char *p, uint32_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    memcpy(p, &v, 4);
}

static inline uint64_t slg_get_le64(const char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline uint32_t slg_get_le32(const char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}

static inline uint64_t slg_varint_len(uint64_t v) {
    uint64_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline char *slg_put_varint(char *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (char)v;
    return p;
}

/* Bytes of a length-delimited field (one-byte key) holding `len` bytes. */
static inline uint64_t slg_len_field(uint64_t len) { return 1 + slg_varint_len(len) + len; }

static inline char *slg_put_len_key(char *p, unsigned key, uint64_t len) {
    *p++ = (char)key;
    return slg_put_varint(p, len);
}

static inline uint64_t slg_double_bits(double d) {
    uint64_t b;
    memcpy(&b, &d, 8);
    return b;
}

/* A proto3 double field: omitted when its bits are zero (so -0.0 is kept). */
static inline uint64_t slg_double_field_len(double d) { return slg_double_bits(d) ? 9 : 0; }

static inline char *slg_put_double_field(char *p, unsigned key, double d) {
    uint64_t b = slg_double_bits(d);
    if (!b) return p;
    *p++ = (char)key;
    slg_put_le64(p, b);
    return p + 8;
}

#endif /* SLG_RECORD_H */
