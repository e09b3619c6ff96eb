/* Small-M products against a packed matrix (see packed_gemm.h). */
#include "packed_gemm.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RC_PACKED_X86 1
#include <immintrin.h>
#endif

static int64_t n_calls, n_unaligned;

int64_t rc_packed_calls(void) { return __atomic_load_n(&n_calls, __ATOMIC_RELAXED); }
int64_t rc_packed_unaligned_calls(void) { return __atomic_load_n(&n_unaligned, __ATOMIC_RELAXED); }

int64_t rc_pack_floats(int64_t inner, int64_t out)
{
    return (out + RC_PACK_NR - 1) / RC_PACK_NR * RC_PACK_NR * inner;
}

float *rc_pack_alloc(int64_t floats, void **raw)
{
    *raw = NULL;
    if (floats < 0 || (uint64_t)floats > (SIZE_MAX - 64) / sizeof(float)) return NULL;
    char *p = malloc(sizeof(float) * (size_t)floats + 64);
    if (!p) return NULL;
    *raw = p;
    return (float *)(p + (64 - (uintptr_t)p % 64) % 64);
}

#ifdef RC_PACKED_X86
/* 8 x 8 block transpose: rows r of src (8 floats each, s_o apart) become
 * columns of dst (rows ldd apart). */
