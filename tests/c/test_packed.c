/* The packed small-M product (kernels/packed_gemm.c): packing in both
 * orientations; the AVX-512 and AVX2 paths (when the CPU has them) and the scalar
 * reference against a double-precision reference and bitwise equal to each
 * other (one FMA chain per element); edges (rows and columns that do not fill
 * a tile, inner = 0, strides), bias, the addend Z (the fused Sum: the same
 * bits as the product and then one float addition); products split over helper threads
 * bitwise equal to one thread; concurrent callers. The weight-gradient sum
 * (rc_gemm_wgrad: a blocked A, accumulation into C, passes over the inner
 * dimension) against a double reference, AVX-512 bitwise equal to the
 * scalar path and to itself at any thread count; rc_transpose. */
#include "rc_test.h"
#include "kernels/packed_gemm.h"
#include <math.h>
#include <pthread.h>

static float val(int64_t i, float f) { return sinf((float)i * f) * 0.7f; }

/* C = A B (+ bias) with B (inner x out) given as W (out x inner, trans) or (inner x out). */
static void reference(int64_t M, int64_t out, int64_t inner, const float *A, int64_t lda, const float *W, int trans,
                      const float *bias, double *R)
{
    for (int64_t m = 0; m < M; m++)
        for (int64_t o = 0; o < out; o++) {
            double acc = 0;
            for (int64_t i = 0; i < inner; i++) acc += (double)A[m * lda + i] * (trans ? W[o * inner + i] : W[i * out + o]);
            R[m * out + o] = acc + (bias ? bias[o] : 0.0);
        }
}

/* The paths this CPU runs, the scalar reference first (the others must
 * equal it bitwise): 3 scalar, 2 AVX-512F, 4 AVX2 + FMA. */
static int cpu_paths(int paths[3])
{
    int n = 0;
    paths[n++] = 3;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) paths[n++] = 2;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) paths[n++] = 4;
    return n;
}

static void check_shape(int64_t M, int64_t out, int64_t inner, int trans, int with_bias, int with_z)
{
    int64_t lda = inner + 3, ldc = out + 5;
    float *Z = malloc(sizeof(float) * (size_t)(M * ldc + 1)), *Cz = malloc(sizeof(float) * (size_t)(M * ldc + 1));
    REQUIRE(Z && Cz);
    for (int64_t i = 0; i < M * ldc; i++) Z[i] = val(i, 0.93f) * 3.f;
    float *A = malloc(sizeof(float) * (size_t)(M * lda + 1)), *W = malloc(sizeof(float) * (size_t)(out * inner + 1));
    float *bias = malloc(sizeof(float) * (size_t)(out + 1));
    float *P = malloc(sizeof(float) * (size_t)(rc_pack_floats(inner, out) + 1));
    float *C[3];
    double *R = malloc(sizeof(double) * (size_t)(M * out + 1));
    for (int p = 0; p < 3; p++) C[p] = malloc(sizeof(float) * (size_t)(M * ldc + 1));
    REQUIRE(A && W && bias && P && R && C[0] && C[1] && C[2]);
    for (int64_t i = 0; i < M * lda; i++) A[i] = val(i, 0.37f);
    for (int64_t i = 0; i < out * inner; i++) W[i] = val(i, 0.11f);
    for (int64_t i = 0; i < out; i++) bias[i] = val(i, 1.3f);
    if (trans) rc_pack_b(inner, out, W, 1, inner, P); /* B[i, o] = W[o, i] */
    else rc_pack_b(inner, out, W, out, 1, P);         /* B[i, o] = W[i, o] */
    reference(M, out, inner, A, lda, W, trans, with_bias ? bias : NULL, R);
    if (with_z)
        for (int64_t m = 0; m < M; m++)
            for (int64_t o = 0; o < out; o++) R[m * out + o] += Z[m * ldc + o];
    int paths[3], n_paths = cpu_paths(paths);
    for (int p = 0; p < n_paths; p++) {
        for (int64_t i = 0; i < M * ldc; i++) C[p][i] = -7.f; /* the gaps between rows stay untouched */
        int old = rc_packed_force_path(paths[p]);
        rc_gemm_packed(M, out, inner, A, lda, P, with_bias ? bias : NULL, with_z ? Z : NULL, C[p], ldc);
        if (with_z) rc_gemm_packed(M, out, inner, A, lda, P, with_bias ? bias : NULL, NULL, Cz, ldc);
        rc_packed_force_path(old);
        int ok = 1, same = 1, gaps = 1, fused = 1;
        for (int64_t m = 0; m < M; m++) {
            for (int64_t o = 0; o < out; o++) {
                double r = R[m * out + o], c = C[p][m * ldc + o];
                ok &= fabs(c - r) <= 1e-5 * (1.0 + (double)inner) * (1.0 + fabs(r));
                same &= memcmp(&C[p][m * ldc + o], &C[0][m * ldc + o], sizeof(float)) == 0;
                if (with_z) { /* the product, then the Sum's addition */
                    volatile float sum = Cz[m * ldc + o] + Z[m * ldc + o];
                    float s2 = sum;
                    fused &= memcmp(&C[p][m * ldc + o], &s2, sizeof(float)) == 0;
                }
            }
            for (int64_t o = out; o < ldc && m + 1 < M; o++) gaps &= C[p][m * ldc + o] == -7.f;
        }
        if (!ok || !same || !gaps || !fused)
            RCT_FAIL_AT("M=%lld out=%lld inner=%lld trans=%d bias=%d z=%d path=%d: close %d, bitwise equal to the "
                        "scalar path %d, gaps kept %d, product + Z bitwise %d", (long long)M, (long long)out,
                        (long long)inner, trans, with_bias, with_z, paths[p], ok, same, gaps, fused);
        else rct_passed++;
    }
    free(Z);
    free(Cz);
    for (int p = 0; p < 3; p++) free(C[p]);
    free(A);
    free(W);
    free(bias);
    free(P);
    free(R);
}

