/* ops/reduce.c -- reductions of Caffe2's reduce_ops, reduction_front_back_ops,
 * arg_ops and accuracy_op.
 *
 *   ReduceSum / ReduceMean / ReduceMax / ReduceMin(X) -> Y     args axes=[], keepdims=1
 *   ReduceL1 / ReduceL2(X) -> Y                                the same; sum |X|, sqrt(sum X^2)
 *   Reduce{Sum,Mean,Max,Min,L1,L2}Gradient(dY, X, Y) -> dX     args as the forward op
 *   ReduceFrontSum / ReduceFrontMean / ReduceBackSum / ReduceBackMean(X) -> Y   arg num_reduce_dim=1
 *   Reduce{Front,Back}{Sum,Mean}Gradient(dY, X or X's shape[, LENGTHS]) -> dX   arg as the forward op
 *   ReduceFrontMax / ReduceBackMax(X[, LENGTHS]) -> Y          arg num_reduce_dim=1
 *   Reduce{Front,Back}MaxGradient(dY, X, Y[, LENGTHS]) -> dX   arg as the forward op
 *   ArgMax / ArgMin(X) -> indices (int32)                      args axis=-1, keepdims=1
 *   RowWiseArgMax(X (N, D)) -> indices (N, 1) int32             no args
 *   Accuracy(prediction, label) -> accuracy (float32, shape ()) arg top_k=1
 *
 * Reduce*: X float32; `axes` lists the dims reduced (negative counts from the
 * end; an empty or absent list reduces every dim, as Caffe2); a repeated or
 * out-of-range axis is a ValueError. keepdims=1 keeps the reduced dims with
 * size 1, keepdims=0 drops them (all dropped: shape ()). ReduceFront* reduce
 * the first num_reduce_dim dims, ReduceBack* the last (0 <= num_reduce_dim <=
 * ndim; the result has the other dims). Their optional second input LENGTHS
 * (Caffe2's `lengths`): X seen as (rows, cols) (Front: rows = the reduced
 * dims' product; Back: cols = it), int32, 1-D, one entry per output element
 * (Caffe2 compared the count only), each in [0, the reduced size] (checked
 * before anything is written: ValueError naming the position and value;
 * Caffe2 did not check the values and read past the run); output k reduces
 * only the first LENGTHS[k] entries of its run. A length of 0 gives a sum of
 * 0 and a mean of NaN (Caffe2 always added the run's first entry, and its
 * mean divided that by 0). The gradient ops take LENGTHS as their third input
 * (dY, X, LENGTHS): dX = dY (Sum) or dY / LENGTHS[k] (Mean) on those entries,
 * 0 on the rest. Their X may also be given as its shape (Caffe2's older
 * gradient signature: a 1-D int64 tensor; int32 here, entries >= 0).
 * ReduceFrontMax / ReduceBackMax (Caffe2's reduce_front_back_max_ops): the max
 * over the same dims (NaN propagates); with LENGTHS only the first LENGTHS[k]
 * entries, a length of 0 being a ValueError (Caffe2 gave the run's first
 * entry). Their gradients take (dY, X, Y[, LENGTHS]): dX = dY where X equals
 * Y among the entries reduced (every tie), else 0, as Caffe2's.
 * Sums and means add in double, each output's elements in increasing order
 * of their position in X, so the bits do not depend on anything else; a
 * mean divides that sum by the number of elements reduced (0 of them: NaN,
 * as NumPy's mean of an empty array). Max / Min propagate NaN (np.max);
 * over 0 elements (a reduced dim of size 0 with a non-empty result) they are
 * a ValueError (Caffe2 gave the lowest / largest float).
 * L1 and L2 add |x| and x^2 in double the same way (L2: the square root of
 * that sum, rounded once).
 * Gradients: Sum dX = dY broadcast back, Mean dY / count, Max / Min dX = dY
 * where X == Y (every tie gets it; where Y is NaN nobody does), else 0, L1
 * dY sign(X) (0 at 0; Caffe2 also gave 0 for |X| <= 1e-12), L2 dY X / Y (0
 * where Y is 0, a subgradient; Caffe2 gave dY wherever Y < 1e-12). dY
 * (and Y) must have exactly the forward op's output shape for X.
 *
 * ArgMax / ArgMin: X float32 of rank >= 1; the position along `axis` of the
 * largest / smallest value, int32 (Caffe2: int64); keepdims=1 keeps `axis`
 * with size 1. Ties go to the first position (as NumPy and Caffe2); a NaN is
 * larger and smaller than every number, the first NaN wins (as np.argmax;
 * Caffe2 compared with > and skipped NaNs after the first element). A zero
 * size along `axis` is a ValueError (Caffe2 wrote no index). No gradient.
 * RowWiseArgMax (Caffe2's arg_max_op): X float32 2-D (N, D) -> (N, 1) int32,
 * ArgMax(axis=1, keepdims=1) with the same rule (ties to the first position,
 * the first NaN wins; Caffe2 compared with > only). D = 0 with N > 0 is a
 * ValueError (Caffe2 read X[0] of an empty row); D = 1 gives 0 (Caffe2 wrote
 * the index only inside its loop over positions 1.., so left it unset). No
 * gradient (Caffe2: NO_GRADIENT).
 *
 * Accuracy: prediction float32 (N, D), label int32 (N,), labels in [0, D)
 * (Caffe2 did not check: it read out of bounds), an IndexError; top_k >= 1
 * (top_k >= D counts every row).
 * Row i counts as correct when fewer than top_k entries come before
 * prediction[i, label[i]] in TopK's order (larger first, NaN largest, ties
 * to the lower index), i.e. the label is among TopK(prediction[i], top_k)'s
 * indices. accuracy = correct / N (N = 0: a ValueError; Caffe2 divided by
 * zero). No gradient.
 *
 * No global state. Sum and Mean keep a double scratch of one entry per
 * output in op->state, grown when the output grows (owned, freed with it).
 */
