/* ops/bcast.h -- numpy-style broadcasting of two inputs (Caffe2's
 * elementwise ops with broadcast=0 and unequal shapes), shared by ops/math.c
 * (Add, Sub, Mul, Div, EQ..GE, DivGradient) and ops/bcast.c (And, Or, Xor,
 * Not, AddGradient, SubGradient, MulGradient).
 *
 * A broadcast is described by rc_bc: the result's shape and, for the
 * iteration, the result's dims with size-1 dims dropped and adjacent dims
 * merged where both inputs are laid out contiguously across them, each with
 * the element stride of A and of B (0 where that input is repeated). Caffe2's
 * legacy form (broadcast=1: B a contiguous run of A's dims) is one such
 * description too (rc_bc_legacy). */
#ifndef RC_OPS_BCAST_H
#define RC_OPS_BCAST_H

#include "../core/rc_core.h"
#include <stdint.h>

typedef struct rc_bc {
    int out_ndim;                  /* the result's shape */
    int64_t out_dims[RC_MAX_DIMS];
    int64_t n;                     /* elements of the result */
    int ndim;                      /* iteration dims (>= 1 when n > 0) */
    int64_t dims[RC_MAX_DIMS];
    int64_t sa[RC_MAX_DIMS];       /* A's element stride per iteration dim (0: repeated) */
    int64_t sb[RC_MAX_DIMS];       /* B's */
} rc_bc;

/* numpy's rule for inputs ia (A) and ib (B): dims aligned from the last, a dim
 * of 1 (or a missing leading dim) stretches to the other's. Shapes that do
 * not broadcast: ValueError naming the op, both blobs and their shapes. */
RC_INTERNAL rc_status rc_bc_numpy(rc_op *op, int ia, int ib, rc_bc *bc, rc_err *err);

/* Caffe2's legacy form: A (shape of the result) seen as [pre, n, post] and B as [n]. */
RC_INTERNAL void rc_bc_legacy(const rc_tensor *A, int64_t pre, int64_t n, int64_t post, rc_bc *bc);

/* Whether the result's shape is t's. */
RC_INTERNAL int rc_bc_same_shape(const rc_bc *bc, const rc_tensor *t);

/* The in-place rule (Caffe2's too): output 0 may be an input's blob only when
 * the result has that input's shape; ValueError otherwise. */
RC_INTERNAL rc_status rc_bc_check_inplace(rc_op *op, int ia, int ib, const rc_bc *bc, rc_err *err);

/* Walks bc in the result's element order, one row of the innermost iteration
 * dim at a time: fn(ctx, len, oa, sa, ob, sb, oc) for result elements oc ..
 * oc+len-1, which read A at oa + k sa and B at ob + k sb (for ops/bmm_pow.c). */
typedef void (*rc_bc_row_fn)(void *ctx, int64_t len, int64_t oa, int64_t sa, int64_t ob, int64_t sb, int64_t oc);
RC_INTERNAL void rc_bc_rows(const rc_bc *bc, rc_bc_row_fn fn, void *ctx);

typedef enum rc_bc_kind {
    RC_BC_ADD, RC_BC_SUB, RC_BC_MUL, RC_BC_DIV,
    RC_BC_EQ, RC_BC_NE, RC_BC_LT, RC_BC_LE, RC_BC_GT, RC_BC_GE,
    RC_BC_AND, RC_BC_OR, RC_BC_XOR,
    RC_BC_BITAND, RC_BC_BITOR, RC_BC_BITXOR /* int32 only */
} rc_bc_kind;

/* C (output 0) = A (input 0) kind B (input 1) over bc, inputs of one dtype
 * (checked by the caller): arithmetic gives the inputs' dtype, comparisons
 * and logical ops int32 0 / 1, the bitwise ops int32. int32 Div checks every divisor first (0, or -1
 * under INT32_MIN: ValueError naming the positions) and leaves the output
 * untouched then. The output may be an input only as rc_bc_check_inplace allows. */
RC_INTERNAL rc_status rc_bc_binary(rc_op *op, rc_bc_kind kind, const rc_bc *bc, rc_err *err);

/* From ops/math.c: the arguments broadcast / axis of a binary elementwise op
 * ('axis', or Caffe2's one-letter 'axis_str' placed in 'order', needs
 * broadcast=1), and the broadcast of
 * inputs ia (A) and ib (B) they select: legacy (broadcast=1), equal shapes, or
 * numpy-style. */
RC_INTERNAL rc_status rc_binary_args(rc_op *op, int *broadcast, int64_t *axis, rc_err *err);
RC_INTERNAL rc_status rc_binary_bc(rc_op *op, int ia, int ib, int broadcast, int64_t axis, rc_bc *bc,
                                   rc_err *err);

/* From ops/bcast.c: the gradient of C = A kind B (kind ADD, SUB, MUL or DIV)
 * for the inputs (dC, A, B[, C]) and broadcast bc of A and B: dA = dC (* B, /
 * B) and dB = dC (-dC, * A, -dC C / B), each summed over the dims where its
 * input was repeated, in double and in C's element order (deterministic),
 * shaped as its input. Where an input was not repeated the float value is
 * written directly (bitwise the elementwise result). dA may be dC's blob.
 * acc / acc_n: the op's double scratch (owned by the op's state, grown here). */
RC_INTERNAL rc_status rc_bc_grad(rc_op *op, rc_bc_kind kind, const rc_bc *bc, double **acc, int64_t *acc_n,
                                 rc_err *err);

/* The input checks of rc_bc_grad (dtypes; dC and, for DIV, C of the result's
 * shape), for the ops' net-creation check. */
RC_INTERNAL rc_status rc_bc_grad_check(rc_op *op, rc_bc_kind kind, const rc_bc *bc, rc_err *err);

/* Setup check of the gradient ops: output 0 (dA) may name an input's blob
 * only when that blob is dC's (input dc). */
RC_INTERNAL rc_status rc_bc_grad_setup_check(rc_op *op, int dc, rc_err *err);

#endif