static void test_shapes(void)
{
    /* below 24: 8-row tiles and one tile of every leftover count of rows (1-7); 24 and up: the 6-row,
     * 2-panel tiles with every remainder of rows (1-5) */
    const int64_t ms[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 20, 23, 24, 25, 26, 27, 28, 29, 32, 47, 64};
    const int64_t outs[] = {1, 15, 16, 17, 31, 32, 33, 64, 100};
    const int64_t inners[] = {0, 1, 3, 40, 257};
    for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
        for (size_t b = 0; b < sizeof outs / sizeof *outs; b++)
            for (size_t c = 0; c < sizeof inners / sizeof *inners; c++)
                for (int trans = 0; trans < 2; trans++)
                    check_shape(ms[a], outs[b], inners[c], trans, (int)(a + b + c) % 2, (int)(a + 2 * b + c + trans) % 3 == 0);
    check_shape(16, 1024, 256, 1, 1, 0); /* an LSTM step: hidden 256, batch 16 */
    check_shape(16, 1024, 256, 1, 1, 1); /* and with the gates' Sum fused */
    check_shape(16, 256, 1024, 0, 0, 0); /* and its input gradient */
    check_shape(64, 2048, 512, 1, 1, 1); /* hidden 512, batch 64, fused */
    check_shape(12, 2048, 512, 1, 1, 1); /* batch 12: 8 + 4 rows, a 4 MB pack (the next panel prefetched) */
}

static void test_pack_layout(void)
{
    /* B (inner 2 x out 35) from W (35 x 2, trans): panel 0 holds columns 0..31, panel 1 columns 32..34 + zeros */
    float W[70], P[2 * 64];
    for (int i = 0; i < 70; i++) W[i] = (float)i;
    CHECK_EQ(rc_pack_floats(2, 35), 128);
    rc_pack_b(2, 35, W, 1, 2, P);
    CHECK(P[0] == W[0] && P[1] == W[2] && P[32] == W[1] && P[33] == W[3]); /* P[0][i][j] = W[j][i] */
    CHECK(P[64] == W[64] && P[66] == W[68] && P[67] == 0.f && P[95] == 0.f && P[96] == W[65] && P[127] == 0.f);
}

/* Pack buffers are 64-byte aligned (one cache line per 64-byte load of a panel row), hold what
 * they were asked for, and are released with free(raw); impossible sizes give NULL. */
