/* ops/bcast.c -- numpy-style broadcasting (bcast.h), the logical ops And, Or,
 * Xor, Not, the bitwise ops BitwiseAnd, BitwiseOr, BitwiseXor, and the broadcast gradient ops AddGradient, SubGradient and
 * MulGradient (DivGradient's four-input form lives in math.c and uses
 * rc_bc_grad from here).
 *
 * And, Or, Xor (A, B) and Not (X) (Caffe2's logical ops): int32 inputs only
 * (our bool is int32 0 / 1; float32 is a TypeError naming the blob), any
 * nonzero value is true (Caffe2's bool had no other values); the result is
 * int32 0 / 1. Broadcasting as the comparisons': equal shapes, broadcast=1
 * with axis (legacy), or numpy-style. And/Or/Xor may run in place when the
 * result has that input's shape; Not always may. No gradient.
 *
 * BitwiseAnd, BitwiseOr, BitwiseXor (A, B) (Caffe2's, for bool and integer
 * tensors): int32 inputs only (float32 is a TypeError naming the blob), C =
 * A & B, A | B, A ^ B on the int32 bits, broadcast and in place as And. No
 * gradient (Caffe2: none).
 *
 * AddGradient, SubGradient, MulGradient (dC, A, B) -> (dA, dB), args
 * broadcast / axis as the forward op's (Caffe2's signatures): dA and dB are
 * dC (Sub: dB = -dC; Mul: dA = dC B, dB = dC A) summed over the dims where
 * that input was repeated, shaped as the input. A and B are read for their
 * shapes only (Mul: also their values). dA may be dC's blob. */
#include "bcast.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- describing a broadcast */

/* Drops the size-1 iteration dims and merges adjacent dims that both inputs
 * walk contiguously (stride of the outer = stride of the inner times its size). */
static void bc_collapse(rc_bc *bc, int nd, const int64_t *dims, const int64_t *sa, const int64_t *sb)
{
    int m = 0;
    bc->n = 1;
    for (int i = 0; i < nd; i++) bc->n *= dims[i];
    if (bc->n == 0) {
        bc->ndim = 0;
        return;
    }
    for (int i = 0; i < nd; i++) {
        if (dims[i] == 1) continue;
        if (m > 0 && bc->sa[m - 1] == sa[i] * dims[i] && bc->sb[m - 1] == sb[i] * dims[i]) {
            bc->dims[m - 1] *= dims[i];
            bc->sa[m - 1] = sa[i];
            bc->sb[m - 1] = sb[i];
            continue;
        }
        bc->dims[m] = dims[i];
        bc->sa[m] = sa[i];
        bc->sb[m] = sb[i];
        m++;
    }
    if (m == 0) { /* one element */
        bc->dims[0] = 1;
        bc->sa[0] = bc->sb[0] = 0;
        m = 1;
    }
    bc->ndim = m;
}

rc_status rc_bc_numpy(rc_op *op, int ia, int ib, rc_bc *bc, rc_err *err)
{
    const rc_tensor *A = rc_in(op, ia), *B = rc_in(op, ib);
    const int nd = A->ndim > B->ndim ? A->ndim : B->ndim;
    int64_t dims[RC_MAX_DIMS], sa[RC_MAX_DIMS], sb[RC_MAX_DIMS];
    int64_t ta = 1, tb = 1; /* contiguous strides of A and B, from the last dim */
    for (int i = nd - 1; i >= 0; i--) {
        const int ka = i - (nd - A->ndim), kb = i - (nd - B->ndim);
        const int64_t da = ka >= 0 ? A->dims[ka] : 1, db = kb >= 0 ? B->dims[kb] : 1;
        if (da != db && da != 1 && db != 1)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input %d blob '%s' of shape %s and input %d blob '%s' of shape %s do not broadcast "
                              "(numpy-style, dims aligned from the last): dim %d of '%s' is %lld but dim %d of '%s' "
                              "is %lld", ia, rc_in_name(op, ia), RC_SHAPE(A), ib, rc_in_name(op, ib), RC_SHAPE(B),
                              ka, rc_in_name(op, ia), (long long)da, kb, rc_in_name(op, ib), (long long)db);
        dims[i] = da == 1 ? db : da;
        sa[i] = da == 1 ? 0 : ta;
        sb[i] = db == 1 ? 0 : tb;
        ta *= da;
        tb *= db;
    }
    bc->out_ndim = nd;
    memcpy(bc->out_dims, dims, sizeof(int64_t) * (size_t)nd);
    bc_collapse(bc, nd, dims, sa, sb);
    return RC_OK;
}

