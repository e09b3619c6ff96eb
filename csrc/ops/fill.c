/* ops/fill.c -- fill operators: ConstantFill, UniformFill, UniformIntFill,
 * UniqueUniformFill, GaussianFill, XavierFill, MSRAFill, DiagonalFill,
 * GivenTensorFill, GivenTensorIntFill, SparseLengthsFill.
 *
 * Shape rules (Caffe2's FillerOp):
 *  - no input: the output has the shape of argument `shape` (absent: a scalar);
 *  - one input, input_as_shape=0: the output has the input's shape, followed
 *    by `extra_shape`;
 *  - one input, input_as_shape=1: the input is a 1-D int32 tensor whose values
 *    are the shape, followed by `extra_shape`.
 * `shape` together with an input, `extra_shape` or `input_as_shape` without an
 * input are errors at creation. All fills allow in-place (input 0 = output 0):
 * the shape is read before the output is resized.
 *
 * UniformFill and UniformIntFill also take three inputs (Caffe2's form): the
 * shape source as above, then MIN and MAX, one element each (float32 /
 * int32), read when the op runs instead of the arguments (which must then be
 * absent); MIN > MAX gives an output whose first dim is 0.
 *
 * UniformIntFill: int32, uniform on [min, max] (both ends included, as
 * Caffe2's; unbiased: rejection sampling). MSRAFill: float32 N(0, 2 /
 * fan_out), fan_out = numel / shape[1] (at least 2 dims). DiagonalFill:
 * zeros (float32 or int32 per 'dtype') with 'value' at every position whose
 * indices are all equal: (i, i) for i < min(rows, cols) in 2 dims (NumPy's
 * fill_diagonal; Caffe2 wrapped around in tall matrices), all dims equal in
 * more (a ValueError otherwise, as Caffe2's).
 *
 * UniqueUniformFill([shape source[, AVOID]]): int32 (dtype INT32 or INT64,
 * Caffe2's int64 being int32 here; another dtype is a ValueError), distinct
 * values uniform on [min, max] (both ends included; arguments min < max,
 * both required and int32, as Caffe2 enforced) and not in AVOID (int32 of any
 * shape; values outside [min, max] and repeats are allowed). The output's n
 * values are a uniformly random ordered sample without replacement of the
 * allowed values; n must not exceed their count (ValueError; Caffe2 compared
 * n + AVOID's size with the range). Scratch memory is taken before the output
 * is written: a hash set of about 2(n + |AVOID|) entries (values drawn are
 * redrawn while taken or avoided), or, when the range is small (at most
 * 2(n + |AVOID|)), a set of 2 * range entries and the list of the allowed
 * values, partially shuffled.
 *
 * SparseLengthsFill() -> (VALUES, LENGTHS): random sparse-feature data for Caffe2's filler test. No
 * input; arguments batch_size (B, 0 .. INT32_MAX), average_len (L >= 0, B * L <= INT32_MAX) and max_value
 * (M, 1 .. 2^31), all required. LENGTHS (B,) int32 sums to exactly B * L: each of the B * L values is put
 * in a segment drawn uniformly (so each length is Binomial(B L, 1 / B), mean L); VALUES (B * L,) int32 are
 * uniform on [0, M). Caffe2's source (an int64 op) was not available: its test asks only that values lie in
 * [0, max_value), that the lengths number batch_size and sum to the values' count.
 *
 * Random fills keep their generator (xoshiro256**) in op->state; it is seeded
 * at creation from argument `seed` when given, else from a process-wide atomic
 * counter mixed with the clock, so two fill ops never share a stream. Running
 * the same op again continues its stream.
 */
#include "../core/rc_core.h"
#include "../kernels/rng.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FILL_CONST, FILL_UNIFORM, FILL_UNIFORM_INT, FILL_GAUSS, FILL_XAVIER, FILL_MSRA, FILL_DIAG, FILL_GIVEN,
       FILL_UNIQUE, FILL_RANGE };

typedef struct fill_state {
    int kind;
    rc_dtype dtype;
    int ndim;                      /* shape argument (no input) */
    int64_t dims[RC_MAX_DIMS];
    int n_extra;                   /* extra_shape (with an input) */
    int64_t extra[RC_MAX_DIMS];
    int input_as_shape;
    float fval;                    /* ConstantFill value */
    int32_t ival;
    float a, b;                    /* uniform [min, max) / gaussian mean, std */
    int32_t ia, ib;                /* UniformIntFill [min, max] */
    float *fvalues;                /* GivenTensorFill (owned) */
    int32_t *ivalues;              /* GivenTensorIntFill (owned) */
    int64_t nvalues;
    uint64_t rng[4];               /* xoshiro256** state */
} fill_state;

static void fill_state_free(void *p)
{
    fill_state *s = p;
    if (!s) return;
    free(s->fvalues);
    free(s->ivalues);
    free(s);
}

/* ---------------------------------------------------------------- RNG (kernels/rng.h) */
/* u in [0, 1) with 24 random bits (exact in float) */
static inline float rng_unit_f(uint64_t s[4]) { return (float)(rc_rng_next(s) >> 40) * 0x1.0p-24f; }

/* ---------------------------------------------------------------- setup */
static rc_status read_dims(rc_op *op, const char *name, int64_t *dims, int *ndim, rc_err *err)
{
    const int64_t *v;
    int n;
    rc_status st = rc_arg_ints(&op->def, name, &v, &n, err);
    if (st) return st;
    if (n > RC_MAX_DIMS)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument '%s' for output blob '%s' has %d dims, at most %d are supported",
                          name, rc_out_name(op, 0), n, RC_MAX_DIMS);
    for (int i = 0; i < n; i++) {
        if (v[i] < 0)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "argument '%s' for output blob '%s' has a negative dimension %lld at position %d", name,
                              rc_out_name(op, 0), (long long)v[i], i);
        dims[i] = v[i];
    }
    *ndim = n;
    return RC_OK;
}

/* Seeds a random fill's stream: from argument `seed` when given, else from a fresh process-wide seed
 * (rng.h), so two fill ops never share a stream. */
