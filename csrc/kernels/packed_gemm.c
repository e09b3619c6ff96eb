/* Small-M products against a packed matrix (see packed_gemm.h). */
#include "packed_gemm.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RC_PACKED_X86 1
#include <immintrin.h>
#endif

static int64_t n_calls;

int64_t rc_packed_calls(void) { return __atomic_load_n(&n_calls, __ATOMIC_RELAXED); }

int64_t rc_pack_floats(int64_t inner, int64_t out)
{
    return (out + RC_PACK_NR - 1) / RC_PACK_NR * RC_PACK_NR * inner;
}

void rc_pack_b(int64_t inner, int64_t out, const float *src, int64_t s_i, int64_t s_o, float *P)
{
    for (int64_t o0 = 0; o0 < out; o0 += RC_PACK_NR) {
        float *panel = P + o0 * inner;
        int64_t w = out - o0 < RC_PACK_NR ? out - o0 : RC_PACK_NR;
        for (int64_t i = 0; i < inner; i++) {
            float *row = panel + i * RC_PACK_NR;
            const float *s = src + i * s_i + o0 * s_o;
            if (s_o == 1) memcpy(row, s, sizeof(float) * (size_t)w);
            else
                for (int64_t j = 0; j < w; j++) row[j] = s[j * s_o];
            for (int64_t j = w; j < RC_PACK_NR; j++) row[j] = 0.f;
        }
    }
}

#ifdef RC_PACKED_X86
/* Stores a tile computed over a whole panel: columns [o0, o0 + w) of rows
 * [m0, m0 + mr), from tile[r][0..NR), plus the bias. */
static void store_tile(int mr, int64_t w, float tile[][RC_PACK_NR], const float *bias, int64_t o0, float *C,
                       int64_t ldc, int64_t m0)
{
    for (int r = 0; r < mr; r++) {
        float *c = C + (m0 + r) * ldc + o0;
        for (int64_t j = 0; j < w; j++) c[j] = bias ? tile[r][j] + bias[o0 + j] : tile[r][j];
    }
}

/* ---------------------------------------------------------------- AVX-512 tiles
 * A tile keeps MR rows x NP panels of C in 2 * MR * NP zmm accumulators over
 * the whole inner loop: per step i, 2 * NP loads of the pack, MR broadcasts
 * of A, 2 * MR * NP FMAs. 6 rows x 2 panels (24 accumulators, 10 loads per 24
 * FMAs) measured 5-25% faster than 8 x 1 (16 accumulators, 10 loads per 16)
 * at 32-64 rows; at 16 rows 8 x 1 is as fast and wastes no rows. Full panels
 * only; the last, partial panel goes through 8 x 1 with a buffered store. */
#define RC_PF_AHEAD 16 /* pack rows prefetched ahead: the pack streams from L3 when several
                        * step weights take turns (measured 7-9% faster; prefetches never fault) */
#define RC_TILE_FN(MR, NP)                                                                                          \
    __attribute__((target("avx512f"))) static void tile_##MR##x##NP(int64_t inner, const float *a, int64_t lda,      \
                                                                     const float *pp, const float *bias, float *c,   \
                                                                     int64_t ldc)                                    \
    {                                                                                                                \
        __m512 acc[MR][2 * NP];                                                                                      \
        for (int r = 0; r < MR; r++)                                                                                 \
            for (int q = 0; q < 2 * NP; q++) acc[r][q] = _mm512_setzero_ps();                                        \
        for (int64_t i = 0; i < inner; i++) {                                                                        \
            __m512 x[2 * NP];                                                                                        \
            for (int p = 0; p < NP; p++) {                                                                           \
                const float *q = pp + p * inner * RC_PACK_NR + i * RC_PACK_NR;                                       \
                _mm_prefetch((const char *)(q + RC_PF_AHEAD * RC_PACK_NR), _MM_HINT_T0);                             \
                _mm_prefetch((const char *)(q + RC_PF_AHEAD * RC_PACK_NR + 16), _MM_HINT_T0);                        \
                x[2 * p] = _mm512_loadu_ps(q);                                                                       \
                x[2 * p + 1] = _mm512_loadu_ps(q + 16);                                                              \
            }                                                                                                        \
            for (int r = 0; r < MR; r++) {                                                                           \
                __m512 s = _mm512_set1_ps(a[r * lda + i]);                                                           \
                for (int q = 0; q < 2 * NP; q++) acc[r][q] = _mm512_fmadd_ps(s, x[q], acc[r][q]);                    \
            }                                                                                                        \
        }                                                                                                            \
        for (int r = 0; r < MR; r++)                                                                                 \
            for (int q = 0; q < 2 * NP; q++)                                                                         \
                _mm512_storeu_ps(c + r * ldc + 16 * q,                                                               \
                                 bias ? _mm512_add_ps(acc[r][q], _mm512_loadu_ps(bias + 16 * q)) : acc[r][q]);       \
    }