static void test_pack_alloc(void)
{
    const int64_t sizes[] = {0, 1, 31, 32, 1000, rc_pack_floats(512, 2048)};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        void *raw = NULL;
        float *p = rc_pack_alloc(sizes[k], &raw);
        REQUIRE(p != NULL && raw != NULL);
        CHECK_EQ((long long)((uintptr_t)p % 64), 0LL);
        CHECK((char *)p >= (char *)raw && (char *)p < (char *)raw + 64);
        for (int64_t i = 0; i < sizes[k]; i++) p[i] = (float)i; /* ASan: all of it is ours */
        if (sizes[k]) CHECK(p[sizes[k] - 1] == (float)(sizes[k] - 1));
        free(raw);
    }
    void *raw = (void *)1;
    CHECK(rc_pack_alloc(INT64_MAX, &raw) == NULL && raw == NULL);
    raw = (void *)1;
    CHECK(rc_pack_alloc(-1, &raw) == NULL && raw == NULL);
}

static void test_calls_counted(void)
{
    float A[4] = {1, 2, 3, 4}, W[4] = {1, 0, 0, 1}, P[64], C[4];
    rc_pack_b(2, 2, W, 2, 1, P);
    int64_t before = rc_packed_calls();
    int old = rc_packed_force_path(3);
    rc_gemm_packed(2, 2, 2, A, 2, P, NULL, NULL, C, 2);
    rc_packed_force_path(old);
    CHECK_EQ(rc_packed_calls(), before + 1);
    CHECK(C[0] == 1 && C[1] == 2 && C[2] == 3 && C[3] == 4);
}

/* Which products the step ops multiply on the packed kernel: up to 64 rows
 * on every path, more while M x inner <= 2^20 (AVX-512) or 2^17 (AVX2 and
 * the scalar reference). */
static void test_rows_rule(void)
{
    int old = rc_packed_force_path(2);
    CHECK(!rc_packed_rows_ok(0, 16) && rc_packed_rows_ok(1, 1 << 24) && rc_packed_rows_ok(64, 1 << 24));
    CHECK(rc_packed_rows_ok(65, 16) && rc_packed_rows_ok(1024, 1024) && !rc_packed_rows_ok(1025, 1024));
    CHECK(rc_packed_rows_ok(4096, 256) && !rc_packed_rows_ok(4097, 256) && !rc_packed_rows_ok(65, 1 << 15));
    CHECK(!rc_packed_rows_ok(65, 0) && !rc_packed_rows_ok(-1, 8));
    for (int path = 3; path <= 4; path++) {
        rc_packed_force_path(path);
        CHECK(rc_packed_rows_ok(64, 1 << 24) && rc_packed_rows_ok(128, 1024) && !rc_packed_rows_ok(129, 1024));
        CHECK(rc_packed_rows_ok(2048, 64) && !rc_packed_rows_ok(2049, 64) && !rc_packed_rows_ok(65, 0));
    }
    rc_packed_force_path(old);
}

/* Which FCs outside step loops pack their own weight: short inner dimension
 * (at most 128), at least 4 rows, a full panel of outputs, a pack of at most
 * 2^22 floats, M x K within the rows rule of the kernel the products take (and
 * none on a CPU without the kernels). */
static void test_fc_pack_rule(void)
{
    int old = rc_packed_force_path(2), on = rc_packed_available();
    CHECK_EQ(rc_fc_pack_ok(800, 1024, 40), on);
    CHECK_EQ(rc_fc_pack_ok(4, 32, 128), on);
    CHECK_EQ(rc_fc_pack_ok(8192, 1024, 128), on); /* M x K = 2^20 floats */
    CHECK(!rc_fc_pack_ok(8193, 1024, 128) && !rc_fc_pack_ok(800, 1024, 129) && !rc_fc_pack_ok(800, 31, 40));
    CHECK(!rc_fc_pack_ok(800, 1024, 0) && !rc_fc_pack_ok(0, 1024, 40) && !rc_fc_pack_ok(3, 1024, 40));
    CHECK_EQ(rc_fc_pack_ok(4, 1 << 15, 128), on); /* the pack: 2^22 floats */
    CHECK(!rc_fc_pack_ok(4, (1 << 15) + 1, 128));
    rc_packed_force_path(4); /* the AVX2 kernel's rule: 2^17 floats */
    CHECK_EQ(rc_fc_pack_ok(1024, 1024, 128), on);
    CHECK(!rc_fc_pack_ok(1025, 1024, 128));
    rc_packed_force_path(old);
}