static rc_status seed_stream(rc_op *op, uint64_t rng[4], rc_err *err)
{
    if (!rc_opdef_arg(&op->def, "seed")) {
        rc_rng_seed(rng, rc_rng_fresh_seed());
        return RC_OK;
    }
    int64_t seed;
    rc_status st = rc_arg_i(&op->def, "seed", 0, &seed, err);
    if (st) return st;
    rc_rng_seed(rng, (uint64_t)seed);
    return RC_OK;
}
static rc_status fill_setup_common(rc_op *op, int kind, rc_err *err)
{
    fill_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    s->kind = kind;
    s->dtype = RC_F32;
    rc_status st;
    int64_t ias;
    if ((st = rc_arg_i(&op->def, "input_as_shape", 0, &ias, err))) return st;
    s->input_as_shape = ias != 0;
    const rc_arg *shape_arg = rc_opdef_arg(&op->def, "shape");
    if (shape_arg && shape_arg->kind == RC_ARG_I)
        return rc_op_fail(op, err, RC_ERR_TYPE, "argument 'shape' was a scalar, a list of ints is expected");
    if ((st = read_dims(op, "shape", s->dims, &s->ndim, err))) return st;
    if ((st = read_dims(op, "extra_shape", s->extra, &s->n_extra, err))) return st;
    if (op->n_in == 2 && kind != FILL_UNIQUE)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "takes no input, one (the shape) or three (the shape, min and max), got two");
    if (op->n_in) {
        if (s->ndim)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "cannot set argument 'shape' and pass input blob '%s' at the same time",
                              rc_in_name(op, 0));
    } else {
        if (s->n_extra) return rc_op_fail(op, err, RC_ERR_VALUE, "cannot set 'extra_shape' when there is no input");
        if (s->input_as_shape)
            return rc_op_fail(op, err, RC_ERR_VALUE, "an input must be given if 'input_as_shape' is true");
    }
    if (kind != FILL_CONST && kind != FILL_GIVEN && kind != FILL_DIAG && kind != FILL_RANGE)
        return seed_stream(op, s->rng, err);
    return RC_OK;
}

/* Output shape for this run (see the rules at the top). With input_as_shape, values=0 (the
 * net-creation check) stops before reading the shape's values (*ndim, dims then unset). */
static rc_status fill_shape(rc_op *op, const fill_state *s, int values, int *ndim, int64_t *dims, rc_err *err)
{
    int n = 0;
    if (!op->n_in) {
        n = s->ndim;
        memcpy(dims, s->dims, sizeof(int64_t) * (size_t)n);
    } else if (s->input_as_shape) {
        rc_status st = rc_check_input(op, 0, RC_I32, err);
        if (st) return st;
        const rc_tensor *x = rc_in(op, 0);
        if (x->ndim != 1)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "with input_as_shape, input 0 blob '%s' must be a 1-D int32 tensor, got %s",
                              rc_in_name(op, 0), RC_SHAPE(x));
        if (x->dims[0] + s->n_extra > RC_MAX_DIMS)
            return rc_op_fail(op, err, RC_ERR_VALUE, "shape from input 0 blob '%s' %s has too many dims (max %d)",
                              rc_in_name(op, 0), RC_SHAPE(x), RC_MAX_DIMS);
        if (!values) return RC_OK;
        const int32_t *v = rc_i32(x);
        for (int i = 0; i < x->dims[0]; i++) {
            if (v[i] < 0)
                return rc_op_fail(op, err, RC_ERR_VALUE,
                                  "shape from input 0 blob '%s' has a negative dimension %d at position %d",
                                  rc_in_name(op, 0), (int)v[i], i);
            dims[n++] = v[i];
        }
    } else {
        const rc_tensor *x = rc_in(op, 0);
        if (x->dtype == RC_UNDEF)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' holds no tensor (was it fed or computed?)",
                              rc_in_name(op, 0));
        if (x->ndim + s->n_extra > RC_MAX_DIMS)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input 0 blob '%s' %s plus extra_shape has too many dims (max %d)", rc_in_name(op, 0),
                              RC_SHAPE(x), RC_MAX_DIMS);
        n = x->ndim;
        memcpy(dims, x->dims, sizeof(int64_t) * (size_t)n);
    }
    for (int i = 0; i < s->n_extra; i++) dims[n++] = s->extra[i];
    *ndim = n;
    return RC_OK;
}

static void dims_str(char *buf, size_t len, int ndim, const int64_t *dims)
{
    size_t k = 0;
    k += (size_t)snprintf(buf, len, "(");
    for (int i = 0; i < ndim && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, i ? ", %lld" : "%lld", (long long)dims[i]);
    if (k < len) snprintf(buf + k, len - k, ndim == 1 ? ",)" : ")");
}

/* Resizes output 0 (dtype s->dtype) to dims; names the op, blob and shape on failure. */
static rc_status fill_resize_to(rc_op *op, fill_state *s, int ndim, const int64_t *dims, rc_err *err)
{
    rc_status st = rc_tensor_resize(rc_out(op, 0), s->dtype, ndim, dims, err);
    if (st) {
        char buf[160], msg[RC_ERR_LEN];
        dims_str(buf, sizeof buf, ndim, dims);
        memcpy(msg, err->msg, sizeof msg);
        return rc_op_fail(op, err, st, "output blob '%s' of shape %s: %s", rc_out_name(op, 0), buf, msg);
    }
    return RC_OK;
}

/* Resizes output 0 to this run's shape; returns its element count in *numel. */
static rc_status fill_resize(rc_op *op, fill_state *s, int64_t *numel, rc_err *err)
{
    int ndim = 0;
    int64_t dims[RC_MAX_DIMS];
    rc_status st = fill_shape(op, s, 1, &ndim, dims, err);
    if (st) return st;
    if ((st = fill_resize_to(op, s, ndim, dims, err))) return st;
    *numel = rc_tensor_numel(rc_out(op, 0));
    return RC_OK;
}

/* The fills' net-creation check: input 0 (a shape with input_as_shape: int32, 1-D; else any
 * tensor) fits; nothing to check without an input (setup checked the arguments). */
static rc_status fill_check(rc_op *op, rc_err *err)
{
    int ndim;
    int64_t dims[RC_MAX_DIMS];
    return fill_shape(op, op->state, 0, &ndim, dims, err);
}