RC_TILE_FN(8, 1)
RC_TILE_FN(1, 1)
RC_TILE_FN(6, 2)
RC_TILE_FN(5, 2)
RC_TILE_FN(4, 2)
RC_TILE_FN(3, 2)
RC_TILE_FN(2, 2)
RC_TILE_FN(1, 2)

typedef void (*tile_fn)(int64_t, const float *, int64_t, const float *, const float *, float *, int64_t);
static const tile_fn tiles2[7] = {NULL, tile_1x2, tile_2x2, tile_3x2, tile_4x2, tile_5x2, tile_6x2};

/* Rows from which the 6 x 2 tile is used (below: 8 x 1). */
#define RC_TILE2_MIN_M 24

__attribute__((target("avx512f"))) static void gemm_avx512(int64_t M, int64_t out, int64_t inner, const float *A,
                                                            int64_t lda, const float *P, const float *bias,
                                                            float *C, int64_t ldc, int64_t o_begin, int64_t o_end)
{
    int64_t o0 = o_begin;
    if (M >= RC_TILE2_MIN_M)
        for (; o0 + 2 * RC_PACK_NR <= o_end; o0 += 2 * RC_PACK_NR) {
            const float *pp = P + o0 * inner, *b = bias ? bias + o0 : NULL;
            int64_t m0 = 0;
            for (; m0 + 6 <= M; m0 += 6) tile_6x2(inner, A + m0 * lda, lda, pp, b, C + m0 * ldc + o0, ldc);
            if (m0 < M) tiles2[M - m0](inner, A + m0 * lda, lda, pp, b, C + m0 * ldc + o0, ldc);
        }
    for (; o0 < o_end; o0 += RC_PACK_NR) {
        const float *pp = P + o0 * inner;
        int64_t w = out - o0 < RC_PACK_NR ? out - o0 : RC_PACK_NR;
        if (w == RC_PACK_NR) {
            const float *b = bias ? bias + o0 : NULL;
            int64_t m0 = 0;
            for (; m0 + 8 <= M; m0 += 8) tile_8x1(inner, A + m0 * lda, lda, pp, b, C + m0 * ldc + o0, ldc);
            for (; m0 < M; m0++) tile_1x1(inner, A + m0 * lda, lda, pp, b, C + m0 * ldc + o0, ldc);
        } else { /* the last panel, w < 32 columns: tiles into a buffer, then the w columns */
            float tile[8][RC_PACK_NR];
            for (int64_t m0 = 0; m0 < M; m0 += 8) {
                int mr = M - m0 < 8 ? (int)(M - m0) : 8;
                if (mr == 8) tile_8x1(inner, A + m0 * lda, lda, pp, NULL, tile[0], RC_PACK_NR);
                else
                    for (int r = 0; r < mr; r++) tile_1x1(inner, A + (m0 + r) * lda, lda, pp, NULL, tile[r], RC_PACK_NR);
                store_tile(mr, w, tile, bias, o0, C, ldc, m0);
            }
        }
    }
}

static int cpu_path(void)
{
    static int path = -1; /* 0: none, 2: AVX-512F; benign race: every thread computes the same */
    int p = __atomic_load_n(&path, __ATOMIC_RELAXED);
    if (p >= 0) return p;
    const char *e = getenv("RECURRENT_PACKED_GEMM");
    __builtin_cpu_init();
    if (e && strcmp(e, "0") == 0) p = 0;
    else if (__builtin_cpu_supports("avx512f")) p = 2;
    else p = 0;
    __atomic_store_n(&path, p, __ATOMIC_RELAXED);
    return p;
}

