/* ops/bmm_pow.c -- BatchMatMul with batch broadcasting and its gradient op,
 * Pow with an exponent tensor and its gradient, Gather along an axis,
 * BatchGather and BatchGatherGradient.
 *
 * BatchMatMul(A, B) with broadcast=1 (ops/batch.c calls rc_bmm_bc_run; its
 * broadcast=0 path is unchanged): numpy.matmul's rules, as Caffe2's op with
 * broadcast=1. A 1-D A of shape (K,) is the row (1, K) and a 1-D B of shape
 * (K,) the column (K, 1); that dim is dropped from Y. Both 1-D: their dot
 * product, Y of shape (1,) (as Caffe2). The trans flag of a 1-D operand is
 * ignored (Caffe2 transposed the padded (1, K) to (K, 1), which gave Y a shape
 * that did not hold the result). The batch dims (all but the last two) are
 * aligned from the right and broadcast as numpy: equal, or 1 (or missing)
 * stretching to the other; anything else is a ValueError naming both blobs and
 * shapes. Y = batch dims + (M,) + (N,). Each product goes through rc_sgemm.
 *
 * BatchMatMulGradient(A, B, dY) -> (dA, dB) (ours; Caffe2 had no gradient with
 * broadcast=1): arguments trans_a, trans_b as the forward op's (and broadcast,
 * which must be 1 if given). dA and dB have A's and B's shapes; each product
 * of the table in recurrent/_grad_batch.py is added into the block of its
 * operand, batch element by batch element in the result's order, so blocks
 * repeated by the broadcast get the sum over their repeats (in float, through
 * rc_sgemm with beta = 1, deterministic).
 *
 * Pow(X, E) -> Y, E a float32 tensor (ops/math.c calls rc_pow_tensor_run):
 * broadcast as Mul (broadcast=1 with axis: Caffe2's legacy form, Y of X's
 * shape; equal shapes; unequal shapes without broadcast: numpy-style, Y of the
 * broadcast shape; Caffe2's Pow knew only the legacy form). Per element y =
 * x ^ e with the argument path's exact cases (e = 0, 1, 2, 0.5, -1), powf
 * otherwise (negative x with a non-integer e: NaN, as NumPy).
 *
 * PowGradient(dY, X, E, Y) -> (dX, dE) (Caffe2's inputs): per element
 *   dx = dy e x^(e - 1)   (0 where e == 0: Y is the constant 1),
 *   de = dy y log(x)      (0 where x == 0 and e >= 0, where Caffe2's
 *                          formula gave NaN; x < 0 gives NaN: no real
 *                          derivative),
 * each computed in float and summed in double over the dims where its input
 * was repeated (one term: that float exactly), then shaped as X and E.
 *
 * Gather(DATA, INDICES) with axis != 0 (ops/embed.c calls rc_gather_axis_run;
 * axis 0 keeps its own path): DATA seen as (outer, D, inner) at the canonical
 * axis, OUT = DATA.shape[:axis] + INDICES.shape + DATA.shape[axis+1:],
 *   OUT[o, n, :] = DATA[o, INDICES.flat[n], :];
 * every index is checked first (IndexError naming the position and value).
 * Arguments as Caffe2's Gather: wrap_indices=1: an index in [-D, 0) means
 * index + D (out of [-D, D): IndexError; Caffe2's default was wrap_indices=1
 * at axis 0 when the argument was absent, ours is 0 everywhere: a negative
 * index stays an error unless asked for); match_outer=1 (axis >= 1):
 * INDICES must begin with DATA's dims before axis and each outer position o
 * uses its own indices INDICES[o, ...]: OUT = DATA.shape[:axis] +
 * INDICES.shape[axis:] + DATA.shape[axis+1:]. Gather with either argument
 * (any axis) takes this path.
 * BatchGather(DATA, INDICES) is Gather with axis=1 (DATA at least 2-D).
 * BatchGatherGradient(DATA, INDICES, dOUT) -> dDATA (argument axis, default 1,
 * as Caffe2's): zeros of DATA's shape, then dDATA[o, INDICES.flat[n], :] +=
 * dOUT[o, n, :] in order (repeated indices add up); wrap_indices and
 * match_outer as Gather's (the gradient maker passes them on).
 *
 * Kernels are plain functions of pointers and sizes; no global state. The
 * gradient ops' scratch lives in op->state or the caller's state.
 */
#include "../core/rc_core.h"
#include "bcast.h"
#include "bmm_pow.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ BatchMatMul, broadcast */