/* ---------------------------------------------------------------- ConstantFill */
/* ConstantFill's and DiagonalFill's 'value' and 'dtype' (1 float32, 2 int32, 5 bool: int32 value != 0;
 * without 'dtype' an int value means int32 when infer_int, as Caffe2's ConstantFill infers, else float32). */
static rc_status value_setup(rc_op *op, int kind, int infer_int, rc_err *err)
{
    rc_status st = fill_setup_common(op, kind, err);
    if (st) return st;
    fill_state *s = op->state;
    const rc_arg *value = rc_opdef_arg(&op->def, "value");
    if (value && value->kind != RC_ARG_F && value->kind != RC_ARG_I)
        return rc_op_fail(op, err, RC_ERR_TYPE, "argument 'value' must be a float or an int");
    int64_t dtype = 1;
    if (rc_opdef_arg(&op->def, "dtype")) {
        if ((st = rc_arg_i(&op->def, "dtype", 1, &dtype, err))) return st;
    } else if (infer_int && value && value->kind == RC_ARG_I) {
        dtype = 2; /* Caffe2 infers an integer type from an int value; int32 is ours */
    }
    /* Caffe2's TensorProto types as FeedBlob and Cast store them: the floating ones as float32, the
     * integer ones as int32 (the value must be whole and fit both the named type and int32) */
    static const struct { int64_t code; const char *name; double lo, hi; } ints[] = {
        {2, "int32", -2147483648.0, 2147483647.0}, {10, "int64", -2147483648.0, 2147483647.0},
        {9, "int16", -32768.0, 32767.0},          {7, "int8", -128.0, 127.0},
        {6, "uint8", 0.0, 255.0},                 {3, "byte", 0.0, 255.0},
        {8, "uint16", 0.0, 65535.0},
    };
    if (dtype == 1 || dtype == 13 || dtype == 12) { /* FLOAT, DOUBLE, FLOAT16 */
        s->dtype = RC_F32;
        s->fval = value ? (value->kind == RC_ARG_F ? (float)value->f : (float)value->i) : 0.0f;
        return RC_OK;
    }
    if (dtype == 5) { /* BOOL: int32 0 / 1, as Cast's */
        s->dtype = RC_I32;
        s->ival = value && (value->kind == RC_ARG_F ? value->f != 0 : value->i != 0);
        return RC_OK;
    }
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
        if (ints[k].code != dtype) continue;
        s->dtype = RC_I32;
        if (value) {
            double v = value->kind == RC_ARG_F ? value->f : (double)value->i;
            if (v != floor(v) || v < ints[k].lo || v > ints[k].hi)
                return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'value' %g does not fit dtype %s (%lld)%s", v,
                                  ints[k].name, (long long)dtype, dtype == 10 ? ", stored as int32" : "");
            s->ival = (int32_t)v;
        }
        return RC_OK;
    }
    return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'dtype' %lld is not supported: use 1 (float32; 13 double and "
                      "12 float16 give float32 too), 2 (int32; 10 int64, 9 int16, 7 int8, 6 uint8, 3 byte and 8 "
                      "uint16 give int32 too) or 5 (bool, given as int32 0 / 1)", (long long)dtype);
}

static rc_status constant_setup(rc_op *op, rc_err *err) { return value_setup(op, FILL_CONST, 1, err); }

static rc_status constant_run(rc_op *op, rc_err *err)
{
    fill_state *s = op->state;
    int64_t n;
    rc_status st = fill_resize(op, s, &n, err);
    if (st) return st;
    /* Y[n] = value */
    if (s->dtype == RC_F32) {
        float *y = rc_f32(rc_out(op, 0));
        float v = s->fval;
        if (v == 0.0f && !signbit(v)) memset(y, 0, (size_t)n * sizeof *y);
        else for (int64_t i = 0; i < n; i++) y[i] = v;
    } else {
        int32_t *y = rc_i32(rc_out(op, 0));
        int32_t v = s->ival;
        if (v == 0) memset(y, 0, (size_t)n * sizeof *y);
        else for (int64_t i = 0; i < n; i++) y[i] = v;
    }
    return RC_OK;
}

/* ---------------------------------------------------------------- UniformFill */
/* With three inputs, 'min' / 'max' arguments are refused (the inputs give them). */
static rc_status bounds_from_inputs_only(rc_op *op, rc_err *err)
{
    if (op->n_in == 3 && (rc_opdef_arg(&op->def, "min") || rc_opdef_arg(&op->def, "max")))
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "cannot set argument '%s' and pass min and max as inputs 1 and 2 at the same time",
                          rc_opdef_arg(&op->def, "min") ? "min" : "max");
    return RC_OK;
}

static rc_status uniform_setup(rc_op *op, rc_err *err)
{
    rc_status st = fill_setup_common(op, FILL_UNIFORM, err);
    if (st || (st = bounds_from_inputs_only(op, err))) return st;
    fill_state *s = op->state;
    if ((st = rc_arg_f(&op->def, "min", 0.0f, &s->a, err))) return st;
    if ((st = rc_arg_f(&op->def, "max", 1.0f, &s->b, err))) return st;
    if (!(s->a <= s->b) || !isfinite(s->a) || !isfinite(s->b))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'min' (%g) must be <= 'max' (%g), both finite, for output blob '%s'",
                          (double)s->a, (double)s->b, rc_out_name(op, 0));
    return RC_OK;
}

/* The int32 fills' arguments min (default 0) and max (default dflt_max) into s->ia, s->ib: min <= max, or
 * min < max when strict. */
static rc_status int_bounds(rc_op *op, int64_t dflt_max, int strict, rc_err *err)
{
    fill_state *s = op->state;
    int64_t lo, hi;
    rc_status st;
    if ((st = rc_arg_i(&op->def, "min", 0, &lo, err)) || (st = rc_arg_i(&op->def, "max", dflt_max, &hi, err)))
        return st;
    if (lo < INT32_MIN || hi > INT32_MAX || lo > hi || (strict && lo == hi))
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "argument 'min' (%lld) must be %s 'max' (%lld), both int32, for output blob '%s'",
                          (long long)lo, strict ? "<" : "<=", (long long)hi, rc_out_name(op, 0));
    s->ia = (int32_t)lo;
    s->ib = (int32_t)hi;
    return RC_OK;
}