int rc_packed_available(void) { return cpu_path() != 0; }

#else
static int cpu_path(void) { return 0; }
int rc_packed_available(void) { return 0; }
#endif

/* The same arithmetic, one element at a time (fmaf is the fused operation):
 * the reference the vector path is tested against, and the path used when
 * rc_packed_force_path(3) asks for it. */
static void gemm_scalar(int64_t M, int64_t out, int64_t inner, const float *A, int64_t lda, const float *P,
                        const float *bias, float *C, int64_t ldc, int64_t o_begin, int64_t o_end)
{
    for (int64_t m = 0; m < M; m++)
        for (int64_t o = o_begin; o < o_end; o++) {
            const float *pp = P + (o / RC_PACK_NR) * RC_PACK_NR * inner + o % RC_PACK_NR;
            float acc = 0.f;
            for (int64_t i = 0; i < inner; i++) acc = fmaf(A[m * lda + i], pp[i * RC_PACK_NR], acc);
            C[m * ldc + o] = bias ? acc + bias[o] : acc;
        }
}

static int forced = -1;

int rc_packed_force_path(int path)
{
    int old = forced;
    forced = path;
    return old;
}

typedef struct {
    int64_t M, out, inner, lda, ldc, n_panels;
    const float *A, *P, *bias;
    float *C;
    int path, parts;
} gemm_job;

/* Part p of parts: the panels [p * n / parts, (p + 1) * n / parts). */
static void run_part(const gemm_job *j, int p)
{
    int64_t pb = j->n_panels * p / j->parts, pe = j->n_panels * (p + 1) / j->parts;
    int64_t ob = pb * RC_PACK_NR, oe = pe * RC_PACK_NR < j->out ? pe * RC_PACK_NR : j->out;
    if (ob >= oe) return;
#ifdef RC_PACKED_X86
    if (j->path == 2) {
        gemm_avx512(j->M, j->out, j->inner, j->A, j->lda, j->P, j->bias, j->C, j->ldc, ob, oe);
        return;
    }
#endif
    gemm_scalar(j->M, j->out, j->inner, j->A, j->lda, j->P, j->bias, j->C, j->ldc, ob, oe);
}

/* ---------------------------------------------------------------- helper threads (serial path)
 * On the serial path OpenBLAS would use all its threads for these products,
 * so a product big enough is split by panels over as many threads as
 * OpenBLAS has (the caller plus persistent helpers). Inside the RNN executor
 * OpenBLAS is at one thread per worker, and so is this. Each output element
 * is computed by one thread with the same FMA chain, so the split never
 * changes a bit. One product at a time uses the helpers; a concurrent one
 * (another Python thread) runs on its caller alone. A helper that finished a
 * part polls for the next product for rc_flag_spin_ns() before it sleeps, and
 * the caller polls for the helpers' parts the same way: in a step loop the
 * next product comes within microseconds, and a wake-up costs that much. */
#define RC_PACK_MAX_THREADS 64
static struct {
    pthread_mutex_t mu;   /* guards the fields below */
    pthread_cond_t go, done;
    int n_helpers;        /* helper threads started */
    gemm_job job;
    int next_part;        /* next part of job to take (job.parts: none left) */
    int remaining;        /* parts of job not finished (atomic writes; polled without mu) */
    int busy;             /* a product is using the helpers */
    int gen;              /* bumped when a product is posted (atomic writes; polled without mu) */
    int64_t spin_ns;      /* the last product's poll budget */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, {0}, 0, 0, 0, 0, 0};

/* Polls *word while it equals value for up to the budget, mu released
 * meanwhile (called and returns with mu held); returns whether it changed. */
static int pool_poll(int *word, int value, int64_t ns)
{
    return ns > 0 && rc_spin_while_unlocked(&pool.mu, word, value, ns);
}