typedef struct bmm_bc {
    int nb;                        /* batch dims of the result */
    int64_t bdims[RC_MAX_DIMS];
    int64_t sa[RC_MAX_DIMS];       /* A's matrix stride per batch dim (0: repeated) */
    int64_t sb[RC_MAX_DIMS];       /* B's */
    int64_t batch;                 /* prod(bdims) */
    int64_t M, N, K;
    int ta, tb;                    /* the trans flags used (0 for a 1-D operand) */
    int out_ndim;
    int64_t out_dims[RC_MAX_DIMS];
} bmm_bc;

/* A, B float32 of at least 1 dim, inner dims agreeing, batch dims broadcasting. */
static rc_status bmm_bc_shapes(rc_op *op, int trans_a, int trans_b, bmm_bc *s, rc_err *err)
{
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err)) || (st = rc_check_input(op, 1, RC_F32, err))) return st;
    const rc_tensor *A = rc_in(op, 0), *B = rc_in(op, 1);
    for (int i = 0; i < 2; i++)
        if (rc_in(op, i)->ndim < 1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' must have at least 1 dim, got %s", i,
                              rc_in_name(op, i), RC_SHAPE(rc_in(op, i)));
    const int a1d = A->ndim == 1, b1d = B->ndim == 1;
    const int na = a1d ? 0 : A->ndim - 2, nbb = b1d ? 0 : B->ndim - 2;
    const int64_t a0 = a1d ? 1 : A->dims[A->ndim - 2], a1 = A->dims[A->ndim - 1];
    const int64_t b0 = B->dims[b1d ? 0 : B->ndim - 2], b1 = b1d ? 1 : B->dims[B->ndim - 1];
    s->ta = a1d ? 0 : trans_a;
    s->tb = b1d ? 0 : trans_b;
    s->M = s->ta ? a1 : a0;
    const int64_t Ka = s->ta ? a0 : a1;
    s->N = s->tb ? b0 : b1;
    const int64_t Kb = s->tb ? b1 : b0;
    if (Ka != Kb)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "inner dimensions differ: input 0 blob '%s' of shape %s gives %lld x %lld matrices "
                          "(trans_a=%d) but input 1 blob '%s' of shape %s gives %lld x %lld (trans_b=%d)",
                          rc_in_name(op, 0), RC_SHAPE(A), (long long)s->M, (long long)Ka, trans_a,
                          rc_in_name(op, 1), RC_SHAPE(B), (long long)Kb, (long long)s->N, trans_b);
    s->K = Ka;
    if (s->M > INT32_MAX || s->N > INT32_MAX || s->K > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "matrix sizes M=%lld, N=%lld, K=%lld exceed the BLAS limit of %d per dimension",
                          (long long)s->M, (long long)s->N, (long long)s->K, INT32_MAX);
    const int nb = na > nbb ? na : nbb;
    int64_t stra = 1, strb = 1; /* matrices per step of the current dim, from the last batch dim */
    s->batch = 1;
    for (int i = nb - 1; i >= 0; i--) {
        const int ia = i - (nb - na), ib = i - (nb - nbb);
        const int64_t da = ia >= 0 ? A->dims[ia] : 1, db = ib >= 0 ? B->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "batch dims do not broadcast: input 0 blob '%s' of shape %s and input 1 blob '%s' of "
                              "shape %s (batch dim %d from the right: %lld vs %lld; each must be equal or 1)",
                              rc_in_name(op, 0), RC_SHAPE(A), rc_in_name(op, 1), RC_SHAPE(B), nb - i,
                              (long long)da, (long long)db);
        s->bdims[i] = da == 1 ? db : da;
        s->sa[i] = da == 1 ? 0 : stra;
        s->sb[i] = db == 1 ? 0 : strb;
        stra *= da;
        strb *= db;
        s->batch *= s->bdims[i];
    }
    s->nb = nb;
    int nd = 0;
    for (int i = 0; i < nb; i++) s->out_dims[nd++] = s->bdims[i];
    if (!a1d) s->out_dims[nd++] = s->M;
    if (!b1d) s->out_dims[nd++] = s->N;
    if (a1d && b1d) s->out_dims[nd++] = 1;
    s->out_ndim = nd;
    return RC_OK;
}

/* Calls fn(ctx, i, oa, ob) for every batch element i of the result (in order),
 * oa / ob the matrix index of A / B it reads. */
typedef void (*bmm_elem_fn)(void *ctx, int64_t i, int64_t oa, int64_t ob);