static rc_status uniform_int_setup(rc_op *op, rc_err *err)
{
    rc_status st = fill_setup_common(op, FILL_UNIFORM_INT, err);
    if (st || (st = bounds_from_inputs_only(op, err))) return st;
    ((fill_state *)op->state)->dtype = RC_I32;
    return int_bounds(op, 1, 0, err);
}

/* The three-input form's MIN and MAX (inputs 1 and 2: one element each of dtype dt). */
static rc_status bounds_inputs(rc_op *op, rc_dtype dt, rc_err *err)
{
    for (int i = 1; i < 3; i++) {
        rc_status st = rc_check_input(op, i, dt, err);
        if (st) return st;
        if (rc_tensor_numel(rc_in(op, i)) != 1)
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must hold one element, got %s", i,
                              rc_in_name(op, i), i == 1 ? "min" : "max", RC_SHAPE(rc_in(op, i)));
    }
    return RC_OK;
}

/* The uniform fills' check: the shape source, and with three inputs MIN / MAX. */
static rc_status uniform_check_dt(rc_op *op, rc_dtype dt, rc_err *err)
{
    int ndim;
    int64_t dims[RC_MAX_DIMS];
    rc_status st = fill_shape(op, op->state, 0, &ndim, dims, err);
    return st || op->n_in != 3 ? st : bounds_inputs(op, dt, err);
}

static rc_status uniform_check(rc_op *op, rc_err *err) { return uniform_check_dt(op, RC_F32, err); }
static rc_status uniform_int_check(rc_op *op, rc_err *err) { return uniform_check_dt(op, RC_I32, err); }

/* Resizes the output of a uniform fill; with three inputs reads MIN / MAX into *lo / *hi (as
 * doubles) and sets *empty when MIN > MAX (the output then has first dim 0). */
static rc_status uniform_resize(rc_op *op, fill_state *s, double *lo, double *hi, int *empty, int64_t *n,
                                rc_err *err)
{
    int ndim = 0;
    int64_t dims[RC_MAX_DIMS];
    rc_status st = fill_shape(op, s, 1, &ndim, dims, err);
    if (st) return st;
    *empty = 0;
    if (op->n_in == 3) {
        if ((st = bounds_inputs(op, s->dtype, err))) return st;
        const rc_tensor *a = rc_in(op, 1), *b = rc_in(op, 2);
        *lo = s->dtype == RC_F32 ? (double)rc_f32(a)[0] : (double)rc_i32(a)[0];
        *hi = s->dtype == RC_F32 ? (double)rc_f32(b)[0] : (double)rc_i32(b)[0];
        if (s->dtype == RC_F32 && (!isfinite(*lo) || !isfinite(*hi)))
            return rc_op_fail(op, err, RC_ERR_VALUE, "min (input 1 blob '%s') %g and max (input 2 blob '%s') %g "
                              "must be finite", rc_in_name(op, 1), *lo, rc_in_name(op, 2), *hi);
        if (*lo > *hi) {
            if (ndim == 0)
                return rc_op_fail(op, err, RC_ERR_VALUE,
                                  "min (input 1 blob '%s') %g > max (input 2 blob '%s') %g asks for an output with "
                                  "first dim 0, but the output is 0-d", rc_in_name(op, 1), *lo, rc_in_name(op, 2), *hi);
            dims[0] = 0;
            *empty = 1;
        }
    } else {
        *lo = s->dtype == RC_F32 ? (double)s->a : (double)s->ia;
        *hi = s->dtype == RC_F32 ? (double)s->b : (double)s->ib;
    }
    if ((st = fill_resize_to(op, s, ndim, dims, err))) return st;
    *n = rc_tensor_numel(rc_out(op, 0));
    return RC_OK;
}

/* Y[n] ~ U[lo, hi) (all lo when lo == hi) */
static void uniform_kernel(float *y, int64_t n, float lo, float hi, uint64_t rng[4])
{
    double span = (double)hi - (double)lo;
    for (int64_t i = 0; i < n; i++) {
        float v = (float)((double)lo + span * (double)rng_unit_f(rng));
        if (v >= hi && hi > lo) v = nextafterf(hi, lo);
        y[i] = v;
    }
}


/* A draw uniform on [0, range), range in 1 .. 2^32 (unbiased: draws past the largest multiple of the range
 * are redrawn). */
static uint64_t uniform_below(uint64_t rng[4], uint64_t range)
{
    const uint64_t limit = UINT64_MAX - UINT64_MAX % range; /* draws below it are fair */
    uint64_t r;
    do r = rc_rng_next(rng); while (r >= limit);
    return r % range;
}

/* Y[n] uniform on the integers [lo, hi]. */
static void uniform_int_kernel(int32_t *y, int64_t n, int32_t lo, int32_t hi, uint64_t rng[4])
{
    const uint64_t range = (uint64_t)((int64_t)hi - (int64_t)lo) + 1; /* 1 .. 2^32 */
    for (int64_t i = 0; i < n; i++) y[i] = (int32_t)((int64_t)lo + (int64_t)uniform_below(rng, range));
}

/* UniformFill (float32) and UniformIntFill (int32). */
static rc_status uniform_run(rc_op *op, rc_err *err)
{
    fill_state *s = op->state;
    int64_t n;
    double lo, hi;
    int empty;
    rc_status st = uniform_resize(op, s, &lo, &hi, &empty, &n, err);
    if (st || empty) return st;
    if (s->dtype == RC_F32) uniform_kernel(rc_f32(rc_out(op, 0)), n, (float)lo, (float)hi, s->rng);
    else uniform_int_kernel(rc_i32(rc_out(op, 0)), n, (int32_t)lo, (int32_t)hi, s->rng);
    return RC_OK;
}

/* ---------------------------------------------------------------- UniqueUniformFill */
static rc_status unique_setup(rc_op *op, rc_err *err)
{
    rc_status st = fill_setup_common(op, FILL_UNIQUE, err);
    if (st) return st;
    fill_state *s = op->state;
    s->dtype = RC_I32;
    int64_t dtype = 2;
    if ((st = rc_arg_i(&op->def, "dtype", 2, &dtype, err))) return st;
    if (dtype != 2 && dtype != 10)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'dtype' %lld is not supported: use 2 (int32) or 10 (int64, "
                          "given as int32)", (long long)dtype);
    if (!rc_opdef_arg(&op->def, "min") || !rc_opdef_arg(&op->def, "max"))
        return rc_op_fail(op, err, RC_ERR_VALUE, "arguments 'min' and 'max' are required");
    return int_bounds(op, 0, 1, err);
}