/* A product split over helper threads (OpenBLAS at 2 and 3 threads) equals
 * the one-thread product bit for bit, also with odd panel counts. */
static void test_split_over_threads_is_bitwise(void)
{
    /* {26, 2080, 260}, {9, 1100, 500}, {64, 2048, 512} (and {3, 4100, 300}) have packs large enough that
     * the row tiles prefetch the next panel on every CPU (packed_gemm.c, pf_next_min_floats: 2 MB on
     * AMD, 1 MB elsewhere, where the 1 MB packs here prefetch too): 6 x 2 tiles with an odd panel left,
     * 8 x 1 and 1 x 1 tiles, 6 x 2 tiles at the LSTM benchmark's hidden 512 / batch 64; {64, 200, 512}
     * has a pack too small on every CPU; the last two are split only because rows under 4 count as 4
     * (test_split_rule) */
    const int64_t shapes[][3] = {{16, 1024, 256}, {64, 200, 512}, {3, 4100, 300}, {29, 2048, 130},
                                 {26, 2080, 260}, {9, 1100, 500}, {64, 2048, 512}, {1, 1024, 256}, {3, 1024, 256}};
    int was = rc_blas_num_threads();
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
        int64_t M = shapes[k][0], out = shapes[k][1], inner = shapes[k][2];
        float *A = malloc(sizeof(float) * (size_t)(M * inner)), *W = malloc(sizeof(float) * (size_t)(out * inner));
        float *b = malloc(sizeof(float) * (size_t)out), *P = malloc(sizeof(float) * (size_t)rc_pack_floats(inner, out));
        float *C1 = malloc(sizeof(float) * (size_t)(M * out)), *Cn = malloc(sizeof(float) * (size_t)(M * out));
        float *Cs = malloc(sizeof(float) * (size_t)(M * out));
        float *Z = k % 2 ? malloc(sizeof(float) * (size_t)(M * out)) : NULL; /* odd shapes: with the addend */
        REQUIRE(A && W && b && P && C1 && Cn && Cs && (Z || k % 2 == 0));
        for (int64_t i = 0; Z && i < M * out; i++) Z[i] = val(i, 0.61f);
        for (int64_t i = 0; i < M * inner; i++) A[i] = val(i, 0.29f);
        for (int64_t i = 0; i < out * inner; i++) W[i] = val(i, 0.07f);
        for (int64_t i = 0; i < out; i++) b[i] = val(i, 0.5f);
        rc_pack_b(inner, out, W, 1, inner, P);
        int paths[3], n_paths = cpu_paths(paths);
        int was_path = rc_packed_force_path(paths[0]); /* the scalar reference, once, on one thread */
        rc_blas_set_num_threads(1);
        rc_gemm_packed(M, out, inner, A, inner, P, b, Z, Cs, out);
        rc_packed_force_path(was_path);
        for (int p = 1; p < n_paths; p++) { /* the vector paths at 1-3 threads */
            int old = rc_packed_force_path(paths[p]);
            rc_blas_set_num_threads(1);
            rc_gemm_packed(M, out, inner, A, inner, P, b, Z, C1, out);
            if (memcmp(C1, Cs, sizeof(float) * (size_t)(M * out)))
                RCT_FAIL_AT("M=%lld out=%lld inner=%lld path %d: differs from the scalar reference", (long long)M,
                            (long long)out, (long long)inner, paths[p]);
            else rct_passed++;
            for (int th = 2; th <= 3; th++) {
                rc_blas_set_num_threads(th);
                memset(Cn, 0, sizeof(float) * (size_t)(M * out));
                rc_gemm_packed(M, out, inner, A, inner, P, b, Z, Cn, out);
                if (memcmp(C1, Cn, sizeof(float) * (size_t)(M * out)))
                    RCT_FAIL_AT("M=%lld out=%lld inner=%lld path %d: %d threads differ from 1", (long long)M,
                                (long long)out, (long long)inner, paths[p], th);
                else rct_passed++;
            }
            rc_packed_force_path(old);
        }
        free(A); free(W); free(b); free(P); free(C1); free(Cn); free(Cs); free(Z);
    }
    rc_blas_set_num_threads(was);
}

