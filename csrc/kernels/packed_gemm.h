/* kernels/packed_gemm.h -- small-M matrix products against a matrix packed
 * once: the step FCs of a recurrent net (few rows: the batch) reuse the same
 * weight at every timestep.
 *
 * Why not OpenBLAS: cblas_sgemm repacks both operands at every call, and at
 * M = 16 rows that repacking of the weight is about half of the call
 * (measured with perf); OpenBLAS has no pack-once interface (MKL's
 * cblas_sgemm_pack, which oneDNN and torch.nn.LSTM use, is that interface).
 * RecurrentNetwork(Gradient) packs each step weight once per run
 * (rc_pack_b) and the step FC / FCGradient ops multiply against the pack
 * (rc_gemm_packed). An FC outside a step loop whose inner dimension is
 * short packs its own weight at every run (rc_fc_pack_ok). Anything else goes
 * to OpenBLAS.
 *
 * Determinism: every output element is one fused multiply-add chain over the
 * inner dimension in increasing order, starting from 0, then one addition of
 * the bias. That is the same on every code path (AVX-512, AVX2, the scalar
 * reference), every tile and edge, and every thread, so results never depend on the executor,
 * the thread count or the position of a row in the matrix.
 */
#ifndef RC_PACKED_GEMM_H
#define RC_PACKED_GEMM_H

#include "../core/rc_core.h"

#define RC_PACK_NR 32 /* columns per packed panel */

/* Packs B (inner x out, element (i, o) at src[i * s_i + o * s_o]) into
 * panels of RC_PACK_NR columns: P[o / NR][i][o % NR], the last panel padded
 * with zeros. P holds rc_pack_floats(inner, out) floats. */
RC_INTERNAL int64_t rc_pack_floats(int64_t inner, int64_t out);
RC_INTERNAL void rc_pack_b(int64_t inner, int64_t out, const float *src, int64_t s_i, int64_t s_o, float *P);

/* A buffer of `floats` floats for a pack, 64-byte aligned, so that every
 * 64-byte load of a panel row is one cache line (malloc's 16-byte alignment
 * split every AVX-512 load of the pack over two lines: 10% slower products at
 * 64 x 512 by 512 x 2048, 5% at 16 x 256 by 256 x 1024). From malloc (the
 * allocation-failure tests reach it); *raw receives what to free(). NULL (and
 * *raw NULL) when out of memory or the size overflows. */
RC_INTERNAL float *rc_pack_alloc(int64_t floats, void **raw);

/* 1 when this CPU runs rc_gemm_packed fast (x86-64 with AVX-512F, or with
 * AVX2 and FMA); callers use rc_sgemm otherwise. The environment variable
 * RECURRENT_PACKED_GEMM (read once) set to 0 turns the path off (0 here);
 * set to avx2 it makes an AVX-512 CPU run the AVX2 kernel (what an AVX2-only
 * machine runs; the bits are the same). */
RC_INTERNAL int rc_packed_available(void);
/* "avx512", "avx2" or "none": the kernel rc_gemm_packed runs. */
RC_INTERNAL const char *rc_packed_kernel(void);
/* Bytes from which a step product's packed weight has the AVX-512 kernel's row tiles prefetch the
 * next panel: 2 MB on AMD CPUs, 1 MB on others (packed_gemm.c); 0 without the x86 kernels. */
RC_INTERNAL int64_t rc_packed_pf_next_min_bytes(void);

/* C[m, o] = sum_i A[m, i] * B[i, o] (+ bias[o] when bias != NULL)
 * (+ Z[m, o] when Z != NULL) for m < M, o < out, the two additions in that
 * order after the FMA chain (Z: the Sum that follows a step FC, done in the
 * store; the same bits as the FC and then the Sum); A rows lda apart, C and
 * Z rows ldc apart, P from rc_pack_b.
 * Requires rc_packed_available(). Overwrites C; C must not overlap A, P or Z.
 * Uses the calling thread's step threads (rc_step_blas_threads: in a serial
 * step loop the OpenBLAS thread count found at its start, one in an executor
 * worker, with the executor's idle threads helping (rc_step_split_threads);
 * outside step loops OpenBLAS's count), splitting the columns, from 2^20
 * multiply-adds (a product of fewer than 4 rows counted as 4: it reads the
 * whole pack either way); the bits are the same. */