void rc_bc_legacy(const rc_tensor *A, int64_t pre, int64_t n, int64_t post, rc_bc *bc)
{
    const int64_t dims[3] = {pre, n, post}, sa[3] = {n * post, post, 1}, sb[3] = {0, 1, 0};
    bc->out_ndim = A->ndim;
    memcpy(bc->out_dims, A->dims, sizeof bc->out_dims);
    bc_collapse(bc, 3, dims, sa, sb);
}

int rc_bc_same_shape(const rc_bc *bc, const rc_tensor *t)
{
    if (t->ndim != bc->out_ndim) return 0;
    for (int i = 0; i < t->ndim; i++)
        if (t->dims[i] != bc->out_dims[i]) return 0;
    return 1;
}

static const char *bc_shape_str(const rc_bc *bc, char *buf, size_t cap)
{
    size_t k = (size_t)snprintf(buf, cap, "(");
    for (int i = 0; i < bc->out_ndim && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, i == 0 ? "%lld" : ", %lld", (long long)bc->out_dims[i]);
    if (k < cap) snprintf(buf + k, cap - k, bc->out_ndim == 1 ? ",)" : ")");
    return buf;
}

rc_status rc_bc_check_inplace(rc_op *op, int ia, int ib, const rc_bc *bc, rc_err *err)
{
    const int in[2] = {ia, ib};
    for (int j = 0; j < 2; j++) {
        if (op->out[0] != op->in[in[j]] || rc_bc_same_shape(bc, rc_in(op, in[j]))) continue;
        char s[96];
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "output blob '%s' is input %d of shape %s, but the result has the broadcast shape %s "
                          "(in place needs the result to have that input's shape)", rc_out_name(op, 0), in[j],
                          RC_SHAPE(rc_in(op, in[j])), bc_shape_str(bc, s, sizeof s));
    }
    return RC_OK;
}

/* ---------------------------------------------------------------- walking a broadcast */
/* fn(ctx, len, oa, sa, ob, sb, oc): one row of the innermost iteration dim:
 * result elements oc .. oc+len-1 read A at oa + k sa and B at ob + k sb.
 * Rows come in the result's element order. */
typedef void (*bc_row_fn)(void *ctx, int64_t len, int64_t oa, int64_t sa, int64_t ob, int64_t sb, int64_t oc);

static void bc_rows(const rc_bc *bc, bc_row_fn fn, void *ctx)
{
    if (bc->n == 0) return;
    const int last = bc->ndim - 1;
    const int64_t len = bc->dims[last];
    int64_t idx[RC_MAX_DIMS] = {0}, oa = 0, ob = 0, oc = 0;
    for (;;) {
        fn(ctx, len, oa, bc->sa[last], ob, bc->sb[last], oc);
        oc += len;
        int d = last - 1;
        for (; d >= 0; d--) {
            oa += bc->sa[d];
            ob += bc->sb[d];
            if (++idx[d] < bc->dims[d]) break;
            oa -= bc->sa[d] * bc->dims[d];
            ob -= bc->sb[d] * bc->dims[d];
            idx[d] = 0;
        }
        if (d < 0) return;
    }
}

void rc_bc_rows(const rc_bc *bc, rc_bc_row_fn fn, void *ctx)
{
    bc_rows(bc, fn, ctx);
}

