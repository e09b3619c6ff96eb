/* BLAS wrapper: OpenBLAS (scipy-openblas32 with its "scipy_" symbol prefix,
 * or a system OpenBLAS/CBLAS when built with RC_SYSTEM_BLAS). */
#include "../core/rc_core.h"
#include <cblas.h>
#include <pthread.h>

#ifdef BLAS_SYMBOL_PREFIX
#define RC_CAT2(a, b) a##b
#define RC_CAT(a, b) RC_CAT2(a, b)
#define RC_BLAS(name) RC_CAT(BLAS_SYMBOL_PREFIX, name)
#else
#define RC_BLAS(name) name
#endif

void rc_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
              const float *B, float beta, float *C)
{
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        /* C = beta * C (BLAS may not touch C when K == 0 with some builds) */
        for (int64_t i = 0; i < M * N; i++) C[i] = beta == 0.f ? 0.f : beta * C[i];
        return;
    }
    int lda = trans_a ? (int)M : (int)K;
    int ldb = trans_b ? (int)K : (int)N;
    RC_BLAS(cblas_sgemm)(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                         (int)M, (int)N, (int)K, alpha, A, lda, B, ldb, beta, C, (int)N);
}

#if defined(RC_HAVE_OPENBLAS_THREADS)
int rc_blas_num_threads(void) { return RC_BLAS(openblas_get_num_threads)(); }
void rc_blas_set_num_threads(int n) { RC_BLAS(openblas_set_num_threads)(n); }
#else
int rc_blas_num_threads(void) { return 1; }
void rc_blas_set_num_threads(int n) { (void)n; }
#endif

/* Executors running at the same time (from several Python threads) share one
 * OpenBLAS: the first to start limits it to one thread, the last to finish
 * restores the count it found. */
static pthread_mutex_t exec_mu = PTHREAD_MUTEX_INITIALIZER;
static int exec_active = 0, exec_saved = 0;

void rc_blas_executor_enter(void)
{
    pthread_mutex_lock(&exec_mu);
    if (exec_active++ == 0) {
        exec_saved = rc_blas_num_threads();
        if (exec_saved != 1) rc_blas_set_num_threads(1);
    }
    pthread_mutex_unlock(&exec_mu);
}

void rc_blas_executor_leave(void)
{
    pthread_mutex_lock(&exec_mu);
    if (--exec_active == 0 && exec_saved != 1) rc_blas_set_num_threads(exec_saved);
    pthread_mutex_unlock(&exec_mu);
}