#include "../core/rc_core.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { RED_SUM, RED_MEAN, RED_MAX, RED_MIN, RED_L1, RED_L2 };
enum { MODE_AXES, MODE_FRONT, MODE_BACK };

typedef struct reduce_state {
    int kind, mode;
    int64_t axes[RC_MAX_DIMS];  /* as given (MODE_AXES) */
    int n_axes;
    int keepdims;
    int64_t num_reduce_dim;     /* MODE_FRONT / MODE_BACK */
    double *acc;                /* Sum / Mean scratch (owned) */
    int64_t cap;
} reduce_state;

static void reduce_state_free(void *p)
{
    reduce_state *s = p;
    if (!s) return;
    free(s->acc);
    free(s);
}

static rc_status out_fail(rc_op *op, int o, rc_err *err)
{
    return rc_op_fail(op, err, err->code, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
}

static rc_status reduce_setup(rc_op *op, rc_err *err)
{
    reduce_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    const char *t = op->def.type;
    s->kind = strstr(t, "Sum") ? RED_SUM : strstr(t, "Mean") ? RED_MEAN : strstr(t, "Max") ? RED_MAX
              : strstr(t, "L1") ? RED_L1 : strstr(t, "L2") ? RED_L2 : RED_MIN;
    s->mode = strncmp(t, "ReduceFront", 11) == 0 ? MODE_FRONT : strncmp(t, "ReduceBack", 10) == 0 ? MODE_BACK
                                                                                                : MODE_AXES;
    rc_status st;
    if (s->mode != MODE_AXES) {
        if ((st = rc_arg_i(&op->def, "num_reduce_dim", 1, &s->num_reduce_dim, err))) return st;
        if (s->num_reduce_dim < 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'num_reduce_dim' must be >= 0, got %lld",
                              (long long)s->num_reduce_dim);
        return RC_OK;
    }
    const int64_t *axes = NULL;
    int n = 0;
    int64_t keep = 1;
    if ((st = rc_arg_ints(&op->def, "axes", &axes, &n, err))) return st;
    if ((st = rc_arg_i(&op->def, "keepdims", 1, &keep, err))) return st;
    if (n > RC_MAX_DIMS)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'axes' has %d entries, more than the %d dims a tensor "
                          "can have", n, RC_MAX_DIMS);
    if (n) memcpy(s->axes, axes, (size_t)n * sizeof *axes);
    s->n_axes = n;
    s->keepdims = keep != 0;
    return RC_OK;
}

/* How X maps onto Y: for each dim of X whether it is reduced, and the stride
 * in Y of each kept dim (0 for a reduced one). */
typedef struct reduce_plan {
    int ndim;
    int64_t dims[RC_MAX_DIMS];
    int64_t ostride[RC_MAX_DIMS];
    int out_ndim;
    int64_t out_dims[RC_MAX_DIMS];
    int64_t n_out, n_red;
} reduce_plan;

/* The plan for X, input i (0 in the forward ops, 1 in the gradients), or for
 * the tensor x stands for when x is not NULL (the gradients' shape input). */