/* ---------------------------------------------------------------- forward kernels */
typedef struct bc_ptrs {
    const void *a, *b; /* borrowed input data */
    void *c;           /* borrowed output data (may be a or b: same element, read first) */
} bc_ptrs;

/* One row of c = EXPR(x, y), x from A (type TA), y from B, c of type TC.
 * The contiguous and the repeated-B cases get loops of their own. */
#define BC_ROW(name, TA, TC, EXPR)                                                                          \
    static void name(void *ctx, int64_t len, int64_t oa, int64_t sa, int64_t ob, int64_t sb, int64_t oc)    \
    {                                                                                                       \
        const bc_ptrs *p = ctx;                                                                             \
        const TA *a = (const TA *)p->a + oa, *b = (const TA *)p->b + ob;                                    \
        TC *c = (TC *)p->c + oc;                                                                            \
        if (sa == 1 && sb == 1) {                                                                           \
            for (int64_t k = 0; k < len; k++) {                                                             \
                const TA x = a[k], y = b[k];                                                                \
                c[k] = (TC)(EXPR);                                                                          \
            }                                                                                               \
        } else if (sa == 1 && sb == 0) {                                                                    \
            const TA y = b[0];                                                                              \
            for (int64_t k = 0; k < len; k++) {                                                             \
                const TA x = a[k];                                                                          \
                c[k] = (TC)(EXPR);                                                                          \
            }                                                                                               \
        } else {                                                                                            \
            for (int64_t k = 0; k < len; k++) {                                                             \
                const TA x = a[k * sa], y = b[k * sb];                                                      \
                c[k] = (TC)(EXPR);                                                                          \
            }                                                                                               \
        }                                                                                                   \
    }