RC_INTERNAL void rc_gemm_packed(int64_t M, int64_t out, int64_t inner, const float *A, int64_t lda, const float *P,
                                const float *bias, const float *Z, float *C, int64_t ldc);

/* dst (cols x rows, rows ldd apart) = src^T (src: rows x cols, rows lds
 * apart); 8 x 8 blocks in AVX2 registers where the CPU has them. */
RC_INTERNAL void rc_transpose(int64_t rows, int64_t cols, const float *src, int64_t lds, float *dst, int64_t ldd);

/* The weight gradients that RecurrentNetworkGradient sums after its step
 * loop (dW += sum_t dY_t^T X_t), from a stash of the steps' dY^T:
 *   C[m, o] += sum_{b < nb, k < bk} Ab[b * M * bk + m * bk + k] * X[(b * bk + k) * ldx + o]
 * (Ab: nb blocks of M x bk, block b = dY_b^T; X: the nb * bk rows of the
 * steps' inputs). Every element is one FMA chain in increasing (b, k),
 * starting from C[m, o], or from 0 when from_zero (C is then only written:
 * the same bits as from a C of +0.0, without reading or zeroing C first):
 * the same bits for any thread count. X is packed
 * into work (rc_pack_floats(nb * bk, out) floats). The AVX-512 kernel when
 * rc_wgrad_packed_available() (measured 2x OpenBLAS's AVX2 kernels and as
 * fast as its AVX-512 ones on the LSTM benchmark's shapes); otherwise the scalar
 * reference (tests). Threads as rc_gemm_packed. */
RC_INTERNAL int rc_wgrad_packed_available(void);
RC_INTERNAL void rc_gemm_wgrad(int64_t M, int64_t out, int64_t nb, int64_t bk, const float *Ab, const float *X,
                               int64_t ldx, float *C, int64_t ldc, float *work, int from_zero);
RC_INTERNAL int64_t rc_wgrad_calls(void);
/* Inner rows per pass of rc_gemm_wgrad: 1024 where L2 holds 2 MB or more (sysconf), else 256.
 * rc_wgrad_force_kc (tests) sets it (0: back to that choice) and returns the previous setting;
 * not thread-safe. */
RC_INTERNAL int64_t rc_wgrad_kc(void);
RC_INTERNAL int64_t rc_wgrad_force_kc(int64_t kc);

/* Number of rc_gemm_packed calls so far (tests check the path is taken). */
RC_INTERNAL int64_t rc_packed_calls(void);
/* Number of rc_gemm_packed and rc_gemm_wgrad calls whose pack (P, work) was not 64-byte aligned
 * (tests check that the ops' packs come from rc_pack_alloc). */
RC_INTERNAL int64_t rc_packed_unaligned_calls(void);
/* Number of products (rc_gemm_packed and rc_gemm_wgrad) split over two or
 * more threads so far (tests check the split rule: at least 2^20
 * multiply-adds, a product of fewer than 4 rows counted as 4 rows). */
RC_INTERNAL int64_t rc_packed_splits(void);
/* Tests: makes rc_gemm_packed take one path (2 AVX-512F, 3 the scalar
 * reference, 4 AVX2 + FMA; -1: the CPU's best again); returns the previous setting.
 * The caller must know the CPU has the instructions. Not thread-safe. */
RC_INTERNAL int rc_packed_force_path(int path);

/* Rows a step product always runs on the packed kernel with (the AVX2
 * kernel's edge buffer holds that many rows). */
#define RC_PACKED_MAX_M 64
/* More rows are packed while the product's left operand (M x inner floats,
 * read again for every panel or panel pair) is at most this many floats:
 * 4 MB on the AVX-512 kernel, 512 KB on the AVX2 one (rc_packed_rows_ok). */
