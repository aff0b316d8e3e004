/* test_crc32c.c - one CRC32C conformance suite, run against every
 * implementation: slg_crc32c_with() for the portable, SSE4.2 and ARM64
 * paths, and the public slg_crc32c() under each implementation it can be
 * switched to.  An implementation this CPU or build lacks is SKIPped with
 * the reason, never passed.  The portable path is itself checked against a
 * bit-at-a-time reference written here from the polynomial.
 *
 * Vectors: RFC 3720 §B.4 and docs/format.md §1.2 (TensorBoard's masked_crc.rs,
 * tf_record.rs).  SLG_CRC_EXHAUSTIVE=1 also runs every (i, j) split of the
 * 2048-byte buffer through the literal three-call composition (slow). */
#include <errno.h>
#include <stdlib.h>

#include "summarylog_api.h"
#include "test_main.h"

#define PUBLIC_ENTRY 100 /* pseudo-impl: the public slg_crc32c() */

typedef struct {
    int impl; /* SLG_CRC_* or PUBLIC_ENTRY */
    const char *name;
} impl_desc;

static const impl_desc IMPLS[] = {
    {SLG_CRC_PORTABLE, "portable"},
    {SLG_CRC_SSE42, "sse4.2"},
    {SLG_CRC_ARM64, "arm64"},
};
#define N_IMPLS (sizeof IMPLS / sizeof IMPLS[0])

static uint32_t run(int impl, uint32_t crc, const void *data, size_t n) {
    if (impl == PUBLIC_ENTRY) return slg_crc32c(crc, data, n);
    return slg_crc32c_with(impl, crc, data, n);
}

static uint32_t portable(uint32_t crc, const void *data, size_t n) {
    return slg_crc32c_with(SLG_CRC_PORTABLE, crc, data, n);
}

/* Bit-at-a-time CRC32C straight from the reflected polynomial. */
static uint32_t ref_crc32c(uint32_t crc, const unsigned char *p, size_t n) {
    crc = ~crc;
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    }
    return ~crc;
}

static const char *missing_reason(int impl) {
    switch (impl) {
    case SLG_CRC_SSE42:
#if defined(__x86_64__) || defined(_M_X64)
        return "this x86-64 CPU lacks SSE4.2 (CPUID leaf 1, ECX bit 20)";
#else
        return "built only on x86-64 (this build is for another architecture)";
#endif
    case SLG_CRC_ARM64:
#if defined(__aarch64__)
        return "this ARM64 CPU lacks the CRC extension (HWCAP_CRC32)";
#else
        return "built only on aarch64 (this build is for another architecture)";
#endif
    default:
        return "unknown implementation";
    }
}

/* ---- the conformance suite ------------------------------------------------ */

static unsigned char big[70000 + 64];

static void check_vectors(int impl, const char *name) {
    unsigned char buf[32];
    static const struct {
        const char *what;
        int kind; /* 0 literal, 1 zeros, 2 ones, 3 ascending, 4 descending */
        uint32_t want;
    } vec[] = {
        {"\"123456789\"", 0, 0xE3069283u},
        {"32 x 0x00 (RFC 3720 B.4)", 1, 0x8A9136AAu},
        {"32 x 0xFF (RFC 3720 B.4)", 2, 0x62A8AB43u},
        {"0x00..0x1F (RFC 3720 B.4)", 3, 0x46DD794Eu},
        {"0x1F..0x00 (RFC 3720 B.4)", 4, 0x113FDB5Cu},
    };
    for (size_t v = 0; v < sizeof vec / sizeof vec[0]; v++) {
        size_t n = 32;
        switch (vec[v].kind) {
        case 0: memcpy(buf, "123456789", 9); n = 9; break;
        case 1: memset(buf, 0x00, 32); break;
        case 2: memset(buf, 0xFF, 32); break;
        case 3: for (int i = 0; i < 32; i++) buf[i] = (unsigned char)i; break;
        default: for (int i = 0; i < 32; i++) buf[i] = (unsigned char)(31 - i); break;
        }
        uint32_t got = run(impl, 0, buf, n);
        if (!CHECK_EQ(got, vec[v].want))
            fprintf(stderr, "    impl %s, vector %s\n", name, vec[v].what);
        /* the same bytes at every misalignment give the same CRC */
        unsigned char shifted[32 + 16];
        for (size_t off = 1; off < 16; off++) {
            memcpy(shifted + off, buf, n);
            if (!CHECK_EQ(run(impl, 0, shifted + off, n), vec[v].want))
                fprintf(stderr, "    impl %s, vector %s at offset %zu\n", name, vec[v].what, off);
        }
    }
    CHECK_EQ(run(impl, 0, "", 0), 0);
    CHECK_EQ(run(impl, 0x12345678u, "", 0), 0x12345678u); /* empty extension is identity */
    CHECK_EQ(run(impl, 0, NULL, 0), 0);

    /* masked vectors (docs/format.md §1.2) through this implementation */
    static const char tb[] = "\x1a\x11" "CRC test, one two";
    CHECK_EQ(slg_crc_mask(run(impl, 0, tb, sizeof tb - 1)), 0x5794D08Au);
    static const char zeros8[8] = {0};
    CHECK_EQ(slg_crc_mask(run(impl, 0, zeros8, 8)), 0x07980329u);
    static const char len24[8] = {0x18, 0, 0, 0, 0, 0, 0, 0};
    CHECK_EQ(slg_crc_mask(run(impl, 0, len24, 8)), 0x224B7FA3u);
    /* the 24-byte payload of the complete 40-byte record: data_crc 0xAB364B12 */
    static const unsigned char event[24] = {0x09, 0x00, 0x00, 0x80, 0x38, 0x99, 0xd6, 0xd7,
                                            0x41, 0x1a, 0x0d, 0x62, 0x72, 0x61, 0x69, 0x6e,
                                            0x2e, 0x45, 0x76, 0x65, 0x6e, 0x74, 0x3a, 0x32};
    CHECK_EQ(slg_crc_mask(run(impl, 0, event, 24)), 0xAB364B12u);
}

