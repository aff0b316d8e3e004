/* crc32c.c - the CRC32C entry points and the run-time choice of
 * implementation (portable slicing-by-8, SSE4.2, ARMv8 CRC).  The choice is
 * made once, on first use (pthread_once); SUMMARYLOG_CRC32C=portable in the
 * environment, or slg_crc32c_select(), forces the portable path. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c_internal.h"
#include "summarylog_api.h"

#define MASK_DELTA 0xA282EAD8u

typedef uint32_t (*crc_fn)(uint32_t, const uint8_t *, size_t);

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static crc_fn active_fn = slg_crc32c_portable_raw;
static int active_impl = SLG_CRC_PORTABLE;
/* CPU probes, run once in init_tables: CPUID traps to the hypervisor in a VM
 * (microseconds), so it must not run on every slg_crc32c_with() call. */
static int cpu_sse42, cpu_arm_crc;

static int probed_has_impl(int impl) {
    return impl == SLG_CRC_PORTABLE || (impl == SLG_CRC_SSE42 && cpu_sse42) ||
           (impl == SLG_CRC_ARM64 && cpu_arm_crc);
}

static crc_fn impl_fn(int impl) {
    switch (impl) {
#ifdef SLG_HAVE_SSE42_IMPL
    case SLG_CRC_SSE42:
        return slg_crc32c_sse42_raw;
#endif
#ifdef SLG_HAVE_ARM64_IMPL
    case SLG_CRC_ARM64:
        return slg_crc32c_arm64_raw;
#endif
    default:
        return slg_crc32c_portable_raw;
    }
}

static int best_impl(void) {
    const char *force = getenv("SUMMARYLOG_CRC32C");
    if (force && strcmp(force, "portable") == 0) return SLG_CRC_PORTABLE;
    if (probed_has_impl(SLG_CRC_SSE42)) return SLG_CRC_SSE42;
    if (probed_has_impl(SLG_CRC_ARM64)) return SLG_CRC_ARM64;
    return SLG_CRC_PORTABLE;
}

static void init_tables(void) {
    slg_crc32c_portable_init();
#ifdef SLG_HAVE_SSE42_IMPL
    cpu_sse42 = slg_cpu_has_sse42();
    slg_crc32c_sse42_init();
#endif
#ifdef SLG_HAVE_ARM64_IMPL
    cpu_arm_crc = slg_cpu_has_arm_crc();
#endif
    active_impl = best_impl();
    __atomic_store_n(&active_fn, impl_fn(active_impl), __ATOMIC_RELEASE);
}

int slg_crc32c_has_impl(int impl) {
    pthread_once(&init_once, init_tables);
    return probed_has_impl(impl);
}

static inline crc_fn current(void) {
    pthread_once(&init_once, init_tables);
    return __atomic_load_n(&active_fn, __ATOMIC_ACQUIRE);
}

uint32_t slg_crc32c(uint32_t crc, const char *data, size_t n) {
    return ~current()(~crc, (const uint8_t *)data, n);
}

uint32_t slg_crc_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + MASK_DELTA; }

uint32_t slg_crc_unmask(uint32_t masked) {
    uint32_t rot = masked - MASK_DELTA;
    return (rot >> 17) | (rot << 15);
}

uint32_t slg_masked_crc32c(const char *data, size_t n) {
    return slg_crc_mask(slg_crc32c(0, data, n));
}

int slg_crc32c_impl(void) {
    pthread_once(&init_once, init_tables);
    return __atomic_load_n(&active_impl, __ATOMIC_ACQUIRE);
}

int slg_crc32c_select(int impl) {
    pthread_once(&init_once, init_tables);
    if (impl == SLG_CRC_AUTO) impl = best_impl();
    if (!probed_has_impl(impl)) return -ENOTSUP;
    __atomic_store_n(&active_impl, impl, __ATOMIC_RELEASE);
    __atomic_store_n(&active_fn, impl_fn(impl), __ATOMIC_RELEASE);
    return 0;
}

uint32_t slg_crc32c_with(int impl, uint32_t crc, const char *data, size_t n) {
    pthread_once(&init_once, init_tables);
    if (!probed_has_impl(impl)) impl = SLG_CRC_PORTABLE;
    return ~impl_fn(impl)(~crc, (const uint8_t *)data, n);
}
