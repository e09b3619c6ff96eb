/* BLAS wrapper: OpenBLAS (scipy-openblas32 with its "scipy_" symbol prefix,
 * or a system OpenBLAS/CBLAS when built with RC_SYSTEM_BLAS). */
#define _GNU_SOURCE /* pthread_rwlockattr_setkind_np */
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

/* fork() while another thread is inside a multi-threaded OpenBLAS call hangs
 * that call in the parent: OpenBLAS's own prepare-fork handler shuts its
 * thread pool down under it (the call waits for threads that are gone). Our
 * calls into OpenBLAS hold fork_lock for reading; our prepare handler takes
 * it for writing, so a fork waits for the calls in flight and no new one
 * starts until it is done. Prepare handlers run in the reverse order of
 * registration: ours, registered at our first call (OpenBLAS registers its
 * own when it is loaded, before), runs before OpenBLAS's. Writers are
 * preferred, so a stream of calls from several threads cannot hold a fork
 * back for long. */
static pthread_rwlock_t fork_lock;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_lock_init(void)
{
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
    pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&fork_lock, &a);
    pthread_rwlockattr_destroy(&a);
}

static void fork_prepare(void) { pthread_rwlock_wrlock(&fork_lock); }
static void fork_parent(void) { pthread_rwlock_unlock(&fork_lock); }
static void fork_child(void) { fork_lock_init(); } /* the parent's threads, readers or not, are gone */

