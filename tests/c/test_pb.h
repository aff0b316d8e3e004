/* test_pb.h - the protobuf writing the C tests share: varints and fields of
 * each wire type, enough to build events by hand (hostile ones included). */
#ifndef SLG_TEST_PB_H
#define SLG_TEST_PB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline size_t put_varint(unsigned char *p, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (unsigned char)v;
    return n;
}

/* field f of wire type 2 holding body[0:len] */
static inline size_t put_len(unsigned char *p, uint32_t f, const unsigned char *body, size_t len) {
    size_t n = put_varint(p, (uint64_t)f << 3 | 2);
    n += put_varint(p + n, len);
    memcpy(p + n, body, len);
    return n + len;
}

/* field f of wire type 1 (a double) */
static inline size_t put_f64(unsigned char *p, uint32_t f, double x) {
    size_t n = put_varint(p, (uint64_t)f << 3 | 1);
    memcpy(p + n, &x, 8);
    return n + 8;
}

/* field f of wire type 0 */
static inline size_t put_u64(unsigned char *p, uint32_t f, uint64_t x) {
    size_t n = put_varint(p, (uint64_t)f << 3);
    return n + put_varint(p + n, x);
}

#endif