static void check_extension(int impl) {
    /* "hello " then "world" extends to the CRC of "hello world" */
    uint32_t hello = run(impl, 0, "hello ", 6);
    CHECK_EQ(run(impl, hello, "world", 5), 0xC99465AAu);
    CHECK_EQ(run(impl, 0, "hello world", 11), 0xC99465AAu);
    /* byte by byte */
    uint32_t c = 0;
    for (const char *p = "hello world"; *p; p++) c = run(impl, c, p, 1);
    CHECK_EQ(c, 0xC99465AAu);
}

/* Every split point (i, j) of an n-byte buffer: the three-call
 * composition gives the whole buffer's CRC.  `full` runs the literal three
 * calls; otherwise the equivalent two checks (prefix(i) extended over
 * [i, j) == prefix(j), and prefix(j) extended over [j, n) == whole), which
 * costs n^3/6 instead of n^3/2 bytes of CRC work. */
static int split_sampled(size_t i, size_t n) {
    /* every start alignment at both ends of the buffer, then every 61st i
     * (61 is odd, so these cover every alignment too) */
    return i < 16 || i + 16 > n || i % 61 == 0;
}

static void check_splits(int impl, const char *name, const unsigned char *buf, size_t n, int full,
                         int sampled) {
    uint32_t whole = ref_crc32c(0, buf, n);
    CHECK_EQ(run(impl, 0, buf, n), whole);
    uint32_t *prefix = xmalloc((n + 1) * sizeof *prefix);
    prefix[0] = 0;
    for (size_t i = 0; i < n; i++) prefix[i + 1] = ref_crc32c(prefix[i], buf + i, 1);
    unsigned long long bad = 0;
    for (size_t j = 0; j <= n; j++) {
        if (run(impl, prefix[j], buf + j, n - j) != whole) bad++;
        if (run(impl, 0, buf, j) != prefix[j]) bad++;
    }
    for (size_t i = 0; i <= n && bad < 5; i++) {
        if (sampled && !split_sampled(i, n)) continue;
        for (size_t j = i; j <= n; j++) {
            uint32_t got;
            if (full) {
                uint32_t a = run(impl, 0, buf, i);
                uint32_t b = run(impl, a, buf + i, j - i);
                got = run(impl, b, buf + j, n - j);
                if (got == whole) continue;
            } else {
                got = run(impl, prefix[i], buf + i, j - i);
                if (got == prefix[j]) continue;
            }
            if (bad++ < 5)
                fprintf(stderr, "    impl %s: split (%zu, %zu) of %zu bytes gives 0x%08x\n", name,
                        i, j, n, got);
        }
    }
    if (!CHECK_EQ(bad, 0)) fprintf(stderr, "    impl %s, %zu-byte buffer\n", name, n);
    free(prefix);
}