static void bmm_walk(const bmm_bc *s, bmm_elem_fn fn, void *ctx)
{
    int64_t idx[RC_MAX_DIMS] = {0}, oa = 0, ob = 0;
    for (int64_t i = 0; i < s->batch; i++) {
        fn(ctx, i, oa, ob);
        for (int d = s->nb - 1; d >= 0; d--) {
            oa += s->sa[d];
            ob += s->sb[d];
            if (++idx[d] < s->bdims[d]) break;
            oa -= s->sa[d] * s->bdims[d];
            ob -= s->sb[d] * s->bdims[d];
            idx[d] = 0;
        }
    }
}

typedef struct bmm_ctx {
    const bmm_bc *s;
    const float *a, *b, *dy; /* borrowed inputs */
    float *y, *da, *db;      /* borrowed outputs */
} bmm_ctx;

static void bmm_fwd_elem(void *ctx, int64_t i, int64_t oa, int64_t ob)
{
    const bmm_ctx *c = ctx;
    const bmm_bc *s = c->s;
    rc_sgemm(s->ta, s->tb, s->M, s->N, s->K, 1.f, c->a + oa * s->M * s->K, c->b + ob * s->K * s->N, 0.f,
             c->y + i * s->M * s->N);
}

/* dA[oa] += (dY B^T, dY B, B dY^T or B^T dY^T), dB[ob] += (A^T dY, A dY, dY^T A or dY^T A^T) per flags. */
static void bmm_grad_elem(void *ctx, int64_t i, int64_t oa, int64_t ob)
{
    const bmm_ctx *c = ctx;
    const bmm_bc *s = c->s;
    const int64_t M = s->M, N = s->N, K = s->K;
    const float *a = c->a + oa * M * K, *b = c->b + ob * K * N, *dy = c->dy + i * M * N;
    float *da = c->da + oa * M * K, *db = c->db + ob * K * N;
    if (!s->ta)
        rc_sgemm(0, !s->tb, M, K, N, 1.f, dy, b, 1.f, da);
    else
        rc_sgemm(s->tb, 1, K, M, N, 1.f, b, dy, 1.f, da);
    if (!s->tb)
        rc_sgemm(!s->ta, 0, K, N, M, 1.f, a, dy, 1.f, db);
    else
        rc_sgemm(1, s->ta, N, K, M, 1.f, dy, a, 1.f, db);
}

rc_status rc_bmm_bc_check(rc_op *op, int trans_a, int trans_b, rc_err *err)
{
    bmm_bc s;
    return bmm_bc_shapes(op, trans_a, trans_b, &s, err);
}

rc_status rc_bmm_bc_run(rc_op *op, int trans_a, int trans_b, rc_err *err)
{
    bmm_bc s;
    rc_status st = bmm_bc_shapes(op, trans_a, trans_b, &s, err);
    if (st) return st;
    if ((st = rc_tensor_resize(rc_out(op, 0), RC_F32, s.out_ndim, s.out_dims, err)))
        return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    if (s.batch == 0 || s.M == 0 || s.N == 0) return RC_OK; /* an empty Y */
    float *y = rc_f32(rc_out(op, 0));
    if (s.K == 0) {
        memset(y, 0, (size_t)(s.batch * s.M * s.N) * sizeof *y); /* sums of no products */
        return RC_OK;
    }
    bmm_ctx c = {&s, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), NULL, y, NULL, NULL};
    bmm_walk(&s, bmm_fwd_elem, &c);
    return RC_OK;
}

typedef struct bmm_grad_state {
    int trans_a, trans_b;
} bmm_grad_state;

static rc_status bmm_grad_setup(rc_op *op, rc_err *err)
{
    bmm_grad_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    rc_status st;
    int64_t ta = 0, tb = 0, bc = 1;
    if ((st = rc_arg_i(&op->def, "trans_a", 0, &ta, err))) return st;
    if ((st = rc_arg_i(&op->def, "trans_b", 0, &tb, err))) return st;
    if ((st = rc_arg_i(&op->def, "broadcast", 1, &bc, err))) return st;
    if (bc == 0)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "argument broadcast=0: this op is the gradient of BatchMatMul with broadcast=1 (the "
                          "broadcast=0 gradient is made of BatchMatMul ops)");
    s->trans_a = ta != 0;
    s->trans_b = tb != 0;
    return RC_OK;
}