static rc_status reduce_plan_make(rc_op *op, int i, const rc_tensor *x, reduce_plan *p, rc_err *err)
{
    const reduce_state *s = op->state;
    if (!x) x = rc_in(op, i);
    const int nd = x->ndim;
    int red[RC_MAX_DIMS] = {0};
    if (s->mode != MODE_AXES) {
        if (s->num_reduce_dim > nd)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "argument 'num_reduce_dim' (%lld) is larger than the rank of input %d blob '%s' %s",
                              (long long)s->num_reduce_dim, i, rc_in_name(op, i), RC_SHAPE(x));
        for (int d = 0; d < s->num_reduce_dim; d++) red[s->mode == MODE_FRONT ? d : nd - 1 - d] = 1;
    } else if (s->n_axes == 0) {
        for (int d = 0; d < nd; d++) red[d] = 1;
    } else {
        for (int j = 0; j < s->n_axes; j++) {
            const int64_t a = s->axes[j];
            if (a < -(int64_t)nd || a >= nd)
                return rc_op_fail(op, err, RC_ERR_VALUE, "axis %lld in argument 'axes' is out of range for input %d "
                                  "blob '%s' %s", (long long)a, i, rc_in_name(op, i), RC_SHAPE(x));
            const int c = (int)(a < 0 ? a + nd : a);
            if (red[c])
                return rc_op_fail(op, err, RC_ERR_VALUE, "axis %lld in argument 'axes' repeats dim %d of input %d "
                                  "blob '%s' %s", (long long)a, c, i, rc_in_name(op, i), RC_SHAPE(x));
            red[c] = 1;
        }
    }
    const int keep = s->mode == MODE_AXES && s->keepdims;
    p->ndim = nd;
    p->out_ndim = 0;
    p->n_out = 1;
    p->n_red = 1;
    for (int d = 0; d < nd; d++) {
        p->dims[d] = x->dims[d];
        if (red[d]) p->n_red *= x->dims[d];
        else p->n_out *= x->dims[d];
        if (!red[d]) p->out_dims[p->out_ndim++] = x->dims[d];
        else if (keep) p->out_dims[p->out_ndim++] = 1;
    }
    int64_t stride = 1;
    for (int d = nd - 1; d >= 0; d--) {
        p->ostride[d] = red[d] ? 0 : stride;
        if (!red[d]) stride *= x->dims[d];
    }
    return RC_OK;
}

/* Position in Y of X's element after the current one: an odometer over X's dims. */
typedef struct odometer {
    int64_t idx[RC_MAX_DIMS];
    int64_t off;
} odometer;

static inline void odo_next(const reduce_plan *p, odometer *o)
{
    for (int d = p->ndim - 1; d >= 0; d--) {
        o->off += p->ostride[d];
        if (++o->idx[d] < p->dims[d]) return;
        o->off -= p->ostride[d] * p->dims[d];
        o->idx[d] = 0;
    }
}

/* ReduceFront* / ReduceBack* with lengths (input li, X input xi): X seen as (rows, cols) in row-major order;
 * ReduceFront* reduce the rows (rows = the reduced dims' product; one length per column), ReduceBack* the
 * columns (one length per row). */
typedef struct fb_lengths {
    int64_t rows, cols, count, bound; /* count: the number of lengths; bound: the largest length allowed */
    int front;
} fb_lengths;

static void fb_geometry(const reduce_state *s, const reduce_plan *p, fb_lengths *g)
{
    g->front = s->mode == MODE_FRONT;
    g->rows = g->front ? p->n_red : p->n_out;
    g->cols = g->front ? p->n_out : p->n_red;
    g->count = p->n_out;
    g->bound = p->n_red;
}

/* LENGTHS (input li): int32, 1-D, one entry per output element of X (input xi); with values (run only)
 * every entry in [0, the reduced size]. */
static rc_status fb_check_lengths(rc_op *op, int li, int xi, const reduce_plan *p, int values, rc_err *err)
{
    const reduce_state *s = op->state;
    fb_lengths g;
    fb_geometry(s, p, &g);
    rc_status st = rc_check_input(op, li, RC_I32, err);
    if (st) return st;
    const rc_tensor *l = rc_in(op, li), *x = rc_in(op, xi);
    if (l->ndim != 1 || l->dims[0] != g.count)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' %s (lengths) must be 1-D with %lld entries, one "
                          "per %s of input %d blob '%s' %s seen as (%lld, %lld) (num_reduce_dim=%lld)", li,
                          rc_in_name(op, li), RC_SHAPE(l), (long long)g.count, g.front ? "column" : "row", xi,
                          rc_in_name(op, xi), RC_SHAPE(x), (long long)g.rows, (long long)g.cols,
                          (long long)s->num_reduce_dim);
    if (!values || g.count == 0) return RC_OK;
    const int32_t *len = rc_i32(l);
    for (int64_t k = 0; k < g.count; k++)
        if (len[k] < 0 || (int64_t)len[k] > g.bound)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' %s (lengths): length %d at position %lld is "
                              "out of range [0, %lld] (the size of the reduced dims of input %d blob '%s' %s)", li,
                              rc_in_name(op, li), RC_SHAPE(l), (int)len[k], (long long)k, (long long)g.bound, xi,
                              rc_in_name(op, xi), RC_SHAPE(x));
    return RC_OK;
}