static void check_random(int impl, const char *name, t_rng *r, int iters) {
    /* lengths straddling the SSE4.2 block boundaries (3 x 256, 3 x 8192) and
     * the 8/32-byte strides, at every misalignment */
    static const size_t edges[] = {0,   1,   7,    8,    9,    15,   16,    17,    31,   32,
                                   33,  63,  64,   255,  256,  257,  767,   768,   769,  1024,
                                   1535, 1536, 1537, 2303, 2304, 2305, 8192, 24575, 24576, 24577,
                                   24583, 49152, 49159, 65536, 69999, 70000};
    unsigned long long bad = 0;
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++) {
        for (size_t off = 0; off < 16; off++) {
            for (size_t d = 0; d < 3; d++) {
                size_t n = edges[e] + d;
                if (n > 70000) n = 70000;
                uint32_t seed = (uint32_t)rng_next(r);
                uint32_t want = portable(seed, big + off, n);
                uint32_t got = run(impl, seed, big + off, n);
                if (got != want && bad++ < 5)
                    fprintf(stderr, "    impl %s: len %zu offset %zu: 0x%08x != 0x%08x\n", name, n,
                            off, got, want);
            }
        }
    }
    for (int it = 0; it < iters; it++) {
        size_t off = (size_t)rng_below(r, 64);
        size_t n = (size_t)(rng_below(r, 4) == 0 ? rng_below(r, 70001) : rng_below(r, 2048));
        uint32_t seed = rng_below(r, 2) ? (uint32_t)rng_next(r) : 0;
        uint32_t want = portable(seed, big + off, n);
        uint32_t got = run(impl, seed, big + off, n);
        if (got != want && bad++ < 5)
            fprintf(stderr, "    impl %s: len %zu offset %zu seed 0x%08x: 0x%08x != 0x%08x\n",
                    name, n, off, seed, got, want);
    }
    if (!CHECK_EQ(bad, 0)) fprintf(stderr, "    impl %s: random lengths\n", name);
}

static void conformance(int impl, const char *name) {
    printf("  conformance: %s\n", name);
    t_rng r;
    rng_seed(&r, 0xC0FFEEu + (uint64_t)impl);
    check_vectors(impl, name);
    check_extension(impl);
    unsigned char b48[48], b2048[2048];
    rng_fill(&r, b48, sizeof b48);
    rng_fill(&r, b2048, sizeof b2048);
    /* slg_crc32c_with() re-probes the CPU on every call (CPUID: microseconds
     * under a hypervisor), so it gets a sampled set of start points i (all j
     * for each) on the 2048-byte buffer; the public entry point runs the same
     * raw function, selected, and gets every (i, j). */
    int exhaustive = (int)env_u64("SLG_CRC_EXHAUSTIVE", 0);
    check_splits(impl, name, b48, sizeof b48, 1, 0);
    check_splits(impl, name, b2048, sizeof b2048, exhaustive,
                 impl != PUBLIC_ENTRY && !exhaustive);
    check_random(impl, name, &r, 300);
}

/* ---- tests ------------------------------------------------------------------ */

static int env_forced_impl = -2;

static void test_portable_matches_reference(void) {
    t_rng r;
    rng_seed(&r, 1);
    for (int it = 0; it < 200; it++) {
        size_t off = (size_t)rng_below(&r, 16);
        size_t n = (size_t)(it < 100 ? (size_t)it : rng_below(&r, 5000));
        uint32_t seed = (uint32_t)rng_next(&r);
        if (!CHECK_EQ(portable(seed, big + off, n), ref_crc32c(seed, big + off, n)))
            fprintf(stderr, "    len %zu offset %zu\n", n, off);
    }
    CHECK_EQ(ref_crc32c(0, (const unsigned char *)"123456789", 9), 0xE3069283u);
}

static void test_each_implementation(void) {
    for (size_t k = 0; k < N_IMPLS; k++) {
        if (!slg_crc32c_has_impl(IMPLS[k].impl)) {
            SKIP("%s: %s", IMPLS[k].name, missing_reason(IMPLS[k].impl));
            continue;
        }
        conformance(IMPLS[k].impl, IMPLS[k].name);
    }
}