BC_ROW(row_add_f32, float, float, x + y)
BC_ROW(row_sub_f32, float, float, x - y)
BC_ROW(row_mul_f32, float, float, x * y)
BC_ROW(row_div_f32, float, float, x / y)
BC_ROW(row_div_i32, int32_t, int32_t, x / y) /* divisors checked first (div_check) */
/* int32 Add / Sub / Mul: every result was checked to fit int32 first (int_check) */
BC_ROW(row_add_i32, int32_t, int32_t, (int64_t)x + y)
BC_ROW(row_sub_i32, int32_t, int32_t, (int64_t)x - y)
BC_ROW(row_mul_i32, int32_t, int32_t, (int64_t)x * y)
#define BC_CMP_ROWS(tag, OP)                                                                        \
    BC_ROW(row_##tag##_f32, float, int32_t, x OP y) BC_ROW(row_##tag##_i32, int32_t, int32_t, x OP y)
BC_CMP_ROWS(eq, ==)
BC_CMP_ROWS(ne, !=)
BC_CMP_ROWS(lt, <)
BC_CMP_ROWS(le, <=)
BC_CMP_ROWS(gt, >)
BC_CMP_ROWS(ge, >=)
BC_ROW(row_and, int32_t, int32_t, (x != 0) & (y != 0))
BC_ROW(row_or, int32_t, int32_t, (x != 0) | (y != 0))
BC_ROW(row_xor, int32_t, int32_t, (x != 0) ^ (y != 0))
BC_ROW(row_bitand, int32_t, int32_t, x & y)
BC_ROW(row_bitor, int32_t, int32_t, x | y)
BC_ROW(row_bitxor, int32_t, int32_t, x ^ y)

/* int32 Add, Sub, Mul, Div: the first result element that int32 cannot hold
 * (the exact result, computed in int64, overflows) or whose division is
 * undefined in C (a zero divisor). */
typedef struct int_check {
    rc_bc_kind kind;
    const int32_t *a, *b; /* borrowed */
    int64_t bad_a, bad_b, bad_c; /* flat positions in A, B and the result; bad_c -1: none yet */
} int_check;

static int int_bad(rc_bc_kind kind, int32_t x, int32_t y)
{
    int64_t r;
    switch (kind) {
    case RC_BC_ADD: r = (int64_t)x + y; break;
    case RC_BC_SUB: r = (int64_t)x - y; break;
    case RC_BC_MUL: r = (int64_t)x * y; break;
    default: return y == 0 || (y == -1 && x == INT32_MIN);
    }
    return r < INT32_MIN || r > INT32_MAX;
}

static void row_int_check(void *ctx, int64_t len, int64_t oa, int64_t sa, int64_t ob, int64_t sb, int64_t oc)
{
    int_check *d = ctx;
    if (d->bad_c >= 0) return;
    for (int64_t k = 0; k < len; k++) {
        if (int_bad(d->kind, d->a[oa + k * sa], d->b[ob + k * sb])) {
            d->bad_a = oa + k * sa;
            d->bad_b = ob + k * sb;
            d->bad_c = oc + k;
            return;
        }
    }
}

/* The ValueError for int_check's finding. */
static rc_status int_fail(rc_op *op, const int_check *d, rc_err *err)
{
    static const char *const sym[] = {"+", "-", "*"};
    const rc_tensor *A = rc_in(op, 0), *B = rc_in(op, 1);
    const int32_t x = d->a[d->bad_a], y = d->b[d->bad_b];
    if (d->kind == RC_BC_DIV && y == 0)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "integer division by zero: input 1 blob '%s' %s is 0 at flat position %lld (dividing "
                          "element %lld of input 0 blob '%s' %s)", rc_in_name(op, 1), RC_SHAPE(B),
                          (long long)d->bad_b, (long long)d->bad_a, rc_in_name(op, 0), RC_SHAPE(A));
    if (d->kind == RC_BC_DIV)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "integer overflow: element %lld of input 0 blob '%s' %s is %d and input 1 blob '%s' %s "
                          "is -1 at flat position %lld (the quotient does not fit int32)", (long long)d->bad_a,
                          rc_in_name(op, 0), RC_SHAPE(A), (int)INT32_MIN, rc_in_name(op, 1), RC_SHAPE(B),
                          (long long)d->bad_b);
    return rc_op_fail(op, err, RC_ERR_VALUE,
                      "integer overflow: element %lld of input 0 blob '%s' %s is %d and element %lld of input 1 "
                      "blob '%s' %s is %d: %d %s %d does not fit int32 (result element %lld)", (long long)d->bad_a,
                      rc_in_name(op, 0), RC_SHAPE(A), (int)x, (long long)d->bad_b, rc_in_name(op, 1), RC_SHAPE(B),
                      (int)y, (int)x, sym[d->kind], (int)y, (long long)d->bad_c);
}

rc_status rc_bc_binary(rc_op *op, rc_bc_kind kind, const rc_bc *bc, rc_err *err)
{
    static const bc_row_fn f32[] = {row_add_f32, row_sub_f32, row_mul_f32, row_div_f32, row_eq_f32, row_ne_f32,
                                    row_lt_f32, row_le_f32, row_gt_f32, row_ge_f32, NULL, NULL, NULL,
                                    NULL, NULL, NULL};
    static const bc_row_fn i32[] = {row_add_i32, row_sub_i32, row_mul_i32, row_div_i32, row_eq_i32, row_ne_i32, row_lt_i32,
                                    row_le_i32, row_gt_i32, row_ge_i32, row_and, row_or, row_xor,
                                    row_bitand, row_bitor, row_bitxor};
    const rc_tensor *A = rc_in(op, 0), *B = rc_in(op, 1);
    const int is_i32 = A->dtype == RC_I32;
    const bc_row_fn fn = is_i32 ? i32[kind] : f32[kind];
    if (!fn) /* unreachable: callers check the dtypes */
        return rc_op_fail(op, err, RC_ERR_TYPE, "input 0 blob '%s' %s: dtype not supported", rc_in_name(op, 0),
                          RC_SHAPE(A));
    if (is_i32 && kind <= RC_BC_DIV) {
        int_check d = {kind, rc_i32(A), rc_i32(B), -1, -1, -1};
        bc_rows(bc, row_int_check, &d);
        if (d.bad_c >= 0) return int_fail(op, &d, err);
    }
    const rc_dtype odt = kind <= RC_BC_DIV ? A->dtype : RC_I32;
    rc_status st = rc_tensor_resize(rc_out(op, 0), odt, bc->out_ndim, bc->out_dims, err);
    if (st) return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    bc_ptrs p = {rc_tensor_data(A), rc_tensor_data(B), rc_tensor_data(rc_out(op, 0))};
    bc_rows(bc, fn, &p);
    return RC_OK;
}

