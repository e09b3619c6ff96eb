/* A tiny test harness for the C core tests (no Python, no framework).
 *
 *   CHECK(cond)                 counts a pass or prints file:line and counts a failure
 *   CHECK_EQ(a, b)              integer equality, prints both values on failure
 *   CHECK_OK(expr, err)         expr returns RC_OK (prints err.msg otherwise)
 *   CHECK_ERR(expr, code, err, substr)
 *                               expr returns `code` and err.msg contains substr
 *   CHECK_HAS(str, substr)      strstr(str, substr) != NULL
 *   REQUIRE(cond)               like CHECK, but returns from the current test
 *                               function on failure (use before dereferencing)
 *   RUN(test_fn)                runs a `static void test_fn(void)`
 *   return TEST_REPORT();       prints "N passed, N failed"; exit status 1 on failure
 *
 * Each test_*.c is its own executable (CMake: RECURRENT_BUILD_CTESTS=ON) and
 * registered with ctest.  Under ASan and TSan the binaries ask for
 * allocator_may_return_null=1 so that the huge-allocation tests see a NULL
 * from malloc (which the core must turn into RC_ERR_MEMORY) instead of an
 * ASan abort; leak checking stays on. */
#ifndef RC_TEST_H
#define RC_TEST_H

#include "core/rc_core.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rct_passed, rct_failed;
static const char *rct_current = "";

#define RCT_FAIL_AT(...)                                                                                  \
    do {                                                                                                 \
        rct_failed++;                                                                                    \
        fprintf(stdout, "%s:%d: [%s] ", __FILE__, __LINE__, rct_current);                                \
        fprintf(stdout, __VA_ARGS__);                                                                    \
        fputc('\n', stdout);                                                                             \
    } while (0)