static void *helper_main(void *arg)
{
    (void)arg;
    int poll = 0; /* poll before sleeping: only right after a part */
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        while (pool.next_part >= pool.job.parts) {
            if (poll) {
                poll = 0;
                if (pool_poll(&pool.gen, __atomic_load_n(&pool.gen, __ATOMIC_RELAXED), pool.spin_ns)) continue;
            }
            pthread_cond_wait(&pool.go, &pool.mu);
        }
        int p = pool.next_part++;
        gemm_job j = pool.job;
        pthread_mutex_unlock(&pool.mu);
        run_part(&j, p);
        pthread_mutex_lock(&pool.mu);
        if (__atomic_sub_fetch(&pool.remaining, 1, __ATOMIC_RELEASE) == 0) pthread_cond_signal(&pool.done);
        poll = 1;
    }
    return NULL;
}

/* fork() keeps only the calling thread: the child starts without helpers */
static void pool_after_fork_child(void)
{
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.go, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.n_helpers = 0;
    pool.job.parts = 0;
    pool.next_part = pool.remaining = pool.busy = pool.gen = 0;
}

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static void pool_init(void) { pthread_atfork(NULL, NULL, pool_after_fork_child); }

/* Starts helpers up to want (called with mu held); returns how many run. */
static int pool_grow(int want)
{
    while (pool.n_helpers < want) {
        pthread_t th;
        pthread_attr_t at;
        if (pthread_attr_init(&at)) break;
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        int bad = pthread_create(&th, &at, helper_main, NULL);
        pthread_attr_destroy(&at);
        if (bad) break; /* fewer helpers: still correct, the caller takes the parts left */
        pool.n_helpers++;
    }
    return pool.n_helpers;
}

/* Splits only products of at least this many multiply-adds (a helper's wake-up costs microseconds). */
#define RC_PACK_SPLIT_MIN (1 << 20)

void rc_gemm_packed(int64_t M, int64_t out, int64_t inner, const float *A, int64_t lda, const float *P,
                    const float *bias, float *C, int64_t ldc)
{
    __atomic_add_fetch(&n_calls, 1, __ATOMIC_RELAXED);
    if (M <= 0 || out <= 0) return;
    gemm_job j = {M, out, inner, lda, ldc, (out + RC_PACK_NR - 1) / RC_PACK_NR, A, P, bias, C, 0, 1};
    j.path = forced >= 0 ? forced : cpu_path();
    int threads = rc_blas_num_threads();
    if (threads > RC_PACK_MAX_THREADS) threads = RC_PACK_MAX_THREADS;
    if (threads > j.n_panels) threads = (int)j.n_panels;
    if (threads < 2 || (double)M * (double)out * (double)inner < RC_PACK_SPLIT_MIN) {
        run_part(&j, 0);
        return;
    }
    pthread_once(&pool_once, pool_init);
    pthread_mutex_lock(&pool.mu);
    if (pool.busy || pool_grow(threads - 1) == 0) {
        pthread_mutex_unlock(&pool.mu);
        run_part(&j, 0);
        return;
    }
    pool.busy = 1;
    j.parts = threads;
    pool.job = j;
    pool.next_part = 0;
    __atomic_store_n(&pool.remaining, j.parts, __ATOMIC_RELAXED);
    pool.spin_ns = threads <= rc_num_cores() ? rc_flag_spin_ns() : 0;
    __atomic_add_fetch(&pool.gen, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&pool.go);
    while (pool.next_part < j.parts) { /* the caller takes parts too */
        int p = pool.next_part++;
        pthread_mutex_unlock(&pool.mu);
        run_part(&j, p);
        pthread_mutex_lock(&pool.mu);
        __atomic_sub_fetch(&pool.remaining, 1, __ATOMIC_RELEASE);
    }
    int r;
    while ((r = __atomic_load_n(&pool.remaining, __ATOMIC_ACQUIRE)) > 0)
        if (!pool_poll(&pool.remaining, r, pool.spin_ns)) pthread_cond_wait(&pool.done, &pool.mu);
    pool.job.parts = 0;
    pool.next_part = 0;
    pool.busy = 0;
    pthread_mutex_unlock(&pool.mu);
}