/* The split rule (gemm_run): products of 2^20 multiply-adds or more are split
 * over the threads, a product of fewer than 4 rows counted as 4 rows (it
 * reads the whole pack either way). Outside step loops the thread count is
 * OpenBLAS's. */
static void test_split_rule(void)
{
    const struct { int64_t M, out, inner; int split; } cases[] = {
        {1, 1024, 256, 1},  /* 1 row counted as 4: 4 x 1024 x 256 = 2^20 (batch 1 at hidden 256) */
        {3, 1024, 256, 1},  /* 3 rows counted as 4 */
        {4, 1024, 256, 1},  /* 2^20 */
        {1, 1020, 256, 0},  /* 4 x 1020 x 256 < 2^20 */
        {3, 512, 256, 0},   /* counted as 4: 2^19 */
        {6, 512, 256, 0},   /* 6 x 512 x 256 < 2^20 */
        {8, 512, 256, 1},   /* 2^20 */
    };
    int was = rc_blas_num_threads();
    float *A = calloc(8 * 256, sizeof(float)), *P = calloc((size_t)rc_pack_floats(256, 1024), sizeof(float));
    float *C = malloc(sizeof(float) * 8 * 1024);
    REQUIRE(A && P && C);
    for (int th = 1; th <= 2; th++) {
        rc_blas_set_num_threads(th);
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            int64_t before = rc_packed_splits();
            rc_gemm_packed(cases[k].M, cases[k].out, cases[k].inner, A, cases[k].inner, P, NULL, NULL, C,
                           cases[k].out);
            int64_t got = rc_packed_splits() - before, want = th == 2 && cases[k].split;
            if (got != want)
                RCT_FAIL_AT("M=%lld out=%lld inner=%lld at %d threads: split %lld times, expected %lld",
                            (long long)cases[k].M, (long long)cases[k].out, (long long)cases[k].inner, th,
                            (long long)got, (long long)want);
            else rct_passed++;
        }
    }
    rc_blas_set_num_threads(was);
    free(A); free(P); free(C);
}

/* Several threads calling at once: one gets the helpers, the others run
 * alone; every result is right (run under TSan by tools/sanitize.sh). */
enum { CONC = 4, CM = 16, COUT = 520, CIN = 300 };
static float c_A[CM * CIN], c_P[(COUT + 31) / 32 * 32 * CIN], c_ref[CM * COUT], c_out[CONC][CM * COUT];
static void *conc_main(void *arg)
{
    float *C = arg;
    for (int rep = 0; rep < 20; rep++) rc_gemm_packed(CM, COUT, CIN, c_A, CIN, c_P, NULL, NULL, C, COUT);
    return NULL;
}

static void test_concurrent_callers(void)
{
    float *W = malloc(sizeof(float) * COUT * CIN);
    REQUIRE(W);
    for (int i = 0; i < CM * CIN; i++) c_A[i] = val(i, 0.13f);
    for (int i = 0; i < COUT * CIN; i++) W[i] = val(i, 0.05f);
    rc_pack_b(CIN, COUT, W, 1, CIN, c_P);
    int was = rc_blas_num_threads();
    rc_blas_set_num_threads(1);
    rc_gemm_packed(CM, COUT, CIN, c_A, CIN, c_P, NULL, NULL, c_ref, COUT);
    rc_blas_set_num_threads(2);
    pthread_t th[CONC];
    int started = 0;
    for (int t = 0; t < CONC; t++) started += pthread_create(&th[t], NULL, conc_main, c_out[t]) == 0;
    CHECK_EQ(started, CONC);
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < started; t++) CHECK(memcmp(c_out[t], c_ref, sizeof c_ref) == 0);
    rc_blas_set_num_threads(was);
    free(W);
}

