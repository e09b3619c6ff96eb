/* ops/math.c -- elementwise and matrix math ops and their gradient ops.
 *
 * Caffe2 semantics (see DESIGN.md §3). All float32; every op checks dtypes,
 * ranks and shapes and fails naming the op, the blob and the shapes. Kernels
 * live in kernels/math_kernels.c; matrix products go through rc_sgemm, except
 * the small-M products of recurrent step FCs against a weight packed by
 * RecurrentNetwork (kernels/packed_gemm.h, rc_fc_set_packed).
 * Arguments are parsed once in setup into op->state.
 *
 * Pow, Max, Div (what differs from Caffe2):
 *  - Pow takes the argument 'exponent' (finite) and one input, or (Caffe2's
 *    second form) the exponent as a float32 input 1 and no 'exponent'
 *    argument, broadcast as Mul (ops/bmm_pow.c). Exponents
 *    0, 1, 2, 0.5 and -1 are computed exactly (1, x, x*x, sqrtf, 1/x; as
 *    NumPy's x ** e fast paths), others with powf: negative x with a
 *    non-integer exponent gives NaN, as NumPy. PowGradient takes (X, dY), not
 *    the forward output, with the argument; (dY, X, E, Y) -> (dX, dE) with
 *    the tensor (ops/bmm_pow.c).
 *  - Max takes 1 or more float32 inputs of one shape (no broadcasting); NaN
 *    propagates as NumPy's np.maximum. MaxGradient (Y, dY, X0, ...) gives dY
 *    to every input equal to Y (all tied inputs), 0 elsewhere (and where Y is
 *    NaN).
 *  - Div broadcasts as Mul (below), with the same net-creation shape check. float32: division
 *    by zero follows IEEE (inf / NaN, no error). int32 (both inputs; C int32):
 *    C's integer division, truncating toward zero; a zero divisor or
 *    INT32_MIN / -1 (undefined in C, a crash or garbage in Caffe2) is a
 *    ValueError naming the blob and the flat position, raised before the
 *    output is touched. DivGradient takes (B, C, dC), C the forward output
 *    (legacy; B broadcast to C as broadcast=1 / axis say, else numpy-style as
 *    Caffe2's three-input form, A having C's shape), or Caffe2's (dC, A, B, C)
 *    (any broadcast; rc_bc_grad), and
 *    gives (dA, dB) with dB reduced over the broadcast dims in double; on
 *    int32 inputs it fails saying that integer Div has no gradient.
 *
 * EQ, NE, LT, LE, GT, GE (Caffe2's comparison ops): A, B float32 or int32 (one
 * dtype) -> C int32 0 / 1 (Caffe2: bool; our blobs hold bool as int32).
 * Broadcasting as Add's. NaN compares as IEEE (NE is 1, the others 0). No
 * in-place; no gradient (recurrent/_grad_math.py registers none).
 *
 * Add, Sub, Mul: float32, or int32 (both inputs; C int32) where every exact
 * result must fit int32: one that does not is a ValueError naming both
 * elements, raised before the output is touched (ops/bcast.c int_check; Caffe2
 * computed in the blob's type, int64 there). The int32 forms have no gradient.
 *
 * Broadcasting of Add, Sub, Mul, Div and the comparisons (Caffe2's): equal
 * shapes (elementwise kernels, unchanged); broadcast=1 with axis (legacy: B a
 * contiguous run of A's dims, C of A's shape); unequal shapes without
 * broadcast=1: numpy-style (ops/bcast.c; C of the broadcast shape). In place
 * only when C has that input's shape.
 *
 * Sqr, Negative (Caffe2's sqr_op, negative_op): float32 only (Caffe2's
 * Negative also took int and double). Sqr's gradient is one op, SqrGradient
 * (X, dY) -> dX = (2 X) dY, where Caffe2's maker scaled dY by 2 in place (so
 * writing over the output gradient) and then multiplied by X with Mul.
 * Negative's gradient is Negative (dY).
 *
 * Log, Exp (Caffe2's log_op, exp_op): float32, libm's logf / expf (log(0) =
 * -inf, log(x < 0) = NaN, as NumPy; exp overflows to inf). Their gradients are
 * existing ops, as in Caffe2: Div(dY, X) for Log and Mul(Y, dY) for Exp
 * (recurrent/_grad_math.py).
 *
 * RowMul, ReduceTailSum (Caffe2's rowmul_op): RowMul(mat, w) scales row i of
 * mat by w[i]; ReduceTailSum(mat) sums each row (in double). See their code.
 */
#include "../core/rc_core.h"
#include "../kernels/math_kernels.h"
#include "../kernels/packed_gemm.h"
#include "bcast.h"
#include "bmm_pow.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- shared helpers */

/* Parsed arguments; each op uses the fields it needs. */
typedef struct math_args {
    int64_t axis;      /* FC axis, MatMul axis_a, broadcast/SumReduceLike axis, ElementwiseLinear axis */
    int64_t axis2;     /* FC axis_w, MatMul axis_b */
    int trans_a, trans_b;
    int broadcast;
    int acc_dw, acc_db; /* FCGradient: add into dW / db instead of overwriting */
    int stash_dy, skip_db; /* FCGradient: output 0 gets a copy of dY instead of dW; output 1 left untouched */
    int stash_t;           /* FCGradient: that copy transposed (stash_dy_t) */
    int skip_dw;           /* FCGradient: output 0 left untouched */
    float *scratch;     /* FC: Y^T buffer for the small-M path (owned, grown on demand) */
    int64_t scratch_n;
    float *wpack;       /* FC without a step pack: W packed by the op itself (rc_fc_pack_ok), 64-byte
                         * aligned inside wpack_raw (owned), grown on demand */
    void *wpack_raw;
    int64_t wpack_n;    /* floats allocated */
    const rc_packed_w *packed; /* FC / FCGradient in a recurrent step: W packed by RecurrentNetwork (borrowed,
                                * set for the duration of one run; see rc_fc_set_packed) */
    float scale;       /* Scale; Pow's exponent */
    int grad_on_w;     /* WeightedSumGradient: also give the weights' gradients */
    int n_ptr;         /* Sum / WeightedSum: input pointer table, sized once in setup */
    const float **ptr;
    const int32_t **iptr; /* SumInt: input pointer table, sized once in setup */
    float *w;
    float **dptr;      /* MaxGradient: dX pointer table, sized once in setup */
    /* A step FC fused with the Sum after it (RecurrentNetwork, see rc_fc_bind_sum): */
    int *sum_done;     /* FC: the Sum's `done` (borrowed: both ops belong to one step net) */
    int sum_bound;     /* Sum: an FC before it may do its addition */
    int done;          /* Sum: the FC did it in this run (set or cleared by every run of the FC) */
    double *acc;       /* DivGradient (dC, A, B, C): sums per input element (owned, grown by rc_bc_grad) */
    int64_t acc_n;
} math_args;

static void math_args_free(void *p)
{
    math_args *a = p;
    if (!a) return;
    free(a->ptr);
    free(a->iptr);
    free(a->w);
    free(a->dptr);
    free(a->scratch);
    free(a->wpack_raw);
    free(a->acc);
    free(a);
}

static rc_status args_new(rc_op *op, math_args **out, rc_err *err)
{
    math_args *a = calloc(1, sizeof *a);
    if (!a) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    a->scale = 1.f;
    op->state = a;
    *out = a;
    return RC_OK;
}

static rc_status arg_flag(rc_op *op, const char *name, int *out, rc_err *err)
{
    int64_t v = 0;
    rc_status st = rc_arg_i(&op->def, name, 0, &v, err);
    if (st) return st;
    *out = v != 0;
    return RC_OK;
}

/* Caffe2's semantic axis: a one-letter 'axis_str' names the broadcast axis by
 * its position in 'order' (default "NCHW"), e.g. "C" -> 1, or 3 with order
 * "NHWC". Both 'axis' (other than -1) and 'axis_str' given is a ValueError,
 * as in Caffe2. *axis is left as it is when 'axis_str' is absent or empty.
 * *given: set to 1 when 'axis_str' selected the axis. */
static rc_status axis_from_axis_str(rc_op *op, int64_t *axis, int *given, rc_err *err)
{
    const char *s = NULL, *order = NULL;
    rc_status st = rc_arg_s(&op->def, "axis_str", "", &s, err);
    *given = 0;
    if (st || !s[0]) return st;
    if (*axis != -1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "arguments 'axis' and 'axis_str' cannot be used together");
    if (s[1])
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument axis_str='%s' must be one letter of 'order'", s);
    if ((st = rc_arg_s(&op->def, "order", "NCHW", &order, err))) return st;
    const char *at = strchr(order, s[0]);
    if (!at)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument axis_str='%s' is not a letter of order='%s'", s, order);
    *axis = at - order;
    *given = 1;
    return RC_OK;
}

static rc_status check_f32(rc_op *op, int i, rc_err *err) { return rc_check_input(op, i, RC_F32, err); }

/* Canonical axis of input i: -ndim <= axis < ndim -> [0, ndim). */
static rc_status canon_axis(rc_op *op, int i, const char *arg, int64_t axis, int *out, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i);
    if (axis >= t->ndim)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' must have at least %lld dims for %s=%lld, got %s",
                          i, rc_in_name(op, i), (long long)axis + 1, arg, (long long)axis, RC_SHAPE(t));
    if (axis < -(int64_t)t->ndim)
        return rc_op_fail(op, err, RC_ERR_VALUE, "%s=%lld is out of range for input %d blob '%s' of shape %s", arg,
                          (long long)axis, i, rc_in_name(op, i), RC_SHAPE(t));
    *out = (int)(axis < 0 ? axis + t->ndim : axis);
    return RC_OK;
}

/* BLAS takes int32 sizes. */
static rc_status check_blas(rc_op *op, int64_t M, int64_t N, int64_t K, rc_err *err)
{
    if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "matrix sizes M=%lld, N=%lld, K=%lld exceed the BLAS limit of %d per dimension",
                          (long long)M, (long long)N, (long long)K, INT32_MAX);
    return RC_OK;
}

static rc_status resize_out(rc_op *op, int o, int ndim, const int64_t *dims, rc_err *err)
{
    rc_status st = rc_tensor_resize(rc_out(op, o), RC_F32, ndim, dims, err);
    if (st) return rc_op_fail(op, err, st, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
    return RC_OK;
}

/* Output o gets like's shape, as float32 (like may be the output itself). */
static rc_status resize_out_like(rc_op *op, int o, const rc_tensor *like, rc_err *err)
{
    int64_t dims[RC_MAX_DIMS];
    memcpy(dims, like->dims, sizeof dims);
    return resize_out(op, o, like->ndim, dims, err);
}

static rc_status check_same_shape(rc_op *op, int i, int ref, rc_err *err)
{
    if (!rc_tensor_same_shape(rc_in(op, i), rc_in(op, ref)))
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' of shape %s must have the shape of input %d blob '%s' %s",
                          i, rc_in_name(op, i), RC_SHAPE(rc_in(op, i)), ref, rc_in_name(op, ref),
                          RC_SHAPE(rc_in(op, ref)));
    return RC_OK;
}

/* Caffe2's legacy broadcast: B (input ib) matches a contiguous run of A's
 * (input ia) dims starting at axis (-1: B is a suffix of A); leading and
 * trailing 1s of B are ignored. A is then [pre, n, post] and B is [n]. */