/* A, B, dY float32; dY has the forward result's shape. */
static rc_status bmm_grad_shapes(rc_op *op, bmm_bc *s, rc_err *err)
{
    const bmm_grad_state *g = op->state;
    rc_status st = bmm_bc_shapes(op, g->trans_a, g->trans_b, s, err);
    if (st || (st = rc_check_input(op, 2, RC_F32, err))) return st;
    const rc_tensor *dy = rc_in(op, 2);
    int ok = dy->ndim == s->out_ndim;
    for (int k = 0; ok && k < s->out_ndim; k++) ok = dy->dims[k] == s->out_dims[k];
    if (!ok) {
        rc_tensor want;
        rc_tensor_init(&want);
        want.dtype = RC_F32;
        want.ndim = s->out_ndim;
        memcpy(want.dims, s->out_dims, sizeof want.dims);
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 2 blob '%s' (dY) of shape %s must have the forward result's shape %s (input 0 blob "
                          "'%s' %s times input 1 blob '%s' %s)", rc_in_name(op, 2), RC_SHAPE(dy), RC_SHAPE(&want),
                          rc_in_name(op, 0), RC_SHAPE(rc_in(op, 0)), rc_in_name(op, 1), RC_SHAPE(rc_in(op, 1)));
    }
    return RC_OK;
}

static rc_status bmm_grad_check(rc_op *op, rc_err *err)
{
    bmm_bc s;
    return bmm_grad_shapes(op, &s, err);
}

static rc_status resize_like(rc_op *op, int o, const rc_tensor *like, rc_err *err)
{
    int64_t dims[RC_MAX_DIMS];
    memcpy(dims, like->dims, sizeof dims);
    rc_status st = rc_tensor_resize(rc_out(op, o), RC_F32, like->ndim, dims, err);
    if (st) return rc_op_fail(op, err, st, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
    return RC_OK;
}

/* BatchMatMulGradient: A, B, dY -> dA (shape of A), dB (shape of B). */
static rc_status bmm_grad_run(rc_op *op, rc_err *err)
{
    bmm_bc s;
    rc_status st = bmm_grad_shapes(op, &s, err);
    if (st) return st;
    const rc_tensor *A = rc_in(op, 0), *B = rc_in(op, 1);
    if ((st = resize_like(op, 0, A, err)) || (st = resize_like(op, 1, B, err))) return st;
    float *da = rc_f32(rc_out(op, 0)), *db = rc_f32(rc_out(op, 1));
    const int64_t na = rc_tensor_numel(A), nb = rc_tensor_numel(B);
    if (na) memset(da, 0, (size_t)na * sizeof *da);
    if (nb) memset(db, 0, (size_t)nb * sizeof *db);
    if (s.batch == 0 || s.M == 0 || s.N == 0 || s.K == 0) return RC_OK; /* no products: zeros */
    bmm_ctx c = {&s, rc_f32(A), rc_f32(B), rc_f32(rc_in(op, 2)), NULL, da, db};
    bmm_walk(&s, bmm_grad_elem, &c);
    return RC_OK;
}

/* ================================================================ Pow with an exponent tensor */

/* x ^ e with the exponent-argument kernel's exact cases (math_kernels.c rc_k_pow). */
static float pow_elem(float x, float e)
{
    if (e == 0.f) return 1.f;
    if (e == 1.f) return x;
    if (e == 2.f) return x * x;
    if (e == 0.5f) return sqrtf(x);
    if (e == -1.f) return 1.f / x;
    return powf(x, e);
}

/* e x^(e - 1) dy with rc_k_pow_grad's exact cases; 0 for e == 0. */
static float pow_grad_x(float x, float e, float dy)
{
    if (e == 0.f) return 0.f;
    if (e == 1.f) return dy;
    if (e == 2.f) return 2.f * x * dy;
    if (e == 0.5f) return 0.5f * dy / sqrtf(x);
    if (e == -1.f) return -dy / (x * x);
    return e * powf(x, e - 1.f) * dy;
}

/* dy y log(x); 0 where x == 0 and e >= 0 (y is 0 or 1 there, flat in e from above). */
static float pow_grad_e(float x, float e, float y, float dy)
{
    if (x == 0.f && e >= 0.f) return 0.f;
    return dy * y * logf(x);
}

typedef struct pow_ctx {
    const float *x, *e, *dy, *y; /* borrowed inputs */
    float *out;                  /* borrowed: Y (forward) */
    double *ax, *ae;             /* borrowed: the gradient sums per element of X and of E */
} pow_ctx;

static void row_pow(void *ctx, int64_t len, int64_t oa, int64_t sa, int64_t ob, int64_t sb, int64_t oc)
{
    const pow_ctx *p = ctx;
    for (int64_t k = 0; k < len; k++) p->out[oc + k] = pow_elem(p->x[oa + k * sa], p->e[ob + k * sb]);
}

static void row_pow_grad(void *ctx, int64_t len, int64_t oa, int64_t sa, int64_t ob, int64_t sb, int64_t oc)
{
    const pow_ctx *p = ctx;
    for (int64_t k = 0; k < len; k++) {
        const int64_t ia = oa + k * sa, ib = ob + k * sb, ic = oc + k;
        const float x = p->x[ia], e = p->e[ib], dy = p->dy[ic];
        p->ax[ia] += (double)pow_grad_x(x, e, dy);
        p->ae[ib] += (double)pow_grad_e(x, e, p->y[ic], dy);
    }
}

/* Pow(X, E)'s inputs, their broadcast into bc. */
static rc_status pow_tensor_shapes(rc_op *op, int broadcast, int64_t axis, rc_bc *bc, rc_err *err)
{
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err)) || (st = rc_check_input(op, 1, RC_F32, err))) return st;
    if ((st = rc_binary_bc(op, 0, 1, broadcast, axis, bc, err))) return st;
    return rc_bc_check_inplace(op, 0, 1, bc, err);
}