static void test_transpose(void)
{
    const int64_t shapes[][2] = {{1, 1}, {3, 5}, {8, 8}, {16, 1024}, {17, 33}, {64, 200}, {7, 9}};
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
        int64_t R = shapes[k][0], C = shapes[k][1], lds = C + 2, ldd = R + 3;
        float *src = malloc(sizeof(float) * (size_t)(R * lds)), *dst = malloc(sizeof(float) * (size_t)(C * ldd));
        REQUIRE(src && dst);
        for (int64_t i = 0; i < R * lds; i++) src[i] = val(i, 0.31f);
        for (int64_t i = 0; i < C * ldd; i++) dst[i] = -3.f;
        rc_transpose(R, C, src, lds, dst, ldd);
        int ok = 1;
        for (int64_t c = 0; c < C; c++)
            for (int64_t r = 0; r < ldd; r++) ok &= r < R ? dst[c * ldd + r] == src[r * lds + c] : dst[c * ldd + r] == -3.f;
        if (!ok) RCT_FAIL_AT("rc_transpose %lld x %lld wrong", (long long)R, (long long)C);
        else rct_passed++;
        free(src);
        free(dst);
    }
}

/* C (M x out, ldc) += sum over nb blocks of bk: A_b (M x bk) X_b, with C
 * starting from nonzero values; the vector path bitwise equal to the scalar
 * one, both close to a double reference, and the vector path's bits the same
 * at 1-3 threads. bk from 1 to beyond one pass (test_wgrad forces passes of 256 rows, and of
 * 1024 rows for a few shapes, with rc_wgrad_force_kc). */
static void check_wgrad(int64_t M, int64_t out, int64_t nb, int64_t bk)
{
    int64_t inner = nb * bk, ldc = out + 3;
    float *A = malloc(sizeof(float) * (size_t)(M * inner + 1)), *X = malloc(sizeof(float) * (size_t)(inner * out + 1));
    float *C0 = malloc(sizeof(float) * (size_t)(M * ldc + 1)), *Cs = malloc(sizeof(float) * (size_t)(M * ldc + 1));
    float *Cv = malloc(sizeof(float) * (size_t)(M * ldc + 1)), *W = malloc(sizeof(float) * (size_t)(rc_pack_floats(inner, out) + 1));
    REQUIRE(A && X && C0 && Cs && Cv && W);
    for (int64_t i = 0; i < M * inner; i++) A[i] = val(i, 0.23f);
    for (int64_t i = 0; i < inner * out; i++) X[i] = val(i, 0.17f);
    for (int64_t i = 0; i < M * ldc; i++) C0[i] = val(i, 0.71f);
    memcpy(Cs, C0, sizeof(float) * (size_t)(M * ldc));
    int old = rc_packed_force_path(3);
    rc_gemm_wgrad(M, out, nb, bk, A, X, out, Cs, ldc, W, 0);
    rc_packed_force_path(old);
    int ok = 1, gaps = 1;
    for (int64_t m = 0; m < M; m++) {
        for (int64_t o = 0; o < out; o++) {
            double r = C0[m * ldc + o];
            for (int64_t b = 0; b < nb; b++)
                for (int64_t k = 0; k < bk; k++) r += (double)A[b * M * bk + m * bk + k] * X[(b * bk + k) * out + o];
            ok &= fabs(Cs[m * ldc + o] - r) <= 1e-5 * (1.0 + (double)inner) * (1.0 + fabs(r));
        }
        for (int64_t o = out; o < ldc; o++) gaps &= Cs[m * ldc + o] == C0[m * ldc + o];
    }
    if (!ok || !gaps)
        RCT_FAIL_AT("wgrad M=%lld out=%lld nb=%lld bk=%lld scalar: close %d, gaps kept %d", (long long)M,
                    (long long)out, (long long)nb, (long long)bk, ok, gaps);
    else rct_passed++;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        int was = rc_blas_num_threads();
        old = rc_packed_force_path(2);
        CHECK(rc_wgrad_packed_available());
        for (int th = 1; th <= 3; th++) {
            rc_blas_set_num_threads(th);
            memcpy(Cv, C0, sizeof(float) * (size_t)(M * ldc));
            rc_gemm_wgrad(M, out, nb, bk, A, X, out, Cv, ldc, W, 0);
            if (memcmp(Cv, Cs, sizeof(float) * (size_t)(M * ldc)))
                RCT_FAIL_AT("wgrad M=%lld out=%lld nb=%lld bk=%lld: AVX-512 at %d threads differs from the scalar "
                            "path", (long long)M, (long long)out, (long long)nb, (long long)bk, th);
            else rct_passed++;
        }
        rc_packed_force_path(old);
        rc_blas_set_num_threads(was);
    }
    /* from_zero: C is only written (here full of NaN, the gaps between rows too), with the same
     * bits as a sum into a C of +0.0 */
    for (int64_t i = 0; i < M * ldc; i++) Cs[i] = 0.f;
    old = rc_packed_force_path(3);
    rc_gemm_wgrad(M, out, nb, bk, A, X, out, Cs, ldc, W, 0);
    rc_packed_force_path(old);
    int paths[2] = {3, __builtin_cpu_supports("avx512f") ? 2 : 3};
    for (int pi = 0; pi < 2; pi++)
        for (int th = 1; th <= 3; th++) {
            int was = rc_blas_num_threads();
            rc_blas_set_num_threads(th);
            old = rc_packed_force_path(paths[pi]);
            for (int64_t i = 0; i < M * ldc; i++) Cv[i] = NAN;
            rc_gemm_wgrad(M, out, nb, bk, A, X, out, Cv, ldc, W, 1);
            rc_packed_force_path(old);
            rc_blas_set_num_threads(was);
            int same = 1, gaps_kept = 1;
            for (int64_t m = 0; m < M; m++) {
                same &= memcmp(Cv + m * ldc, Cs + m * ldc, sizeof(float) * (size_t)out) == 0;
                for (int64_t o = out; o < ldc; o++) gaps_kept &= isnan(Cv[m * ldc + o]) != 0;
            }
            if (!same || !gaps_kept)
                RCT_FAIL_AT("wgrad M=%lld out=%lld nb=%lld bk=%lld from_zero, path %d, %d threads: same bits as "
                            "from +0 %d, gaps kept %d", (long long)M, (long long)out, (long long)nb, (long long)bk,
                            paths[pi], th, same, gaps_kept);
            else rct_passed++;
        }
    free(A); free(X); free(C0); free(Cs); free(Cv); free(W);
}