/* The shape source, and AVOID (input 1) int32. */
static rc_status unique_check(rc_op *op, rc_err *err)
{
    int ndim;
    int64_t dims[RC_MAX_DIMS];
    rc_status st = fill_shape(op, op->state, 0, &ndim, dims, err);
    return st || op->n_in != 2 ? st : rc_check_input(op, 1, RC_I32, err);
}

/* An open-addressing set of int64 keys (cap a power of two, EMPTY marks a free slot: keys are int32). */
#define SET_EMPTY INT64_MIN
static int set_add(int64_t *set, uint64_t cap, int64_t key) /* 1 when added, 0 when present */
{
    uint64_t h = rc_rng_hash((uint64_t)key) & (cap - 1);
    while (set[h] != SET_EMPTY) {
        if (set[h] == key) return 0;
        h = (h + 1) & (cap - 1);
    }
    set[h] = key;
    return 1;
}

static rc_status unique_run(rc_op *op, rc_err *err)
{
    fill_state *s = op->state;
    int ndim = 0;
    int64_t dims[RC_MAX_DIMS];
    rc_status st = unique_check(op, err);
    if (st || (st = fill_shape(op, s, 1, &ndim, dims, err))) return st;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n = dims[d] == 0 ? 0 : n;
    for (int d = 0; d < ndim && n; d++) n = n > INT64_MAX / dims[d] ? INT64_MAX : n * dims[d]; /* too many: refused */
    const int64_t lo = s->ia, range = (int64_t)s->ib - lo + 1;
    const int32_t *av = op->n_in == 2 ? rc_i32(rc_in(op, 1)) : NULL;
    const int64_t n_av = op->n_in == 2 ? rc_tensor_numel(rc_in(op, 1)) : 0;
    if (n > range)
        return rc_op_fail(op, err, RC_ERR_VALUE, "output blob '%s' needs %lld distinct values, more than the %lld "
                          "in [%d, %d]", rc_out_name(op, 0), (long long)n, (long long)range, s->ia, s->ib);
    /* the scratch set, at most half full: AVOID's values in range, then the values drawn (sparse) or every
     * value of the range (dense) */
    const int64_t most = n + (n_av < range ? n_av : range);
    const int dense = range <= 2 * most;
    uint64_t cap = 16;
    while (cap < 2 * (uint64_t)(dense ? range : most)) cap <<= 1;
    int64_t *set = malloc(cap * sizeof *set);
    int32_t *pool = NULL;
    if (!set) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory for the %llu-entry scratch set of output "
                                "blob '%s'", (unsigned long long)cap, rc_out_name(op, 0));
    for (uint64_t i = 0; i < cap; i++) set[i] = SET_EMPTY;
    int64_t n_avoided = 0;
    for (int64_t k = 0; k < n_av; k++)
        if (av[k] >= s->ia && av[k] <= s->ib) n_avoided += set_add(set, cap, av[k]);
    if (n > range - n_avoided) {
        free(set);
        return rc_op_fail(op, err, RC_ERR_VALUE, "output blob '%s' needs %lld distinct values, more than the %lld "
                          "in [%d, %d] that input 1 blob '%s' does not avoid", rc_out_name(op, 0), (long long)n,
                          (long long)(range - n_avoided), s->ia, s->ib, rc_in_name(op, 1));
    }
    if (dense && !(pool = malloc((size_t)(range - n_avoided) * sizeof *pool))) {
        free(set);
        return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory for the %lld allowed values of output blob '%s'",
                          (long long)(range - n_avoided), rc_out_name(op, 0));
    }
    if ((st = fill_resize_to(op, s, ndim, dims, err))) {
        free(set);
        free(pool);
        return st;
    }
    int32_t *y = rc_i32(rc_out(op, 0));
    if (dense) { /* the allowed values, then a partial Fisher-Yates shuffle of the first n */
        int64_t m = 0;
        for (int64_t v = lo; v <= s->ib; v++)
            if (set_add(set, cap, v)) pool[m++] = (int32_t)v;
        for (int64_t i = 0; i < n; i++) {
            const int64_t j = i + (int64_t)uniform_below(s->rng, (uint64_t)(m - i));
            const int32_t t = pool[i];
            pool[i] = pool[j];
            pool[j] = t;
            y[i] = pool[i];
        }
    } else { /* more than half the range is never taken nor avoided: redraw a value that is */
        for (int64_t i = 0; i < n; i++) {
            int64_t v;
            do v = lo + (int64_t)uniform_below(s->rng, (uint64_t)range); while (!set_add(set, cap, v));
            y[i] = (int32_t)v;
        }
    }
    free(set);
    free(pool);
    return RC_OK;
}

/* ---------------------------------------------------------------- GaussianFill */
static rc_status gaussian_setup(rc_op *op, rc_err *err)
{
    rc_status st = fill_setup_common(op, FILL_GAUSS, err);
    if (st) return st;
    fill_state *s = op->state;
    if ((st = rc_arg_f(&op->def, "mean", 0.0f, &s->a, err))) return st;
    if ((st = rc_arg_f(&op->def, "std", 1.0f, &s->b, err))) return st;
    if (!(s->b >= 0.0f) || !isfinite(s->b) || !isfinite(s->a))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'std' (%g) must be >= 0 and 'mean' (%g) finite, for output blob '%s'",
                          (double)s->b, (double)s->a, rc_out_name(op, 0));
    return RC_OK;
}

/* Y[n] ~ N(mean, std^2): Box-Muller, two normals per pair of uniforms */
static void gaussian_kernel(float *y, int64_t n, double mean, double std, uint64_t rng[4])
{
    const double two_pi = 6.283185307179586476925;
    for (int64_t i = 0; i < n; i += 2) {
        double u1 = ((double)(rc_rng_next(rng) >> 11) + 1.0) * 0x1.0p-53; /* (0, 1] */
        double u2 = rc_rng_unit(rng); /* [0, 1) */
        double r = sqrt(-2.0 * log(u1));
        y[i] = (float)(mean + std * r * cos(two_pi * u2));
        if (i + 1 < n) y[i + 1] = (float)(mean + std * r * sin(two_pi * u2));
    }
}