#define RC_PACKED_MAX_A (1 << 20)
#define RC_PACKED_MAX_A_AVX2 (1 << 17)

/* Whether a step product of M rows against a packed weight with `inner`
 * rows (the product's inner dimension) runs on the packed kernel rather than
 * OpenBLAS, on the path products take now: up to RC_PACKED_MAX_M rows on
 * every path, more while M x inner is at most RC_PACKED_MAX_A (AVX-512) or
 * RC_PACKED_MAX_A_AVX2 (AVX2, and the scalar reference). Measured in the LSTM
 * benchmark (2 threads, serial and executor, forward-only and training, Zen
 * 5, against OpenBLAS on the same products): the AVX-512 kernel 1.02-1.4x
 * faster at batch 128-1024, hidden 64-1024, and still 1.08x forward-only and
 * even in training at 1024 x 1024; the AVX2 kernel 1.03-1.2x at batch 128,
 * hidden 64-512, and 1.13x forward-only at 512 x 256, but 0.95x at 1024 x 1024.
 * The decision depends on the shapes only, so executor on and off agree. */
RC_INTERNAL int rc_packed_rows_ok(int64_t M, int64_t inner);

/* Whether an FC (Y = X W^T + b, X: M x K, W: N x K) that has no pack from
 * RecurrentNetwork packs W itself (into a buffer of rc_pack_floats(K, N)
 * floats) and multiplies with rc_gemm_packed rather than OpenBLAS:
 * rc_packed_available(), K <= 128, M >= 4, 32 <= N <= 2^22 / K and
 * rc_packed_rows_ok(M, K) (measurements in packed_gemm.c). Depends on the
 * shapes and the CPU only. */
RC_INTERNAL int rc_fc_pack_ok(int64_t M, int64_t N, int64_t K);

/* A packed step weight, shared by the step-op instances of one run. The
 * ops check src, inner and out against their inputs before using it. */
typedef struct rc_packed_w {
    const float *src;  /* the weight's data when packed */
    int64_t inner, out;
    int trans;         /* 1: B = W^T (FC: Y = X W^T); 0: B = W (FCGradient: dX = dY W) */
    float *data;       /* 64-byte aligned, inside raw (rc_pack_alloc) */
    void *raw;         /* owned by whoever packed it: free(raw) releases data */
    int64_t cap;       /* floats allocated */
} rc_packed_w;

/* ops/math.c: gives an FC (pw->trans == 1) or FCGradient (pw->trans == 0,
 * for dX) op with axis_w = 1 the packed weight to use while its W input is
 * pw->src with matching shape and rows rc_packed_rows_ok takes; NULL clears
 * it. Returns 1 when set (0: another op type, or the arguments do not fit).
 * The pack must outlive every run of the op until it is cleared. */
RC_INTERNAL int rc_fc_set_packed(rc_op *op, const rc_packed_w *pw);

/* ops/math.c: RecurrentNetwork's fusion of a step FC with the Sum after it.
 * The step net has FC(X, W, b, Z) -> Y (argument rnn_internal_fused_sum: the
 * 4th input is the Sum's addend; its value, the Sum's distance) followed,
 * later, by Sum(Y, Z) -> Y. Bound, every
 * run of the FC stores (X W^T + b) + Z when Y and Z are float32 of one shape
 * and apart in memory, and tells the Sum, which then does nothing; otherwise
 * the FC stores X W^T + b and the Sum runs as usual. Unbound, the FC ignores
 * Z. Returns 1 when bound (0: the ops do not have that form; the blobs are
 * compared, not the names). Both ops must belong to one net. */
RC_INTERNAL int rc_fc_bind_sum(rc_op *fc, rc_op *sum);
/* Sums done by FCs so far (tests check the fusion is taken). */
RC_INTERNAL int64_t rc_fc_fused_sums(void);
/* ops/math.c: FC runs that packed their own weight (rc_fc_pack_ok) so far (tests). */
RC_INTERNAL int64_t rc_fc_self_packed(void);

#endif