/* ---------------------------------------------------------------- gradients */
typedef struct bc_grad {
    rc_bc_kind kind;
    int side;                          /* 0: dA, 1: dB */
    const float *dc, *a, *b, *c;       /* borrowed inputs (a, b, c NULL where unused) */
    double *acc;                       /* borrowed: the sum per input element, or NULL: */
    float *out;                        /* borrowed: written directly (the input was not repeated) */
} bc_grad;

/* What is summed per result element: dC, dC B, dC A, dC / B (float, as the
 * elementwise ops) or dC C (double, for Div's dB = -sum(dC C) / B). */
static double grad_term(const bc_grad *g, int64_t ia, int64_t ib, int64_t ic)
{
    switch (g->kind) {
    case RC_BC_MUL:
        return g->side ? (double)(g->dc[ic] * g->a[ia]) : (double)(g->dc[ic] * g->b[ib]);
    case RC_BC_DIV:
        return g->side ? (double)g->dc[ic] * (double)g->c[ic] : (double)(g->dc[ic] / g->b[ib]);
    default:
        return (double)g->dc[ic];
    }
}

/* The input's gradient from the sum s over its repeats (b: B's element for Div's dB). */
static float grad_final(const bc_grad *g, double s, int64_t ib)
{
    if (g->side && g->kind == RC_BC_SUB) return (float)-s;
    if (g->side && g->kind == RC_BC_DIV) return (float)(-s / (double)g->b[ib]);
    return (float)s;
}

static void row_grad(void *ctx, int64_t len, int64_t oa, int64_t sa, int64_t ob, int64_t sb, int64_t oc)
{
    const bc_grad *g = ctx;
    const int64_t ox = g->side ? ob : oa, sx = g->side ? sb : sa;
    if (g->acc) {
        for (int64_t k = 0; k < len; k++) g->acc[ox + k * sx] += grad_term(g, oa + k * sa, ob + k * sb, oc + k);
    } else {
        /* not repeated: its flat index is the result's */
        for (int64_t k = 0; k < len; k++)
            g->out[oc + k] = grad_final(g, grad_term(g, oa + k * sa, ob + k * sb, oc + k), ob + k * sb);
    }
}

static rc_status grad_resize(rc_op *op, int o, const rc_tensor *like, rc_err *err)
{
    int64_t dims[RC_MAX_DIMS];
    memcpy(dims, like->dims, sizeof dims);
    rc_status st = rc_tensor_resize(rc_out(op, o), RC_F32, like->ndim, dims, err);
    if (st) return rc_op_fail(op, err, st, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
    return RC_OK;
}

rc_status rc_bc_grad_check(rc_op *op, rc_bc_kind kind, const rc_bc *bc, rc_err *err)
{
    rc_status st;
    const int n_in = kind == RC_BC_DIV ? 4 : 3;
    for (int i = 0; i < n_in; i++)
        if ((st = rc_check_input(op, i, RC_F32, err))) return st;
    for (int i = 0; i < n_in; i += 3) { /* dC and (Div) C have the result's shape */
        if (rc_bc_same_shape(bc, rc_in(op, i))) continue;
        char s[96];
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' of shape %s must have the shape %s of the forward result (input 1 "
                          "blob '%s' %s with input 2 blob '%s' %s)", i, rc_in_name(op, i), RC_SHAPE(rc_in(op, i)),
                          bc_shape_str(bc, s, sizeof s), rc_in_name(op, 1), RC_SHAPE(rc_in(op, 1)),
                          rc_in_name(op, 2), RC_SHAPE(rc_in(op, 2)));
    }
    return RC_OK;
}

