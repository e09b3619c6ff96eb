/* rc_sgemm (OpenBLAS through scipy-openblas32's prefixed symbols): all four
 * transpose combinations against a naive loop, alpha/beta, K == 0 and empty
 * M/N, the BLAS thread-count getter/setter, and the fixed chunks of a step
 * loop's products (bitwise the same at any thread count). */
#include "rc_test.h"
#include <math.h>
#include <string.h>
#include <strings.h>

static void naive(int ta, int tb, int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                  float *C)
{
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double acc = 0;
            for (int k = 0; k < K; k++) {
                float a = ta ? A[k * M + m] : A[m * K + k];
                float b = tb ? B[n * K + k] : B[k * N + n];
                acc += (double)a * b;
            }
            C[m * N + n] = (float)(alpha * acc + (beta == 0.f ? 0.0 : (double)beta * C[m * N + n]));
        }
}

static void test_sgemm(void)
{
    const int shapes[][3] = {{1, 1, 1}, {3, 4, 5}, {17, 9, 33}, {64, 65, 66}, {2, 1, 130}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        float *A = malloc(sizeof(float) * (size_t)(M * K)), *B = malloc(sizeof(float) * (size_t)(K * N));
        float *C = malloc(sizeof(float) * (size_t)(M * N)), *R = malloc(sizeof(float) * (size_t)(M * N));
        REQUIRE(A && B && C && R);
        for (int i = 0; i < M * K; i++) A[i] = sinf((float)i * 0.37f);
        for (int i = 0; i < K * N; i++) B[i] = cosf((float)i * 0.11f);
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int ab = 0; ab < 2; ab++) {
                    float alpha = ab ? -0.5f : 1.f, beta = ab ? 2.f : 0.f;
                    for (int i = 0; i < M * N; i++) C[i] = R[i] = (float)i * 0.01f;
                    rc_sgemm(ta, tb, M, N, K, alpha, A, B, beta, C);
                    naive(ta, tb, M, N, K, alpha, A, B, beta, R);
                    int ok = 1;
                    for (int i = 0; i < M * N; i++) ok &= fabsf(C[i] - R[i]) <= 1e-4f * (1.f + fabsf(R[i]));
                    if (!ok) RCT_FAIL_AT("sgemm M=%d N=%d K=%d ta=%d tb=%d alpha=%g beta=%g", M, N, K, ta, tb,
                                         (double)alpha, (double)beta);
                    else rct_passed++;
                }
        free(A), free(B), free(C), free(R);
    }
}

static void test_sgemm_edges(void)
{
    float C[6] = {1, 2, 3, 4, 5, 6}, A[1] = {0}, B[1] = {0};
    rc_sgemm(0, 0, 2, 3, 0, 1.f, A, B, 2.f, C); /* K == 0: C = beta C */
    CHECK(C[0] == 2.f && C[5] == 12.f);
    rc_sgemm(0, 0, 2, 3, 0, 1.f, A, B, 0.f, C); /* beta 0 clears (even NaN) */
    CHECK(C[0] == 0.f && C[5] == 0.f);
    C[0] = NAN;
    rc_sgemm(0, 0, 2, 3, 0, 1.f, A, B, 0.f, C);
    CHECK(C[0] == 0.f);
    C[0] = 7.f;
    rc_sgemm(0, 0, 0, 3, 4, 1.f, A, B, 0.f, C); /* M == 0 / N == 0: nothing touched */
    rc_sgemm(0, 0, 2, 0, 4, 1.f, A, B, 0.f, C);
    CHECK(C[0] == 7.f);
}

static void test_blas_threads(void)
{
    int was = rc_blas_num_threads();
    CHECK(was >= 1);
    rc_blas_set_num_threads(1);
    CHECK_EQ(rc_blas_num_threads(), 1);
    rc_blas_set_num_threads(was);
    CHECK_EQ(rc_blas_num_threads(), was);
    CHECK(rc_num_cores() >= 1);
}

/* What OpenBLAS says of itself (recurrent.show_config): its build line and the core type whose
 * kernels it runs, which a DYNAMIC_ARCH build names in that line too. */