static rc_status reduce_check_x(rc_op *op, reduce_plan *p, rc_err *err)
{
    const reduce_state *s = op->state;
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (!st) st = reduce_plan_make(op, 0, NULL, p, err);
    if (!st && op->n_in > 1) st = fb_check_lengths(op, 1, 0, p, 0, err);
    if (st) return st;
    if ((s->kind == RED_MAX || s->kind == RED_MIN) && p->n_red == 0 && p->n_out > 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s: the %s of 0 elements is undefined (a reduced "
                          "dim has size 0)", rc_in_name(op, 0), RC_SHAPE(rc_in(op, 0)),
                          s->kind == RED_MAX ? "maximum" : "minimum");
    return RC_OK;
}

static rc_status reduce_check(rc_op *op, rc_err *err)
{
    reduce_plan p;
    return reduce_check_x(op, &p, err);
}

/* np.maximum's / np.minimum's rule: keep a when it wins or is NaN. */
static inline float max_nan(float a, float b) { return (a > b || a != a) ? a : b; }
static inline float min_nan(float a, float b) { return (a < b || a != a) ? a : b; }

static rc_status reduce_run(rc_op *op, rc_err *err)
{
    reduce_state *s = op->state;
    reduce_plan p;
    rc_status st = reduce_check_x(op, &p, err);
    if (st) return st;
    if (rc_tensor_resize(rc_out(op, 0), RC_F32, p.out_ndim, p.out_dims, err)) return out_fail(op, 0, err);
    if (p.n_out == 0) return RC_OK;
    const rc_tensor *x = rc_in(op, 0);
    const int64_t n = rc_tensor_numel(x);
    float *y = rc_f32(rc_out(op, 0));
    const float *xd = n ? rc_f32(x) : NULL;
    odometer o = {{0}, 0};
    if (s->kind == RED_MAX && op->n_in > 1) {
        /* ReduceFrontMax / ReduceBackMax with lengths: the max of the first len[k] entries (none: refused) */
        if ((st = fb_check_lengths(op, 1, 0, &p, 1, err))) return st;
        fb_lengths g;
        fb_geometry(s, &p, &g);
        const int32_t *len = rc_i32(rc_in(op, 1));
        for (int64_t k = 0; k < p.n_out; k++)
            if (len[k] == 0)
                return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' %s (lengths): length 0 at position "
                                  "%lld: the maximum of 0 elements is undefined", rc_in_name(op, 1),
                                  RC_SHAPE(rc_in(op, 1)), (long long)k);
        for (int64_t j = 0; j < p.n_out; j++) y[j] = -INFINITY;
        for (int64_t i = 0; i < g.rows; i++)
            for (int64_t j = 0; j < g.cols; j++) {
                const int64_t k = g.front ? j : i, r = g.front ? i : j;
                if (r < len[k]) y[k] = max_nan(y[k], xd[i * g.cols + j]);
            }
        return RC_OK;
    }
    if (s->kind == RED_MAX || s->kind == RED_MIN) {
        const int mx = s->kind == RED_MAX;
        for (int64_t j = 0; j < p.n_out; j++) y[j] = mx ? -INFINITY : INFINITY;
        for (int64_t i = 0; i < n; i++, odo_next(&p, &o))
            y[o.off] = mx ? max_nan(y[o.off], xd[i]) : min_nan(y[o.off], xd[i]);
        return RC_OK;
    }
    if (s->cap < p.n_out) {
        double *a = malloc((size_t)p.n_out * sizeof *a);
        if (!a)
            return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory (scratch of %lld doubles)", (long long)p.n_out);
        free(s->acc);
        s->acc = a;
        s->cap = p.n_out;
    }
    double *acc = s->acc;
    memset(acc, 0, (size_t)p.n_out * sizeof *acc);
    if (op->n_in > 1) {
        /* lengths: only the first len[k] entries of output k's reduced run are added (in X's order); a
         * mean divides by len[k] (0 of them: NaN) */
        if ((st = fb_check_lengths(op, 1, 0, &p, 1, err))) return st;
        fb_lengths g;
        fb_geometry(s, &p, &g);
        const int32_t *len = rc_i32(rc_in(op, 1));
        for (int64_t i = 0; i < g.rows; i++)
            for (int64_t j = 0; j < g.cols; j++) {
                const int64_t k = g.front ? j : i, r = g.front ? i : j;
                if (r < len[k]) acc[k] += xd[i * g.cols + j];
            }
        for (int64_t k = 0; k < p.n_out; k++)
            y[k] = (float)(s->kind == RED_MEAN ? (len[k] ? acc[k] / (double)len[k] : NAN) : acc[k]);
        return RC_OK;
    }
    if (s->kind == RED_L1)
        for (int64_t i = 0; i < n; i++, odo_next(&p, &o)) acc[o.off] += fabs((double)xd[i]);
    else if (s->kind == RED_L2)
        for (int64_t i = 0; i < n; i++, odo_next(&p, &o)) acc[o.off] += (double)xd[i] * (double)xd[i];
    else
        for (int64_t i = 0; i < n; i++, odo_next(&p, &o)) acc[o.off] += xd[i];
    const double div = s->kind == RED_MEAN ? (double)p.n_red : 1.0;
    for (int64_t j = 0; j < p.n_out; j++) y[j] = (float)(s->kind == RED_L2 ? sqrt(acc[j]) : acc[j] / div);
    return RC_OK;
}

/* Reduce{Front,Back}{Sum,Mean}Gradient's input 1 may be X's shape instead of
 * X (Caffe2's older form: a 1-D int64 tensor, int32 here): int32, 1-D, at
 * most RC_MAX_DIMS entries; with values (run only) each >= 0, and *shape
 * then describes that X (float32, no data). Returns whether it is a shape. */