#define CHECK(cond)                                                                                      \
    do {                                                                                                 \
        if (cond) rct_passed++;                                                                          \
        else RCT_FAIL_AT("CHECK failed: %s", #cond);                                                     \
    } while (0)

#define REQUIRE(cond)                                                                                    \
    do {                                                                                                 \
        if (cond) rct_passed++;                                                                          \
        else { RCT_FAIL_AT("REQUIRE failed: %s (test aborted)", #cond); return; }                        \
    } while (0)

#define CHECK_EQ(a, b)                                                                                   \
    do {                                                                                                 \
        long long rct_a = (long long)(a), rct_b = (long long)(b);                                        \
        if (rct_a == rct_b) rct_passed++;                                                                \
        else RCT_FAIL_AT("CHECK_EQ failed: %s == %s (%lld vs %lld)", #a, #b, rct_a, rct_b);              \
    } while (0)

#define CHECK_HAS(str, sub)                                                                              \
    do {                                                                                                 \
        const char *rct_s = (str), *rct_sub = (sub);                                                     \
        if (rct_s && strstr(rct_s, rct_sub)) rct_passed++;                                               \
        else RCT_FAIL_AT("CHECK_HAS failed: \"%s\" does not contain \"%s\"", rct_s ? rct_s : "(null)",   \
                         rct_sub);                                                                       \
    } while (0)

#define CHECK_OK(expr, err)                                                                              \
    do {                                                                                                 \
        rc_err_clear(&(err));                                                                            \
        rc_status rct_st = (expr);                                                                       \
        if (rct_st == RC_OK) rct_passed++;                                                               \
        else RCT_FAIL_AT("CHECK_OK failed: %s -> %d: %s", #expr, (int)rct_st, (err).msg);                \
    } while (0)

#define CHECK_ERR(expr, want, err, sub)                                                                  \
    do {                                                                                                 \
        rc_err_clear(&(err));                                                                            \
        rc_status rct_st = (expr);                                                                       \
        if (rct_st == (want) && (err).code == (want) && strstr((err).msg, (sub))) rct_passed++;                 \
        else RCT_FAIL_AT("CHECK_ERR failed: %s -> %d (err.code %d) \"%s\"; wanted %d containing \"%s\"",  \
                         #expr, (int)rct_st, (int)(err).code, (err).msg, (int)(want), (sub));            \
    } while (0)

#define RUN(fn)                                                                                          \
    do {                                                                                                 \
        rct_current = #fn;                                                                               \
        int rct_f0 = rct_failed;                                                                         \
        fn();                                                                                            \
        fprintf(stdout, "%-4s %s\n", rct_failed == rct_f0 ? "ok" : "FAIL", #fn);                         \
    } while (0)

#define TEST_REPORT() (printf("%d passed, %d failed\n", rct_passed, rct_failed), rct_failed ? 1 : 0)

/* ---- helpers shared by the tests */

/* Feeds a float32 tensor of the given shape into blob `name` of ws (creating
 * it locally), filled with base + i, in a fresh buffer as FeedBlob does (so
 * that it is never written through an old view, and its write stamp is new:
 * the caller may write the returned blob's data before running anything).
 * Returns the blob (borrowed) or NULL. */
static inline rc_blob *rct_feed_f32(rc_workspace *ws, const char *name, int ndim, const int64_t *dims,
                                    float base)
{
    rc_err err;
    rc_err_clear(&err);
    rc_blob *b = rc_ws_create_local(ws, name, &err);
    if (!b) return NULL;
    rc_tensor_release(&b->t);
    if (rc_tensor_resize(&b->t, RC_F32, ndim, dims, &err)) return NULL;
    float *p = rc_f32(&b->t);
    for (int64_t i = 0; i < rc_tensor_numel(&b->t); i++) p[i] = base + (float)i;
    return b;
}

/* Builds an opdef in nd: type, n_in inputs, n_out outputs (NULL-terminated
 * lists are awkward in C, so counts are explicit). Returns the opdef
 * (borrowed from nd, valid until the next add). */
static inline rc_opdef *rct_add_op(rc_netdef *nd, const char *type, int n_in, const char *const *ins, int n_out,
                                   const char *const *outs)
{
    rc_opdef *od = rc_netdef_add_op(nd, type);
    if (!od) return NULL;
    for (int i = 0; i < n_in; i++)
        if (rc_opdef_add_input(od, ins[i])) return NULL;
    for (int i = 0; i < n_out; i++)
        if (rc_opdef_add_output(od, outs[i])) return NULL;
    return od;
}

/* Argument setters for list / float kinds (the core only has _i and _s).
 * Return 0, or -1 when out of memory. */
static inline rc_arg *rct_arg_slot(rc_opdef *od, const char *name)
{
    if (rc_opdef_set_arg_i(od, name, 0)) return NULL;
    return (rc_arg *)rc_opdef_arg(od, name);
}

static inline int rct_set_f(rc_opdef *od, const char *name, double v)
{
    rc_arg *a = rct_arg_slot(od, name);
    if (!a) return -1;
    a->kind = RC_ARG_F;
    a->f = v;
    return 0;
}

static inline int rct_set_ints(rc_opdef *od, const char *name, int n, const int64_t *v)
{
    rc_arg *a = rct_arg_slot(od, name);
    if (!a) return -1;
    a->kind = RC_ARG_INTS;
    if (n && !(a->ints = malloc(sizeof(int64_t) * (size_t)n))) return -1;
    if (n) memcpy(a->ints, v, sizeof(int64_t) * (size_t)n);
    a->n = n;
    return 0;
}

static inline int rct_set_floats(rc_opdef *od, const char *name, int n, const float *v)
{
    rc_arg *a = rct_arg_slot(od, name);
    if (!a) return -1;
    a->kind = RC_ARG_FLOATS;
    if (n && !(a->floats = malloc(sizeof(float) * (size_t)n))) return -1;
    if (n) memcpy(a->floats, v, sizeof(float) * (size_t)n);
    a->n = n;
    return 0;
}

/* 1 when the kernel's overcommit mode guarantees a many-TiB malloc fails
 * (heuristic 0 or strict 2), so the huge-allocation tests are safe to run. */
static inline int rct_huge_alloc_fails(void)
{
    FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
    if (!f) return 0;
    int mode = -1;
    if (fscanf(f, "%d", &mode) != 1) mode = -1;
    fclose(f);
    return mode == 0 || mode == 2;
}

#if defined(__SANITIZE_ADDRESS__)
__attribute__((visibility("default"), used)) const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}
#endif
#if defined(__SANITIZE_THREAD__)
__attribute__((visibility("default"), used)) const char *__tsan_default_options(void)
{
    return "allocator_may_return_null=1";
}
#endif

#endif