static rc_status legacy_broadcast(rc_op *op, int ia, int ib, int64_t axis, int64_t *pre, int64_t *n, int64_t *post,
                                  rc_err *err)
{
    const rc_tensor *A = rc_in(op, ia), *B = rc_in(op, ib);
    if (B->ndim > A->ndim)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "cannot broadcast input %d blob '%s' of shape %s to input %d blob '%s' of shape %s: "
                          "it has more dims", ib, rc_in_name(op, ib), RC_SHAPE(B), ia, rc_in_name(op, ia), RC_SHAPE(A));
    int64_t ax = axis == -1 ? A->ndim - B->ndim : axis;
    if (ax < 0 || ax > A->ndim - B->ndim)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "axis=%lld is out of range [0, %d] for broadcasting input %d blob '%s' of shape %s to "
                          "input %d blob '%s' of shape %s", (long long)axis, A->ndim - B->ndim, ib,
                          rc_in_name(op, ib), RC_SHAPE(B), ia, rc_in_name(op, ia), RC_SHAPE(A));
    int bs = 0, be = B->ndim - 1;
    while (bs < B->ndim && B->dims[bs] == 1) bs++;
    while (be >= bs && B->dims[be] == 1) be--;
    int64_t nn = 1;
    for (int i = bs; i <= be; i++) {
        if (A->dims[ax + i] != B->dims[i])
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "cannot broadcast input %d blob '%s' of shape %s to input %d blob '%s' of shape %s "
                              "at axis %lld: dim %d is %lld but dim %lld of '%s' is %lld", ib, rc_in_name(op, ib),
                              RC_SHAPE(B), ia, rc_in_name(op, ia), RC_SHAPE(A), (long long)ax, i,
                              (long long)B->dims[i], (long long)(ax + i), rc_in_name(op, ia),
                              (long long)A->dims[ax + i]);
        nn *= B->dims[i];
    }
    *pre = rc_dims_prod(A, 0, (int)ax + bs);
    *n = nn;
    *post = rc_dims_prod(A, (int)ax + be + 1, A->ndim);
    return RC_OK;
}

static int inplace_binary(int in, int out) { return out == 0 && (in == 0 || in == 1); }
static int inplace_dy(int in, int out) { return in == 1 && out == 0; }

/* ---------------------------------------------------------------- Copy */
/* Copy: Y = X (any dtype). In-place allowed (no-op). */
static rc_status copy_run(rc_op *op, rc_err *err)
{
    const rc_tensor *x = rc_in(op, 0);
    if (x->dtype == RC_UNDEF)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' holds no tensor", rc_in_name(op, 0));
    rc_status st = rc_tensor_copy(rc_out(op, 0), x, err);
    if (st) return rc_op_fail(op, err, st, "output blob '%s': %s", rc_out_name(op, 0), err->msg);
    return RC_OK;
}

/* ---------------------------------------------------------------- FC */
static rc_status fc_setup(rc_op *op, rc_err *err)
{
    math_args *a = NULL;
    rc_status st = args_new(op, &a, err);
    if (!st) st = rc_arg_i(&op->def, "axis", 1, &a->axis, err);
    if (!st) st = rc_arg_i(&op->def, "axis_w", 1, &a->axis2, err);
    if (!st) st = arg_flag(op, "accumulate_dw", &a->acc_dw, err);
    if (!st) st = arg_flag(op, "accumulate_db", &a->acc_db, err);
    if (!st) st = arg_flag(op, "stash_dy", &a->stash_dy, err);
    if (!st) st = arg_flag(op, "skip_db", &a->skip_db, err);
    if (!st) st = arg_flag(op, "stash_dy_t", &a->stash_t, err);
    if (!st) st = arg_flag(op, "skip_dw", &a->skip_dw, err);
    if (!st && a->stash_t && !a->stash_dy)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'stash_dy_t' needs 'stash_dy'");
    if (!st && a->skip_dw && (a->stash_dy || a->acc_dw))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'skip_dw' excludes 'stash_dy' and 'accumulate_dw'");
    if (!st && a->stash_dy && a->acc_dw)
        return rc_op_fail(op, err, RC_ERR_VALUE, "arguments 'stash_dy' and 'accumulate_dw' exclude each other");
    if (!st && a->skip_db && a->acc_db)
        return rc_op_fail(op, err, RC_ERR_VALUE, "arguments 'skip_db' and 'accumulate_db' exclude each other");
    return st;
}

/* X (input 0) flattened at axis to M x K, W (input 1) at axis_w to N x K. */
static rc_status fc_dims(rc_op *op, int *ax, int64_t *M, int64_t *N, int64_t *K, rc_err *err)
{
    const math_args *a = op->state;
    const rc_tensor *x = rc_in(op, 0), *w = rc_in(op, 1);
    int axw = 0;
    rc_status st = canon_axis(op, 0, "axis", a->axis, ax, err);
    if (!st) st = canon_axis(op, 1, "axis_w", a->axis2, &axw, err);
    if (st) return st;
    *M = rc_dims_prod(x, 0, *ax);
    *K = rc_dims_prod(x, *ax, x->ndim);
    *N = rc_dims_prod(w, 0, axw);
    int64_t kw = rc_dims_prod(w, axw, w->ndim);
    if (kw != *K)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 1 blob '%s' of shape %s does not fit input 0 blob '%s' of shape %s: K is %lld "
                          "from '%s' (axis=%d) but %lld from '%s' (axis_w=%d)", rc_in_name(op, 1), RC_SHAPE(w),
                          rc_in_name(op, 0), RC_SHAPE(x), (long long)*K, rc_in_name(op, 0), *ax, (long long)kw,
                          rc_in_name(op, 1), axw);
    return check_blas(op, *M, *N, *K, err);
}

/* FC's inputs: X, W, b float32; K of X and W equal; b of shape (N,). */
static rc_status fc_shapes(rc_op *op, int *ax, int64_t *M, int64_t *N, int64_t *K, rc_err *err)
{
    rc_status st;
    for (int i = 0; i < 3; i++)
        if ((st = check_f32(op, i, err))) return st;
    if ((st = fc_dims(op, ax, M, N, K, err))) return st;
    const rc_tensor *w = rc_in(op, 1), *b = rc_in(op, 2);
    if (b->ndim != 1 || b->dims[0] != *N)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 2 blob '%s' must have shape (%lld,) (N of input 1 blob '%s' %s), got %s",
                          rc_in_name(op, 2), (long long)*N, rc_in_name(op, 1), RC_SHAPE(w), RC_SHAPE(b));
    return RC_OK;
}

static rc_status fc_check(rc_op *op, rc_err *err)
{
    int ax;
    int64_t M, N, K;
    return fc_shapes(op, &ax, &M, &N, &K, err);
}

/* The pack to multiply by, if RecurrentNetwork handed one that is this W
 * (data w, as B = W^T for FC or W for FCGradient's dX: inner x out) and the
 * product has few enough rows; NULL: use rc_sgemm. */
static const rc_packed_w *packed_for(const math_args *a, int trans, const float *w, int64_t M, int64_t inner,
                                     int64_t out)
{
    const rc_packed_w *pk = a->packed;
    if (pk && pk->trans == trans && rc_packed_rows_ok(M, inner) && pk->src == w && pk->inner == inner &&
        pk->out == out)
        return pk;
    return NULL;
}

static int64_t n_fused_sums;
int64_t rc_fc_fused_sums(void) { return __atomic_load_n(&n_fused_sums, __ATOMIC_RELAXED); }
static int64_t n_fc_self_packed;
int64_t rc_fc_self_packed(void) { return __atomic_load_n(&n_fc_self_packed, __ATOMIC_RELAXED); }

/* Whether an FC can do the Sum Y + Z that follows it: both float32 of one
 * shape, Z's memory apart from Y's (else the Sum runs as usual and reports
 * any error itself). The Sum asks nothing: the FC tells it. */
static int sum_fusable(const rc_tensor *y, const rc_tensor *z)
{
    return y->dtype == RC_F32 && z->dtype == RC_F32 && rc_tensor_same_shape(y, z) &&
           rc_k_apart(rc_f32(y), rc_f32(z), rc_tensor_numel(y));
}

/* FC: X [M, K] (flattened at axis), W [N, K] (at axis_w), b [N] -> Y = X W^T + b,
 * Y shape X.shape[:axis] + [N]. Inside a RecurrentNetwork step net an FC
 * followed by Sum(Y, Z) -> Y gets Z as input 3 (argument
 * rnn_internal_fused_sum) and, bound to that Sum (rc_fc_bind_sum), stores
 * (X W^T + b) + Z itself: the same additions in the same order, so the same
 * bits, without the Sum's pass over Y. */
static rc_status fc_run(rc_op *op, rc_err *err)
{
    rc_status st;
    int ax = 0;
    int64_t M, N, K;
    math_args *a = op->state;
    if (a->sum_done) *a->sum_done = 0;
    if ((st = fc_shapes(op, &ax, &M, &N, &K, err))) return st;
    const rc_tensor *x = rc_in(op, 0), *w = rc_in(op, 1), *b = rc_in(op, 2);
    int64_t yd[RC_MAX_DIMS];
    for (int i = 0; i < ax; i++) yd[i] = x->dims[i];
    yd[ax] = N;
    if ((st = resize_out(op, 0, ax + 1, yd, err))) return st;
    float *y = rc_f32(rc_out(op, 0));
    const float *z = NULL;
    if (a->sum_done && sum_fusable(rc_out(op, 0), rc_in(op, 3))) {
        z = rc_f32(rc_in(op, 3));
        *a->sum_done = 1;
        __atomic_add_fetch(&n_fused_sums, 1, __ATOMIC_RELAXED);
    }
    const rc_packed_w *pk = packed_for(a, 1, rc_f32(w), M, K, N);
    if (pk) {
        rc_gemm_packed(M, N, K, rc_f32(x), K, pk->data, rc_f32(b), z, y, N);
        return RC_OK;
    }
    /* Outside step loops, a short inner dimension: pack W here (packed_gemm.c). Not in a step loop,
     * where each timestep's instance would keep its own pack (a step FC without a pack from
     * RecurrentNetwork has a weight the step net writes; it stays on OpenBLAS, as before). */
    if (rc_step_blas_threads() == 0 && rc_fc_pack_ok(M, N, K)) {
        int64_t need = rc_pack_floats(K, N);
        if (a->wpack_n < need) {
            free(a->wpack_raw);
            a->wpack_n = 0;
            if (!(a->wpack = rc_pack_alloc(need, &a->wpack_raw)))
                return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory packing weight '%s' %s", rc_in_name(op, 1),
                                  RC_SHAPE(w));
            a->wpack_n = need;
        }
        rc_pack_b(K, N, rc_f32(w), 1, K, a->wpack);
        rc_gemm_packed(M, N, K, rc_f32(x), K, a->wpack, rc_f32(b), z, y, N);
        __atomic_add_fetch(&n_fc_self_packed, 1, __ATOMIC_RELAXED);
        return RC_OK;
    }
    const float *yz[2] = {y, z}; /* without the packed kernel: the Sum's own kernel, after the product */
    if (M > 0 && M <= 128 && N >= 4 * M) {
        /* Few rows (a recurrent step): OpenBLAS is much faster at Y^T = W X^T
         * (measured 1.3-1.6x for 16x256x1024 and 64x512x2048) than at
         * Y = X W^T; transposing the small result back is cheap. */
        if (a->scratch_n < M * N) {
            float *sc = realloc(a->scratch, sizeof(float) * (size_t)(M * N));
            if (!sc) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory for a %lldx%lld scratch", (long long)M,
                                       (long long)N);
            a->scratch = sc;
            a->scratch_n = M * N;
        }
        rc_sgemm(0, 1, N, M, K, 1.f, rc_f32(w), rc_f32(x), 0.f, a->scratch);
        rc_k_transpose_add_bias(N, M, a->scratch, rc_f32(b), y);
    } else {
        rc_k_fill_rows(M, N, rc_f32(b), y);
        rc_sgemm(0, 1, M, N, K, 1.f, rc_f32(x), rc_f32(w), 1.f, y);
    }
    if (z) rc_k_weighted_sum(2, yz, NULL, M * N, y);
    return RC_OK;
}

/* FCGradient: X [M, K], W [N, K], dY [M, N] -> dW [N, K] = dY^T X, db [N] = colsum(dY),
 * dX [M, K] = dY W (optional third output), shapes those of W, b, X.
 * Flags set by RecurrentNetworkGradient (parameter gradients summed over timesteps):
 *   accumulate_dw / accumulate_db: add into dW / db (already shaped) instead of overwriting;
 *   stash_dy: output 0 (a float32 tensor of M x N elements, e.g. a row of a (T, M, N) buffer)
 *             receives a copy of dY instead of dW; the op sums dY^T X over all timesteps
 *             afterwards in one GEMM;
 *   stash_dy_t (with stash_dy): the copy is dY^T (N x M), the layout rc_gemm_wgrad reads;
 *   skip_db:  output 1 is not computed (the op sums db from the stashed dY);
 *   skip_dw:  output 0 is not computed (another FCGradient of the step stashes the same dY). */