static void test_wgrad(void)
{
    const int64_t ms[] = {1, 5, 8, 23, 24, 29, 64};
    const int64_t outs[] = {1, 17, 32, 40, 64, 96};
    /* passes of 256 rows (1 MB L2s): 2 x 300 and 1 x 513 split one block into pieces, 20 x 16 has
     * two passes */
    const int64_t blocks[][2] = {{1, 1}, {3, 16}, {9, 7}, {2, 300}, {20, 16}, {1, 513}};
    int64_t old_kc = rc_wgrad_force_kc(256);
    CHECK(rc_wgrad_kc() == 256);
    for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
        for (size_t b = 0; b < sizeof outs / sizeof *outs; b++)
            for (size_t c = 0; c < sizeof blocks / sizeof *blocks; c++) check_wgrad(ms[a], outs[b], blocks[c][0], blocks[c][1]);
    /* passes of 1024 rows (2 MB L2s): 70 x 16 has two passes, 3 x 400 and 1 x 2100 split blocks
     * (few shapes: the sanitizer builds run these too) */
    rc_wgrad_force_kc(1024);
    CHECK(rc_wgrad_kc() == 1024);
    const int64_t big[][2] = {{70, 16}, {3, 400}, {1, 2100}};
    const int64_t big_ms[] = {5, 29}, big_outs[] = {17, 40};
    for (size_t a = 0; a < 2; a++)
        for (size_t b = 0; b < 2; b++)
            for (size_t c = 0; c < sizeof big / sizeof *big; c++) check_wgrad(big_ms[a], big_outs[b], big[c][0], big[c][1]);
    rc_wgrad_force_kc(old_kc);
    check_wgrad(1024, 256, 50, 16); /* hidden 256, batch 16, T = 50, with the machine's own pass length */
    CHECK(rc_wgrad_kc() == 256 || rc_wgrad_kc() == 1024); /* the machine's own choice */
    int64_t before = rc_wgrad_calls();
    check_wgrad(4, 4, 0, 16); /* nothing to sum: C unchanged */
    CHECK(rc_wgrad_calls() > before);
}

int main(void)
{
    RUN(test_pack_layout);
    RUN(test_shapes);
    RUN(test_pack_alloc);
    RUN(test_calls_counted);
    RUN(test_rows_rule);
    RUN(test_fc_pack_rule);
    RUN(test_split_over_threads_is_bitwise);
    RUN(test_split_rule);
    RUN(test_concurrent_callers);
    RUN(test_transpose);
    RUN(test_wgrad);
    return TEST_REPORT();
}