rc_status rc_bc_grad(rc_op *op, rc_bc_kind kind, const rc_bc *bc, double **acc, int64_t *acc_n, rc_err *err)
{
    rc_status st;
    const int n_in = kind == RC_BC_DIV ? 4 : 3;
    if ((st = rc_bc_grad_check(op, kind, bc, err))) return st;
    const rc_tensor *A = rc_in(op, 1), *B = rc_in(op, 2);
    const int64_t na = rc_tensor_numel(A), nb = rc_tensor_numel(B);
    const int red_a = na != bc->n, red_b = nb != bc->n; /* repeated (or the result is empty) */
    const int64_t need = red_a && na > nb ? na : red_b ? nb : red_a ? na : 0;
    if (need > *acc_n) {
        double *p = realloc(*acc, sizeof(double) * (size_t)need);
        if (!p) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory (%lld doubles of scratch)", (long long)need);
        *acc = p;
        *acc_n = need;
    }
    const int da_is_dc = op->out[0] == op->in[0];
    if ((st = grad_resize(op, 1, B, err))) return st;
    if (!da_is_dc && (st = grad_resize(op, 0, A, err))) return st;
    bc_grad g = {kind, 1, rc_f32(rc_in(op, 0)), rc_f32(A), rc_f32(B), n_in == 4 ? rc_f32(rc_in(op, 3)) : NULL,
                 NULL, NULL};
    /* dB first: dA may be written over dC */
    for (int side = 1; side >= 0; side--) {
        const int red = side ? red_b : red_a;
        const int64_t nx = side ? nb : na;
        g.side = side;
        g.acc = red ? *acc : NULL;
        if (red) memset(*acc, 0, sizeof(double) * (size_t)nx);
        if (side == 0 && da_is_dc && red) { /* sum first, then shrink dC's blob to A's shape */
            bc_rows(bc, row_grad, &g);
            if ((st = grad_resize(op, 0, A, err))) return st;
            g.acc = NULL;
        } else {
            g.out = rc_f32(rc_out(op, side));
            bc_rows(bc, row_grad, &g);
        }
        if (red) {
            float *out = rc_f32(rc_out(op, side));
            for (int64_t i = 0; i < nx; i++) out[i] = grad_final(&g, (*acc)[i], i);
        }
    }
    return RC_OK;
}

/* ---------------------------------------------------------------- And, Or, Xor, Not */
typedef struct bc_args {
    int broadcast;
    int64_t axis;
    double *acc;     /* gradient ops: the sums (owned, grown on demand) */
    int64_t acc_n;
} bc_args;

static void bc_args_free(void *p)
{
    bc_args *a = p;
    if (!a) return;
    free(a->acc);
    free(a);
}

static rc_status bc_setup(rc_op *op, rc_err *err)
{
    bc_args *a = calloc(1, sizeof *a);
    if (!a) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = a;
    return rc_binary_args(op, &a->broadcast, &a->axis, err);
}

/* Input i must be int32; `what` says why in the message ("bool as 0 / 1; nonzero is true"). */
static rc_status check_i32(rc_op *op, int i, const char *what, rc_err *err)
{
    const rc_tensor *t = rc_in(op, i);
    if (t->dtype == RC_F32)
        return rc_op_fail(op, err, RC_ERR_TYPE, "input %d blob '%s' %s must be int32 (%s)", i, rc_in_name(op, i),
                          RC_SHAPE(t), what);
    return rc_check_input(op, i, RC_I32, err);
}