static rc_status grad_shape_input(rc_op *op, int values, rc_tensor *shape, int *is_shape, rc_err *err)
{
    const reduce_state *s = op->state;
    const rc_tensor *t = rc_in(op, 1);
    *is_shape = s->mode != MODE_AXES && s->kind != RED_MAX && t->dtype == RC_I32;
    if (!*is_shape) return rc_check_input(op, 1, RC_F32, err);
    if (t->ndim != 1 || t->dims[0] > RC_MAX_DIMS)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' %s is int32, so it is X's shape: it must be 1-D "
                          "with at most %d entries", rc_in_name(op, 1), RC_SHAPE(t), RC_MAX_DIMS);
    if (!values) return RC_OK;
    rc_tensor_init(shape);
    shape->dtype = RC_F32;
    shape->ndim = (int)t->dims[0];
    const int32_t *v = rc_i32(t);
    for (int d = 0; d < shape->ndim; d++) {
        if (v[d] < 0)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' %s (X's shape): entry %d is %d, a size must be "
                              ">= 0", rc_in_name(op, 1), RC_SHAPE(t), d, (int)v[d]);
        shape->dims[d] = v[d];
    }
    return RC_OK;
}

/* dY float32 with the forward output's shape for X (input 1, float32, or its
 * shape: grad_shape_input; without values only the shape input's own form is
 * checked, then *xs is NULL); Reduce*Gradient and Reduce{Front,Back}MaxGradient
 * also Y (input 2) float32 of dY's shape. *xs: X's tensor, or shape (filled). */
static rc_status reduce_grad_check_v(rc_op *op, int values, reduce_plan *p, rc_tensor *shape, const rc_tensor **xs,
                                     rc_err *err)
{
    rc_status st;
    int is_shape;
    *xs = NULL;
    if ((st = rc_check_input(op, 0, RC_F32, err)) || (st = grad_shape_input(op, values, shape, &is_shape, err)))
        return st;
    const reduce_state *s = op->state;
    const int has_y = s->mode == MODE_AXES || s->kind == RED_MAX;
    const int li = has_y ? 3 : 2, has_len = s->mode != MODE_AXES && op->n_in > li;
    if (has_y && (st = rc_check_input(op, 2, RC_F32, err))) return st;
    if (is_shape && !values) return has_len ? rc_check_input(op, li, RC_I32, err) : RC_OK;
    const rc_tensor *x = is_shape ? shape : rc_in(op, 1);
    *xs = x;
    if ((st = reduce_plan_make(op, 1, x, p, err))) return st;
    const rc_tensor *dy = rc_in(op, 0);
    int ok = dy->ndim == p->out_ndim;
    for (int d = 0; ok && d < p->out_ndim; d++) ok = dy->dims[d] == p->out_dims[d];
    if (!ok) {
        rc_tensor want;
        rc_tensor_init(&want);
        want.dtype = RC_F32;
        want.ndim = p->out_ndim;
        memcpy(want.dims, p->out_dims, sizeof want.dims);
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s (dY) must have the shape %s of the forward "
                          "output for input 1 blob '%s' %s (X)", rc_in_name(op, 0), RC_SHAPE(dy), RC_SHAPE(&want),
                          rc_in_name(op, 1), RC_SHAPE(x));
    }
    if (has_y && !rc_tensor_same_shape(rc_in(op, 2), dy))
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' %s (Y) must have the shape of input 0 blob '%s' %s "
                          "(dY)", rc_in_name(op, 2), RC_SHAPE(rc_in(op, 2)), rc_in_name(op, 0), RC_SHAPE(dy));
    if (has_len) return fb_check_lengths(op, li, 1, p, 0, err);
    return RC_OK;
}

static rc_status reduce_grad_check(rc_op *op, rc_err *err)
{
    reduce_plan p;
    rc_tensor shape;
    const rc_tensor *xs;
    return reduce_grad_check_v(op, 0, &p, &shape, &xs, err);
}