static rc_status gaussian_run(rc_op *op, rc_err *err)
{
    fill_state *s = op->state;
    int64_t n;
    rc_status st = fill_resize(op, s, &n, err);
    if (st) return st;
    gaussian_kernel(rc_f32(rc_out(op, 0)), n, s->a, s->b, s->rng);
    return RC_OK;
}

/* ---------------------------------------------------------------- XavierFill, MSRAFill */
/* Resizes output 0 and gives *fan = numel / shape[dim] (0 for an empty output); the output needs
 * more than `dim` dims (`what` names the fan in the message). */
static rc_status fan_resize(rc_op *op, int dim, const char *what, int64_t *n, double *fan, rc_err *err)
{
    rc_status st = fill_resize(op, op->state, n, err);
    if (st) return st;
    const rc_tensor *y = rc_out(op, 0);
    if (y->ndim <= dim)
        return rc_op_fail(op, err, RC_ERR_VALUE, "output blob '%s' must have at least %d dim%s (%s = numel / "
                          "shape[%d]), got %s", rc_out_name(op, 0), dim + 1, dim ? "s" : "", what, dim, RC_SHAPE(y));
    *fan = *n ? (double)(*n / y->dims[dim]) : 0.0;
    return RC_OK;
}

static rc_status msra_setup(rc_op *op, rc_err *err) { return fill_setup_common(op, FILL_MSRA, err); }

static rc_status msra_run(rc_op *op, rc_err *err)
{
    fill_state *s = op->state;
    int64_t n;
    double fan_out = 1.0;
    rc_status st = fan_resize(op, 1, "fan_out", &n, &fan_out, err);
    /* Y ~ N(0, 2 / fan_out) */
    if (!st && n) gaussian_kernel(rc_f32(rc_out(op, 0)), n, 0.0, sqrt(2.0 / fan_out), s->rng);
    return st;
}

static rc_status xavier_setup(rc_op *op, rc_err *err) { return fill_setup_common(op, FILL_XAVIER, err); }

static rc_status xavier_run(rc_op *op, rc_err *err)
{
    fill_state *s = op->state;
    int64_t n;
    double fan_in = 1.0;
    rc_status st = fan_resize(op, 0, "fan_in", &n, &fan_in, err);
    if (st || !n) return st;
    /* Y ~ U[-scale, scale), scale = sqrt(3 / fan_in) */
    float scale = (float)sqrt(3.0 / fan_in);
    uniform_kernel(rc_f32(rc_out(op, 0)), n, -scale, scale, s->rng);
    return RC_OK;
}

/* ---------------------------------------------------------------- RangeFill */
static rc_status range_setup(rc_op *op, rc_err *err) { return fill_setup_common(op, FILL_RANGE, err); }

/* Y[i] = i in memory order, float32 (exact below 2^24, as Caffe2's float fill) */
static rc_status range_run(rc_op *op, rc_err *err)
{
    fill_state *s = op->state;
    int64_t n;
    rc_status st = fill_resize(op, s, &n, err);
    if (st) return st;
    float *y = rc_f32(rc_out(op, 0));
    for (int64_t i = 0; i < n; i++) y[i] = (float)i;
    return RC_OK;
}

/* ---------------------------------------------------------------- DiagonalFill */
static rc_status diagonal_setup(rc_op *op, rc_err *err) { return value_setup(op, FILL_DIAG, 0, err); }

static rc_status diagonal_run(rc_op *op, rc_err *err)
{
    fill_state *s = op->state;
    int ndim = 0;
    int64_t dims[RC_MAX_DIMS];
    rc_status st = fill_shape(op, s, 1, &ndim, dims, err);
    if (st) return st;
    char buf[160];
    if (ndim < 2) {
        dims_str(buf, sizeof buf, ndim, dims);
        return rc_op_fail(op, err, RC_ERR_VALUE, "output blob '%s' must have at least 2 dims, got shape %s",
                          rc_out_name(op, 0), buf);
    }
    for (int d = 1; ndim > 2 && d < ndim; d++)
        if (dims[d] != dims[0]) {
            dims_str(buf, sizeof buf, ndim, dims);
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "output blob '%s' of shape %s: with more than 2 dims all must be equal (dim %d is %lld, "
                              "dim 0 %lld)", rc_out_name(op, 0), buf, d, (long long)dims[d], (long long)dims[0]);
        }
    if ((st = fill_resize_to(op, s, ndim, dims, err))) return st;
    const int64_t n = rc_tensor_numel(rc_out(op, 0));
    /* Y = 0 but Y[i, i, ..., i] = value, i < min(dims): flat step 1 + d1 + d1 d2 + ... */
    int64_t step = 0, stride = 1, count = dims[0];
    for (int d = ndim - 1; d >= 0; d--) {
        step += stride;
        stride *= dims[d];
        if (dims[d] < count) count = dims[d];
    }
    if (s->dtype == RC_F32) {
        float *y = rc_f32(rc_out(op, 0));
        if (n) memset(y, 0, (size_t)n * sizeof *y);
        for (int64_t i = 0; i < count; i++) y[i * step] = s->fval;
    } else {
        int32_t *y = rc_i32(rc_out(op, 0));
        if (n) memset(y, 0, (size_t)n * sizeof *y);
        for (int64_t i = 0; i < count; i++) y[i * step] = s->ival;
    }
    return RC_OK;
}

/* ---------------------------------------------------------------- GivenTensorFill / GivenTensorIntFill */
/* Element count of a shape; *overflow set when it exceeds INT64_MAX. */
static int64_t shape_count(int ndim, const int64_t *dims, int *overflow)
{
    uint64_t p = 1;
    *overflow = 0;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] && p > (uint64_t)INT64_MAX / (uint64_t)dims[i]) *overflow = 1;
        else p *= (uint64_t)dims[i];
    }
    return *overflow ? INT64_MAX : (int64_t)p;
}