static const char LOGICAL_WHAT[] = "bool as 0 / 1; nonzero is true", BITWISE_WHAT[] = "the bitwise ops take integers";

static rc_status check_bool(rc_op *op, int i, rc_err *err) { return check_i32(op, i, LOGICAL_WHAT, err); }

static rc_status logical_shapes(rc_op *op, const char *what, rc_bc *bc, rc_err *err)
{
    const bc_args *a = op->state;
    rc_status st;
    if ((st = check_i32(op, 0, what, err)) || (st = check_i32(op, 1, what, err))) return st;
    if ((st = rc_binary_bc(op, 0, 1, a->broadcast, a->axis, bc, err))) return st;
    return rc_bc_check_inplace(op, 0, 1, bc, err);
}

static rc_status logical_check(rc_op *op, rc_err *err)
{
    rc_bc bc;
    return logical_shapes(op, LOGICAL_WHAT, &bc, err);
}

static rc_status bitwise_check(rc_op *op, rc_err *err)
{
    rc_bc bc;
    return logical_shapes(op, BITWISE_WHAT, &bc, err);
}

static rc_status logical_run(rc_op *op, rc_bc_kind kind, rc_err *err)
{
    rc_bc bc;
    rc_status st = logical_shapes(op, kind >= RC_BC_BITAND ? BITWISE_WHAT : LOGICAL_WHAT, &bc, err);
    return st ? st : rc_bc_binary(op, kind, &bc, err);
}

static rc_status and_run(rc_op *op, rc_err *err) { return logical_run(op, RC_BC_AND, err); }
static rc_status or_run(rc_op *op, rc_err *err) { return logical_run(op, RC_BC_OR, err); }
static rc_status xor_run(rc_op *op, rc_err *err) { return logical_run(op, RC_BC_XOR, err); }
static rc_status bitand_run(rc_op *op, rc_err *err) { return logical_run(op, RC_BC_BITAND, err); }
static rc_status bitor_run(rc_op *op, rc_err *err) { return logical_run(op, RC_BC_BITOR, err); }
static rc_status bitxor_run(rc_op *op, rc_err *err) { return logical_run(op, RC_BC_BITXOR, err); }

/* Not: X int32 -> Y int32 = (X == 0) as 0 / 1; Y may be X. */
static rc_status not_run(rc_op *op, rc_err *err)
{
    rc_status st = check_bool(op, 0, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    int64_t dims[RC_MAX_DIMS];
    memcpy(dims, x->dims, sizeof dims);
    if ((st = rc_tensor_resize(rc_out(op, 0), RC_I32, x->ndim, dims, err)))
        return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    const int32_t *px = rc_i32(x);
    int32_t *py = rc_i32(rc_out(op, 0));
    for (int64_t i = 0, n = rc_tensor_numel(x); i < n; i++) py[i] = px[i] == 0;
    return RC_OK;
}

static rc_status not_check(rc_op *op, rc_err *err) { return check_bool(op, 0, err); }

static int inplace_binary(int in, int out) { return out == 0 && (in == 0 || in == 1); }

/* ---------------------------------------------------------------- AddGradient, SubGradient, MulGradient */
/* A and B float32 with a broadcast (into bc). */
static rc_status grad_bc(rc_op *op, rc_bc *bc, rc_err *err)
{
    const bc_args *a = op->state;
    rc_status st;
    for (int i = 1; i < 3; i++)
        if ((st = rc_check_input(op, i, RC_F32, err))) return st;
    return rc_binary_bc(op, 1, 2, a->broadcast, a->axis, bc, err);
}

/* The inputs of AddGradient, SubGradient, MulGradient (rc_bc_grad_check reads only the kind's input count). */
static rc_status grad_check(rc_op *op, rc_err *err)
{
    rc_bc bc;
    rc_status st = grad_bc(op, &bc, err);
    return st ? st : rc_bc_grad_check(op, RC_BC_ADD, &bc, err);
}

static rc_status grad_run(rc_op *op, rc_bc_kind kind, rc_err *err)
{
    bc_args *a = op->state;
    rc_bc bc;
    rc_status st;
    if ((st = grad_bc(op, &bc, err))) return st;
    return rc_bc_grad(op, kind, &bc, &a->acc, &a->acc_n, err);
}

static rc_status add_grad_run(rc_op *op, rc_err *err) { return grad_run(op, RC_BC_ADD, err); }
static rc_status sub_grad_run(rc_op *op, rc_err *err) { return grad_run(op, RC_BC_SUB, err); }
static rc_status mul_grad_run(rc_op *op, rc_err *err) { return grad_run(op, RC_BC_MUL, err); }

/* dA may be written over dC's blob, also where dC's blob stands for A or B
 * (the makers pass dC for an input the forward op overwrote: its shape is C's);
 * rc_bc_grad_setup refuses an A or B of its own. */
static int inplace_dc(int in, int out) { return out == 0 && in <= 2; }

rc_status rc_bc_grad_setup_check(rc_op *op, int dc, rc_err *err)
{
    for (int i = 0; i < op->n_in; i++)
        if (op->out[0] == op->in[i] && op->in[i] != op->in[dc])
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "output 0 blob '%s' (dA) is input %d, which is not dC (input %d '%s'): only dC's blob "
                              "may take dA", rc_out_name(op, 0), i, dc, rc_in_name(op, dc));
    return RC_OK;
}