static rc_status reduce_grad_run(rc_op *op, rc_err *err)
{
    const reduce_state *s = op->state;
    reduce_plan p;
    rc_tensor shape;
    const rc_tensor *x;
    const int li = s->mode == MODE_AXES || s->kind == RED_MAX ? 3 : 2, has_len = s->mode != MODE_AXES && op->n_in > li;
    rc_status st = reduce_grad_check_v(op, 1, &p, &shape, &x, err);
    if (!st && has_len) st = fb_check_lengths(op, li, 1, &p, 1, err);
    if (st) return st;
    int64_t dims[RC_MAX_DIMS];
    memcpy(dims, x->dims, sizeof dims);
    if (rc_tensor_resize(rc_out(op, 0), RC_F32, x->ndim, dims, err)) return out_fail(op, 0, err);
    const int64_t n = rc_tensor_numel(x);
    if (n == 0) return RC_OK;
    const float *g = rc_f32(rc_in(op, 0));
    float *dx = rc_f32(rc_out(op, 0));
    odometer o = {{0}, 0};
    if (has_len) {
        /* lengths: dX = dY (Sum), dY / len[k] (Mean) or dY where X is the max (Max) on the first len[k] entries
         * of output k's run, 0 after */
        fb_lengths fg;
        fb_geometry(s, &p, &fg);
        const int32_t *len = rc_i32(rc_in(op, li));
        const float *xd = rc_f32(x), *y = s->kind == RED_MAX ? rc_f32(rc_in(op, 2)) : NULL;
        for (int64_t i = 0; i < fg.rows; i++)
            for (int64_t j = 0; j < fg.cols; j++) {
                const int64_t k = fg.front ? j : i, r = fg.front ? i : j, at = i * fg.cols + j;
                float v = 0.f;
                if (r < len[k])
                    v = s->kind == RED_MEAN ? g[k] / (float)len[k] : s->kind == RED_MAX ? (xd[at] == y[k] ? g[k] : 0.f)
                                                                                        : g[k];
                dx[at] = v;
            }
        return RC_OK;
    }
    if (s->kind == RED_SUM || s->kind == RED_MEAN) {
        const float div = s->kind == RED_MEAN ? (float)p.n_red : 1.0f;
        for (int64_t i = 0; i < n; i++, odo_next(&p, &o)) dx[i] = g[o.off] / div;
    } else if (s->kind == RED_L1) { /* dY sign(X): 0 at 0, NaN stays */
        const float *xd = rc_f32(x);
        for (int64_t i = 0; i < n; i++, odo_next(&p, &o))
            dx[i] = xd[i] > 0.f ? g[o.off] : xd[i] < 0.f ? -g[o.off] : xd[i] == 0.f ? 0.f : xd[i];
    } else if (s->kind == RED_L2) { /* dY X / Y; 0 where the norm is 0 */
        const float *y = rc_f32(rc_in(op, 2)), *xd = rc_f32(x);
        for (int64_t i = 0; i < n; i++, odo_next(&p, &o)) dx[i] = y[o.off] == 0.f ? 0.f : g[o.off] * xd[i] / y[o.off];
    } else {
        const float *y = rc_f32(rc_in(op, 2)), *xd = rc_f32(x);
        for (int64_t i = 0; i < n; i++, odo_next(&p, &o)) dx[i] = xd[i] == y[o.off] ? g[o.off] : 0.f;
    }
    return RC_OK;
}

/* ================================================================ ArgMax / ArgMin */

typedef struct arg_state {
    int64_t axis;
    int keepdims;
} arg_state;

static void arg_state_free(void *p) { free(p); }

static rc_status arg_setup(rc_op *op, rc_err *err)
{
    arg_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    int64_t keep = 1;
    rc_status st = rc_arg_i(&op->def, "axis", -1, &s->axis, err);
    if (!st) st = rc_arg_i(&op->def, "keepdims", 1, &keep, err);
    s->keepdims = keep != 0;
    return st;
}

static rc_status arg_check_ax(rc_op *op, int *ax, rc_err *err)
{
    const arg_state *s = op->state;
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    if (x->ndim < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' must have at least 1 dim, got %s",
                          rc_in_name(op, 0), RC_SHAPE(x));
    if (s->axis < -(int64_t)x->ndim || s->axis >= x->ndim)
        return rc_op_fail(op, err, RC_ERR_VALUE, "axis %lld is out of range for input 0 blob '%s' %s",
                          (long long)s->axis, rc_in_name(op, 0), RC_SHAPE(x));
    *ax = (int)(s->axis < 0 ? s->axis + x->ndim : s->axis);
    if (x->dims[*ax] == 0 && rc_dims_prod(x, 0, *ax) * rc_dims_prod(x, *ax + 1, x->ndim) > 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "dim %d of input 0 blob '%s' %s has size 0: no position to give",
                          *ax, rc_in_name(op, 0), RC_SHAPE(x));
    if (x->dims[*ax] > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "dim %d of input 0 blob '%s' %s is larger than %d (indices are int32)",
                          *ax, rc_in_name(op, 0), RC_SHAPE(x), INT32_MAX);
    return RC_OK;
}

static rc_status arg_check(rc_op *op, rc_err *err)
{
    int ax;
    return arg_check_ax(op, &ax, err);
}

/* 1 when v beats the best so far b (max: larger; min: smaller); NaN beats any number. */
static inline int arg_beats(float v, float b, int mx)
{
    if (b != b) return 0;
    if (v != v) return 1;
    return mx ? v > b : v < b;
}