rc_status rc_pow_tensor_check(rc_op *op, int broadcast, int64_t axis, rc_err *err)
{
    rc_bc bc;
    return pow_tensor_shapes(op, broadcast, axis, &bc, err);
}

rc_status rc_pow_tensor_run(rc_op *op, int broadcast, int64_t axis, rc_err *err)
{
    rc_status st;
    rc_bc bc;
    if ((st = pow_tensor_shapes(op, broadcast, axis, &bc, err))) return st;
    if ((st = rc_tensor_resize(rc_out(op, 0), RC_F32, bc.out_ndim, bc.out_dims, err)))
        return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    pow_ctx p = {rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), NULL, NULL, rc_f32(rc_out(op, 0)), NULL, NULL};
    rc_bc_rows(&bc, row_pow, &p);
    return RC_OK;
}

/* PowGradient(dY, X, E, Y)'s inputs, the broadcast of X and E into bc. */
static rc_status pow_tensor_grad_shapes(rc_op *op, int broadcast, int64_t axis, rc_bc *bc, rc_err *err)
{
    rc_status st;
    for (int i = 0; i < 4; i++)
        if ((st = rc_check_input(op, i, RC_F32, err))) return st;
    if ((st = rc_binary_bc(op, 1, 2, broadcast, axis, bc, err))) return st;
    for (int i = 0; i < 4; i += 3) { /* dY and Y have the forward result's shape */
        if (rc_bc_same_shape(bc, rc_in(op, i))) continue;
        rc_tensor want;
        rc_tensor_init(&want);
        want.dtype = RC_F32;
        want.ndim = bc->out_ndim;
        memcpy(want.dims, bc->out_dims, sizeof want.dims);
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' of shape %s must have the shape %s of the forward result (input 1 blob "
                          "'%s' %s with input 2 blob '%s' %s)", i, rc_in_name(op, i), RC_SHAPE(rc_in(op, i)),
                          RC_SHAPE(&want), rc_in_name(op, 1), RC_SHAPE(rc_in(op, 1)), rc_in_name(op, 2),
                          RC_SHAPE(rc_in(op, 2)));
    }
    return RC_OK;
}

rc_status rc_pow_tensor_grad_check(rc_op *op, int broadcast, int64_t axis, rc_err *err)
{
    rc_bc bc;
    return pow_tensor_grad_shapes(op, broadcast, axis, &bc, err);
}

rc_status rc_pow_tensor_grad_run(rc_op *op, int broadcast, int64_t axis, double **acc, int64_t *acc_n,
                                 rc_err *err)
{
    rc_status st;
    rc_bc bc;
    if ((st = pow_tensor_grad_shapes(op, broadcast, axis, &bc, err))) return st;
    const rc_tensor *X = rc_in(op, 1), *E = rc_in(op, 2);
    const int64_t nx = rc_tensor_numel(X), ne = rc_tensor_numel(E), need = nx + ne;
    if (need > *acc_n) {
        double *p = realloc(*acc, sizeof(double) * (size_t)need);
        if (!p) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory (%lld doubles of scratch)", (long long)need);
        *acc = p;
        *acc_n = need;
    }
    if (need) memset(*acc, 0, sizeof(double) * (size_t)need);
    pow_ctx p = {rc_f32(X), rc_f32(E), rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 3)), NULL, *acc, *acc + nx};
    rc_bc_rows(&bc, row_pow_grad, &p); /* every input is read before any output is written */
    rc_tensor xs = *X, es = *E;        /* the shapes (X or E may be an output's blob) */
    if ((st = resize_like(op, 0, &xs, err))) return st;
    float *dx = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < nx; i++) dx[i] = (float)(*acc)[i];
    if ((st = resize_like(op, 1, &es, err))) return st;
    float *de = rc_f32(rc_out(op, 1));
    for (int64_t i = 0; i < ne; i++) de[i] = (float)(*acc)[nx + i];
    return RC_OK;
}