static void fork_once_init(void)
{
    fork_lock_init();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static void blas_enter(void)
{
    pthread_once(&fork_once, fork_once_init);
    pthread_rwlock_rdlock(&fork_lock);
}

static void blas_leave(void) { pthread_rwlock_unlock(&fork_lock); }

static void apply_fork_restore(void); /* below, with the executors' thread count */

static void sgemm_ld(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                     int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    blas_enter();
    RC_BLAS(cblas_sgemm)(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                         (int)M, (int)N, (int)K, alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
    blas_leave();
}

/* The calling thread's step threads (rc_core.h, "Step loops"); 0 outside. */
static __thread int tl_step_threads;

/* A step loop's product of at least RC_PAR_SPLIT_MIN multiply-adds goes in
 * fixed chunks along C's longer side (columns when N >= M): as many as the
 * process had cores when it first asked (at most 8; fixed from then on),
 * each a multiple of 64 wide; smaller products in one call. Chunk c is always
 * the same single-threaded OpenBLAS call, whichever thread runs it. (Each
 * chunk packs the whole other operand again, so chunks are few: eight per
 * product cost the serial path ~10% at hidden 256 / batch 128.) */
static int step_chunks(void)
{
    static int n; /* benign race: every thread computes the same, or one value wins for good */
    int v = __atomic_load_n(&n, __ATOMIC_RELAXED);
    if (v) return v;
    v = rc_num_cores();
    v = v < 1 ? 1 : v > 8 ? 8 : v;
    int expected = 0;
    if (!__atomic_compare_exchange_n(&n, &expected, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) v = expected;
    return v;
}
typedef struct {
    int trans_a, trans_b, by_cols;
    int64_t M, N, K, chunk, n_chunks;
    float alpha, beta;
    const float *A, *B;
    float *C;
} chunk_job;

static void chunk_part(const void *job, int part, int parts)
{
    const chunk_job *j = job;
    int64_t lda = j->trans_a ? j->M : j->K, ldb = j->trans_b ? j->K : j->N;
    for (int64_t c = j->n_chunks * part / parts; c < j->n_chunks * (part + 1) / parts; c++) {
        int64_t b = c * j->chunk;
        if (j->by_cols) {
            int64_t w = j->N - b < j->chunk ? j->N - b : j->chunk;
            sgemm_ld(j->trans_a, j->trans_b, j->M, w, j->K, j->alpha, j->A, lda, j->trans_b ? j->B + b * j->K : j->B + b,
                     ldb, j->beta, j->C + b, j->N);
        } else {
            int64_t h = j->M - b < j->chunk ? j->M - b : j->chunk;
            sgemm_ld(j->trans_a, j->trans_b, h, j->N, j->K, j->alpha, j->trans_a ? j->A + b : j->A + b * j->K, lda,
                     j->B, ldb, j->beta, j->C + b * j->N, j->N);
        }
    }
}

void rc_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
              const float *B, float beta, float *C)
{
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        /* C = beta * C (BLAS may not touch C when K == 0 with some builds) */
        for (int64_t i = 0; i < M * N; i++) C[i] = beta == 0.f ? 0.f : beta * C[i];
        return;
    }
    apply_fork_restore();
    if (tl_step_threads > 0) {
        double work = (double)M * (double)N * (double)K;
        int threads = rc_step_split_threads(work, RC_PAR_SPLIT_MIN);
        chunk_job j = {trans_a, trans_b, 1, M, N, K, N, 1, alpha, beta, A, B, C};
        if (work >= RC_PAR_SPLIT_MIN) {
            j.by_cols = N >= M;
            int64_t side = j.by_cols ? N : M;
            int64_t want = step_chunks();
            j.chunk = ((side + want - 1) / want + 63) / 64 * 64;
            j.n_chunks = (side + j.chunk - 1) / j.chunk;
        }
        int parts = threads < j.n_chunks ? threads : (int)j.n_chunks;
        rc_par_run(parts, parts, chunk_part, &j);
        return;
    }
    sgemm_ld(trans_a, trans_b, M, N, K, alpha, A, trans_a ? M : K, B, trans_b ? K : N, beta, C, N);
}

/* Executors running at the same time (from several Python threads) share one
 * OpenBLAS: the first to start limits it to one thread, the last to finish
 * restores the count it found.
 *
 * fork() while a run is in flight (in another thread): the child has no run
 * in flight, but its copy says one is (or is restoring the count), and
 * exec_mu may be held. The child handler re-initialises the mutex, forgets
 * the run and leaves the count that run found in fork_restore; the child's
 * next call here sets it (not the handler: setting it may start OpenBLAS
 * threads, which has no place inside fork). */
static pthread_mutex_t exec_mu = PTHREAD_MUTEX_INITIALIZER;
static int exec_active = 0, exec_saved = 0;
static int exec_restoring = 0; /* the last run is setting the count back (a fork may come meanwhile) */
static int fork_restore = 0;   /* in a forked child: the count to set back, or 0 */

static void exec_after_fork_child(void)
{
    pthread_mutex_init(&exec_mu, NULL);
    if (exec_active || exec_restoring) __atomic_store_n(&fork_restore, exec_saved, __ATOMIC_RELEASE);
    exec_active = exec_restoring = 0;
}

static pthread_once_t exec_once = PTHREAD_ONCE_INIT;
static void exec_init(void) { pthread_atfork(NULL, NULL, exec_after_fork_child); }

#if defined(RC_HAVE_OPENBLAS_THREADS)
static int get_threads(void) { return RC_BLAS(openblas_get_num_threads)(); }
static void set_threads(int n)
{
    blas_enter();
    RC_BLAS(openblas_set_num_threads)(n);
    blas_leave();
}
const char *rc_blas_config(void) { return RC_BLAS(openblas_get_config)(); }
const char *rc_blas_corename(void) { return RC_BLAS(openblas_get_corename)(); }
#else
static int get_threads(void) { return 1; }
static void set_threads(int n) { (void)n; }
const char *rc_blas_config(void) { return "unknown"; }
const char *rc_blas_corename(void) { return "unknown"; }
#endif

/* In a child forked during a run: the count that run found, set back once
 * no run is in flight. exec_mu held. */
static void apply_fork_restore_locked(void)
{
    int n = fork_restore;
    if (n && exec_active == 0) {
        fork_restore = 0;
        set_threads(n);
    }
}

static void apply_fork_restore(void)
{
    if (!__atomic_load_n(&fork_restore, __ATOMIC_ACQUIRE)) return;
    pthread_mutex_lock(&exec_mu);
    apply_fork_restore_locked();
    pthread_mutex_unlock(&exec_mu);
}

int rc_blas_num_threads(void)
{
    apply_fork_restore();
    return get_threads();
}

void rc_blas_set_num_threads(int n)
{
    apply_fork_restore();
    set_threads(n);
}

void rc_blas_executor_enter(void)
{
    pthread_once(&exec_once, exec_init);
    pthread_mutex_lock(&exec_mu);
    apply_fork_restore_locked();
    if (exec_active++ == 0) {
        exec_saved = get_threads();
        if (exec_saved != 1) set_threads(1);
    }
    pthread_mutex_unlock(&exec_mu);
}

void rc_blas_executor_leave(void)
{
    pthread_mutex_lock(&exec_mu);
    if (--exec_active == 0 && exec_saved != 1) {
        exec_restoring = 1;
        set_threads(exec_saved);
        exec_restoring = 0;
    }
    pthread_mutex_unlock(&exec_mu);
}

int rc_step_blas_enter(void)
{
    int prev = tl_step_threads;
    rc_blas_executor_enter();
    if (prev == 0) {
        pthread_mutex_lock(&exec_mu);
        int n = exec_saved;
        pthread_mutex_unlock(&exec_mu);
        tl_step_threads = n > 0 ? n : 1;
    }
    return prev;
}

void rc_step_blas_leave(int prev)
{
    tl_step_threads = prev;
    rc_blas_executor_leave();
}

int rc_step_blas_set_threads(int n)
{
    int prev = tl_step_threads;
    tl_step_threads = n;
    return prev;
}

int rc_step_blas_threads(void) { return tl_step_threads; }

int rc_op_split_threads(void)
{
    if (tl_step_threads != 0) return 1;
    const int t = rc_blas_num_threads();
    return t < 1 ? 1 : t;
}