static rc_status arg_run(rc_op *op, int mx, rc_err *err)
{
    const arg_state *s = op->state;
    int ax;
    rc_status st = arg_check_ax(op, &ax, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    int64_t dims[RC_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < x->ndim; d++)
        if (d != ax) dims[nd++] = x->dims[d];
        else if (s->keepdims) dims[nd++] = 1;
    if (rc_tensor_resize(rc_out(op, 0), RC_I32, nd, dims, err)) return out_fail(op, 0, err);
    const int64_t outer = rc_dims_prod(x, 0, ax), inner = rc_dims_prod(x, ax + 1, x->ndim), n = x->dims[ax];
    if (outer == 0 || inner == 0) return RC_OK;
    const float *xd = rc_f32(x);
    int32_t *out = rc_i32(rc_out(op, 0));
    for (int64_t a = 0; a < outer; a++)
        for (int64_t c = 0; c < inner; c++) {
            const float *row = xd + a * n * inner + c;
            int64_t best = 0;
            for (int64_t k = 1; k < n; k++)
                if (arg_beats(row[k * inner], row[best * inner], mx)) best = k;
            out[a * inner + c] = (int32_t)best;
        }
    return RC_OK;
}

static rc_status argmax_run(rc_op *op, rc_err *err) { return arg_run(op, 1, err); }
static rc_status argmin_run(rc_op *op, rc_err *err) { return arg_run(op, 0, err); }

/* ================================================================ RowWiseArgMax */

/* X float32 2-D (N, D), D >= 1 unless N = 0, D <= INT32_MAX. */
static rc_status rowwise_argmax_check(rc_op *op, rc_err *err)
{
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    if (x->ndim != 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' must be 2-D (N, D), got %s", rc_in_name(op, 0),
                          RC_SHAPE(x));
    if (x->dims[1] == 0 && x->dims[0] > 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s has rows of 0 elements: no position to give",
                          rc_in_name(op, 0), RC_SHAPE(x));
    if (x->dims[1] > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "dim 1 of input 0 blob '%s' %s is larger than %d (indices are int32)",
                          rc_in_name(op, 0), RC_SHAPE(x), INT32_MAX);
    return RC_OK;
}

/* RowWiseArgMax: X (N, D) -> (N, 1) int32, the position of the largest value of each row (ArgMax's rule). */
static rc_status rowwise_argmax_run(rc_op *op, rc_err *err)
{
    rc_status st = rowwise_argmax_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0);
    const int64_t N = x->dims[0], D = x->dims[1], dims[2] = {N, 1};
    if (rc_tensor_resize(rc_out(op, 0), RC_I32, 2, dims, err)) return out_fail(op, 0, err);
    if (N == 0) return RC_OK;
    const float *xd = rc_f32(x);
    int32_t *out = rc_i32(rc_out(op, 0));
    for (int64_t i = 0; i < N; i++) {
        const float *row = xd + i * D;
        int64_t best = 0;
        for (int64_t k = 1; k < D; k++)
            if (arg_beats(row[k], row[best], 1)) best = k;
        out[i] = (int32_t)best;
    }
    return RC_OK;
}

/* ================================================================ Accuracy */

typedef struct acc_state {
    int64_t top_k;
} acc_state;

static rc_status accuracy_setup(rc_op *op, rc_err *err)
{
    acc_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    rc_status st = rc_arg_i(&op->def, "top_k", 1, &s->top_k, err);
    if (st) return st;
    if (s->top_k < 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'top_k' must be >= 1, got %lld", (long long)s->top_k);
    return RC_OK;
}

static rc_status accuracy_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err)) || (st = rc_check_input(op, 1, RC_I32, err))) return st;
    if ((st = rc_check_ndim(op, 0, 2, 2, err)) || (st = rc_check_ndim(op, 1, 1, 1, err))) return st;
    const rc_tensor *x = rc_in(op, 0), *l = rc_in(op, 1);
    if (l->dims[0] != x->dims[0])
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' %s (label) must have one entry per row of input 0 "
                          "blob '%s' %s (prediction)", rc_in_name(op, 1), RC_SHAPE(l), rc_in_name(op, 0), RC_SHAPE(x));
    if (x->dims[0] == 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s (prediction) has no rows: the accuracy of 0 "
                          "examples is undefined", rc_in_name(op, 0), RC_SHAPE(x));
    return RC_OK;
}

/* 1 when a (value va at index ia) comes before b in TopK's order. */
static inline int acc_before(float va, int64_t ia, float vb, int64_t ib)
{
    const int an = va != va, bn = vb != vb;
    if (an != bn) return an;
    if (!an && va != vb) return va > vb;
    return ia < ib;
}

static rc_status accuracy_run(rc_op *op, rc_err *err)
{
    const acc_state *s = op->state;
    rc_status st = accuracy_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0), *l = rc_in(op, 1);
    const int64_t N = x->dims[0], D = x->dims[1];
    const int32_t *lab = rc_i32(l);
    for (int64_t i = 0; i < N; i++)
        if (lab[i] < 0 || lab[i] >= D)
            return rc_op_fail(op, err, RC_ERR_INDEX, "input 1 blob '%s' %s (label): label %d at row %lld is out of "
                              "range [0, %lld) (input 0 blob '%s' %s)", rc_in_name(op, 1), RC_SHAPE(l), (int)lab[i],
                              (long long)i, (long long)D, rc_in_name(op, 0), RC_SHAPE(x));
    if (rc_tensor_resize(rc_out(op, 0), RC_F32, 0, NULL, err)) return out_fail(op, 0, err);
    const float *xd = rc_f32(x);
    int64_t correct = 0;
    for (int64_t i = 0; i < N; i++) {
        const float *row = xd + i * D;
        const int64_t li = lab[i];
        int64_t ahead = 0;
        for (int64_t j = 0; j < D && ahead < s->top_k; j++)
            if (acc_before(row[j], j, row[li], li)) ahead++;
        if (ahead < s->top_k) correct++;
    }
    rc_f32(rc_out(op, 0))[0] = (float)((double)correct / (double)N);
    return RC_OK;
}