/* ================================================================ Gather along an axis */

/* The index of (o, k): idx[k], or idx[o * n + k] with match_outer (each outer position its own n
 * indices); a negative one plus D with wrap (values checked before: the result lies in [0, D)). */
static inline int64_t gather_index(const int32_t *idx, int64_t o, int64_t k, int64_t n, int64_t D, int wrap,
                                   int match_outer)
{
    const int64_t v = idx[match_outer ? o * n + k : k];
    return wrap && v < 0 ? v + D : v;
}

/* data: (outer, D, inner) of `es`-byte elements, idx: (n,) or (outer, n) -> out: (outer, n, inner). */
static void gather_axis_kernel(int64_t outer, int64_t D, int64_t inner, size_t es, int64_t n, const char *data,
                               const int32_t *idx, int wrap, int mo, char *out)
{
    const size_t row = (size_t)inner * es;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < n; k++)
            memcpy(out + (size_t)(o * n + k) * row,
                   data + (size_t)(o * D + gather_index(idx, o, k, n, D, wrap, mo)) * row, row);
}

/* dout: (outer, n, inner), idx as above -> ddata: (outer, D, inner) = 0, then ddata[o, index(o, k)] +=
 * dout[o, k]. */
static void gather_axis_grad_kernel(int64_t outer, int64_t D, int64_t inner, int64_t n, const int32_t *idx,
                                    int wrap, int mo, const float *dout, float *ddata)
{
    memset(ddata, 0, (size_t)(outer * D * inner) * sizeof *ddata);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < n; k++) {
            float *d = ddata + (o * D + gather_index(idx, o, k, n, D, wrap, mo)) * inner;
            const float *g = dout + (o * n + k) * inner;
            for (int64_t r = 0; r < inner; r++) d[r] += g[r];
        }
}

typedef struct gather_geo {
    int axis;                       /* canonical */
    int wrap, match_outer;          /* the arguments wrap_indices, match_outer */
    int64_t outer, D, inner, n;
    int out_ndim;
    int64_t out_dims[RC_MAX_DIMS];
} gather_geo;

/* DATA (float32 or int32; float32 when f32_only) with axis in [-ndim, ndim), INDICES int32 (their
 * values: gather_indices_ok): the output geometry. `what` names the op form for messages. */
static rc_status gather_geometry(rc_op *op, int64_t axis, int f32_only, int wrap, int mo, gather_geo *g,
                                 rc_err *err)
{
    const rc_tensor *data = rc_in(op, 0), *idx = rc_in(op, 1);
    rc_status st;
    if (f32_only || data->dtype != RC_I32) {
        if ((st = rc_check_input(op, 0, RC_F32, err)))
            return f32_only || st != RC_ERR_TYPE ? st
                   : rc_op_fail(op, err, RC_ERR_TYPE, "input 0 blob '%s' (DATA) must be float32 or int32, got %s",
                                rc_in_name(op, 0), RC_SHAPE(data));
    }
    if ((st = rc_check_input(op, 1, RC_I32, err))) return st;
    const int64_t a = axis < 0 ? axis + data->ndim : axis;
    if (a < 0 || a >= data->ndim)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "argument axis=%lld is out of range for input 0 blob '%s' (DATA) of shape %s (must be in "
                          "[-%d, %d))", (long long)axis, rc_in_name(op, 0), RC_SHAPE(data), data->ndim, data->ndim);
    if (mo) {
        /* match_outer (Caffe2's): INDICES' first `axis` dims are DATA's; each outer position has its own
         * indices */
        int ok = a >= 1 && idx->ndim >= a;
        for (int i = 0; ok && i < a; i++) ok = idx->dims[i] == data->dims[i];
        if (a < 1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument match_outer=1 needs axis >= 1, got axis=%lld (input 0 "
                              "blob '%s' (DATA) of shape %s)", (long long)axis, rc_in_name(op, 0), RC_SHAPE(data));
        if (!ok)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (INDICES) of shape %s must begin with the %lld "
                              "dims of input 0 blob '%s' (DATA) %s before axis %lld (match_outer=1)",
                              rc_in_name(op, 1), RC_SHAPE(idx), (long long)a, rc_in_name(op, 0), RC_SHAPE(data),
                              (long long)a);
    }
    const int nd = data->ndim - 1 + idx->ndim - (mo ? (int)a : 0);
    if (nd > RC_MAX_DIMS)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "output would have %d dims (input 0 blob '%s' %s, input 1 blob '%s' %s), at most %d are "
                          "supported", nd, rc_in_name(op, 0), RC_SHAPE(data), rc_in_name(op, 1), RC_SHAPE(idx),
                          RC_MAX_DIMS);
    g->axis = (int)a;
    g->wrap = wrap;
    g->match_outer = mo;
    g->outer = rc_dims_prod(data, 0, (int)a);
    g->D = data->dims[a];
    g->inner = rc_dims_prod(data, (int)a + 1, data->ndim);
    g->n = mo ? rc_dims_prod(idx, (int)a, idx->ndim) : rc_tensor_numel(idx);
    int k = 0;
    for (int i = 0; i < a; i++) g->out_dims[k++] = data->dims[i];
    for (int i = mo ? (int)a : 0; i < idx->ndim; i++) g->out_dims[k++] = idx->dims[i];
    for (int i = (int)a + 1; i < data->ndim; i++) g->out_dims[k++] = data->dims[i];
    g->out_ndim = nd;
    return RC_OK;
}