static rc_status grad_setup(rc_op *op, rc_err *err)
{
    rc_status st = rc_bc_grad_setup_check(op, 0, err);
    return st ? st : bc_setup(op, err);
}

/* ---------------------------------------------------------------- the family table */
const rc_op_schema rc_ops_bcast[] = {
    {"And", 2, 2, 1, 1, inplace_binary, bc_setup, and_run, bc_args_free,
     "C = A and B, int32 0/1 (nonzero is true; args broadcast, axis)", logical_check},
    {"Or", 2, 2, 1, 1, inplace_binary, bc_setup, or_run, bc_args_free,
     "C = A or B, int32 0/1 (nonzero is true; args broadcast, axis)", logical_check},
    {"Xor", 2, 2, 1, 1, inplace_binary, bc_setup, xor_run, bc_args_free,
     "C = A xor B, int32 0/1 (nonzero is true; args broadcast, axis)", logical_check},
    {"Not", 1, 1, 1, 1, rc_inplace_any, NULL, not_run, NULL, "Y = not X, int32 0/1 (nonzero is true)", not_check},
    {"BitwiseAnd", 2, 2, 1, 1, inplace_binary, bc_setup, bitand_run, bc_args_free,
     "C = A & B, int32 bits (args broadcast, axis)", bitwise_check},
    {"BitwiseOr", 2, 2, 1, 1, inplace_binary, bc_setup, bitor_run, bc_args_free,
     "C = A | B, int32 bits (args broadcast, axis)", bitwise_check},
    {"BitwiseXor", 2, 2, 1, 1, inplace_binary, bc_setup, bitxor_run, bc_args_free,
     "C = A ^ B, int32 bits (args broadcast, axis)", bitwise_check},
    {"AddGradient", 3, 3, 2, 2, inplace_dc, grad_setup, add_grad_run, bc_args_free,
     "(dC, A, B) -> (dA, dB): dC summed to the shapes of A and B (args broadcast, axis)", grad_check},
    {"SubGradient", 3, 3, 2, 2, inplace_dc, grad_setup, sub_grad_run, bc_args_free,
     "(dC, A, B) -> (dA, dB): dC and -dC summed to the shapes of A and B (args broadcast, axis)", grad_check},
    {"MulGradient", 3, 3, 2, 2, inplace_dc, grad_setup, mul_grad_run, bc_args_free,
     "(dC, A, B) -> (dA, dB): dC B and dC A summed to the shapes of A and B (args broadcast, axis)", grad_check},
    {0},
};