/* Input 2 of FCGradient / FCTransposedGradient is dY: M x N elements, its last dim N (when not empty). */
static rc_status check_fc_dy(rc_op *op, int64_t M, int64_t N, rc_err *err)
{
    const rc_tensor *x = rc_in(op, 0), *w = rc_in(op, 1), *dy = rc_in(op, 2);
    if (rc_tensor_numel(dy) != M * N || (dy->ndim > 0 && dy->dims[dy->ndim - 1] != N && M * N != 0))
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 2 blob '%s' of shape %s must be the output gradient of shape (M=%lld) x (N=%lld) "
                          "for input 0 blob '%s' %s and input 1 blob '%s' %s", rc_in_name(op, 2), RC_SHAPE(dy),
                          (long long)M, (long long)N, rc_in_name(op, 0), RC_SHAPE(x), rc_in_name(op, 1),
                          RC_SHAPE(w));
    return RC_OK;
}

/* FCGradient's inputs: X, W, dY float32; K of X and W equal; dY of M x N elements ending in N. */
static rc_status fc_grad_shapes(rc_op *op, int64_t *M, int64_t *N, int64_t *K, rc_err *err)
{
    rc_status st;
    for (int i = 0; i < 3; i++)
        if ((st = check_f32(op, i, err))) return st;
    int ax = 0;
    if ((st = fc_dims(op, &ax, M, N, K, err))) return st;
    return check_fc_dy(op, *M, *N, err);
}

static rc_status fc_grad_check(rc_op *op, rc_err *err)
{
    int64_t M, N, K;
    return fc_grad_shapes(op, &M, &N, &K, err);
}

static rc_status fc_grad_run(rc_op *op, rc_err *err)
{
    rc_status st;
    int64_t M, N, K;
    if ((st = fc_grad_shapes(op, &M, &N, &K, err))) return st;
    const rc_tensor *x = rc_in(op, 0), *w = rc_in(op, 1), *dy = rc_in(op, 2);
    int64_t nd[1] = {N};
    const math_args *a = op->state;
    if (a->acc_dw && !(rc_out(op, 0)->dtype == RC_F32 && rc_tensor_same_shape(rc_out(op, 0), w)))
        return rc_op_fail(op, err, RC_ERR_VALUE, "accumulate_dw: output 0 blob '%s' %s must already be shaped like "
                          "input 1 blob '%s' %s", rc_out_name(op, 0), RC_SHAPE(rc_out(op, 0)), rc_in_name(op, 1),
                          RC_SHAPE(w));
    if (a->stash_dy && !(rc_out(op, 0)->dtype == RC_F32 && rc_tensor_numel(rc_out(op, 0)) == M * N))
        return rc_op_fail(op, err, RC_ERR_VALUE, "stash_dy: output 0 blob '%s' %s must already be a float32 tensor "
                          "of M x N = %lld x %lld elements (input 2 blob '%s' %s)", rc_out_name(op, 0),
                          RC_SHAPE(rc_out(op, 0)), (long long)M, (long long)N, rc_in_name(op, 2), RC_SHAPE(dy));
    if (a->acc_db && !(rc_out(op, 1)->dtype == RC_F32 && rc_out(op, 1)->ndim == 1 && rc_out(op, 1)->dims[0] == N))
        return rc_op_fail(op, err, RC_ERR_VALUE, "accumulate_db: output 1 blob '%s' %s must already have shape (%lld,)",
                          rc_out_name(op, 1), RC_SHAPE(rc_out(op, 1)), (long long)N);
    if (!a->acc_dw && !a->stash_dy && !a->skip_dw && (st = resize_out_like(op, 0, w, err))) return st;
    if (!a->acc_db && !a->skip_db && (st = resize_out(op, 1, 1, nd, err))) return st;
    if (op->n_out > 2 && (st = resize_out_like(op, 2, x, err))) return st;
    const float *xd = rc_f32(x), *wd = rc_f32(w), *dyd = rc_f32(dy);
    if (a->stash_dy) {
        if (a->stash_t) rc_transpose(M, N, dyd, N, rc_f32(rc_out(op, 0)), M);
        else if (M * N != 0) memcpy(rc_f32(rc_out(op, 0)), dyd, sizeof(float) * (size_t)(M * N));
    } else if (!a->skip_dw) {
        rc_sgemm(1, 0, N, K, M, 1.f, dyd, xd, a->acc_dw ? 1.f : 0.f, rc_f32(rc_out(op, 0)));
    }
    if (a->acc_db) {
        rc_k_col_sum_add(M, N, dyd, rc_f32(rc_out(op, 1)));
    } else if (!a->skip_db) {
        rc_k_col_sum(M, N, dyd, rc_f32(rc_out(op, 1)));
    }
    if (op->n_out > 2) {
        const rc_packed_w *pk = packed_for(a, 0, wd, M, N, K);
        if (pk)
            rc_gemm_packed(M, K, N, dyd, N, pk->data, NULL, NULL, rc_f32(rc_out(op, 2)), K);
        else
            rc_sgemm(0, 0, M, K, N, 1.f, dyd, wd, 0.f, rc_f32(rc_out(op, 2)));
    }
    return RC_OK;
}

int rc_fc_set_packed(rc_op *op, const rc_packed_w *pw)
{
    int fc = strcmp(op->def.type, "FC") == 0, grad = strcmp(op->def.type, "FCGradient") == 0;
    if ((!fc && !grad) || !op->state) return 0;
    if (pw && (pw->trans != fc || ((math_args *)op->state)->axis2 != 1)) return 0;
    ((math_args *)op->state)->packed = pw;
    return 1;
}

int rc_fc_bind_sum(rc_op *fc, rc_op *sum)
{
    if (strcmp(fc->def.type, "FC") != 0 || fc->n_in != 4 || !fc->state || strcmp(sum->def.type, "Sum") != 0 ||
        sum->n_in != 2 || !sum->state || fc->out[0] != sum->in[0] || sum->out[0] != sum->in[0] ||
        fc->in[3] != sum->in[1])
        return 0;
    math_args *s = sum->state;
    s->sum_bound = 1;
    s->done = 0;
    ((math_args *)fc->state)->sum_done = &s->done;
    return 1;
}

/* ---------------------------------------------------------------- FCTransposed */
/* Caffe2's FCTransposed: FC with W stored (K, N) instead of (N, K). Plain GEMMs:
 * none of FC's packing, fused Sum or RecurrentNetwork gradient flags. */
static rc_status fct_setup(rc_op *op, rc_err *err)
{
    math_args *a = NULL;
    rc_status st = args_new(op, &a, err);
    if (!st) st = rc_arg_i(&op->def, "axis", 1, &a->axis, err);
    if (!st) st = rc_arg_i(&op->def, "axis_w", 1, &a->axis2, err);
    return st;
}

/* X (input 0) flattened at axis to M x K; W (input 1): N = prod(W.shape[axis_w:]) and K of X =
 * prod(W.shape[:axis_w]), W read as K x N; X, W, dY / b (input 2) float32. grad: input 2 is dY
 * (M x N elements ending in N), else b of shape (N,). */
static rc_status fct_shapes(rc_op *op, int grad, int *ax, int64_t *M, int64_t *N, int64_t *K, rc_err *err)
{
    const math_args *a = op->state;
    rc_status st;
    for (int i = 0; i < 3; i++)
        if ((st = check_f32(op, i, err))) return st;
    const rc_tensor *x = rc_in(op, 0), *w = rc_in(op, 1), *t = rc_in(op, 2);
    int axw = 0;
    if ((st = canon_axis(op, 0, "axis", a->axis, ax, err)) || (st = canon_axis(op, 1, "axis_w", a->axis2, &axw, err)))
        return st;
    *M = rc_dims_prod(x, 0, *ax);
    *K = rc_dims_prod(x, *ax, x->ndim);
    *N = rc_dims_prod(w, axw, w->ndim);
    const int64_t kw = rc_dims_prod(w, 0, axw);
    if (kw != *K)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 1 blob '%s' of shape %s does not fit input 0 blob '%s' of shape %s: K is %lld "
                          "from '%s' (axis=%d) but %lld from '%s' (the dims before axis_w=%d; FCTransposed's W is "
                          "K x N)", rc_in_name(op, 1), RC_SHAPE(w), rc_in_name(op, 0), RC_SHAPE(x), (long long)*K,
                          rc_in_name(op, 0), *ax, (long long)kw, rc_in_name(op, 1), axw);
    if ((st = check_blas(op, *M, *N, *K, err))) return st;
    if (!grad && (t->ndim != 1 || t->dims[0] != *N))
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 2 blob '%s' must have shape (%lld,) (N of input 1 blob '%s' %s), got %s",
                          rc_in_name(op, 2), (long long)*N, rc_in_name(op, 1), RC_SHAPE(w), RC_SHAPE(t));
    return grad ? check_fc_dy(op, *M, *N, err) : RC_OK;
}

static rc_status fct_check(rc_op *op, rc_err *err)
{
    int ax;
    int64_t M, N, K;
    return fct_shapes(op, 0, &ax, &M, &N, &K, err);
}

static rc_status fct_grad_check(rc_op *op, rc_err *err)
{
    int ax;
    int64_t M, N, K;
    return fct_shapes(op, 1, &ax, &M, &N, &K, err);
}

/* FCTransposed: X [M, K], W [K, N], b [N] -> Y = X W + b, shape X.shape[:axis] + [N]. */
static rc_status fct_run(rc_op *op, rc_err *err)
{
    rc_status st;
    int ax = 0;
    int64_t M, N, K;
    if ((st = fct_shapes(op, 0, &ax, &M, &N, &K, err))) return st;
    const rc_tensor *x = rc_in(op, 0);
    int64_t yd[RC_MAX_DIMS];
    for (int i = 0; i < ax; i++) yd[i] = x->dims[i];
    yd[ax] = N;
    if ((st = resize_out(op, 0, ax + 1, yd, err))) return st;
    float *y = rc_f32(rc_out(op, 0));
    rc_k_fill_rows(M, N, rc_f32(rc_in(op, 2)), y);
    rc_sgemm(0, 0, M, N, K, 1.f, rc_f32(x), rc_f32(rc_in(op, 1)), 1.f, y);
    return RC_OK;
}

/* FCTransposedGradient: X [M, K], W [K, N], dY [M, N] -> dW [K, N] = X^T dY, db [N] = colsum(dY),
 * dX [M, K] = dY W^T (optional third output), shapes those of W, b, X. */
static rc_status fct_grad_run(rc_op *op, rc_err *err)
{
    rc_status st;
    int ax = 0;
    int64_t M, N, K;
    if ((st = fct_shapes(op, 1, &ax, &M, &N, &K, err))) return st;
    const rc_tensor *x = rc_in(op, 0), *w = rc_in(op, 1);
    const int64_t nd[1] = {N};
    if ((st = resize_out_like(op, 0, w, err)) || (st = resize_out(op, 1, 1, nd, err))) return st;
    if (op->n_out > 2 && (st = resize_out_like(op, 2, x, err))) return st;
    const float *dy = rc_f32(rc_in(op, 2));
    rc_sgemm(1, 0, K, N, M, 1.f, rc_f32(x), dy, 0.f, rc_f32(rc_out(op, 0)));
    rc_k_col_sum(M, N, dy, rc_f32(rc_out(op, 1)));
    if (op->n_out > 2) rc_sgemm(0, 1, M, K, N, 1.f, dy, rc_f32(w), 0.f, rc_f32(rc_out(op, 2)));
    return RC_OK;
}

/* ---------------------------------------------------------------- MatMul */
static rc_status matmul_setup(rc_op *op, rc_err *err)
{
    math_args *a = NULL;
    rc_status st = args_new(op, &a, err);
    if (!st) st = rc_arg_i(&op->def, "axis_a", 1, &a->axis, err);
    if (!st) st = rc_arg_i(&op->def, "axis_b", 1, &a->axis2, err);
    if (!st) st = arg_flag(op, "trans_a", &a->trans_a, err);
    if (!st) st = arg_flag(op, "trans_b", &a->trans_b, err);
    return st;
}