/* INDICES (input 1) all in [0, g->D) (with wrap_indices: [-D, D)) (data: run only). */
static rc_status gather_indices_ok(rc_op *op, const gather_geo *g, rc_err *err)
{
    const rc_tensor *data = rc_in(op, 0), *idx = rc_in(op, 1);
    const int a = g->axis;
    const int64_t m = rc_tensor_numel(idx);
    const int32_t *ix = m ? rc_i32(idx) : NULL;
    for (int64_t i = 0; i < m; i++) {
        if (g->wrap && ix[i] < 0 && (int64_t)ix[i] + g->D < 0)
            return rc_op_fail(op, err, RC_ERR_INDEX,
                              "input 1 blob '%s': index %d at position %lld is out of range [-%lld, %lld) "
                              "(wrap_indices=1; dim %d of input 0 blob '%s' of shape %s)", rc_in_name(op, 1),
                              (int)ix[i], (long long)i, (long long)g->D, (long long)g->D, a, rc_in_name(op, 0),
                              RC_SHAPE(data));
        if (g->wrap && ix[i] < 0) continue;
        if (ix[i] < 0 || (int64_t)ix[i] >= g->D)
            return rc_op_fail(op, err, RC_ERR_INDEX,
                              "input 1 blob '%s': index %d at position %lld is out of range [0, %lld) (dim %d of "
                              "input 0 blob '%s' of shape %s)", rc_in_name(op, 1), (int)ix[i], (long long)i,
                              (long long)g->D, a, rc_in_name(op, 0), RC_SHAPE(data));
    }
    return RC_OK;
}

rc_status rc_gather_axis_check(rc_op *op, int64_t axis, int wrap, int match_outer, rc_err *err)
{
    gather_geo g;
    return gather_geometry(op, axis, 0, wrap, match_outer, &g, err);
}

rc_status rc_gather_axis_run(rc_op *op, int64_t axis, int wrap, int match_outer, rc_err *err)
{
    gather_geo g;
    rc_status st = gather_geometry(op, axis, 0, wrap, match_outer, &g, err);
    if (!st) st = gather_indices_ok(op, &g, err);
    if (st) return st;
    const rc_tensor *data = rc_in(op, 0);
    if ((st = rc_tensor_resize(rc_out(op, 0), data->dtype, g.out_ndim, g.out_dims, err)))
        return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    if (g.outer && g.n && g.inner)
        gather_axis_kernel(g.outer, g.D, g.inner, rc_dtype_size(data->dtype), g.n, rc_tensor_data(data),
                           rc_i32(rc_in(op, 1)), g.wrap, g.match_outer, rc_tensor_data(rc_out(op, 0)));
    return RC_OK;
}

/* BatchGather: DATA of at least 2 dims; Gather at axis 1. */
static rc_status batch_gather_ndim(rc_op *op, rc_err *err)
{
    const rc_tensor *data = rc_in(op, 0);
    if (data->dtype != RC_UNDEF && data->ndim < 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (DATA) must have at least 2 dims, got %s",
                          rc_in_name(op, 0), RC_SHAPE(data));
    return RC_OK;
}

static rc_status batch_gather_check(rc_op *op, rc_err *err)
{
    rc_status st = batch_gather_ndim(op, err);
    return st ? st : rc_gather_axis_check(op, 1, 0, 0, err);
}

static rc_status batch_gather_run(rc_op *op, rc_err *err)
{
    rc_status st = batch_gather_ndim(op, err);
    return st ? st : rc_gather_axis_run(op, 1, 0, 0, err);
}