static void test_blas_config(void)
{
    const char *cfg = rc_blas_config(), *core = rc_blas_corename();
    CHECK(cfg && core);
    if (!cfg || !core) return;
    CHECK(strncmp(cfg, "OpenBLAS", 8) == 0);
    CHECK(core[0] != 0);
    if (strstr(cfg, "DYNAMIC_ARCH")) {
        int found = 0;
        for (const char *p = cfg; *p && !found; p++) found = strncasecmp(p, core, strlen(core)) == 0;
        CHECK(found);
    }
}

/* Inside a step loop (rc_step_blas_enter) rc_sgemm multiplies in fixed
 * chunks, each a single-threaded OpenBLAS call: the result is right (every
 * transpose, alpha/beta; 8 chunks of 128 columns, 8 with a ragged last one,
 * 6 and 5 chunks of 128 rows with ragged last ones, products too small to
 * split) and bit for bit the same whatever OpenBLAS's thread count was when
 * the loop started (1-3: the serial loop's split) and for an executor worker
 * (step threads 1); OpenBLAS is at one thread inside the loop and gets its
 * count back after it. */
static void test_step_loop_sgemm_is_thread_invariant(void)
{
    const int shapes[][3] = {{16, 1024, 256}, {16, 1000, 256}, {700, 300, 40}, {600, 100, 64}, {16, 520, 33}, {3, 4, 5}};
    int was = rc_blas_num_threads();
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        size_t mn = (size_t)M * (size_t)N;
        float *A = malloc(sizeof(float) * (size_t)(M * K)), *B = malloc(sizeof(float) * (size_t)(K * N));
        float *C0 = malloc(sizeof(float) * mn), *C = malloc(sizeof(float) * mn), *R = malloc(sizeof(float) * mn);
        REQUIRE(A && B && C0 && C && R);
        for (int i = 0; i < M * K; i++) A[i] = sinf((float)i * 0.37f);
        for (int i = 0; i < K * N; i++) B[i] = cosf((float)i * 0.11f);
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                float alpha = (ta + tb) % 2 ? -0.5f : 1.f, beta = tb ? 1.f : 0.f;
                for (size_t i = 0; i < mn; i++) R[i] = (float)(i % 97) * 0.01f;
                memcpy(C0, R, sizeof(float) * mn);
                naive(ta, tb, M, N, K, alpha, A, B, beta, R);
                for (int th = 1; th <= 4; th++) { /* th 4: an executor worker (step threads 1), OpenBLAS at 3 */
                    float *dst = th == 1 ? C0 : C;
                    for (size_t i = 0; i < mn; i++) dst[i] = (float)(i % 97) * 0.01f;
                    rc_blas_set_num_threads(th < 4 ? th : 3);
                    int prev = rc_step_blas_enter();
                    CHECK_EQ(rc_blas_num_threads(), 1);
                    CHECK_EQ(rc_step_blas_threads(), th < 4 ? th : 3);
                    int prev_w = th == 4 ? rc_step_blas_set_threads(1) : 0;
                    rc_sgemm(ta, tb, M, N, K, alpha, A, B, beta, dst);
                    if (th == 4) rc_step_blas_set_threads(prev_w);
                    rc_step_blas_leave(prev);
                    CHECK_EQ(rc_step_blas_threads(), 0);
                    CHECK_EQ(rc_blas_num_threads(), th < 4 ? th : 3);
                    int ok = 1;
                    for (size_t i = 0; i < mn; i++) ok &= fabsf(dst[i] - R[i]) <= 1e-4f * (1.f + fabsf(R[i]));
                    int same = th == 1 || memcmp(C, C0, sizeof(float) * mn) == 0;
                    if (!ok || !same)
                        RCT_FAIL_AT("step sgemm M=%d N=%d K=%d ta=%d tb=%d threads=%d: close %d, bitwise equal to "
                                    "1 thread %d", M, N, K, ta, tb, th, ok, same);
                    else rct_passed++;
                }
            }
        free(A), free(B), free(C0), free(C), free(R);
    }
    rc_blas_set_num_threads(was);
}

int main(void)
{
    RUN(test_sgemm);
    RUN(test_sgemm_edges);
    RUN(test_blas_threads);
    RUN(test_blas_config);
    RUN(test_step_loop_sgemm_is_thread_invariant);
    return TEST_REPORT();
}
