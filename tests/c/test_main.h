/* test_main.h - the few assertion macros the C tests share, a seeded
 * xorshift PRNG and a summary line.  Header-only: each tests/c/test_*.c is
 * one program built with the csrc sources by tests/test_c_core.py.
 *
 *   CHECK(cond)          CHECK_EQ(a, b)        CHECK_MEM(a, b, n)
 *   SKIP("why", ...)     RUN(fn)               return TEST_SUMMARY();
 *
 * A failed check prints file:line and both values, counts, and the run goes
 * on (the first MAX_REPORTS failures are printed in full).  TEST_SUMMARY()
 * prints "<program>: N checks, F failed, S skipped" and returns the exit
 * status (0 only when nothing failed). */
#ifndef SLG_TEST_MAIN_H
#define SLG_TEST_MAIN_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REPORTS 40

static unsigned long long t_checks, t_failures, t_skips;
static const char *t_current = "?";

/* Counters are atomic: the writer tests check from several threads. */
#define T_COUNT(c) __atomic_add_fetch(&(c), 1, __ATOMIC_RELAXED)

static void t_fail(const char *file, int line, const char *fmt, ...) {
    unsigned long long n = T_COUNT(t_failures);
    if (n > MAX_REPORTS) {
        if (n == MAX_REPORTS + 1) fprintf(stderr, "... further failures not shown\n");
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: [%s] FAIL: ", file, line, t_current);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Each macro evaluates to 1 when the check held, 0 when it failed. */
#define CHECK(cond)                                                                     \
    __extension__({                                                                     \
        int t_ok_ = (cond) ? 1 : 0;                                                     \
        T_COUNT(t_checks);                                                              \
        if (!t_ok_) t_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);                     \
        t_ok_;                                                                          \
    })

#define CHECK_EQ(a, b)                                                                  \
    __extension__({                                                                     \
        unsigned long long t_a_ = (unsigned long long)(a);                              \
        unsigned long long t_b_ = (unsigned long long)(b);                              \
        T_COUNT(t_checks);                                                              \
        if (t_a_ != t_b_)                                                               \
            t_fail(__FILE__, __LINE__, "CHECK_EQ(%s, %s): %lld (0x%llx) != %lld (0x%llx)", \
                   #a, #b, (long long)t_a_, t_a_, (long long)t_b_, t_b_);               \
        t_a_ == t_b_;                                                                   \
    })

#define CHECK_MEM(a, b, n)                                                              \
    __extension__({                                                                     \
        const unsigned char *t_pa_ = (const unsigned char *)(a);                        \
        const unsigned char *t_pb_ = (const unsigned char *)(b);                        \
        size_t t_n_ = (size_t)(n), t_i_ = 0;                                            \
        while (t_i_ < t_n_ && t_pa_[t_i_] == t_pb_[t_i_]) t_i_++;                       \
        T_COUNT(t_checks);                                                              \
        if (t_i_ < t_n_)                                                                \
            t_fail(__FILE__, __LINE__,                                                  \
                   "CHECK_MEM(%s, %s, %zu): first difference at byte %zu: %02x != %02x", \
                   #a, #b, t_n_, t_i_, t_pa_[t_i_], t_pb_[t_i_]);                       \
        t_i_ == t_n_;                                                                   \
    })

/* Print why a part of the suite could not run here; counted, never a pass. */
#define SKIP(...)                                                                       \
    do {                                                                                \
        T_COUNT(t_skips);                                                               \
        printf("SKIP [%s]: ", t_current);                                               \
        printf(__VA_ARGS__);                                                            \
        putchar('\n');                                                                  \
        fflush(stdout);                                                                 \
    } while (0)

#define RUN(fn)                                                                         \
    do {                                                                                \
        unsigned long long t_before_ = t_failures;                                      \
        t_current = #fn;                                                                \
        fn();                                                                           \
        printf("%-40s %s\n", #fn, t_failures == t_before_ ? "ok" : "FAILED");           \
        fflush(stdout);                                                                 \
        t_current = "?";                                                                \
    } while (0)

#define TEST_SUMMARY()                                                                  \
    (printf("%s: %llu checks, %llu failed, %llu skipped\n", __FILE__, t_checks,         \
            t_failures, t_skips),                                                       \
     fflush(stdout), t_failures ? 1 : 0)

/* ---- deterministic PRNG (xorshift64*) ----------------------------------- */
typedef struct {
    uint64_t s;
} t_rng;

static inline void rng_seed(t_rng *r, uint64_t seed) {
    /* splitmix64 so that nearby seeds give unrelated streams; never 0 */
    uint64_t z = seed + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    r->s = z ? z : 1;
}

static inline uint64_t rng_next(t_rng *r) {
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1Dull;
}

/* Uniform in [0, n); n == 0 gives 0. */
static inline uint64_t rng_below(t_rng *r, uint64_t n) { return n ? rng_next(r) % n : 0; }

static inline void rng_fill(t_rng *r, void *p, size_t n) {
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(rng_next(r) >> 56);
}

/* An environment variable as an unsigned number, or dflt. */
static inline uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    char *end;
    unsigned long long x = strtoull(v, &end, 0);
    return *end ? dflt : (uint64_t)x;
}

static inline void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        abort();
    }
    return p;
}

#endif /* SLG_TEST_MAIN_H */