static rc_status given_count_check(rc_op *op, fill_state *s, int ndim, const int64_t *dims, rc_err *err)
{
    int overflow;
    int64_t want = shape_count(ndim, dims, &overflow);
    if (overflow || want != s->nvalues) {
        char buf[160];
        dims_str(buf, sizeof buf, ndim, dims);
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "argument 'values' has %lld elements but shape %s of output blob '%s' needs %s%lld",
                          (long long)s->nvalues, buf, rc_out_name(op, 0), overflow ? "more than " : "",
                          (long long)want);
    }
    return RC_OK;
}

/* The int32 values of an integer GivenTensor*Fill must fit its Caffe2 type (INT32, INT64 and the
 * others are stored as int32: FeedBlob's and Cast's rule). */
static const struct given_int { const char *type, *name; int64_t lo, hi; } given_ints[] = {
    {"GivenTensorIntFill", "int32", INT32_MIN, INT32_MAX},  {"GivenTensorInt64Fill", "int32", INT32_MIN, INT32_MAX},
    {"GivenTensorInt16Fill", "int16", INT16_MIN, INT16_MAX}, {"GivenTensorBoolFill", "bool (0 or 1)", 0, 1},
};

static rc_status given_setup_impl(rc_op *op, rc_dtype dt, rc_err *err)
{
    rc_status st = fill_setup_common(op, FILL_GIVEN, err);
    if (st) return st;
    fill_state *s = op->state;
    s->dtype = dt;
    const char *want = dt == RC_F32 ? "a list of floats (or ints)" : "a list of ints";
    const rc_arg *a = rc_opdef_arg(&op->def, "values");
    int n = 0;
    if (a) {
        int is_list = a->kind == RC_ARG_FLOATS || a->kind == RC_ARG_INTS || a->kind == RC_ARG_STRINGS ||
                      a->kind == RC_ARG_NETS;
        if (!is_list || (a->n && a->kind != RC_ARG_INTS && !(dt == RC_F32 && a->kind == RC_ARG_FLOATS)))
            return rc_op_fail(op, err, RC_ERR_TYPE, "argument 'values' must be %s", want);
        n = a->n;
    }
    s->nvalues = n;
    if (dt == RC_F32) {
        s->fvalues = malloc(sizeof(float) * (size_t)(n + 1));
        if (!s->fvalues) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
        for (int i = 0; i < n; i++) s->fvalues[i] = a->kind == RC_ARG_FLOATS ? a->floats[i] : (float)a->ints[i];
    } else {
        s->ivalues = malloc(sizeof(int32_t) * (size_t)(n + 1));
        if (!s->ivalues) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
        const struct given_int *gi = &given_ints[0];
        for (size_t k = 0; k < sizeof given_ints / sizeof given_ints[0]; k++)
            if (strcmp(op->def.type, given_ints[k].type) == 0) gi = &given_ints[k];
        for (int i = 0; i < n; i++) {
            if (a->ints[i] < gi->lo || a->ints[i] > gi->hi)
                return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'values'[%d] = %lld does not fit %s", i,
                                  (long long)a->ints[i], gi->name);
            s->ivalues[i] = (int32_t)a->ints[i];
        }
    }
    if (!op->n_in) return given_count_check(op, s, s->ndim, s->dims, err);
    return RC_OK;
}

static rc_status given_f_setup(rc_op *op, rc_err *err) { return given_setup_impl(op, RC_F32, err); }
static rc_status given_i_setup(rc_op *op, rc_err *err) { return given_setup_impl(op, RC_I32, err); }

/* GivenTensor(Int)Fill: also the count of 'values' against a shape taken from input 0's shape. */
static rc_status given_check(rc_op *op, rc_err *err)
{
    fill_state *s = op->state;
    int ndim = 0;
    int64_t dims[RC_MAX_DIMS];
    rc_status st = fill_shape(op, s, 0, &ndim, dims, err);
    if (st || (op->n_in && s->input_as_shape)) return st;
    return given_count_check(op, s, ndim, dims, err);
}

static rc_status given_run(rc_op *op, rc_err *err)
{
    fill_state *s = op->state;
    int ndim = 0;
    int64_t dims[RC_MAX_DIMS];
    rc_status st = fill_shape(op, s, 1, &ndim, dims, err);
    if (st) return st;
    /* check the count before resizing: a huge shape with few values is a ValueError */
    if ((st = given_count_check(op, s, ndim, dims, err))) return st;
    if ((st = fill_resize_to(op, s, ndim, dims, err))) return st;
    int64_t n = s->nvalues;
    /* Y[n] = values[n] */
    if (n) {
        if (s->dtype == RC_F32) memcpy(rc_f32(rc_out(op, 0)), s->fvalues, (size_t)n * sizeof(float));
        else memcpy(rc_i32(rc_out(op, 0)), s->ivalues, (size_t)n * sizeof(int32_t));
    }
    return RC_OK;
}

/* ---------------------------------------------------------------- SparseLengthsFill */
/* Random sparse-feature data: arguments batch_size, average_len, max_value (all required ints; seed optional).
 * The stream is kept in op->state as the other random fills. */
typedef struct slf_state {
    int64_t batch, total, max_value;
    uint64_t rng[4];
} slf_state;

static rc_status slf_setup(rc_op *op, rc_err *err)
{
    static const char *const names[3] = {"batch_size", "average_len", "max_value"};
    int64_t v[3];
    rc_status st;
    for (int k = 0; k < 3; k++) {
        if (!rc_opdef_arg(&op->def, names[k]))
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument '%s' is required", names[k]);
        if ((st = rc_arg_i(&op->def, names[k], 0, &v[k], err))) return st;
    }
    if (v[0] < 0 || v[0] > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'batch_size' must be in [0, %d], got %lld", INT32_MAX,
                          (long long)v[0]);
    if (v[1] < 0 || (v[1] && v[0] > INT32_MAX / v[1]))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'average_len' must be >= 0 with batch_size * average_len "
                          "at most %d (the int32 lengths must hold it), got batch_size %lld, average_len %lld",
                          INT32_MAX, (long long)v[0], (long long)v[1]);
    if (v[2] < 1 || v[2] > (int64_t)INT32_MAX + 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'max_value' must be in [1, 2^31] (values are int32 in "
                          "[0, max_value)), got %lld", (long long)v[2]);
    slf_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    s->batch = v[0];
    s->total = v[0] * v[1];
    s->max_value = v[2];
    return seed_stream(op, s->rng, err);
}