/* ================================================================ the family table */
#define REDUCE(name, doc)                                                                                          \
    {name, 1, 1, 1, 1, NULL, reduce_setup, reduce_run, reduce_state_free, doc, reduce_check},                     \
    {name "Gradient", 3, 3, 1, 1, NULL, reduce_setup, reduce_grad_run, reduce_state_free,                          \
     "(dY, X, Y) -> dX (args as " name ")", reduce_grad_check}
#define REDUCE_FB(name, doc)                                                                                       \
    {name, 1, 2, 1, 1, NULL, reduce_setup, reduce_run, reduce_state_free, doc, reduce_check},                     \
    {name "Gradient", 2, 3, 1, 1, NULL, reduce_setup, reduce_grad_run, reduce_state_free,                          \
     "(dY, X[, LENGTHS]) -> dX (arg num_reduce_dim as " name ")", reduce_grad_check}

#define REDUCE_FB_MAX(name, doc)                                                                                   \
    {name, 1, 2, 1, 1, NULL, reduce_setup, reduce_run, reduce_state_free, doc, reduce_check},                     \
    {name "Gradient", 3, 4, 1, 1, NULL, reduce_setup, reduce_grad_run, reduce_state_free,                          \
     "(dY, X, Y[, LENGTHS]) -> dX = dY where X equals Y, else 0 (arg num_reduce_dim as " name ")", reduce_grad_check}

const rc_op_schema rc_ops_reduce[] = {
    REDUCE("ReduceSum", "Y = X summed over 'axes' (default all; keepdims=1), in double"),
    REDUCE("ReduceMean", "Y = mean of X over 'axes' (default all; keepdims=1), in double"),
    REDUCE("ReduceMax", "Y = max of X over 'axes' (default all; keepdims=1); NaN propagates"),
    REDUCE("ReduceMin", "Y = min of X over 'axes' (default all; keepdims=1); NaN propagates"),
    REDUCE("ReduceL1", "Y = sum of |X| over 'axes' (default all; keepdims=1), in double"),
    REDUCE("ReduceL2", "Y = sqrt of the sum of X^2 over 'axes' (default all; keepdims=1), in double"),
    REDUCE_FB("ReduceFrontSum", "(X[, LENGTHS int32]) -> Y = X summed over its first num_reduce_dim (default 1) dims; LENGTHS: only the first LENGTHS[k] entries reduced for output k"),
    REDUCE_FB("ReduceFrontMean", "(X[, LENGTHS int32]) -> Y = mean of X over its first num_reduce_dim (default 1) dims; LENGTHS: only the first LENGTHS[k] entries reduced for output k"),
    REDUCE_FB("ReduceBackSum", "(X[, LENGTHS int32]) -> Y = X summed over its last num_reduce_dim (default 1) dims; LENGTHS: only the first LENGTHS[k] entries reduced for output k"),
    REDUCE_FB("ReduceBackMean", "(X[, LENGTHS int32]) -> Y = mean of X over its last num_reduce_dim (default 1) dims; LENGTHS: only the first LENGTHS[k] entries reduced for output k"),
    REDUCE_FB_MAX("ReduceFrontMax", "(X[, LENGTHS int32]) -> Y = max of X over its first num_reduce_dim (default 1) dims; LENGTHS: only the first LENGTHS[k] (>= 1) entries reduced for output k"),
    REDUCE_FB_MAX("ReduceBackMax", "(X[, LENGTHS int32]) -> Y = max of X over its last num_reduce_dim (default 1) dims; LENGTHS: only the first LENGTHS[k] (>= 1) entries reduced for output k"),
    {"ArgMax", 1, 1, 1, 1, NULL, arg_setup, argmax_run, arg_state_free,
     "int32 position of the largest value along 'axis' (default -1; keepdims=1); first on ties, NaN largest",
     arg_check},
    {"ArgMin", 1, 1, 1, 1, NULL, arg_setup, argmin_run, arg_state_free,
     "int32 position of the smallest value along 'axis' (default -1; keepdims=1); first on ties, NaN smallest",
     arg_check},
    {"RowWiseArgMax", 1, 1, 1, 1, NULL, NULL, rowwise_argmax_run, NULL,
     "(X (N, D)) -> (N, 1) int32: the position of each row's largest value; first on ties, NaN largest",
     rowwise_argmax_check},
    {"Accuracy", 2, 2, 1, 1, NULL, accuracy_setup, accuracy_run, arg_state_free,
     "(prediction (N, D), label (N,) int32) -> fraction of rows whose label is in the top_k (default 1)",
     accuracy_check},
    {0},
};
