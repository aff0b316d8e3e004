/* crc32c_internal.h - what the CRC32C implementations share with their
 * dispatcher (crc32c.c).  Each implementation works on the raw register:
 * no pre/post inversion, which the dispatcher applies once. */
#ifndef SLG_CRC32C_INTERNAL_H
#define SLG_CRC32C_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#define SLG_CRC32C_POLY 0x82F63B78u /* Castagnoli, reflected */

uint32_t slg_crc32c_portable_raw(uint32_t crc, const uint8_t *p, size_t n);
void slg_crc32c_portable_init(void);

#if defined(__x86_64__) || defined(_M_X64)
#define SLG_HAVE_SSE42_IMPL 1
uint32_t slg_crc32c_sse42_raw(uint32_t crc, const uint8_t *p, size_t n);
void slg_crc32c_sse42_init(void);
int slg_cpu_has_sse42(void);
#endif

#if defined(__aarch64__)
#define SLG_HAVE_ARM64_IMPL 1
uint32_t slg_crc32c_arm64_raw(uint32_t crc, const uint8_t *p, size_t n);
int slg_cpu_has_arm_crc(void);
#endif

/* Multiply a raw CRC by x^(8n) mod P: the CRC register after n zero bytes. */
uint32_t slg_crc32c_shift_portable(uint32_t crc, size_t n);

#endif /* SLG_CRC32C_INTERNAL_H */