/* MatMul: A flattened at axis_a to [A0, A1], B at axis_b to [B0, B1];
 * Y [M, N] = op(A) op(B) with op = transpose where trans_*; an optional third
 * input gives Y its shape (same element count; the gradient uses it). */
static rc_status matmul_shapes(rc_op *op, int64_t *pM, int64_t *pN, int64_t *pK, rc_err *err)
{
    const math_args *a = op->state;
    rc_status st;
    if ((st = check_f32(op, 0, err)) || (st = check_f32(op, 1, err))) return st;
    const rc_tensor *A = rc_in(op, 0), *B = rc_in(op, 1);
    int axa = 0, axb = 0;
    if ((st = canon_axis(op, 0, "axis_a", a->axis, &axa, err))) return st;
    if ((st = canon_axis(op, 1, "axis_b", a->axis2, &axb, err))) return st;
    int64_t a0 = rc_dims_prod(A, 0, axa), a1 = rc_dims_prod(A, axa, A->ndim);
    int64_t b0 = rc_dims_prod(B, 0, axb), b1 = rc_dims_prod(B, axb, B->ndim);
    int64_t M = a->trans_a ? a1 : a0, Ka = a->trans_a ? a0 : a1;
    int64_t N = a->trans_b ? b0 : b1, Kb = a->trans_b ? b1 : b0;
    if (Ka != Kb)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "inner dimensions differ: input 0 blob '%s' of shape %s is %lld x %lld (axis_a=%d, "
                          "trans_a=%d) but input 1 blob '%s' of shape %s is %lld x %lld (axis_b=%d, trans_b=%d)",
                          rc_in_name(op, 0), RC_SHAPE(A), (long long)M, (long long)Ka, axa, a->trans_a,
                          rc_in_name(op, 1), RC_SHAPE(B), (long long)Kb, (long long)N, axb, a->trans_b);
    if ((st = check_blas(op, M, N, Ka, err))) return st;
    if (op->n_in == 3) {
        const rc_tensor *s = rc_in(op, 2);
        if (s->dtype == RC_UNDEF)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' (the output shape) holds no tensor",
                              rc_in_name(op, 2));
        if (rc_tensor_numel(s) != M * N)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input 2 blob '%s' of shape %s must have M x N = %lld x %lld elements (the result "
                              "of '%s' %s times '%s' %s)", rc_in_name(op, 2), RC_SHAPE(s), (long long)M,
                              (long long)N, rc_in_name(op, 0), RC_SHAPE(A), rc_in_name(op, 1), RC_SHAPE(B));
    }
    *pM = M;
    *pN = N;
    *pK = Ka;
    return RC_OK;
}

static rc_status matmul_check(rc_op *op, rc_err *err)
{
    int64_t M, N, K;
    return matmul_shapes(op, &M, &N, &K, err);
}

static rc_status matmul_run(rc_op *op, rc_err *err)
{
    const math_args *a = op->state;
    rc_status st;
    int64_t M, N, K;
    if ((st = matmul_shapes(op, &M, &N, &K, err))) return st;
    if (op->n_in == 3) {
        if ((st = resize_out_like(op, 0, rc_in(op, 2), err))) return st;
    } else {
        int64_t yd[2] = {M, N};
        if ((st = resize_out(op, 0, 2, yd, err))) return st;
    }
    rc_sgemm(a->trans_a, a->trans_b, M, N, K, 1.f, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), 0.f,
             rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* ---------------------------------------------------------------- Sum, WeightedSum */
static rc_status ptr_table(rc_op *op, math_args *a, int n, int with_weights, rc_err *err)
{
    a->n_ptr = n;
    a->ptr = calloc((size_t)n, sizeof *a->ptr);
    if (with_weights) a->w = calloc((size_t)n, sizeof *a->w);
    if (!a->ptr || (with_weights && !a->w)) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    return RC_OK;
}

static rc_status sum_setup(rc_op *op, rc_err *err)
{
    math_args *a = NULL;
    rc_status st = args_new(op, &a, err);
    return st ? st : ptr_table(op, a, op->n_in, 0, err);
}

/* Every input of dtype dt and of input 0's shape (Sum, Max: float32; SumInt: int32). */
static rc_status inputs_one_shape(rc_op *op, rc_dtype dt, rc_err *err)
{
    rc_status st;
    for (int i = 0; i < op->n_in; i++) {
        if ((st = rc_check_input(op, i, dt, err))) return st;
        if (i > 0 && (st = check_same_shape(op, i, 0, err))) return st;
    }
    return RC_OK;
}

/* Sum: X0..Xn-1, all one shape -> Y = X0 + X1 + ... (in that order); Y may be any input. */
static rc_status sum_check(rc_op *op, rc_err *err) { return inputs_one_shape(op, RC_F32, err); }

static rc_status sum_run(rc_op *op, rc_err *err)
{
    math_args *a = op->state;
    rc_status st;
    if (a->sum_bound && a->done) { /* the FC before it stored Y + Z (rc_fc_bind_sum) */
        a->done = 0;
        return RC_OK;
    }
    if ((st = sum_check(op, err))) return st;
    if ((st = resize_out_like(op, 0, rc_in(op, 0), err))) return st;
    for (int i = 0; i < op->n_in; i++) a->ptr[i] = rc_f32(rc_in(op, i));
    rc_k_weighted_sum(op->n_in, a->ptr, NULL, rc_tensor_numel(rc_in(op, 0)), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* SumInt (Caffe2's: its Sum on int inputs, utility_ops.cc): X0..Xn-1 int32 (n >= 1), all one shape ->
 * Y int32 = X0 + X1 + ... elementwise (one input: a copy); Y may be X0's blob, as Caffe2's schema. Every
 * element's exact sum must fit int32 (Caffe2's int addition overflowed): all are checked before Y is
 * written, and the first that does not fit is a ValueError naming its flat position and value. */
static rc_status sum_int_check(rc_op *op, rc_err *err) { return inputs_one_shape(op, RC_I32, err); }

static rc_status sum_int_setup(rc_op *op, rc_err *err)
{
    math_args *a = NULL;
    rc_status st = args_new(op, &a, err);
    if (st) return st;
    a->iptr = calloc((size_t)op->n_in, sizeof *a->iptr);
    return a->iptr ? RC_OK : rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
}

/* The exact sum of the inputs' elements at flat position k. */
static int64_t sum_int_at(const math_args *a, int n_in, int64_t k)
{
    int64_t v = 0;
    for (int i = 0; i < n_in; i++) v += a->iptr[i][k];
    return v;
}

static rc_status sum_int_run(rc_op *op, rc_err *err)
{
    math_args *a = op->state;
    rc_status st = sum_int_check(op, err);
    if (st) return st;
    const rc_tensor *x0 = rc_in(op, 0);
    const int64_t n = rc_tensor_numel(x0);
    for (int i = 0; i < op->n_in; i++) a->iptr[i] = rc_i32(rc_in(op, i));
    for (int64_t k = 0; k < n; k++) {
        const int64_t v = sum_int_at(a, op->n_in, k);
        if (v < INT32_MIN || v > INT32_MAX)
            return rc_op_fail(op, err, RC_ERR_VALUE, "the sum at flat position %lld is %lld, which int32 cannot "
                              "hold (%d inputs of shape %s, input 0 blob '%s')", (long long)k, (long long)v,
                              op->n_in, RC_SHAPE(x0), rc_in_name(op, 0));
    }
    int64_t dims[RC_MAX_DIMS];
    memcpy(dims, x0->dims, sizeof dims);
    if ((st = rc_tensor_resize(rc_out(op, 0), RC_I32, x0->ndim, dims, err)))
        return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    int32_t *y = rc_i32(rc_out(op, 0));
    for (int64_t k = 0; k < n; k++) y[k] = (int32_t)sum_int_at(a, op->n_in, k);
    return RC_OK;
}

/* Accumulate (Caffe2's accumulate_op): X float32 -> Y = gamma Y + X (arg gamma=1), reading Y's values from
 * before the run. When Y does not hold a float32 tensor of X's shape (nothing yet, another shape, int32) it
 * is first resized to X's shape and zeroed, as Caffe2's ("Reshaping and initializing output"); then Y = X.
 * Not in place (Caffe2's schema allowed none). */
static rc_status accumulate_setup(rc_op *op, rc_err *err)
{
    math_args *a = NULL;
    rc_status st = args_new(op, &a, err);
    return st ? st : rc_arg_f(&op->def, "gamma", 1.f, &a->scale, err);
}

static rc_status accumulate_check(rc_op *op, rc_err *err) { return check_f32(op, 0, err); }

static rc_status accumulate_run(rc_op *op, rc_err *err)
{
    const math_args *a = op->state;
    rc_status st = accumulate_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    rc_tensor *y = rc_out(op, 0);
    const int64_t n = rc_tensor_numel(x);
    if (y->dtype != RC_F32 || !rc_tensor_same_shape(y, x)) {
        if ((st = resize_out_like(op, 0, x, err))) return st;
        if (n) memset(rc_f32(y), 0, (size_t)n * sizeof(float));
    }
    if (!n) return RC_OK;
    const float *xd = rc_f32(x);
    float *yd = rc_f32(y);
    for (int64_t k = 0; k < n; k++) yd[k] = a->scale * yd[k] + xd[k];
    return RC_OK;
}

/* RowMul (Caffe2's rowmul_op): mat float32 (N, ...) (ndim >= 1), w float32 of N elements (any shape, as
 * Caffe2; its doc says a column vector) -> Y of mat's shape, Y[i, ...] = mat[i, ...] * w[i]. Not in place
 * (Caffe2's schema allowed none). Its gradient (Caffe2's maker): RowMul(dY, w) for mat, Mul(dY, mat) then
 * ReduceTailSum for w, which gives w's gradient the shape (N,) whatever w's shape. */
static rc_status row_mul_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = check_f32(op, 0, err)) || (st = check_f32(op, 1, err))) return st;
    const rc_tensor *m = rc_in(op, 0), *w = rc_in(op, 1);
    if (m->ndim < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (mat) must have at least 1 dim, got %s",
                          rc_in_name(op, 0), RC_SHAPE(m));
    if (rc_tensor_numel(w) != m->dims[0])
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (w) of shape %s must hold one element per row "
                          "(dim 0) of input 0 blob '%s' (mat) of shape %s", rc_in_name(op, 1), RC_SHAPE(w),
                          rc_in_name(op, 0), RC_SHAPE(m));
    return RC_OK;
}

/* mat (N, R), w (N,) -> y (N, R) = mat * w[row]. */
static void row_mul_kernel(int64_t N, int64_t R, const float *mat, const float *w, float *y)
{
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < R; j++) y[i * R + j] = mat[i * R + j] * w[i];
}