static void test_public_entry_under_each_implementation(void) {
    int auto_impl = slg_crc32c_impl();
    CHECK(slg_crc32c_has_impl(auto_impl));
    for (size_t k = 0; k < N_IMPLS; k++) {
        int impl = IMPLS[k].impl;
        if (!slg_crc32c_has_impl(impl)) {
            CHECK_EQ(slg_crc32c_select(impl), -ENOTSUP);
            SKIP("public slg_crc32c on %s: %s", IMPLS[k].name, missing_reason(impl));
            continue;
        }
        CHECK_EQ(slg_crc32c_select(impl), 0);
        CHECK_EQ(slg_crc32c_impl(), impl);
        char name[64];
        snprintf(name, sizeof name, "slg_crc32c (public, selected %s)", IMPLS[k].name);
        conformance(PUBLIC_ENTRY, name);
        /* the public masked entry point agrees */
        CHECK_EQ(slg_masked_crc32c("\x1a\x11" "CRC test, one two", 19), 0x5794D08Au);
        CHECK_EQ(slg_masked_crc32c("\0\0\0\0\0\0\0\0", 8), 0x07980329u);
    }
    CHECK_EQ(slg_crc32c_select(SLG_CRC_AUTO), 0);
    CHECK_EQ(slg_crc32c_impl(), auto_impl);
    CHECK_EQ(slg_crc32c_select(7), -ENOTSUP);
    CHECK_EQ(slg_crc32c_select(-5), -ENOTSUP);
    CHECK_EQ(slg_crc32c_impl(), auto_impl);
    CHECK_EQ(slg_crc32c_has_impl(7), 0);
    CHECK_EQ(slg_crc32c_has_impl(SLG_CRC_AUTO), 0);
    CHECK_EQ(slg_crc32c_has_impl(SLG_CRC_PORTABLE), 1);
    /* the automatic choice is the fastest one available (unless forced) */
    const char *force = getenv("SUMMARYLOG_CRC32C");
    if (force && strcmp(force, "portable") == 0) {
        CHECK_EQ(auto_impl, SLG_CRC_PORTABLE);
    } else if (slg_crc32c_has_impl(SLG_CRC_SSE42)) {
        CHECK_EQ(auto_impl, SLG_CRC_SSE42);
    } else if (slg_crc32c_has_impl(SLG_CRC_ARM64)) {
        CHECK_EQ(auto_impl, SLG_CRC_ARM64);
    } else {
        CHECK_EQ(auto_impl, SLG_CRC_PORTABLE);
    }
}

static void test_env_forces_portable(void) {
    /* main() set SUMMARYLOG_CRC32C=portable before the first CRC call */
    CHECK_EQ(env_forced_impl, SLG_CRC_PORTABLE);
}

static void test_mask_unmask(void) {
    CHECK_EQ(slg_crc_mask(0), 0xA282EAD8u);
    CHECK_EQ(slg_crc_unmask(0xA282EAD8u), 0);
    /* the 40-byte record's CRCs: docs/format.md §1.2 */
    CHECK_EQ(slg_crc_unmask(0x224B7FA3u), slg_crc32c(0, "\x18\0\0\0\0\0\0\0", 8));
    t_rng r;
    rng_seed(&r, 2);
    static const uint32_t edge[] = {0, 1, 0x7FFFu, 0x8000u, 0xFFFFu, 0x10000u, 0x7FFFFFFFu,
                                    0x80000000u, 0xA282EAD8u, 0xFFFFFFFFu};
    unsigned long long bad = 0;
    for (int i = 0; i < 200000; i++) {
        uint32_t x = i < 10 ? edge[i] : (uint32_t)rng_next(&r);
        uint32_t m = slg_crc_mask(x);
        uint32_t want = ((x >> 15) | (x << 17)) + 0xA282EAD8u;
        if (m != want || slg_crc_unmask(m) != x || slg_crc_mask(slg_crc_unmask(x)) != x) {
            if (bad++ < 5) fprintf(stderr, "    x = 0x%08x: mask 0x%08x\n", x, m);
        }
    }
    CHECK_EQ(bad, 0);
    /* slg_masked_crc32c is mask(crc32c) */
    for (int i = 0; i < 100; i++) {
        size_t n = (size_t)rng_below(&r, 300);
        CHECK_EQ(slg_masked_crc32c((const char *)big + i, n),
                 slg_crc_mask(ref_crc32c(0, big + i, n)));
    }
}

int main(void) {
    /* Before anything computes a CRC: the environment switch must win the
     * one-time probe, and SLG_CRC_AUTO must keep honouring it. */
    const char *old = getenv("SUMMARYLOG_CRC32C");
    char *saved = old ? strdup(old) : NULL;
    setenv("SUMMARYLOG_CRC32C", "portable", 1);
    env_forced_impl = slg_crc32c_impl();
    if (slg_crc32c_select(SLG_CRC_AUTO) != 0 || slg_crc32c_impl() != SLG_CRC_PORTABLE)
        env_forced_impl = -3;
    if (saved) {
        setenv("SUMMARYLOG_CRC32C", saved, 1);
        free(saved);
    } else {
        unsetenv("SUMMARYLOG_CRC32C");
    }
    slg_crc32c_select(SLG_CRC_AUTO);
    printf("crc32c: automatic implementation %d, version %s\n", slg_crc32c_impl(), slg_version());

    t_rng r;
    rng_seed(&r, 42);
    rng_fill(&r, big, sizeof big);

    RUN(test_env_forces_portable);
    RUN(test_portable_matches_reference);
    RUN(test_mask_unmask);
    RUN(test_each_implementation);
    RUN(test_public_entry_under_each_implementation);
    return TEST_SUMMARY();
}