typedef struct bg_grad_state {
    int64_t axis, wrap, match_outer;
} bg_grad_state;

static rc_status bg_grad_setup(rc_op *op, rc_err *err)
{
    bg_grad_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s; /* freed by free_state, also when setup fails */
    rc_status st = rc_arg_i(&op->def, "axis", 1, &s->axis, err);
    if (!st) st = rc_gather_flag_args(op, &s->wrap, &s->match_outer, err);
    return st;
}

rc_status rc_gather_flag_args(rc_op *op, int64_t *wrap, int64_t *match_outer, rc_err *err)
{
    rc_status st = rc_arg_i(&op->def, "wrap_indices", 0, wrap, err);
    if (!st) st = rc_arg_i(&op->def, "match_outer", 0, match_outer, err);
    if (st) return st;
    if (*wrap != 0 && *wrap != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument wrap_indices must be 0 or 1, got %lld", (long long)*wrap);
    if (*match_outer != 0 && *match_outer != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument match_outer must be 0 or 1, got %lld",
                          (long long)*match_outer);
    return RC_OK;
}

/* BatchGatherGradient: DATA float32 (for its shape), INDICES, dOUT (the forward output's shape)
 * -> dDATA (shape of DATA). */
/* The inputs and the geometry (*gp); values=0 (the check) skips the index values. */
static rc_status bg_grad_shapes(rc_op *op, int values, gather_geo *gp, rc_err *err)
{
    const bg_grad_state *s = op->state;
    gather_geo g = {0};
    rc_status st = gather_geometry(op, s->axis, 1, (int)s->wrap, (int)s->match_outer, &g, err);
    if (!st && values) st = gather_indices_ok(op, &g, err);
    if (st || (st = rc_check_input(op, 2, RC_F32, err))) return st;
    const rc_tensor *data = rc_in(op, 0), *dout = rc_in(op, 2);
    int ok = dout->ndim == g.out_ndim;
    for (int k = 0; ok && k < g.out_ndim; k++) ok = dout->dims[k] == g.out_dims[k];
    if (!ok) {
        rc_tensor want;
        rc_tensor_init(&want);
        want.dtype = RC_F32;
        want.ndim = g.out_ndim;
        memcpy(want.dims, g.out_dims, sizeof want.dims);
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 2 blob '%s' (the output gradient) of shape %s must have the gathered shape %s "
                          "(input 0 blob '%s' %s at axis %d, input 1 blob '%s' %s)", rc_in_name(op, 2),
                          RC_SHAPE(dout), RC_SHAPE(&want), rc_in_name(op, 0), RC_SHAPE(data), g.axis,
                          rc_in_name(op, 1), RC_SHAPE(rc_in(op, 1)));
    }
    *gp = g;
    return RC_OK;
}

static rc_status bg_grad_check(rc_op *op, rc_err *err)
{
    gather_geo g = {0};
    return bg_grad_shapes(op, 0, &g, err);
}

static rc_status bg_grad_run(rc_op *op, rc_err *err)
{
    gather_geo g = {0};
    rc_status st = bg_grad_shapes(op, 1, &g, err);
    if (st) return st;
    const rc_tensor *data = rc_in(op, 0), *dout = rc_in(op, 2);
    if ((st = resize_like(op, 0, data, err))) return st;
    if (g.outer && g.D && g.inner)
        gather_axis_grad_kernel(g.outer, g.D, g.inner, g.n, rc_i32(rc_in(op, 1)), g.wrap, g.match_outer,
                                rc_f32(dout), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* ================================================================ table */

const rc_op_schema rc_ops_bmm_pow[] = {
    {"BatchMatMulGradient", 3, 3, 2, 2, NULL, bmm_grad_setup, bmm_grad_run, free,
     "(A, B, dY) -> (dA, dB): the gradient of BatchMatMul with broadcast=1, summed over broadcast batch dims "
     "(args trans_a, trans_b)", bmm_grad_check},
    {"BatchGather", 2, 2, 1, 1, NULL, NULL, batch_gather_run, NULL,
     "(DATA (B, D, ...), INDICES int32) -> OUT = Gather at axis 1, shape (B,) + INDICES.shape + DATA.shape[2:]",
     batch_gather_check},
    {"BatchGatherGradient", 3, 3, 1, 1, NULL, bg_grad_setup, bg_grad_run, free,
     "(DATA, INDICES, dOUT) -> dDATA (dense, shape of DATA): zeros, then dOUT added at INDICES along axis "
     "(arg axis, default 1; wrap_indices, match_outer as Gather's)", bg_grad_check},
    {NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL},
};