static rc_status row_mul_run(rc_op *op, rc_err *err)
{
    rc_status st = row_mul_check(op, err);
    if (st) return st;
    const rc_tensor *m = rc_in(op, 0);
    if ((st = resize_out_like(op, 0, m, err))) return st;
    const int64_t N = m->dims[0], R = rc_dims_prod(m, 1, m->ndim);
    if (N * R == 0) return RC_OK;
    row_mul_kernel(N, R, rc_f32(m), rc_f32(rc_in(op, 1)), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* ReduceTailSum (Caffe2's rowmul_op): mat float32 (N, ...) (ndim >= 1) -> Y (N,), Y[i] = the sum of row i
 * (every dim but the first), added in double in element order and rounded once (Caffe2 added in float);
 * an empty row sums to 0. */
static rc_status reduce_tail_sum_check(rc_op *op, rc_err *err)
{
    rc_status st = check_f32(op, 0, err);
    if (st) return st;
    if (rc_in(op, 0)->ndim < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (mat) must have at least 1 dim, got %s",
                          rc_in_name(op, 0), RC_SHAPE(rc_in(op, 0)));
    return RC_OK;
}

static rc_status reduce_tail_sum_run(rc_op *op, rc_err *err)
{
    rc_status st = reduce_tail_sum_check(op, err);
    if (st) return st;
    const rc_tensor *m = rc_in(op, 0);
    const int64_t N = m->dims[0], R = rc_dims_prod(m, 1, m->ndim), dims[1] = {N};
    if ((st = resize_out(op, 0, 1, dims, err))) return st;
    if (N == 0) return RC_OK;
    const float *x = R ? rc_f32(m) : NULL;
    float *y = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < N; i++) {
        double acc = 0.0;
        for (int64_t j = 0; j < R; j++) acc += x[i * R + j];
        y[i] = (float)acc;
    }
    return RC_OK;
}

static rc_status weighted_sum_setup(rc_op *op, rc_err *err)
{
    if (op->n_in % 2)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' has no weight: WeightedSum takes pairs (X0, w0, X1, w1, ...), got %d "
                          "inputs", op->n_in - 1, rc_in_name(op, op->n_in - 1), op->n_in);
    math_args *a = NULL;
    rc_status st = args_new(op, &a, err);
    return st ? st : ptr_table(op, a, op->n_in / 2, 1, err);
}

/* WeightedSum: (X0, w0, X1, w1, ...), Xi all one shape, wi 1-element -> Y = sum_i wi Xi; Y may be X0. */
static rc_status weighted_sum_check(rc_op *op, rc_err *err)
{
    rc_status st;
    for (int i = 0; i < op->n_in; i++) {
        if ((st = check_f32(op, i, err))) return st;
        if (i % 2 == 0 && i > 0 && (st = check_same_shape(op, i, 0, err))) return st;
        if (i % 2 == 1 && rc_tensor_numel(rc_in(op, i)) != 1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (weight of '%s') must have 1 element, got %s",
                              i, rc_in_name(op, i), rc_in_name(op, i - 1), RC_SHAPE(rc_in(op, i)));
    }
    return RC_OK;
}

static rc_status weighted_sum_run(rc_op *op, rc_err *err)
{
    math_args *a = op->state;
    rc_status st;
    if ((st = weighted_sum_check(op, err))) return st;
    if ((st = resize_out_like(op, 0, rc_in(op, 0), err))) return st;
    for (int j = 0; j < a->n_ptr; j++) {
        a->ptr[j] = rc_f32(rc_in(op, 2 * j));
        a->w[j] = rc_f32(rc_in(op, 2 * j + 1))[0];
    }
    rc_k_weighted_sum(a->n_ptr, a->ptr, a->w, rc_tensor_numel(rc_in(op, 0)), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* WeightedSumGradient (Caffe2's): (dY, X0, w0, X1, w1, ...) -> (dX0, ..., dXk-1[, dw0, ..., dwk-1]):
 * dXi = wi dY (dY's shape), and with grad_on_w=1 dwi = sum(dY Xi) (shape (1,), summed in double). */
static rc_status weighted_sum_grad_setup(rc_op *op, rc_err *err)
{
    math_args *a = NULL;
    rc_status st = args_new(op, &a, err);
    if (!st) st = arg_flag(op, "grad_on_w", &a->grad_on_w, err);
    if (st) return st;
    if (op->n_in % 2 == 0)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "takes (dY, X0, w0, X1, w1, ...): input %d blob '%s' has no weight, got %d inputs",
                          op->n_in - 1, rc_in_name(op, op->n_in - 1), op->n_in);
    int k = op->n_in / 2;
    if (op->n_out != (a->grad_on_w ? 2 * k : k))
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "%d inputs (%d pairs) with grad_on_w=%d need %d outputs (dX0..dX%d%s), got %d", op->n_in, k,
                          a->grad_on_w, a->grad_on_w ? 2 * k : k, k - 1, a->grad_on_w ? ", then dw0.." : "",
                          op->n_out);
    return RC_OK;
}

static rc_status weighted_sum_grad_check(rc_op *op, rc_err *err)
{
    const math_args *a = op->state;
    rc_status st;
    if ((st = check_f32(op, 0, err))) return st;
    for (int i = 1; i < op->n_in; i += 2) {
        if ((st = check_f32(op, i + 1, err))) return st;
        if (rc_tensor_numel(rc_in(op, i + 1)) != 1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (weight of '%s') must have 1 element, got %s",
                              i + 1, rc_in_name(op, i + 1), rc_in_name(op, i), RC_SHAPE(rc_in(op, i + 1)));
        if (a->grad_on_w) { /* Xi is read only for dwi */
            if ((st = check_f32(op, i, err))) return st;
            if ((st = check_same_shape(op, i, 0, err))) return st;
        }
    }
    return RC_OK;
}

static rc_status weighted_sum_grad_run(rc_op *op, rc_err *err)
{
    const math_args *a = op->state;
    rc_status st;
    if ((st = weighted_sum_grad_check(op, err))) return st;
    const rc_tensor *dy_t = rc_in(op, 0);
    int64_t n = rc_tensor_numel(dy_t);
    int k = op->n_in / 2;
    static const int64_t one[1] = {1};
    for (int i = 0; i < k; i++) {
        if ((st = resize_out_like(op, i, dy_t, err))) return st;
        if (a->grad_on_w && (st = resize_out(op, k + i, 1, one, err))) return st;
    }
    const float *dy = rc_f32(dy_t);
    for (int i = 0; i < k; i++) {
        float w = rc_f32(rc_in(op, 2 * i + 2))[0];
        float *dx = rc_f32(rc_out(op, i));
        for (int64_t j = 0; j < n; j++) dx[j] = w * dy[j];
        if (a->grad_on_w) {
            const float *x = rc_f32(rc_in(op, 2 * i + 1));
            double acc = 0.0;
            for (int64_t j = 0; j < n; j++) acc += (double)dy[j] * x[j];
            rc_f32(rc_out(op, k + i))[0] = (float)acc;
        }
    }
    return RC_OK;
}

/* ---------------------------------------------------------------- Add, Sub, Mul, SumReduceLike */
rc_status rc_binary_args(rc_op *op, int *broadcast, int64_t *axis, rc_err *err)
{
    int by_str = 0;
    rc_status st = arg_flag(op, "broadcast", broadcast, err);
    if (!st) st = rc_arg_i(&op->def, "axis", -1, axis, err);
    if (!st) st = axis_from_axis_str(op, axis, &by_str, err);
    if (st) return st;
    if (!*broadcast && (rc_opdef_arg(&op->def, "axis") || by_str))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument '%s' needs broadcast=1", by_str ? "axis_str" : "axis");
    return RC_OK;
}

static rc_status binary_setup(rc_op *op, rc_err *err)
{
    math_args *a = NULL;
    rc_status st = args_new(op, &a, err);
    return st ? st : rc_binary_args(op, &a->broadcast, &a->axis, err);
}

rc_status rc_binary_bc(rc_op *op, int ia, int ib, int broadcast, int64_t axis, rc_bc *bc, rc_err *err)
{
    const rc_tensor *A = rc_in(op, ia), *B = rc_in(op, ib);
    int64_t pre = 1, n = rc_tensor_numel(A), post = 1;
    rc_status st;
    if (!broadcast && !rc_tensor_same_shape(A, B)) return rc_bc_numpy(op, ia, ib, bc, err);
    if (broadcast && (st = legacy_broadcast(op, ia, ib, axis, &pre, &n, &post, err))) return st;
    rc_bc_legacy(A, pre, n, post, bc);
    return RC_OK;
}

typedef void (*binary_kernel)(int64_t, int64_t, int64_t, const float *, const float *, float *);

/* A [pre, n, post], B [n] (legacy broadcast) or A, B one shape -> C shape of A;
 * or (unequal shapes without broadcast=1: *numpy set) numpy-style, into bc.
 * A and B float32, or (allow_i32) both float32 or both int32. */
static rc_status binary_shapes_dt(rc_op *op, int allow_i32, int64_t *ppre, int64_t *pn, int64_t *ppost,
                                  int *numpy, rc_bc *bc, rc_err *err)
{
    const math_args *a = op->state;
    rc_status st;
    const rc_dtype dt = allow_i32 && rc_in(op, 0)->dtype == RC_I32 ? RC_I32 : RC_F32;
    if ((st = rc_check_input(op, 0, dt, err))) return st;
    if (allow_i32 && rc_in(op, 1)->dtype != RC_UNDEF && rc_in(op, 1)->storage && rc_in(op, 1)->dtype != dt)
        return rc_op_fail(op, err, RC_ERR_TYPE, "input 1 blob '%s' %s must have the dtype of input 0 blob '%s' %s",
                          rc_in_name(op, 1), RC_SHAPE(rc_in(op, 1)), rc_in_name(op, 0), RC_SHAPE(rc_in(op, 0)));
    if ((st = rc_check_input(op, 1, dt, err))) return st;
    const rc_tensor *A = rc_in(op, 0), *B = rc_in(op, 1);
    int64_t pre = 1, n = rc_tensor_numel(A), post = 1;
    *numpy = !a->broadcast && !rc_tensor_same_shape(A, B);
    if (*numpy) {
        if ((st = rc_bc_numpy(op, 0, 1, bc, err))) return st;
        return rc_bc_check_inplace(op, 0, 1, bc, err);
    } else if ((st = legacy_broadcast(op, 0, 1, a->axis, &pre, &n, &post, err))) {
        return st;
    }
    if (op->out[0] == op->in[1] && op->in[0] != op->in[1] && !rc_tensor_same_shape(A, B))
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "output blob '%s' is input 1 of shape %s, but the result has the shape of input 0 blob "
                          "'%s' %s (in-place on input 1 needs equal shapes)", rc_out_name(op, 0), RC_SHAPE(B),
                          rc_in_name(op, 0), RC_SHAPE(A));
    *ppre = pre;
    *pn = n;
    *ppost = post;
    return RC_OK;
}

/* Add, Sub, Mul, Div and the comparison ops: float32 or int32 inputs (one dtype). */
static rc_status binary_check_i32(rc_op *op, rc_err *err)
{
    int64_t pre, n, post;
    int numpy;
    rc_bc bc;
    return binary_shapes_dt(op, 1, &pre, &n, &post, &numpy, &bc, err);
}

/* Add, Sub, Mul, Div: float32 through the elementwise kernel k (equal shapes or
 * broadcast=1) or rc_bc_binary (numpy-style); int32 through rc_bc_binary,
 * which checks every result fits int32 before writing. */
static rc_status binary_run(rc_op *op, binary_kernel k, rc_bc_kind kind, rc_err *err)
{
    rc_status st;
    int64_t pre, n, post;
    int numpy;
    rc_bc bc;
    if ((st = binary_shapes_dt(op, 1, &pre, &n, &post, &numpy, &bc, err))) return st;
    const rc_tensor *A = rc_in(op, 0);
    if (!numpy && A->dtype == RC_I32) rc_bc_legacy(A, pre, n, post, &bc);
    if (numpy || A->dtype == RC_I32) return rc_bc_binary(op, kind, &bc, err);
    if ((st = resize_out_like(op, 0, A, err))) return st;
    k(pre, n, post, rc_f32(A), rc_f32(rc_in(op, 1)), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

static rc_status add_run(rc_op *op, rc_err *err) { return binary_run(op, rc_k_add, RC_BC_ADD, err); }
static rc_status sub_run(rc_op *op, rc_err *err) { return binary_run(op, rc_k_sub, RC_BC_SUB, err); }
static rc_status mul_run(rc_op *op, rc_err *err) { return binary_run(op, rc_k_mul, RC_BC_MUL, err); }

/* ---------------------------------------------------------------- Div */
/* Div: float32 (IEEE) or int32 (truncating; a zero divisor or INT32_MIN / -1
 * is a ValueError naming the position, checked by rc_bc_binary before the
 * output is touched). */
static rc_status div_run(rc_op *op, rc_err *err)
{
    return binary_run(op, rc_k_div, RC_BC_DIV, err);
}

/* ---------------------------------------------------------------- EQ, NE, LT, LE, GT, GE */
/* a [pre, n, post], b [n] -> c [pre, n, post] int32: c = (a OP b[j]) as 0 / 1.
 * Plain C comparisons: IEEE for NaN (only NE is true). */
#define RC_CMP_KERNEL(name, T, OP)                                                                          \
    static void name(int64_t pre, int64_t n, int64_t post, const T *a, const T *b, int32_t *c)              \
    {                                                                                                       \
        for (int64_t p = 0; p < pre; p++)                                                                   \
            for (int64_t j = 0; j < n; j++) {                                                               \
                const T bj = b[j];                                                                          \
                const int64_t o = (p * n + j) * post;                                                       \
                for (int64_t k = 0; k < post; k++) c[o + k] = a[o + k] OP bj;                               \
            }                                                                                               \
    }
#define RC_CMP_PAIR(tag, OP) RC_CMP_KERNEL(cmp_##tag##_f32, float, OP) RC_CMP_KERNEL(cmp_##tag##_i32, int32_t, OP)
RC_CMP_PAIR(eq, ==)
RC_CMP_PAIR(ne, !=)
RC_CMP_PAIR(lt, <)
RC_CMP_PAIR(le, <=)
RC_CMP_PAIR(gt, >)
RC_CMP_PAIR(ge, >=)

typedef void (*cmp_kernel_f32)(int64_t, int64_t, int64_t, const float *, const float *, int32_t *);
typedef void (*cmp_kernel_i32)(int64_t, int64_t, int64_t, const int32_t *, const int32_t *, int32_t *);

/* A, B float32 or int32 (one dtype; legacy broadcast of B as Add's) -> C int32 0 / 1, shape of A.
 * No in-place (the schema refuses it): C may not be A or B. */
static rc_status cmp_run(rc_op *op, cmp_kernel_f32 kf, cmp_kernel_i32 ki, rc_bc_kind kind, rc_err *err)
{
    rc_status st;
    int64_t pre, n, post;
    int numpy;
    rc_bc bc;
    if ((st = binary_shapes_dt(op, 1, &pre, &n, &post, &numpy, &bc, err))) return st;
    if (numpy) return rc_bc_binary(op, kind, &bc, err);
    const rc_tensor *A = rc_in(op, 0), *B = rc_in(op, 1);
    int64_t dims[RC_MAX_DIMS];
    memcpy(dims, A->dims, sizeof dims);
    st = rc_tensor_resize(rc_out(op, 0), RC_I32, A->ndim, dims, err);
    if (st) return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    if (A->dtype == RC_I32)
        ki(pre, n, post, rc_i32(A), rc_i32(B), rc_i32(rc_out(op, 0)));
    else
        kf(pre, n, post, rc_f32(A), rc_f32(B), rc_i32(rc_out(op, 0)));
    return RC_OK;
}

static rc_status eq_run(rc_op *op, rc_err *err) { return cmp_run(op, cmp_eq_f32, cmp_eq_i32, RC_BC_EQ, err); }
static rc_status ne_run(rc_op *op, rc_err *err) { return cmp_run(op, cmp_ne_f32, cmp_ne_i32, RC_BC_NE, err); }
static rc_status lt_run(rc_op *op, rc_err *err) { return cmp_run(op, cmp_lt_f32, cmp_lt_i32, RC_BC_LT, err); }
static rc_status le_run(rc_op *op, rc_err *err) { return cmp_run(op, cmp_le_f32, cmp_le_i32, RC_BC_LE, err); }
static rc_status gt_run(rc_op *op, rc_err *err) { return cmp_run(op, cmp_gt_f32, cmp_gt_i32, RC_BC_GT, err); }
static rc_status ge_run(rc_op *op, rc_err *err) { return cmp_run(op, cmp_ge_f32, cmp_ge_i32, RC_BC_GE, err); }

/* DivGradient: B [n] (or, without broadcast, any shape that broadcasts
 * numpy-style to C's), C [pre, n, post] (Div's output), dC (shape of C) ->
 * dA = dC / B (shape of C), dB = -sum(dC C) / B over the broadcast dims (shape
 * of B). Args broadcast, axis as Div's. bc->n is -1 unless the numpy-style
 * (B, C, dC) case (or the four-input form) filled bc.
 * dA may be dC (Div ran in place on A). */
static rc_status div_grad_shapes(rc_op *op, rc_bc *bc, int64_t *pre, int64_t *n, int64_t *post, rc_err *err)
{
    const math_args *a = op->state;
    rc_status st;
    if (op->n_in == 4) { /* Caffe2's (dC, A, B, C) form, any broadcast */
        for (int i = 1; i < 4; i++)
            if (rc_in(op, i)->dtype == RC_I32)
                return rc_op_fail(op, err, RC_ERR_TYPE,
                                  "input %d blob '%s' %s is int32: Div on int32 inputs has no gradient (integer "
                                  "division is piecewise constant)", i, rc_in_name(op, i), RC_SHAPE(rc_in(op, i)));
        for (int i = 1; i < 3; i++)
            if ((st = check_f32(op, i, err))) return st;
        if ((st = rc_binary_bc(op, 1, 2, a->broadcast, a->axis, bc, err))) return st;
        return rc_bc_grad_check(op, RC_BC_DIV, bc, err);
    }
    for (int i = 0; i < 2; i++)
        if (rc_in(op, i)->dtype == RC_I32)
            return rc_op_fail(op, err, RC_ERR_TYPE,
                              "input %d blob '%s' %s is int32: Div on int32 inputs has no gradient (integer division "
                              "is piecewise constant)", i, rc_in_name(op, i), RC_SHAPE(rc_in(op, i)));
    for (int i = 0; i < 3; i++)
        if ((st = check_f32(op, i, err))) return st;
    if ((st = check_same_shape(op, 2, 1, err))) return st;
    *pre = 1;
    *n = rc_tensor_numel(rc_in(op, 1));
    *post = 1;
    bc->n = -1; /* (B, C, dC) elementwise or legacy: [pre, n, post] */
    if (a->broadcast) return legacy_broadcast(op, 1, 0, a->axis, pre, n, post, err);
    if (rc_tensor_same_shape(rc_in(op, 0), rc_in(op, 1))) return RC_OK;
    /* Caffe2's (B, C, dC) without broadcast=1: B broadcast numpy-style to C's shape (A had C's shape) */
    if ((st = rc_bc_numpy(op, 1, 0, bc, err))) return st;
    if (!rc_bc_same_shape(bc, rc_in(op, 1)))
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 0 blob '%s' of shape %s must broadcast (numpy-style) to the shape of input 1 "
                          "blob '%s' %s (Div's output)", rc_in_name(op, 0), RC_SHAPE(rc_in(op, 0)),
                          rc_in_name(op, 1), RC_SHAPE(rc_in(op, 1)));
    return RC_OK;
}

/* DivGradient (B, C, dC) with B broadcast numpy-style to C (rc_bc_rows' A is
 * C, its B is B): dA = dC / B, dB summed in double per element of B. */
typedef struct div_grad_rows {
    const float *b, *c, *dc;
    float *da;
    double *acc; /* borrowed: the sums of dC C per element of B */
} div_grad_rows;

static void row_div_grad_db(void *ctx, int64_t len, int64_t oa, int64_t sa, int64_t ob, int64_t sb, int64_t oc)
{
    const div_grad_rows *g = ctx;
    (void)oa;
    (void)sa;
    for (int64_t k = 0; k < len; k++) g->acc[ob + k * sb] += (double)g->dc[oc + k] * (double)g->c[oc + k];
}

static void row_div_grad_da(void *ctx, int64_t len, int64_t oa, int64_t sa, int64_t ob, int64_t sb, int64_t oc)
{
    const div_grad_rows *g = ctx;
    (void)oa;
    (void)sa;
    for (int64_t k = 0; k < len; k++) g->da[oc + k] = g->dc[oc + k] / g->b[ob + k * sb];
}

static rc_status div_grad_numpy_run(rc_op *op, math_args *a, const rc_bc *bc, rc_err *err)
{
    rc_status st;
    const rc_tensor *B = rc_in(op, 0), *C = rc_in(op, 1);
    const int64_t nb = rc_tensor_numel(B);
    if (nb > a->acc_n) {
        double *p = realloc(a->acc, sizeof(double) * (size_t)nb);
        if (!p) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory (%lld doubles of scratch)", (long long)nb);
        a->acc = p;
        a->acc_n = nb;
    }
    if ((st = resize_out_like(op, 0, C, err)) || (st = resize_out_like(op, 1, B, err))) return st;
    div_grad_rows g = {rc_f32(B), rc_f32(C), rc_f32(rc_in(op, 2)), rc_f32(rc_out(op, 0)), a->acc};
    if (nb > 0) memset(a->acc, 0, sizeof(double) * (size_t)nb);
    rc_bc_rows(bc, row_div_grad_db, &g); /* dB first: dA may be written over dC */
    rc_bc_rows(bc, row_div_grad_da, &g);
    float *db = rc_f32(rc_out(op, 1));
    for (int64_t j = 0; j < nb; j++) db[j] = (float)(-a->acc[j] / (double)g.b[j]);
    return RC_OK;
}

static rc_status div_grad_check(rc_op *op, rc_err *err)
{
    rc_bc bc;
    int64_t pre, n, post;
    return div_grad_shapes(op, &bc, &pre, &n, &post, err);
}

static rc_status div_grad_run(rc_op *op, rc_err *err)
{
    math_args *a = op->state;
    rc_status st;
    rc_bc bc;
    int64_t pre, n, post;
    if ((st = div_grad_shapes(op, &bc, &pre, &n, &post, err))) return st;
    if (op->n_in == 4) return rc_bc_grad(op, RC_BC_DIV, &bc, &a->acc, &a->acc_n, err);
    if (bc.n >= 0) return div_grad_numpy_run(op, a, &bc, err);
    const rc_tensor *B = rc_in(op, 0), *C = rc_in(op, 1);
    if ((st = resize_out_like(op, 0, C, err)) || (st = resize_out_like(op, 1, B, err))) return st;
    rc_k_div_grad(pre, n, post, rc_f32(B), rc_f32(C), rc_f32(rc_in(op, 2)), rc_f32(rc_out(op, 0)),
                  rc_f32(rc_out(op, 1)));
    return RC_OK;
}

/* dA may be dC: input 2 of (B, C, dC), input 0 of (dC, A, B, C), also where
 * dC's blob stands for another input (div_grad_setup refuses any other blob). */
static int inplace_div_grad(int in, int out) { return out == 0 && in <= 2; }

static rc_status div_grad_setup(rc_op *op, rc_err *err)
{
    rc_status st = rc_bc_grad_setup_check(op, op->n_in == 4 ? 0 : 2, err);
    return st ? st : binary_setup(op, err);
}

static rc_status sum_reduce_like_setup(rc_op *op, rc_err *err)
{
    math_args *a = NULL;
    int bc;
    rc_status st = args_new(op, &a, err);
    if (!st) st = rc_arg_i(&op->def, "axis", -1, &a->axis, err);
    int by_str = 0;
    if (!st) st = arg_flag(op, "broadcast", &bc, err); /* accepted (always broadcast), as Caffe2's gradients pass it */
    if (!st) st = axis_from_axis_str(op, &a->axis, &by_str, err);
    return st;
}

/* SumReduceLike: A, B (only its shape) -> C shape of B: A summed over the dims
 * that legacy broadcasting of B to A (axis) would repeat. */
static rc_status sum_reduce_like_shapes(rc_op *op, int64_t *pre, int64_t *n, int64_t *post, rc_err *err)
{
    const math_args *a = op->state;
    rc_status st;
    if ((st = check_f32(op, 0, err))) return st;
    const rc_tensor *A = rc_in(op, 0), *B = rc_in(op, 1);
    if (B->dtype == RC_UNDEF)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' (the shape to reduce to) holds no tensor",
                          rc_in_name(op, 1));
    *pre = 1;
    *n = 1;
    *post = rc_tensor_numel(A);
    if (rc_tensor_numel(B) != 1) return legacy_broadcast(op, 0, 1, a->axis, pre, n, post, err);
    return RC_OK;
}

static rc_status sum_reduce_like_check(rc_op *op, rc_err *err)
{
    int64_t pre, n, post;
    return sum_reduce_like_shapes(op, &pre, &n, &post, err);
}

static rc_status sum_reduce_like_run(rc_op *op, rc_err *err)
{
    rc_status st;
    int64_t pre, n, post;
    if ((st = sum_reduce_like_shapes(op, &pre, &n, &post, err))) return st;
    const rc_tensor *A = rc_in(op, 0), *B = rc_in(op, 1);
    if ((st = resize_out_like(op, 0, B, err))) return st;
    rc_k_sum_reduce(pre, n, post, rc_f32(A), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* ---------------------------------------------------------------- unary ops and their gradients */
typedef void (*unary_kernel)(int64_t, const float *, float *);
typedef void (*grad_kernel)(int64_t, const float *, const float *, float *);

/* The unary ops and Scale: X float32. */
static rc_status unary_check(rc_op *op, rc_err *err) { return check_f32(op, 0, err); }

/* X [n] -> Y [n], shape of X; Y may be X. */
static rc_status unary_run(rc_op *op, unary_kernel k, rc_err *err)
{
    rc_status st;
    if ((st = unary_check(op, err))) return st;
    if ((st = resize_out_like(op, 0, rc_in(op, 0), err))) return st;
    k(rc_tensor_numel(rc_in(op, 0)), rc_f32(rc_in(op, 0)), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* Their gradients and PowGradient (X, dY): both float32 of one shape. */
static rc_status unary_grad_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = check_f32(op, 0, err)) || (st = check_f32(op, 1, err))) return st;
    return check_same_shape(op, 1, 0, err);
}

/* Y [n], dY [n] -> dX [n]; dX may be dY. (SqrGradient: X [n] instead of Y; dX may be X or dY.) */
static rc_status unary_grad_run(rc_op *op, grad_kernel k, rc_err *err)
{
    rc_status st;
    if ((st = unary_grad_check(op, err))) return st;
    if ((st = resize_out_like(op, 0, rc_in(op, 1), err))) return st;
    k(rc_tensor_numel(rc_in(op, 0)), rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

static rc_status sigmoid_run(rc_op *op, rc_err *err) { return unary_run(op, rc_k_sigmoid, err); }
static rc_status tanh_run(rc_op *op, rc_err *err) { return unary_run(op, rc_k_tanh, err); }
static rc_status relu_run(rc_op *op, rc_err *err) { return unary_run(op, rc_k_relu, err); }
static rc_status sigmoid_grad_run(rc_op *op, rc_err *err) { return unary_grad_run(op, rc_k_sigmoid_grad, err); }
static rc_status tanh_grad_run(rc_op *op, rc_err *err) { return unary_grad_run(op, rc_k_tanh_grad, err); }
static rc_status relu_grad_run(rc_op *op, rc_err *err) { return unary_grad_run(op, rc_k_relu_grad, err); }
/* Sqr: Y = X * X; Negative: Y = -X; SqrGradient: (X, dY) -> dX = 2 X dY (its first input is X, not Y). */
static rc_status sqr_run(rc_op *op, rc_err *err) { return unary_run(op, rc_k_sqr, err); }
static rc_status negative_run(rc_op *op, rc_err *err) { return unary_run(op, rc_k_neg, err); }
static rc_status sqr_grad_run(rc_op *op, rc_err *err) { return unary_grad_run(op, rc_k_sqr_grad, err); }
static rc_status log_run(rc_op *op, rc_err *err) { return unary_run(op, rc_k_log, err); }
static rc_status exp_run(rc_op *op, rc_err *err) { return unary_run(op, rc_k_exp, err); }

static rc_status scale_setup(rc_op *op, rc_err *err)
{
    math_args *a = NULL;
    rc_status st = args_new(op, &a, err);
    return st ? st : rc_arg_f(&op->def, "scale", 1.f, &a->scale, err);
}

/* Scale: X [n] -> Y [n] = scale * X; Y may be X. */
static rc_status scale_run(rc_op *op, rc_err *err)
{
    const math_args *a = op->state;
    rc_status st;
    if ((st = unary_check(op, err))) return st;
    if ((st = resize_out_like(op, 0, rc_in(op, 0), err))) return st;
    rc_k_scale(rc_tensor_numel(rc_in(op, 0)), a->scale, rc_f32(rc_in(op, 0)), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* ---------------------------------------------------------------- ScaleBlobs */
/* ScaleBlobs (Caffe2's scale_blobs_op): N >= 1 float32 inputs and exactly N outputs; Y_i = scale * X_i
 * (arg scale, default 1), of X_i's shape. Y_i may be X_i (the same index only: any other input naming an
 * output is refused at creation, so no pair reads a blob an earlier pair wrote). */
static rc_status scale_blobs_check(rc_op *op, rc_err *err)
{
    for (int i = 0; i < op->n_in; i++) {
        rc_status st = check_f32(op, i, err);
        if (st) return st;
    }
    return RC_OK;
}

static rc_status scale_blobs_setup(rc_op *op, rc_err *err)
{
    if (op->n_out != op->n_in)
        return rc_op_fail(op, err, RC_ERR_VALUE, "takes one output per input (output i = scale * input i): got %d "
                          "inputs and %d outputs", op->n_in, op->n_out);
    return scale_setup(op, err);
}

/* X_i [n_i] -> Y_i [n_i] = scale * X_i, i < N. Every input is checked before any output is touched. */
static rc_status scale_blobs_run(rc_op *op, rc_err *err)
{
    const math_args *a = op->state;
    rc_status st;
    if ((st = scale_blobs_check(op, err))) return st;
    for (int i = 0; i < op->n_in; i++) {
        if ((st = resize_out_like(op, i, rc_in(op, i), err))) return st;
        rc_k_scale(rc_tensor_numel(rc_in(op, i)), a->scale, rc_f32(rc_in(op, i)), rc_f32(rc_out(op, i)));
    }
    return RC_OK;
}

/* ---------------------------------------------------------------- Pow */
/* Pow / PowGradient: the argument 'exponent' (required, finite) into a->scale. */
static rc_status exponent_setup(rc_op *op, rc_err *err)
{
    if (!rc_opdef_arg(&op->def, "exponent"))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'exponent' is required");
    math_args *a = NULL;
    rc_status st = args_new(op, &a, err);
    if (!st) st = rc_arg_f(&op->def, "exponent", 1.f, &a->scale, err);
    if (st) return st;
    if (!isfinite(a->scale))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'exponent' must be finite, got %g", (double)a->scale);
    return RC_OK;
}

/* Pow (X, E) / PowGradient (dY, X, E, Y): no 'exponent' argument; broadcast / axis as Mul's. */
static rc_status exponent_tensor_setup(rc_op *op, rc_err *err)
{
    if (rc_opdef_arg(&op->def, "exponent"))
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' is the exponent tensor: the argument 'exponent' must not be given too",
                          op->n_in == 2 ? 1 : 2, rc_in_name(op, op->n_in == 2 ? 1 : 2));
    math_args *a = NULL;
    rc_status st = args_new(op, &a, err);
    return st ? st : rc_binary_args(op, &a->broadcast, &a->axis, err);
}

static rc_status pow_setup(rc_op *op, rc_err *err)
{
    if (op->n_in > 1) return exponent_tensor_setup(op, err);
    return exponent_setup(op, err);
}

static rc_status pow_grad_setup(rc_op *op, rc_err *err)
{
    if (op->n_in == 4 && op->n_out == 2) return exponent_tensor_setup(op, err);
    if (op->n_in == 2 && op->n_out == 1) return exponent_setup(op, err);
    return rc_op_fail(op, err, RC_ERR_VALUE,
                      "takes (X, dY) -> dX with the argument 'exponent', or (dY, X, E, Y) -> (dX, dE), got %d "
                      "inputs and %d outputs", op->n_in, op->n_out);
}

static rc_status pow_check(rc_op *op, rc_err *err)
{
    const math_args *a = op->state;
    if (op->n_in == 2) return rc_pow_tensor_check(op, a->broadcast, a->axis, err);
    return unary_check(op, err);
}

/* Pow: X [n] -> Y [n] = X ^ exponent; Y may be X. */
static rc_status pow_run(rc_op *op, rc_err *err)
{
    const math_args *a = op->state;
    rc_status st;
    if (op->n_in == 2) return rc_pow_tensor_run(op, a->broadcast, a->axis, err);
    if ((st = unary_check(op, err))) return st;
    if ((st = resize_out_like(op, 0, rc_in(op, 0), err))) return st;
    rc_k_pow(rc_tensor_numel(rc_in(op, 0)), a->scale, rc_f32(rc_in(op, 0)), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

static rc_status pow_grad_check(rc_op *op, rc_err *err)
{
    const math_args *a = op->state;
    if (op->n_in == 4) return rc_pow_tensor_grad_check(op, a->broadcast, a->axis, err);
    return unary_grad_check(op, err);
}

/* PowGradient: X [n], dY [n] -> dX [n] = exponent X^(exponent - 1) dY; dX may be X or dY. */
static rc_status pow_grad_run(rc_op *op, rc_err *err)
{
    math_args *a = op->state;
    rc_status st;
    if (op->n_in == 4) return rc_pow_tensor_grad_run(op, a->broadcast, a->axis, &a->acc, &a->acc_n, err);
    if ((st = unary_grad_check(op, err))) return st;
    if ((st = resize_out_like(op, 0, rc_in(op, 0), err))) return st;
    rc_k_pow_grad(rc_tensor_numel(rc_in(op, 0)), a->scale, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)),
                  rc_f32(rc_out(op, 0)));
    return RC_OK;
}

/* ---------------------------------------------------------------- Max */
/* Max: X0..Xn-1 (n >= 1), all float32 of one shape (checked by sum_check) -> Y
 * = elementwise max (NaN propagates); Y may be any input. */
static rc_status max_run(rc_op *op, rc_err *err)
{
    math_args *a = op->state;
    rc_status st;
    if ((st = sum_check(op, err))) return st;
    if ((st = resize_out_like(op, 0, rc_in(op, 0), err))) return st;
    for (int i = 0; i < op->n_in; i++) a->ptr[i] = rc_f32(rc_in(op, i));
    rc_k_max(op->n_in, a->ptr, rc_tensor_numel(rc_in(op, 0)), rc_f32(rc_out(op, 0)));
    return RC_OK;
}

static rc_status max_grad_setup(rc_op *op, rc_err *err)
{
    if (op->n_in != op->n_out + 2)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "takes (Y, dY, X0, ..., Xk-1) and gives (dX0, ..., dXk-1): %d inputs need %d outputs, got "
                          "%d", op->n_in, op->n_in - 2, op->n_out);
    math_args *a = NULL;
    rc_status st = args_new(op, &a, err);
    if (!st) st = ptr_table(op, a, op->n_out, 0, err); /* the Xi */
    if (st) return st;
    a->dptr = calloc((size_t)op->n_out, sizeof *a->dptr); /* the dXi */
    if (!a->dptr) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    return RC_OK;
}

/* MaxGradient: Y, dY, X0..Xk-1, all float32 of Y's shape -> dXi = dY where Xi == Y, else 0. */
static rc_status max_grad_run(rc_op *op, rc_err *err)
{
    math_args *a = op->state;
    rc_status st;
    if ((st = sum_check(op, err))) return st; /* the same checks as Sum's */
    float **dx = a->dptr;
    for (int o = 0; o < op->n_out; o++) {
        if ((st = resize_out_like(op, o, rc_in(op, 0), err))) return st;
        dx[o] = rc_f32(rc_out(op, o));
        a->ptr[o] = rc_f32(rc_in(op, o + 2));
    }
    rc_k_max_grad(op->n_out, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), a->ptr, rc_tensor_numel(rc_in(op, 0)), dx);
    return RC_OK;
}

/* ---------------------------------------------------------------- ElementwiseLinear */
static rc_status axis_setup(rc_op *op, rc_err *err)
{
    math_args *a = NULL;
    rc_status st = args_new(op, &a, err);
    return st ? st : rc_arg_i(&op->def, "axis", 1, &a->axis, err);
}

/* Input x flattened at axis to [N, D]; inputs ia, ib ([D] each, ib < 0: none) checked. */
static rc_status ewl_dims(rc_op *op, int x, int ia, int ib, int64_t *N, int64_t *D, rc_err *err)
{
    const math_args *a = op->state;
    int ax = 0;
    rc_status st = canon_axis(op, x, "axis", a->axis, &ax, err);
    if (st) return st;
    const rc_tensor *X = rc_in(op, x);
    *N = rc_dims_prod(X, 0, ax);
    *D = rc_dims_prod(X, ax, X->ndim);
    int v[2] = {ia, ib};
    for (int j = 0; j < 2; j++) {
        if (v[j] < 0) continue;
        const rc_tensor *t = rc_in(op, v[j]);
        if (t->ndim != 1 || t->dims[0] != *D)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input %d blob '%s' must have shape (%lld,) (D of input %d blob '%s' %s at axis=%d), "
                              "got %s", v[j], rc_in_name(op, v[j]), (long long)*D, x, rc_in_name(op, x), RC_SHAPE(X),
                              ax, RC_SHAPE(t));
    }
    return RC_OK;
}

static rc_status ewl_shapes(rc_op *op, int64_t *N, int64_t *D, rc_err *err)
{
    rc_status st;
    for (int i = 0; i < 3; i++)
        if ((st = check_f32(op, i, err))) return st;
    return ewl_dims(op, 0, 1, 2, N, D, err);
}

static rc_status ewl_check(rc_op *op, rc_err *err)
{
    int64_t N, D;
    return ewl_shapes(op, &N, &D, err);
}

/* ElementwiseLinear: X [N, D] (flattened at axis), a [D], b [D] -> Y = X * a + b, shape of X. */
static rc_status ewl_run(rc_op *op, rc_err *err)
{
    rc_status st;
    int64_t N, D;
    if ((st = ewl_shapes(op, &N, &D, err))) return st;
    if ((st = resize_out_like(op, 0, rc_in(op, 0), err))) return st;
    rc_k_elementwise_linear(N, D, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), rc_f32(rc_in(op, 2)),
                            rc_f32(rc_out(op, 0)));
    return RC_OK;
}

static rc_status ewl_grad_shapes(rc_op *op, int64_t *N, int64_t *D, rc_err *err)
{
    rc_status st;
    for (int i = 0; i < 3; i++)
        if ((st = check_f32(op, i, err))) return st;
    if ((st = check_same_shape(op, 0, 1, err))) return st;
    return ewl_dims(op, 1, 2, -1, N, D, err);
}

static rc_status ewl_grad_check(rc_op *op, rc_err *err)
{
    int64_t N, D;
    return ewl_grad_shapes(op, &N, &D, err);
}

/* ElementwiseLinearGradient: dY [N, D], X [N, D], a [D] -> dX [N, D], da [D], db [D]. */
static rc_status ewl_grad_run(rc_op *op, rc_err *err)
{
    rc_status st;
    int64_t N, D;
    if ((st = ewl_grad_shapes(op, &N, &D, err))) return st;
    int64_t dd[1] = {D};
    if ((st = resize_out_like(op, 0, rc_in(op, 1), err))) return st;
    if ((st = resize_out(op, 1, 1, dd, err))) return st;
    if ((st = resize_out(op, 2, 1, dd, err))) return st;
    rc_k_elementwise_linear_grad(N, D, rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), rc_f32(rc_in(op, 2)),
                                 rc_f32(rc_out(op, 0)), rc_f32(rc_out(op, 1)), rc_f32(rc_out(op, 2)));
    return RC_OK;
}

/* ---------------------------------------------------------------- the family table */
const rc_op_schema rc_ops_math[] = {
    {"Copy", 1, 1, 1, 1, rc_inplace_any, NULL, copy_run, NULL, "Y = X"},
    {"FC", 3, 3, 1, 1, NULL, fc_setup, fc_run, math_args_free, "Y = X W^T + b (args axis, axis_w)",
     fc_check},
    {"FCGradient", 3, 3, 2, 3, NULL, fc_setup, fc_grad_run, math_args_free, "(X, W, dY) -> (dW, db[, dX])",
     fc_grad_check},
    {"FCTransposed", 3, 3, 1, 1, NULL, fct_setup, fct_run, math_args_free,
     "Y = X W + b, W stored (K, N) (args axis, axis_w)", fct_check},
    {"FCTransposedGradient", 3, 3, 2, 3, NULL, fct_setup, fct_grad_run, math_args_free,
     "(X, W (K, N), dY) -> (dW, db[, dX])", fct_grad_check},
    {"MatMul", 2, 3, 1, 1, NULL, matmul_setup, matmul_run, math_args_free,
     "Y = op(A) op(B) (args axis_a, axis_b, trans_a, trans_b); optional input 2 gives Y's shape", matmul_check},
    {"Sum", 1, -1, 1, 1, rc_inplace_any, sum_setup, sum_run, math_args_free, "Y = X0 + X1 + ...", sum_check},
    {"SumInt", 1, -1, 1, 1, rc_inplace_first, sum_int_setup, sum_int_run, math_args_free,
     "Y = X0 + X1 + ... elementwise, int32 of one shape (an int32 overflow is a ValueError)", sum_int_check},
    {"Accumulate", 1, 1, 1, 1, NULL, accumulate_setup, accumulate_run, math_args_free,
     "Y = gamma Y + X (arg gamma=1; Y zeroed first when it is not float32 of X's shape)", accumulate_check},
    {"RowMul", 2, 2, 1, 1, NULL, NULL, row_mul_run, NULL,
     "Y[i, ...] = mat[i, ...] * w[i]: mat (N, ...), w of N elements", row_mul_check},
    {"ReduceTailSum", 1, 1, 1, 1, NULL, NULL, reduce_tail_sum_run, NULL,
     "Y (N,) = the sum of each row of mat (N, ...) over its other dims", reduce_tail_sum_check},
    {"WeightedSum", 2, -1, 1, 1, rc_inplace_first, weighted_sum_setup, weighted_sum_run, math_args_free,
     "Y = w0 X0 + w1 X1 + ... (inputs X0, w0, X1, w1, ...)", weighted_sum_check},
    {"WeightedSumGradient", 3, -1, 1, -1, NULL, weighted_sum_grad_setup, weighted_sum_grad_run, math_args_free,
     "(dY, X0, w0, X1, w1, ...) -> (dX0 = w0 dY, ...[, dw0 = sum(dY X0), ...]) (arg grad_on_w)",
     weighted_sum_grad_check},
    {"Add", 2, 2, 1, 1, inplace_binary, binary_setup, add_run, math_args_free, "C = A + B (args broadcast, axis)",
     binary_check_i32},
    {"Sub", 2, 2, 1, 1, inplace_binary, binary_setup, sub_run, math_args_free, "C = A - B (args broadcast, axis)",
     binary_check_i32},
    {"Mul", 2, 2, 1, 1, inplace_binary, binary_setup, mul_run, math_args_free, "C = A * B (args broadcast, axis)",
     binary_check_i32},
    {"Div", 2, 2, 1, 1, inplace_binary, binary_setup, div_run, math_args_free,
     "C = A / B: float32 IEEE, int32 truncating (args broadcast, axis)", binary_check_i32},
    {"EQ", 2, 2, 1, 1, NULL, binary_setup, eq_run, math_args_free, "C = (A == B) int32 0/1 (args broadcast, axis)",
     binary_check_i32},
    {"NE", 2, 2, 1, 1, NULL, binary_setup, ne_run, math_args_free, "C = (A != B) int32 0/1 (args broadcast, axis)",
     binary_check_i32},
    {"LT", 2, 2, 1, 1, NULL, binary_setup, lt_run, math_args_free, "C = (A < B) int32 0/1 (args broadcast, axis)",
     binary_check_i32},
    {"LE", 2, 2, 1, 1, NULL, binary_setup, le_run, math_args_free, "C = (A <= B) int32 0/1 (args broadcast, axis)",
     binary_check_i32},
    {"GT", 2, 2, 1, 1, NULL, binary_setup, gt_run, math_args_free, "C = (A > B) int32 0/1 (args broadcast, axis)",
     binary_check_i32},
    {"GE", 2, 2, 1, 1, NULL, binary_setup, ge_run, math_args_free, "C = (A >= B) int32 0/1 (args broadcast, axis)",
     binary_check_i32},
    {"DivGradient", 3, 4, 2, 2, inplace_div_grad, div_grad_setup, div_grad_run, math_args_free,
     "(B, C, dC) or (dC, A, B, C) -> (dA = dC / B, dB = -sum(dC C) / B over the broadcast dims) (args "
     "broadcast, axis)", div_grad_check},
    {"Pow", 1, 2, 1, 1, rc_inplace_any, pow_setup, pow_run, math_args_free,
     "Y = X ^ exponent (arg exponent; exact for 0, 1, 2, 0.5, -1, else powf), or (X, E) -> X ^ E (E float32, "
     "broadcast as Mul; args broadcast, axis)", pow_check},
    {"PowGradient", 2, 4, 1, 2, rc_inplace_any, pow_grad_setup, pow_grad_run, math_args_free,
     "(X, dY) -> dX = exponent X^(exponent - 1) dY (arg exponent), or (dY, X, E, Y) -> (dX = dY E X^(E-1), "
     "dE = dY Y log X, summed over broadcast dims)", pow_grad_check},
    {"Max", 1, -1, 1, 1, rc_inplace_any, sum_setup, max_run, math_args_free,
     "Y = elementwise max of X0, X1, ... (one shape; NaN propagates)", sum_check},
    {"MaxGradient", 3, -1, 1, -1, NULL, max_grad_setup, max_grad_run, math_args_free,
     "(Y, dY, X0, ...) -> (dX0, ...): dXi = dY where Xi == Y, else 0", sum_check},
    {"SumReduceLike", 2, 2, 1, 1, NULL, sum_reduce_like_setup, sum_reduce_like_run, math_args_free,
     "C = A summed to the shape of B (arg axis)", sum_reduce_like_check},
    {"Sigmoid", 1, 1, 1, 1, rc_inplace_any, NULL, sigmoid_run, NULL, "Y = 1 / (1 + exp(-X))", unary_check},
    {"SigmoidGradient", 2, 2, 1, 1, inplace_dy, NULL, sigmoid_grad_run, NULL, "(Y, dY) -> dX = dY Y (1 - Y)",
     unary_grad_check},
    {"Tanh", 1, 1, 1, 1, rc_inplace_any, NULL, tanh_run, NULL, "Y = tanh(X)", unary_check},
    {"TanhGradient", 2, 2, 1, 1, inplace_dy, NULL, tanh_grad_run, NULL, "(Y, dY) -> dX = dY (1 - Y^2)",
     unary_grad_check},
    {"Relu", 1, 1, 1, 1, rc_inplace_any, NULL, relu_run, NULL, "Y = max(X, 0)", unary_check},
    {"ReluGradient", 2, 2, 1, 1, inplace_dy, NULL, relu_grad_run, NULL, "(Y, dY) -> dX = dY [Y > 0]",
     unary_grad_check},
    {"Scale", 1, 1, 1, 1, rc_inplace_any, scale_setup, scale_run, math_args_free, "Y = scale * X (arg scale)",
     unary_check},
    {"ScaleBlobs", 1, -1, 1, -1, rc_inplace_same_index, scale_blobs_setup, scale_blobs_run, math_args_free,
     "(X_0, ..., X_N-1) -> (Y_0, ..., Y_N-1), Y_i = scale * X_i (arg scale; Y_i may be X_i)", scale_blobs_check},
    {"Sqr", 1, 1, 1, 1, rc_inplace_any, NULL, sqr_run, NULL, "Y = X * X", unary_check},
    {"SqrGradient", 2, 2, 1, 1, rc_inplace_any, NULL, sqr_grad_run, NULL, "(X, dY) -> dX = 2 X dY", unary_grad_check},
    {"Negative", 1, 1, 1, 1, rc_inplace_any, NULL, negative_run, NULL, "Y = -X (sign flip; its own gradient)",
     unary_check},
    {"Log", 1, 1, 1, 1, rc_inplace_any, NULL, log_run, NULL, "Y = log(X) (log(0) = -inf, log(x < 0) = NaN)",
     unary_check},
    {"Exp", 1, 1, 1, 1, rc_inplace_any, NULL, exp_run, NULL, "Y = exp(X)", unary_check},
    {"ElementwiseLinear", 3, 3, 1, 1, NULL, axis_setup, ewl_run, math_args_free, "Y = X * a + b (arg axis)",
     ewl_check},
    {"ElementwiseLinearGradient", 3, 3, 3, 3, NULL, axis_setup, ewl_grad_run, math_args_free,
     "(dY, X, a) -> (dX, da, db)", ewl_grad_check},
    {0},
};