__attribute__((target("avx2"))) static void transpose8(const float *src, int64_t s_o, float *dst, int64_t ldd)
{
    __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + s_o), r2 = _mm256_loadu_ps(src + 2 * s_o),
           r3 = _mm256_loadu_ps(src + 3 * s_o), r4 = _mm256_loadu_ps(src + 4 * s_o),
           r5 = _mm256_loadu_ps(src + 5 * s_o), r6 = _mm256_loadu_ps(src + 6 * s_o),
           r7 = _mm256_loadu_ps(src + 7 * s_o);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
           t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
           t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE),
           u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE),
           u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE),
           u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(dst + 0 * ldd, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(dst + 1 * ldd, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(dst + 2 * ldd, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(dst + 3 * ldd, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(dst + 4 * ldd, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(dst + 5 * ldd, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(dst + 6 * ldd, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(dst + 7 * ldd, _mm256_permute2f128_ps(u3, u7, 0x31));
}

static int have_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}
#endif

/* One panel (columns [o0, o0 + w) of B, w <= RC_PACK_NR) into P's panel
 * layout, element by element; zeros beyond w. */
static void pack_panel_scalar(int64_t inner, int64_t w, const float *s0, int64_t s_i, int64_t s_o, float *panel,
                              int64_t i_begin)
{
    for (int64_t i = i_begin; i < inner; i++) {
        float *row = panel + i * RC_PACK_NR;
        const float *s = s0 + i * s_i;
        for (int64_t j = 0; j < w; j++) row[j] = s[j * s_o];
        for (int64_t j = w; j < RC_PACK_NR; j++) row[j] = 0.f;
    }
}

/* Pure data movement (the bits of B), laid out for memory. With B's rows
 * contiguous (s_o == 1: the FCGradient weight) RC_PACK_ROW_PANELS panels at
 * a time, each row of B read as one 1 KB piece (one panel at a time read
 * 128 bytes per row, rows 4 KB apart: 385-450 us per 1 MB weight on the
 * development VM, 134-156 us now; all panels at once, 32 write streams, was
 * slower still). With B's columns contiguous (s_i == 1: the FC weight,
 * transposed) 8 x 8 blocks are transposed in registers when the CPU has AVX2
 * (an element-by-element gather took 352-361 us per 1 MB, now 241-302). */
#define RC_PACK_ROW_PANELS 8
void rc_pack_b(int64_t inner, int64_t out, const float *src, int64_t s_i, int64_t s_o, float *P)
{
    if (s_o == 1) {
        for (int64_t b0 = 0; b0 < out; b0 += RC_PACK_ROW_PANELS * RC_PACK_NR) {
            int64_t b1 = b0 + RC_PACK_ROW_PANELS * RC_PACK_NR < out ? b0 + RC_PACK_ROW_PANELS * RC_PACK_NR : out;
            for (int64_t i = 0; i < inner; i++) {
                const float *s = src + i * s_i;
                for (int64_t o0 = b0; o0 < b1; o0 += RC_PACK_NR) {
                    float *row = P + o0 * inner + i * RC_PACK_NR;
                    int64_t w = out - o0 < RC_PACK_NR ? out - o0 : RC_PACK_NR;
                    memcpy(row, s + o0, sizeof(float) * (size_t)w);
                    if (w < RC_PACK_NR) memset(row + w, 0, sizeof(float) * (size_t)(RC_PACK_NR - w));
                }
            }
        }
        return;
    }
#ifdef RC_PACKED_X86
    int transpose = s_i == 1 && inner >= 8 && have_avx2(); /* checked once, not per panel */
#endif
    for (int64_t o0 = 0; o0 < out; o0 += RC_PACK_NR) {
        float *panel = P + o0 * inner;
        int64_t w = out - o0 < RC_PACK_NR ? out - o0 : RC_PACK_NR, i0 = 0;
#ifdef RC_PACKED_X86
        if (transpose && w == RC_PACK_NR) {
            for (; i0 + 8 <= inner; i0 += 8)
                for (int g = 0; g < RC_PACK_NR / 8; g++)
                    transpose8(src + (o0 + 8 * g) * s_o + i0, s_o, panel + i0 * RC_PACK_NR + 8 * g, RC_PACK_NR);
        }
#endif
        pack_panel_scalar(inner, w, src + o0 * s_o, s_i, s_o, panel, i0);
    }
}

void rc_transpose(int64_t rows, int64_t cols, const float *src, int64_t lds, float *dst, int64_t ldd)
{
    int64_t r0 = 0;
#ifdef RC_PACKED_X86
    if (rows >= 8 && cols >= 8 && have_avx2())
        for (; r0 + 8 <= rows; r0 += 8) {
            int64_t c0 = 0;
            for (; c0 + 8 <= cols; c0 += 8) transpose8(src + r0 * lds + c0, lds, dst + c0 * ldd + r0, ldd);
            for (int64_t r = r0; r < r0 + 8; r++)
                for (int64_t c = c0; c < cols; c++) dst[c * ldd + r] = src[r * lds + c];
        }
#endif
    for (int64_t r = r0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) dst[c * ldd + r] = src[r * lds + c];
}

#ifdef RC_PACKED_X86
/* Stores a tile computed over a whole panel: columns [o0, o0 + w) of rows
 * [m0, m0 + mr), from tile[r][0..NR), plus the bias, then plus Z (the
 * addend, rows ldc apart like C) when Z != NULL. */
static void store_tile(int mr, int64_t w, float tile[][RC_PACK_NR], const float *bias, const float *Z, int64_t o0,
                       float *C, int64_t ldc, int64_t m0)
{
    for (int r = 0; r < mr; r++) {
        float *c = C + (m0 + r) * ldc + o0;
        const float *z = Z ? Z + (m0 + r) * ldc + o0 : NULL;
        for (int64_t j = 0; j < w; j++) {
            float v = bias ? tile[r][j] + bias[o0 + j] : tile[r][j];
            c[j] = z ? v + z[j] : v;
        }
    }
}

/* ---------------------------------------------------------------- AVX-512 tiles
 * A tile keeps MR rows x NP panels of C in 2 * MR * NP zmm accumulators over
 * the whole inner loop: per step i, 2 * NP loads of the pack, MR broadcasts
 * of A, 2 * MR * NP FMAs. 6 rows x 2 panels (24 accumulators, 10 loads per 24
 * FMAs) measured 5-25% faster than 8 x 1 (16 accumulators, 10 loads per 16)
 * at 32-64 rows; at 16 rows 8 x 1 is as fast and wastes no rows. Below 24
 * rows the rows left after the 8 x 1 tiles go through one tile of that many
 * rows (r x 1, r < 8): one row at a time read the pack once per row (at 12
 * rows 1.7x slower per product). Full panels only; the last, partial panel
 * goes through the r x 1 tiles with a buffered store. */
#define RC_PF_AHEAD 64 /* pack rows prefetched ahead: the pack streams from L3 (or memory) when several
                        * step weights take turns. 16 rows measured 7-9% faster than none (Sapphire Rapids);
                        * 64 rows 1.1-1.4x faster than 16 on Zen 5 at 16 rows of A when the weights were
                        * pushed out of L2 and part of L3 between products, the same when they stay in
                        * cache (128 rows: as 64, 256: slower). Prefetches never fault. */
/* One step i of a tile: the pack's row i (NP panels), row r's A element AEXPR. */
#define RC_TILE_STEP(MR, NP, i, AEXPR)                                                                              \
    {                                                                                                                \
        __m512 x[2 * NP];                                                                                            \
        for (int p = 0; p < NP; p++) {                                                                               \
            const float *q = pp + p * inner * RC_PACK_NR + (i) * RC_PACK_NR;                                         \
            _mm_prefetch((const char *)(q + RC_PF_AHEAD * RC_PACK_NR), _MM_HINT_T0);                                 \
            _mm_prefetch((const char *)(q + RC_PF_AHEAD * RC_PACK_NR + 16), _MM_HINT_T0);                            \
            x[2 * p] = _mm512_loadu_ps(q);                                                                           \
            x[2 * p + 1] = _mm512_loadu_ps(q + 16);                                                                  \
        }                                                                                                            \
        for (int r = 0; r < MR; r++) {                                                                               \
            __m512 s = _mm512_set1_ps(AEXPR);                                                                        \
            for (int q = 0; q < 2 * NP; q++) acc[r][q] = _mm512_fmadd_ps(s, x[q], acc[r][q]);                        \
        }                                                                                                            \
    }
/* BLK 0: A(r, i) = a[r * lda + i] (the step products); BLK 1: A in blocks of
 * bk columns, bs floats apart (the weight gradients' stash, see
 * rc_gemm_wgrad): A(r, b * bk + k) = a[b * bs + r * lda + k]. Either way the
 * same FMA chain over i; cont starts it from C instead of 0. With BLK 1 a
 * tile reads a short piece of every block (MR rows of bk floats: 384 bytes
 * at batch 16), blocks tens of KB apart, too many streams for the hardware
 * prefetchers when the stash comes from L3 or memory; so the tile prefetches
 * the next row tile's piece of each block, one cache line per step (one
 * thread, Zen 5: hidden 512 / batch 64 9-10% faster, caches flushed before
 * the call or not; hidden 256 / batch 16 3-4%). A tile that starts from 0
 * asks for its lines of C with write intent (prefetchw; a no-op on CPUs
 * without it) while it multiplies: a step writes a fresh buffer of the step
 * workspace, not in this core's cache (step FCs in the executor's loop at
 * hidden 256 / batch 16: 2-3% less time in every one of six alternations). */
#define RC_TILE_FN(MR, NP, SFX, BLK)                                                                                \
    __attribute__((target("avx512f,prfchw"))) static void tile_##MR##x##NP##SFX(                                     \
        int64_t inner, const float *a, int64_t lda, int64_t bk, int64_t bs, const float *pp, const float *bias,      \
        const float *z, float *c, int64_t ldc, int cont, const float *pf, int64_t pf_lines)                          \
    {                                                                                                                \
        __m512 acc[MR][2 * NP];                                                                                      \
        for (int r = 0; r < MR; r++)                                                                                 \
            for (int q = 0; q < 2 * NP; q++) {                                                                       \
                if (!cont) __builtin_prefetch(c + r * ldc + 16 * q, 1, 3);                                           \
                if (z) __builtin_prefetch(z + r * ldc + 16 * q, 0, 3);                                               \
                acc[r][q] = cont ? _mm512_loadu_ps(c + r * ldc + 16 * q) : _mm512_setzero_ps();                      \
            }                                                                                                        \
        if (BLK) {                                                                                                   \
            for (int64_t i = 0, b = 0; i < inner; b++) {                                                             \
                const float *ab = a + b * bs;                                                                        \
                int64_t kn = inner - i < bk ? inner - i : bk;                                                        \
                for (int64_t k = 0; k < kn; k++, i++) {                                                              \
                    if (16 * k < MR * lda) /* the next row tile's part of this block */                              \
                        _mm_prefetch((const char *)(ab + MR * lda + 16 * k), _MM_HINT_T0);                           \
                    RC_TILE_STEP(MR, NP, i, ab[r * lda + k])                                                         \
                }                                                                                                    \
            }                                                                                                        \
        } else {                                                                                                     \
            (void)bk;                                                                                                \
            (void)bs;                                                                                                \
            int64_t i = 0;                                                                                           \
            for (int64_t n = pf_lines < inner ? pf_lines : inner; i < n; i++) {                                      \
                _mm_prefetch((const char *)(pf + 16 * i), _MM_HINT_T1);                                              \
                if (i + inner < pf_lines) _mm_prefetch((const char *)(pf + 16 * (i + inner)), _MM_HINT_T1);         \
                RC_TILE_STEP(MR, NP, i, a[r * lda + i])                                                              \
            }                                                                                                        \
            for (; i < inner; i++) RC_TILE_STEP(MR, NP, i, a[r * lda + i])                                           \
        }                                                                                                            \
        for (int r = 0; r < MR; r++)                                                                                 \
            for (int q = 0; q < 2 * NP; q++) {                                                                       \
                __m512 v = bias ? _mm512_add_ps(acc[r][q], _mm512_loadu_ps(bias + 16 * q)) : acc[r][q];              \
                if (z) v = _mm512_add_ps(v, _mm512_loadu_ps(z + r * ldc + 16 * q));                                   \
                _mm512_storeu_ps(c + r * ldc + 16 * q, v);                                                           \
            }                                                                                                        \
    }
#define RC_TILE_SET(SFX, BLK)                                                                                       \
    RC_TILE_FN(8, 1, SFX, BLK)                                                                                       \
    RC_TILE_FN(7, 1, SFX, BLK)                                                                                       \
    RC_TILE_FN(6, 1, SFX, BLK)                                                                                       \
    RC_TILE_FN(5, 1, SFX, BLK)                                                                                       \
    RC_TILE_FN(4, 1, SFX, BLK)                                                                                       \
    RC_TILE_FN(3, 1, SFX, BLK)                                                                                       \
    RC_TILE_FN(2, 1, SFX, BLK)                                                                                       \
    RC_TILE_FN(1, 1, SFX, BLK)                                                                                       \
    RC_TILE_FN(6, 2, SFX, BLK)                                                                                       \
    RC_TILE_FN(5, 2, SFX, BLK)                                                                                       \
    RC_TILE_FN(4, 2, SFX, BLK)                                                                                       \
    RC_TILE_FN(3, 2, SFX, BLK)                                                                                       \
    RC_TILE_FN(2, 2, SFX, BLK)                                                                                       \
    RC_TILE_FN(1, 2, SFX, BLK)
RC_TILE_SET(, 0)
RC_TILE_SET(_blk, 1)

typedef void (*tile_fn)(int64_t, const float *, int64_t, int64_t, int64_t, const float *, const float *,
                        const float *, float *, int64_t, int, const float *, int64_t);
typedef struct {
    tile_fn t1[9], t2[7]; /* t1[r]: r rows x 1 panel, t2[r]: r rows x 2 panels */
} tile_set;
static const tile_set tiles_std = {
    {NULL, tile_1x1, tile_2x1, tile_3x1, tile_4x1, tile_5x1, tile_6x1, tile_7x1, tile_8x1},
    {NULL, tile_1x2, tile_2x2, tile_3x2, tile_4x2, tile_5x2, tile_6x2}};
static const tile_set tiles_blk = {
    {NULL, tile_1x1_blk, tile_2x1_blk, tile_3x1_blk, tile_4x1_blk, tile_5x1_blk, tile_6x1_blk, tile_7x1_blk,
     tile_8x1_blk},
    {NULL, tile_1x2_blk, tile_2x2_blk, tile_3x2_blk, tile_4x2_blk, tile_5x2_blk, tile_6x2_blk}};

/* Rows from which the 6 x 2 tile is used (below: 8 x 1). */
#define RC_TILE2_MIN_M 24
/* The step products (not the weight gradients, whose pack is fresh) of a
 * pack of at least pf_next_min_floats() floats have their row tiles prefetch
 * the next panel (pair) into L2, each tile a share of its lines, one line per
 * step of its inner loop (tile arguments pf, pf_lines). Without it the first
 * row tile of a panel waits on L3 or memory for the whole panel and the other
 * tiles find it in L2. Prefetches never change a bit. The smallest pack that
 * gains depends on how fast a core reads L3:
 * - AMD: 2 MB. Zen 5 (1 MB L2, fast L3), one thread, hidden 512 (M x 512 by
 *   512 x 2048, 8 packs of 4 MB taking turns, so from memory): M = 64 6-10%
 *   faster, M = 16 8-10%; the LSTM benchmark at hidden 512, executor, 2
 *   threads: 1-5% more entries/s (training batch 64, inference batch 16 / 64).
 *   At hidden 256 (1 MB packs, all of a 4-layer net's packs in L3) 0-4% slower.
 * - Others: 1 MB. A 2-core Xeon VM (2 MB L2; one core reads L3 at about
 *   28 GB/s, a 1 MB pack in 36 us), one thread, 16 x 256 by 256 x 1024, 8 packs
 *   taking turns: 58 -> 45 us (the pack from L2: 45 us), 32 rows 106 -> 91 us;
 *   the LSTM benchmark at hidden 256 / batch 16, 4 layers, executor, 2
 *   threads, the two thresholds alternating in one process: training 1.07x,
 *   inference 1.14x (serial loop: 1.06x). 256 KB packs (hidden 128) gained
 *   alone in the C loop once 16 of them took turns, but the LSTM benchmark at
 *   hidden 128, 2 layers, whose packs stay in L2, ran 0-5% slower with them. */
#define RC_PF_NEXT_MIN_FLOATS_AMD (512.0 * 1024.0)
#define RC_PF_NEXT_MIN_FLOATS (256.0 * 1024.0)
static double pf_next_min_floats(void)
{
    static int amd = -1; /* benign race: every thread computes the same */
    int a = __atomic_load_n(&amd, __ATOMIC_RELAXED);
    if (a < 0) {
        __builtin_cpu_init();
        a = __builtin_cpu_is("amd") ? 1 : 0;
        __atomic_store_n(&amd, a, __ATOMIC_RELAXED);
    }
    return a ? RC_PF_NEXT_MIN_FLOATS_AMD : RC_PF_NEXT_MIN_FLOATS;
}

int64_t rc_packed_pf_next_min_bytes(void) { return (int64_t)pf_next_min_floats() * (int64_t)sizeof(float); }

/* Lines of the next panel's pack that row tile k prefetches: its share lpt of the nl lines, fewer
 * for the last tile, none past them. */
static inline int64_t pf_share(int64_t nl, int64_t k, int64_t lpt)
{
    int64_t left = nl - k * lpt;
    return left < 0 ? 0 : left < lpt ? left : lpt;
}

/* Columns [o_begin, o_end) of C (whole panels, the last one maybe partial). */
__attribute__((target("avx512f"))) static void gemm_avx512(const tile_set *ts, int64_t M, int64_t out, int64_t inner,
                                                            const float *A, int64_t lda, int64_t bk, int64_t bs,
                                                            const float *P, const float *bias, const float *Z, float *C,
                                                            int64_t ldc, int cont, int64_t o_begin, int64_t o_end)
{
    int64_t o0 = o_begin;
    int pf_next = ts == &tiles_std && (double)inner * (double)out >= pf_next_min_floats();
#define RC_ZT(m0) (Z ? Z + (m0) * ldc + o0 : NULL)
    if (M >= RC_TILE2_MIN_M)
        for (; o0 + 2 * RC_PACK_NR <= o_end; o0 += 2 * RC_PACK_NR) {
            const float *pp = P + o0 * inner, *b = bias ? bias + o0 : NULL;
            /* the next panel pair's pack, its lines shared out over this pair's row tiles */
            int64_t nt = (M + 5) / 6, nl = pf_next && o0 + 2 * RC_PACK_NR < o_end ? 4 * inner : 0;
            int64_t lpt = (nl + nt - 1) / nt;
            const float *nx = pp + 2 * RC_PACK_NR * inner;
            int64_t m0 = 0, k = 0;
            for (; m0 + 6 <= M; m0 += 6, k++)
                ts->t2[6](inner, A + m0 * lda, lda, bk, bs, pp, b, RC_ZT(m0), C + m0 * ldc + o0, ldc, cont,
                          nx + 16 * k * lpt, pf_share(nl, k, lpt));
            if (m0 < M)
                ts->t2[M - m0](inner, A + m0 * lda, lda, bk, bs, pp, b, RC_ZT(m0), C + m0 * ldc + o0, ldc, cont,
                               nx + 16 * k * lpt, pf_share(nl, k, lpt));
        }
    for (; o0 < o_end; o0 += RC_PACK_NR) {
        const float *pp = P + o0 * inner;
        int64_t w = out - o0 < RC_PACK_NR ? out - o0 : RC_PACK_NR;
        if (w == RC_PACK_NR) {
            const float *b = bias ? bias + o0 : NULL;
            /* the next panel's pack (2 lines a row), shared out over this panel's row tiles: 8 rows each, the
             * rest in one tile of M % 8 rows */
            int64_t nt = (M + 7) / 8, nl = pf_next && o0 + RC_PACK_NR < o_end ? 2 * inner : 0;
            int64_t lpt = (nl + nt - 1) / nt;
            const float *nx = pp + RC_PACK_NR * inner;
            for (int64_t m0 = 0, k = 0; m0 < M; m0 += 8, k++)
                ts->t1[M - m0 < 8 ? M - m0 : 8](inner, A + m0 * lda, lda, bk, bs, pp, b, RC_ZT(m0),
                                                C + m0 * ldc + o0, ldc, cont, nx + 16 * k * lpt,
                                                pf_share(nl, k, lpt));
        } else { /* the last panel, w < 32 columns: tiles into a buffer, then the w columns */
            _Alignas(64) float tile[8][RC_PACK_NR];
            for (int64_t m0 = 0; m0 < M; m0 += 8) {
                int mr = M - m0 < 8 ? (int)(M - m0) : 8;
                if (cont)
                    for (int r = 0; r < mr; r++) {
                        memcpy(tile[r], C + (m0 + r) * ldc + o0, sizeof(float) * (size_t)w);
                        memset(tile[r] + w, 0, sizeof(float) * (size_t)(RC_PACK_NR - w));
                    }
                ts->t1[mr](inner, A + m0 * lda, lda, bk, bs, pp, NULL, NULL, tile[0], RC_PACK_NR, cont, NULL, 0);
                store_tile(mr, w, tile, bias, Z, o0, C, ldc, m0);
            }
        }
    }
#undef RC_ZT
}

/* ---------------------------------------------------------------- AVX2 + FMA tiles
 * 16 ymm registers: a tile keeps MR <= 6 rows x 16 columns (half a panel) of
 * C in 2 * MR accumulators; per step i, 2 loads of the pack (one cache line),
 * MR broadcasts of A, 2 * MR FMAs (the 6 x 16 shape of BLIS's Haswell sgemm
 * kernel). The inner dimension goes in blocks of RC_AVX2_KC, so that the
 * block of the half panel (16 KB) stays in L1 while every row tile uses it: a
 * tile of a later block starts from the partial sums it stored (cont = 1),
 * which continues the same float32 FMA chain, and adds the bias after the
 * last block. So every element is the same FMA chain as on the AVX-512 tiles
 * and the scalar reference: the same bits. */
#define RC_AVX2_KC 256
#define RC_TILE_AVX2_FN(MR)                                                                                         \
    __attribute__((target("avx2,fma"))) static void tile_avx2_##MR(int64_t inner, const float *a, int64_t lda,       \
                                                                   const float *ph, const float *bias,               \
                                                                   const float *z, float *c, int64_t ldc, int cont)  \
    {                                                                                                                \
        __m256 acc[MR][2];                                                                                           \
        _Pragma("GCC unroll 6") for (int r = 0; r < MR; r++) {                                                       \
            if (z) _mm_prefetch((const char *)(z + r * ldc), _MM_HINT_T0);                                           \
            acc[r][0] = cont ? _mm256_loadu_ps(c + r * ldc) : _mm256_setzero_ps();                                   \
            acc[r][1] = cont ? _mm256_loadu_ps(c + r * ldc + 8) : _mm256_setzero_ps();                               \
        }                                                                                                            \
        for (int64_t i = 0; i < inner; i++) {                                                                        \
            const float *q = ph + i * RC_PACK_NR;                                                                    \
            _mm_prefetch((const char *)(q + RC_PF_AHEAD * RC_PACK_NR), _MM_HINT_T0);                                 \
            __m256 x0 = _mm256_loadu_ps(q), x1 = _mm256_loadu_ps(q + 8);                                             \
            _Pragma("GCC unroll 6") for (int r = 0; r < MR; r++) {                                                   \
                __m256 s = _mm256_broadcast_ss(a + r * lda + i);                                                     \
                acc[r][0] = _mm256_fmadd_ps(s, x0, acc[r][0]);                                                       \
                acc[r][1] = _mm256_fmadd_ps(s, x1, acc[r][1]);                                                       \
            }                                                                                                        \
        }                                                                                                            \
        __m256 b0 = bias ? _mm256_loadu_ps(bias) : _mm256_setzero_ps();                                              \
        __m256 b1 = bias ? _mm256_loadu_ps(bias + 8) : _mm256_setzero_ps();                                          \
        _Pragma("GCC unroll 6") for (int r = 0; r < MR; r++) {                                                       \
            __m256 v0 = bias ? _mm256_add_ps(acc[r][0], b0) : acc[r][0];                                             \
            __m256 v1 = bias ? _mm256_add_ps(acc[r][1], b1) : acc[r][1];                                             \
            if (z) {                                                                                                 \
                v0 = _mm256_add_ps(v0, _mm256_loadu_ps(z + r * ldc));                                                \
                v1 = _mm256_add_ps(v1, _mm256_loadu_ps(z + r * ldc + 8));                                            \
            }                                                                                                        \
            _mm256_storeu_ps(c + r * ldc, v0);                                                                       \
            _mm256_storeu_ps(c + r * ldc + 8, v1);                                                                   \
        }                                                                                                            \
    }
RC_TILE_AVX2_FN(6)
RC_TILE_AVX2_FN(5)
RC_TILE_AVX2_FN(4)
RC_TILE_AVX2_FN(3)
RC_TILE_AVX2_FN(2)
RC_TILE_AVX2_FN(1)
typedef void (*tile_avx2_fn)(int64_t, const float *, int64_t, const float *, const float *, const float *, float *,
                             int64_t, int);
static const tile_avx2_fn tiles_avx2[7] = {NULL, tile_avx2_1, tile_avx2_2, tile_avx2_3, tile_avx2_4, tile_avx2_5,
                                           tile_avx2_6};

/* Rows [0, M) x the 16 columns of half panel ph, into c (rows ldc apart;
 * bias: the half's 16 entries or NULL; z: the addend's, rows ldc apart, or
 * NULL), inner blocks of RC_AVX2_KC outermost. */
__attribute__((target("avx2,fma"))) static void half_panel_avx2(int64_t M, int64_t inner, const float *A, int64_t lda,
                                                                const float *ph, const float *bias, const float *z,
                                                                float *c, int64_t ldc)
{
    int64_t kb = 0;
    do {
        int64_t kl = inner - kb < RC_AVX2_KC ? inner - kb : RC_AVX2_KC;
        int last = kb + kl >= inner;
        for (int64_t m0 = 0; m0 < M; m0 += 6)
            tiles_avx2[M - m0 < 6 ? M - m0 : 6](kl, A + m0 * lda + kb, lda, ph + kb * RC_PACK_NR, last ? bias : NULL,
                                                last && z ? z + m0 * ldc : NULL, c + m0 * ldc, ldc, kb > 0);
        kb += kl;
    } while (kb < inner);
}

/* Panel by panel, each half (16 columns) over all rows; the last, partial
 * panel through a buffer of RC_PACKED_MAX_M rows, then its w columns (more
 * rows: in slices of that many). */
__attribute__((target("avx2,fma"))) static void gemm_avx2(int64_t M, int64_t out, int64_t inner, const float *A,
                                                          int64_t lda, const float *P, const float *bias,
                                                          const float *Z, float *C, int64_t ldc, int64_t o_begin,
                                                          int64_t o_end)
{
    for (int64_t o0 = o_begin; o0 < o_end; o0 += RC_PACK_NR) {
        const float *pp = P + o0 * inner;
        int64_t w = out - o0 < RC_PACK_NR ? out - o0 : RC_PACK_NR;
        if (w == RC_PACK_NR) {
            for (int h = 0; h < 2; h++)
                half_panel_avx2(M, inner, A, lda, pp + 16 * h, bias ? bias + o0 + 16 * h : NULL,
                                Z ? Z + o0 + 16 * h : NULL, C + o0 + 16 * h, ldc);
            continue;
        }
        float buf[RC_PACKED_MAX_M][RC_PACK_NR];
        for (int64_t m0 = 0; m0 < M; m0 += RC_PACKED_MAX_M) {
            int64_t mr = M - m0 < RC_PACKED_MAX_M ? M - m0 : RC_PACKED_MAX_M;
            for (int h = 0; h < (w > RC_PACK_NR / 2 ? 2 : 1); h++)
                half_panel_avx2(mr, inner, A + m0 * lda, lda, pp + 16 * h, NULL, NULL, buf[0] + 16 * h, RC_PACK_NR);
            store_tile((int)mr, w, buf, bias, Z, o0, C, ldc, m0);
        }
    }
}

static int cpu_path(void)
{
    static int path = -1; /* 0: none, 2: AVX-512F, 4: AVX2 + FMA; benign race: every thread computes the same */
    int p = __atomic_load_n(&path, __ATOMIC_RELAXED);
    if (p >= 0) return p;
    const char *e = getenv("RECURRENT_PACKED_GEMM");
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (e && strcmp(e, "0") == 0) p = 0;
    else if (e && strcmp(e, "avx2") == 0) p = avx2 ? 4 : 0; /* an AVX2 machine's kernel, on any CPU that has it */
    else if (__builtin_cpu_supports("avx512f")) p = 2;
    else p = avx2 ? 4 : 0;
    __atomic_store_n(&path, p, __ATOMIC_RELAXED);
    return p;
}

int rc_packed_available(void) { return cpu_path() != 0; }

#else
static int cpu_path(void) { return 0; }
int rc_packed_available(void) { return 0; }
int64_t rc_packed_pf_next_min_bytes(void) { return 0; }
#endif

const char *rc_packed_kernel(void)
{
    switch (cpu_path()) {
    case 2: return "avx512";
    case 4: return "avx2";
    default: return "none";
    }
}

/* The same arithmetic, one element at a time (fmaf is the fused operation):
 * the reference the vector path is tested against, and the path used when
 * rc_packed_force_path(3) asks for it. A as in RC_TILE_FN (bk columns per
 * block, blocks bs floats apart; one block: bk >= inner). */
static void gemm_scalar(int64_t M, int64_t out, int64_t inner, const float *A, int64_t lda, int64_t bk, int64_t bs,
                        const float *P, const float *bias, const float *Z, float *C, int64_t ldc, int cont,
                        int64_t o_begin, int64_t o_end)
{
    for (int64_t m = 0; m < M; m++)
        for (int64_t o = o_begin; o < o_end; o++) {
            const float *pp = P + (o / RC_PACK_NR) * RC_PACK_NR * inner + o % RC_PACK_NR;
            float acc = cont ? C[m * ldc + o] : 0.f;
            for (int64_t i = 0, b = 0; i < inner; b++)
                for (int64_t k = 0; k < bk && i < inner; k++, i++)
                    acc = fmaf(A[b * bs + m * lda + k], pp[i * RC_PACK_NR], acc);
            float v = bias ? acc + bias[o] : acc;
            C[m * ldc + o] = Z ? v + Z[m * ldc + o] : v;
        }
}

static int forced = -1;

/* The path products take now: the forced one (tests) or the CPU's best. */
static int active_path(void) { return forced >= 0 ? forced : cpu_path(); }

int rc_packed_force_path(int path)
{
    int old = forced;
    forced = path;
    return old;
}

int rc_packed_rows_ok(int64_t M, int64_t inner)
{
    if (M <= 0) return 0;
    if (M <= RC_PACKED_MAX_M) return 1;
    if (inner <= 0) return 0;
    return M <= (active_path() == 2 ? RC_PACKED_MAX_A : RC_PACKED_MAX_A_AVX2) / inner;
}

/* An FC with no pack from RecurrentNetwork (outside step loops: the layer-1
 * input projection, an output layer) packs its weight itself and runs on our
 * kernel when its inner dimension is short. OpenBLAS then spends most
 * of a call on packing both operands and on the bias fill and the second pass
 * over Y it needs (beta = 1); the kernel packs only W (N x K floats), reads X in
 * place and adds the bias as it stores. The AVX-512 kernel in a C loop, 2
 * threads, against the FC's OpenBLAS path (fill, then sgemm; Xeon VM, OpenBLAS
 * on its SkylakeX kernels):
 * M x N x K = 800 x 1024 x 40 (the LSTM benchmark's input projection at batch
 * 16) 1.83x, 3200 x 2048 x 40 1.42x, 130 x 1024 x 40 2.2x, 3200 x 4096 x 64
 * 1.24x, 800 x 1024 x 128 1.27x, 3200 x 2048 x 128 1.08x; K = 256 0.94-1.10x,
 * so not beyond 128. Fewer than 32 outputs waste most of a panel (3200 x 16 x
 * 128: 0.53x; 800 x 33 x 40: 1.21x). M x K within rc_packed_rows_ok, as for
 * the step products. The AVX2 kernel against OpenBLAS's Haswell kernels (what
 * a CPU without AVX-512 runs; OPENBLAS_CORETYPE=Haswell on the same VM), on
 * the shapes that rule lets through: 800 x 1024 x 40 1.55x, 3200 x 2048 x 40
 * 1.20x, 800 x 1024 x 128 1.20x, 130 x 1024 x 40 1.87x, 16 x 1024 x 40 1.23x.
 * Every kernel computes the same bits, so an FC's result then does not depend
 * on which of them the CPU runs either. A single row does not pay for packing
 * the weight (the FC op from Python, 1 x 1024 x 40: 10.1 against 7.9 us); 2-8
 * rows do (2 x 1024 x 128: 25 against 39 us; 8 x 1024 x 128: 36 against 137),
 * so from 4 rows. The op keeps the pack between runs: at most 2^22 floats
 * (16 MB; N up to 32768 at K = 128), so that a wide output layer (a large
 * vocabulary) does not hold a copy of its weight. */
#define RC_FC_PACK_MAX_K 128
#define RC_FC_PACK_MIN_M 4
#define RC_FC_PACK_MAX_FLOATS (1 << 22)
int rc_fc_pack_ok(int64_t M, int64_t N, int64_t K)
{
    return rc_packed_available() && K > 0 && K <= RC_FC_PACK_MAX_K && M >= RC_FC_PACK_MIN_M && N >= RC_PACK_NR &&
           N <= RC_FC_PACK_MAX_FLOATS / K && rc_packed_rows_ok(M, K);
}

typedef struct {
    int64_t M, out, inner, lda, ldc, n_panels;
    const float *A, *P, *bias;
    float *C;
    int path;
    int blk, cont;   /* A in blocks (rc_gemm_wgrad); accumulate into C */
    int64_t bk, bs;  /* the blocks: bk columns, bs floats apart (one block: bk = inner, bs = 0) */
    const float *X;  /* rc_gemm_wgrad: each part first packs its panels of X's inner rows (ldx apart) into P,
                      * which is then the caller's writable work buffer */
    int64_t ldx;
    const float *Z;  /* rc_gemm_packed's addend or NULL */
} gemm_job;

/* Part p of parts: the panels [p * n / parts, (p + 1) * n / parts). */
static void run_part(const void *job, int p, int parts)
{
    const gemm_job *j = job;
    int64_t pb = j->n_panels * p / parts, pe = j->n_panels * (p + 1) / parts;
    int64_t ob = pb * RC_PACK_NR, oe = pe * RC_PACK_NR < j->out ? pe * RC_PACK_NR : j->out;
    if (ob >= oe) return;
    if (j->X) rc_pack_b(j->inner, oe - ob, j->X + ob, j->ldx, 1, (float *)j->P + ob * j->inner);
#ifdef RC_PACKED_X86
    if (j->path == 2) {
        gemm_avx512(j->blk ? &tiles_blk : &tiles_std, j->M, j->out, j->inner, j->A, j->lda, j->bk, j->bs, j->P,
                    j->bias, j->Z, j->C, j->ldc, j->cont, ob, oe);
        return;
    }
    if (j->path == 4 && !j->blk && !j->cont) {
        gemm_avx2(j->M, j->out, j->inner, j->A, j->lda, j->P, j->bias, j->Z, j->C, j->ldc, ob, oe);
        return;
    }
#endif
    gemm_scalar(j->M, j->out, j->inner, j->A, j->lda, j->bk, j->bs, j->P, j->bias, j->Z, j->C, j->ldc, j->cont, ob,
                oe);
}

/* ---------------------------------------------------------------- helper threads (rc_par_run)
 * The products of a serial step loop are split over as many threads as
 * OpenBLAS had when the loop started (the caller plus persistent helpers):
 * rc_gemm_packed by panels, rc_sgemm's fixed chunks (blas.c). Inside the RNN
 * executor's run the parts go to the executor's idle threads instead
 * (rc_step_help_run; rnn/executor.c "Helping"). A part's results never
 * depend on the thread that runs it, so the split never changes a bit. One
 * product at a time uses the helpers; a concurrent one (another Python
 * thread) runs on its caller alone. A helper that finished a part polls for
 * the next product for rc_flag_spin_ns() before it sleeps, and the caller
 * polls for the helpers' parts the same way: in a step loop the next product
 * comes within microseconds, and a wake-up costs that much. */
#define RC_PACK_MAX_THREADS 64
typedef struct {
    rc_part_fn fn;
    const void *ctx;
    int parts;
} par_job;
static struct {
    pthread_mutex_t mu;   /* guards the fields below */
    pthread_cond_t go, done;
    int n_helpers;        /* helper threads started */
    par_job job;
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
        par_job j = pool.job;
        pthread_mutex_unlock(&pool.mu);
        j.fn(j.ctx, p, j.parts);
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

void rc_par_run(int threads, int parts, rc_part_fn fn, const void *ctx)
{
    if (parts <= 0) return;
    if (threads > RC_PACK_MAX_THREADS) threads = RC_PACK_MAX_THREADS;
    if (threads > parts) threads = parts;
    if (threads >= 2 && rc_step_help_run(parts, fn, ctx)) return; /* inside an executor's run: its idle threads */
    if (threads < 2) {
        for (int p = 0; p < parts; p++) fn(ctx, p, parts);
        return;
    }
    pthread_once(&pool_once, pool_init);
    pthread_mutex_lock(&pool.mu);
    if (pool.busy || pool_grow(threads - 1) == 0) {
        pthread_mutex_unlock(&pool.mu);
        for (int p = 0; p < parts; p++) fn(ctx, p, parts);
        return;
    }
    pool.busy = 1;
    pool.job = (par_job){fn, ctx, parts};
    pool.next_part = 0;
    __atomic_store_n(&pool.remaining, parts, __ATOMIC_RELAXED);
    pool.spin_ns = threads <= rc_num_cores() ? rc_flag_spin_ns() : 0;
    __atomic_add_fetch(&pool.gen, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&pool.go);
    while (pool.next_part < parts) { /* the caller takes parts too */
        int p = pool.next_part++;
        pthread_mutex_unlock(&pool.mu);
        fn(ctx, p, parts);
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

/* Rows below which a product counts as this many for the split threshold
 * (gemm_run). One thread, hidden 256 (M x 1024 x 256, eight packs taking
 * turns): 1-4 rows 8.9-10.7 us, 8 rows 16.9 us, so 1-3 rows take about
 * what 4 would; at hidden 256 that is 2^20 multiply-adds, RC_PAR_SPLIT_MIN.
 * The LSTM benchmark, hidden 256, 2 layers, T = 50, batch 1, forward only,
 * serial: 31982 -> 47798 entries/s with 2 BLAS threads (1 thread: 33084),
 * and layered_LSTM 40541 -> 73585. */
#define RC_SPLIT_MIN_ROWS 4
static int64_t n_split;
int64_t rc_packed_splits(void) { return __atomic_load_n(&n_split, __ATOMIC_RELAXED); }

/* Splits job j's panels over the calling thread's step threads (see
 * rc_gemm_packed in packed_gemm.h). */
static void gemm_run(gemm_job *j)
{
    double work = (double)j->M * (double)j->out * (double)j->inner;
    /* A product of fewer than RC_SPLIT_MIN_ROWS rows takes about as long as one of that many (it reads
     * the whole pack either way), so the split threshold counts it as that many. Only for splitting
     * over the serial loop's threads: inside the executor (rc_step_split_threads of the real work)
     * helping such products measured no faster. */
    double split_rows = (double)(j->M < RC_SPLIT_MIN_ROWS ? RC_SPLIT_MIN_ROWS : j->M);
    double split_work = split_rows * (double)j->out * (double)j->inner;
    int threads = rc_step_split_threads(work, RC_PAR_SPLIT_MIN);
    if (threads <= 0) threads = rc_blas_num_threads(); /* outside a step loop */
    if (threads > RC_PACK_MAX_THREADS) threads = RC_PACK_MAX_THREADS;
    if (threads > j->n_panels) threads = (int)j->n_panels;
    if (threads < 2 || split_work < RC_PAR_SPLIT_MIN) threads = 1;
    if (threads >= 2) __atomic_add_fetch(&n_split, 1, __ATOMIC_RELAXED);
    rc_par_run(threads, threads, run_part, j);
}

void rc_gemm_packed(int64_t M, int64_t out, int64_t inner, const float *A, int64_t lda, const float *P,
                    const float *bias, const float *Z, float *C, int64_t ldc)
{
    __atomic_add_fetch(&n_calls, 1, __ATOMIC_RELAXED);
    if ((uintptr_t)P % 64) __atomic_add_fetch(&n_unaligned, 1, __ATOMIC_RELAXED);
    if (M <= 0 || out <= 0) return;
    gemm_job j = {M, out, inner, lda, ldc, (out + RC_PACK_NR - 1) / RC_PACK_NR, A, P, bias, C, 0, 0, 0, inner, 0,
                  NULL, 0, Z};
    j.path = active_path();
    gemm_run(&j);
}

int rc_wgrad_packed_available(void) { return active_path() == 2; }

static int64_t n_wgrad_calls;
int64_t rc_wgrad_calls(void) { return __atomic_load_n(&n_wgrad_calls, __ATOMIC_RELAXED); }

/* Inner rows per pass of rc_gemm_wgrad. A pass's pack of two panels (64 columns x kc rows) has to
 * stay in L2 while every row tile uses it: on Zen 5 (1 MB L2) the whole inner dimension in one pass
 * (T x batch: 3200 rows at hidden 512 / batch 64, 800 KB) streamed it from L3 and ran at half the
 * speed, and 256 rows (64 KB) measured best of 128, 192 and 256. But each pass also costs: on a Xeon
 * VM (2 MB L2, slow L3) one thread ran 5-15% faster and two threads 1.1-1.3x faster with 1024 rows
 * than with 256 (C loop, 2 threads: hidden 256 / batch 16, 800 rows, one pass instead of four,
 * 281-284 -> 345-373 GFLOP/s; hidden 512 / batch 64 311-314 -> 347-348; 2048 rows 362), and the
 * LSTM benchmark's training 1.035x (hidden 256 / batch 16, executor; serial 1.048x), 1.013x (512 /
 * 64) and 1.027x (hidden 128 / batch 32, 2 layers), the two alternating in one process. So 1024 rows
 * (a 256 KB pack) where L2 holds 2 MB or more, 256 elsewhere or where the size is not known (Zen 5
 * keeps what it measured best). Passes change no bit. */
#define RC_WGRAD_KC_SMALL_L2 256
#define RC_WGRAD_KC_LARGE_L2 1024
static int64_t wgrad_kc_forced;

int64_t rc_wgrad_force_kc(int64_t kc)
{
    int64_t old = wgrad_kc_forced;
    wgrad_kc_forced = kc;
    return old;
}

int64_t rc_wgrad_kc(void)
{
    if (wgrad_kc_forced > 0) return wgrad_kc_forced;
    static int64_t kc; /* benign race: every thread computes the same */
    int64_t k = __atomic_load_n(&kc, __ATOMIC_RELAXED);
    if (k == 0) {
        long l2 = 0;
#ifdef _SC_LEVEL2_CACHE_SIZE
        l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
        k = l2 >= 2L * 1024 * 1024 ? RC_WGRAD_KC_LARGE_L2 : RC_WGRAD_KC_SMALL_L2;
        __atomic_store_n(&kc, k, __ATOMIC_RELAXED);
    }
    return k;
}

void rc_gemm_wgrad(int64_t M, int64_t out, int64_t nb, int64_t bk, const float *Ab, const float *X, int64_t ldx,
                   float *C, int64_t ldc, float *work, int from_zero)
{
    __atomic_add_fetch(&n_wgrad_calls, 1, __ATOMIC_RELAXED);
    if ((uintptr_t)work % 64) __atomic_add_fetch(&n_unaligned, 1, __ATOMIC_RELAXED);
    if (M <= 0 || out <= 0) return;
    if (nb <= 0 || bk <= 0) { /* an empty sum */
        if (from_zero)
            for (int64_t m = 0; m < M; m++) memset(C + m * ldc, 0, sizeof(float) * (size_t)out);
        return;
    }
    const int64_t kc = rc_wgrad_kc();
    int64_t inner = nb * bk, width = (out + RC_PACK_NR - 1) / RC_PACK_NR * RC_PACK_NR;
    int path = active_path();
    if (path != 2) path = 3; /* the blocked A has only the AVX-512 kernel and the reference */
    /* passes over [i0, i0 + n): whole blocks, or pieces of one block wider than kc;
     * each continues every element's FMA chain from C, so the passes change no bit */
    for (int64_t i0 = 0; i0 < inner;) {
        int64_t b = i0 / bk, k0 = i0 % bk, n, nblk, kw;
        if (bk >= kc) {
            kw = bk - k0 < kc ? bk - k0 : kc;
            nblk = 1;
        } else {
            kw = bk;
            nblk = kc / bk;
            if (nblk > nb - b) nblk = nb - b;
        }
        n = kw * nblk;
        /* each part packs the panels it multiplies (on the thread that uses them, no serial pack) */
        gemm_job j = {M, out, n, bk, ldc, width / RC_PACK_NR, Ab + b * M * bk + k0, work + i0 * width, NULL, C,
                      path, 1, !(from_zero && i0 == 0), kw, M * bk, X + i0 * ldx, ldx, NULL};
        gemm_run(&j);
        i0 += n;
    }
}