/* Nothing to check before the run: no inputs; the arguments were checked at creation (slf_setup). */
static rc_status slf_check(rc_op *op, rc_err *err)
{
    (void)op;
    (void)err;
    return RC_OK;
}

/* () -> VALUES (T,) int32 uniform on [0, max_value), LENGTHS (B,) int32 >= 0 summing to T, T = B * average_len:
 * each of the T values falls in a segment drawn uniformly from the B (the lengths are multinomial). */
static rc_status slf_run(rc_op *op, rc_err *err)
{
    slf_state *s = op->state;
    const int64_t vdims[1] = {s->total}, ldims[1] = {s->batch};
    rc_status st;
    if ((st = rc_tensor_resize(rc_out(op, 0), RC_I32, 1, vdims, err)))
        return rc_op_fail(op, err, st, "output 0 blob '%s' (values): %s", rc_out_name(op, 0), err->msg);
    if ((st = rc_tensor_resize(rc_out(op, 1), RC_I32, 1, ldims, err)))
        return rc_op_fail(op, err, st, "output 1 blob '%s' (lengths): %s", rc_out_name(op, 1), err->msg);
    int32_t *values = rc_i32(rc_out(op, 0)), *lengths = rc_i32(rc_out(op, 1));
    if (s->batch) memset(lengths, 0, (size_t)s->batch * sizeof *lengths);
    for (int64_t k = 0; k < s->total; k++) lengths[uniform_below(s->rng, (uint64_t)s->batch)]++;
    for (int64_t k = 0; k < s->total; k++) values[k] = (int32_t)uniform_below(s->rng, (uint64_t)s->max_value);
    return RC_OK;
}

/* ZeroGradient(X): does nothing when it runs; its gradient (recurrent/_grad_fill.py)
 * is a ConstantFill of zeros shaped like X, so that a blob no loss reaches still
 * gets a gradient blob (Caffe2's op, used by rnn_cell.UnrolledCell). */
static rc_status zero_gradient_run(rc_op *op, rc_err *err)
{
    (void)op;
    (void)err;
    return RC_OK;
}

const rc_op_schema rc_ops_fill[] = {
    {"ConstantFill", 0, 1, 1, 1, rc_inplace_first, constant_setup, constant_run, fill_state_free,
     "Y = value (float32 or int32 per 'dtype'), shaped by 'shape', like input 0, or by input 0's values", fill_check},
    {"UniformFill", 0, 3, 1, 1, rc_inplace_first, uniform_setup, uniform_run, fill_state_free,
     "Y ~ U[min, max) float32 (min, max: arguments or inputs 1, 2)", uniform_check},
    {"UniformIntFill", 0, 3, 1, 1, rc_inplace_first, uniform_int_setup, uniform_run, fill_state_free,
     "Y int32 uniform on [min, max] (min, max: arguments or inputs 1, 2)", uniform_int_check},
    {"UniqueUniformFill", 0, 2, 1, 1, rc_inplace_first, unique_setup, unique_run, fill_state_free,
     "Y int32: distinct values uniform on [min, max] not in input 1 (AVOID), shaped as the other fills",
     unique_check},
    {"RangeFill", 0, 1, 1, 1, rc_inplace_first, range_setup, range_run, fill_state_free,
     "Y[i] = i (float32, in memory order), shaped as the other fills", fill_check},
    {"MSRAFill", 0, 1, 1, 1, rc_inplace_first, msra_setup, msra_run, fill_state_free,
     "Y ~ N(0, 2 / fan_out) float32, fan_out = numel / shape[1]", fill_check},
    {"DiagonalFill", 0, 1, 1, 1, rc_inplace_first, diagonal_setup, diagonal_run, fill_state_free,
     "Y = 0 with 'value' where all indices are equal (float32 or int32 per 'dtype')", fill_check},
    {"GaussianFill", 0, 1, 1, 1, rc_inplace_first, gaussian_setup, gaussian_run, fill_state_free,
     "Y ~ N(mean, std^2) float32", fill_check},
    {"XavierFill", 0, 1, 1, 1, rc_inplace_first, xavier_setup, xavier_run, fill_state_free,
     "Y ~ U[-s, s), s = sqrt(3 / fan_in), fan_in = numel / shape[0]", fill_check},
    {"GivenTensorFill", 0, 1, 1, 1, rc_inplace_first, given_f_setup, given_run, fill_state_free,
     "Y = values (float32) with the given shape", given_check},
    {"GivenTensorIntFill", 0, 1, 1, 1, rc_inplace_first, given_i_setup, given_run, fill_state_free,
     "Y = values (int32) with the given shape", given_check},
    /* Caffe2's other typed fills, stored as FeedBlob stores those types (exported nets use them) */
    {"GivenTensorInt64Fill", 0, 1, 1, 1, rc_inplace_first, given_i_setup, given_run, fill_state_free,
     "Y = values (Caffe2's int64, int32 here: each must fit) with the given shape", given_check},
    {"GivenTensorInt16Fill", 0, 1, 1, 1, rc_inplace_first, given_i_setup, given_run, fill_state_free,
     "Y = values (Caffe2's int16, in int32) with the given shape", given_check},
    {"GivenTensorBoolFill", 0, 1, 1, 1, rc_inplace_first, given_i_setup, given_run, fill_state_free,
     "Y = values (Caffe2's bool: 0 / 1 in int32) with the given shape", given_check},
    {"GivenTensorDoubleFill", 0, 1, 1, 1, rc_inplace_first, given_f_setup, given_run, fill_state_free,
     "Y = values (Caffe2's double, float32 here) with the given shape", given_check},
    {"SparseLengthsFill", 0, 0, 2, 2, NULL, slf_setup, slf_run, free,
     "() -> (VALUES (B * average_len,) int32 uniform on [0, max_value), LENGTHS (B,) int32 summing to their "
     "count), B = batch_size", slf_check},
    {"ZeroGradient", 1, 1, 0, 0, NULL, NULL, zero_gradient_run, NULL,
     "no-op; its gradient is zeros shaped like X (a gradient for a blob no loss reaches)"},
    {0},
};
