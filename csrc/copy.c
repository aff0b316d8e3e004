/* copy.c - the collectors' private copies of a step's tensors in one call,
 * with streaming stores: another core reads them later, so writing them
 * through the training thread's cache would only evict its own data. */
#include <stdint.h>
#include <string.h>

#include "summarylog_api.h"

#if defined(__SSE2__)
#include <emmintrin.h>

static void copy_stream(char *dst, const char *src, uint64_t n) {
    uint64_t head = (16 - ((uintptr_t)dst & 15)) & 15;
    if (n < 4096 || head >= n) { /* small: an ordinary copy stays in cache anyway */
        memcpy(dst, src, (size_t)n);
        return;
    }
    memcpy(dst, src, (size_t)head);
    dst += head, src += head, n -= head;
    uint64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(src + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(src + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(src + i + 32));
        __m128i d = _mm_loadu_si128((const __m128i *)(src + i + 48));
        _mm_stream_si128((__m128i *)(dst + i), a);
        _mm_stream_si128((__m128i *)(dst + i + 16), b);
        _mm_stream_si128((__m128i *)(dst + i + 32), c);
        _mm_stream_si128((__m128i *)(dst + i + 48), d);
    }
    memcpy(dst + i, src + i, (size_t)(n - i));
}
#else
static void copy_stream(char *dst, const char *src, uint64_t n) { memcpy(dst, src, (size_t)n); }
#endif

void slg_copy_many(const uint64_t *jobs, uint64_t n) {
    for (uint64_t i = 0; i < n; i++, jobs += 3)
        copy_stream((char *)(uintptr_t)jobs[0], (const char *)(uintptr_t)jobs[1], jobs[2]);
#if defined(__SSE2__)
    _mm_sfence(); /* the streamed stores are visible before the copies are queued */
#endif
}
