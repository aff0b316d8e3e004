/* crc32c_arm64.c - CRC32C with the ARMv8 CRC extension (crc32cx et al.).
 * Compiled only on aarch64; the target attribute keeps the rest of the
 * library baseline, and crc32c.c probes HWCAP_CRC32 before using it. */
#include "crc32c_internal.h"
#include "record.h"

#ifdef SLG_HAVE_ARM64_IMPL
#include <arm_acle.h>
#if defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

int slg_cpu_has_arm_crc(void) {
#if defined(__linux__) && defined(HWCAP_CRC32)
    return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
#elif defined(__APPLE__)
    return 1; /* every Apple arm64 CPU has the CRC extension */
#else
    return 0;
#endif
}

__attribute__((target("+crc"))) uint32_t slg_crc32c_arm64_raw(uint32_t crc, const uint8_t *p,
                                                               size_t n) {
    while (n && ((uintptr_t)p & 7)) {
        crc = __crc32cb(crc, *p++);
        n--;
    }
    while (n >= 8) { /* one dependent chain: unrolling would not shorten it */
        crc = __crc32cd(crc, slg_get_le64((const char *)p));
        p += 8;
        n -= 8;
    }
    while (n--) crc = __crc32cb(crc, *p++);
    return crc;
}
#endif /* SLG_HAVE_ARM64_IMPL */
