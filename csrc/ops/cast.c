/* ops/cast.c -- Cast and Conditional (Caffe2's cast_op, conditional_op).
 *
 * Cast(X) -> Y, argument 'to' (default FLOAT): a TensorProto DataType, as Caffe2's
 * enum int (core.DataType: FLOAT 1, INT32 2, BYTE 3, STRING 4, BOOL 5, UINT8
 * 6, INT8 7, UINT16 8, INT16 9, INT64 10, FLOAT16 12, DOUBLE 13) or its name
 * as a string, case-insensitive ('float', 'INT32', 'bool', ...), as Caffe2's
 * Python accepted. Our blobs are float32 and int32 only, so
 *  - FLOAT, DOUBLE, FLOAT16 give float32 (FLOAT16 is not rounded to half
 *    precision; DOUBLE values are the float32 ones);
 *  - INT32, INT64, INT16, INT8, UINT8, UINT16, BYTE (uint8) give int32, our
 *    integer dtype: every value must lie in the target type's range (INT64:
 *    int32's, what we can store); one outside is a ValueError naming the
 *    blob, the flat position and the value -- never a silent wrap (Caffe2's
 *    static_cast wrapped integers and was undefined for floats);
 *  - BOOL gives int32 0 / 1 (x != 0; NaN is true, as C++ and NumPy).
 * float -> integer truncates toward zero (C++ static_cast); NaN, and a value
 * whose truncation is outside the range, is a ValueError (undefined
 * behaviour in Caffe2). int32 -> float rounds to the nearest float32 (exact
 * up to 2^24). STRING, UNDEFINED and unknown values are a ValueError at
 * creation. The optional argument 'from_type' (Caffe2's gradient needed it)
 * is parsed the same way and only used by the gradient maker
 * (recurrent/_grad_math.py). Y has X's shape and may be X (the range check
 * runs before Y is touched).
 *
 * Conditional(condition, X_true, X_false) -> Y: condition int32 of shape (N,)
 * (Caffe2: bool; nonzero is true), X_true and X_false of one shape (N, ...)
 * and one dtype (float32 or int32; Caffe2 only compared item sizes). Row i of
 * Y is row i of X_true where condition[i] != 0, else of X_false; Y has
 * X_true's shape and dtype and may be X_true or X_false. No gradient (as
 * Caffe2's NO_GRADIENT).
 */
#include "../core/rc_core.h"
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ Cast */

/* One target type: its TensorProto value, name, our dtype, and for integer
 * targets the inclusive range that values must lie in. */
typedef struct cast_type {
    int64_t proto;
    const char *name;
    rc_dtype dt;
    int is_bool;
    int64_t lo, hi;
} cast_type;

static const cast_type cast_types[] = {
    {1, "FLOAT", RC_F32, 0, 0, 0},
    {2, "INT32", RC_I32, 0, INT32_MIN, INT32_MAX},
    {3, "BYTE", RC_I32, 0, 0, UINT8_MAX},
    {5, "BOOL", RC_I32, 1, 0, 1},
    {6, "UINT8", RC_I32, 0, 0, UINT8_MAX},
    {7, "INT8", RC_I32, 0, INT8_MIN, INT8_MAX},
    {8, "UINT16", RC_I32, 0, 0, UINT16_MAX},
    {9, "INT16", RC_I32, 0, INT16_MIN, INT16_MAX},
    {10, "INT64", RC_I32, 0, INT32_MIN, INT32_MAX}, /* stored as int32 */
    {12, "FLOAT16", RC_F32, 0, 0, 0},
    {13, "DOUBLE", RC_F32, 0, 0, 0},
};
#define N_CAST_TYPES ((int)(sizeof cast_types / sizeof *cast_types))

/* Parses argument `name` (int or string) into *out (borrowed from the static
 * table). Missing: *out = dflt (NULL: none). */
static rc_status cast_type_arg(rc_op *op, const char *name, const cast_type *dflt, const cast_type **out,
                               rc_err *err)
{
    const rc_arg *a = rc_opdef_arg(&op->def, name);
    *out = dflt;
    if (!a) return RC_OK;
    if (a->kind == RC_ARG_I) {
        for (int i = 0; i < N_CAST_TYPES; i++)
            if (cast_types[i].proto == a->i) {
                *out = &cast_types[i];
                return RC_OK;
            }
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "argument '%s'=%lld is not a supported DataType (FLOAT 1, INT32 2, BYTE 3, BOOL 5, UINT8 "
                          "6, INT8 7, UINT16 8, INT16 9, INT64 10, FLOAT16 12, DOUBLE 13; STRING 4 is not "
                          "supported)", name, (long long)a->i);
    }
    if (a->kind == RC_ARG_S) {
        char up[32];
        size_t n = strlen(a->s);
        if (n < sizeof up) {
            for (size_t i = 0; i <= n; i++) up[i] = (char)toupper((unsigned char)a->s[i]);
            for (int i = 0; i < N_CAST_TYPES; i++)
                if (strcmp(cast_types[i].name, up) == 0) {
                    *out = &cast_types[i];
                    return RC_OK;
                }
        }
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "argument '%s'='%.64s' is not a supported DataType name (float, int32, byte, bool, uint8, "
                          "int8, uint16, int16, int64, float16, double; case-insensitive; string is not supported)",
                          name, a->s);
    }
    return rc_op_fail(op, err, RC_ERR_TYPE, "argument '%s' must be an int or a string DataType", name);
}

typedef struct cast_args {
    const cast_type *to; /* borrowed from cast_types */
} cast_args;

static rc_status cast_setup(rc_op *op, rc_err *err)
{
    const cast_type *to = NULL, *from = NULL;
    /* no 'to': FLOAT, as Caffe2's last release (cast_helper.h; its first ones refused) */
    rc_status st = cast_type_arg(op, "to", &cast_types[0], &to, err);
    if (!st) st = cast_type_arg(op, "from_type", NULL, &from, err);
    if (st) return st;
    cast_args *a = calloc(1, sizeof *a);
    if (!a) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    a->to = to;
    op->state = a;
    return RC_OK;
}

/* First flat index of x [n] whose value cannot be cast to t (NaN, or its
 * truncation outside [t->lo, t->hi]); -1 if none. t is an integer, non-bool type. */
static int64_t cast_f32_bad(int64_t n, const float *x, const cast_type *t)
{
    const double lo = (double)t->lo, hi = (double)t->hi;
    for (int64_t i = 0; i < n; i++) {
        const double v = trunc((double)x[i]);
        if (!(v >= lo && v <= hi)) return i; /* NaN fails both */
    }
    return -1;
}

static int64_t cast_i32_bad(int64_t n, const int32_t *x, const cast_type *t)
{
    for (int64_t i = 0; i < n; i++)
        if (x[i] < t->lo || x[i] > t->hi) return i;
    return -1;
}

/* Cast: X float32 or int32 -> Y (see the top of the file). X's data pointer
 * and dtype are read before Y is resized: Y may be X. */
static rc_status cast_run(rc_op *op, rc_err *err)
{
    const cast_args *a = op->state;
    const cast_type *to = a->to;
    const rc_tensor *X = rc_in(op, 0);
    rc_status st;
    if ((st = rc_check_input(op, 0, X->dtype == RC_I32 ? RC_I32 : RC_F32, err))) return st;
    const rc_dtype src = X->dtype;
    const int64_t n = rc_tensor_numel(X);
    const void *xd = rc_tensor_data(X);
    if (to->dt == RC_I32 && !to->is_bool) {
        const int64_t bad = src == RC_F32 ? cast_f32_bad(n, xd, to) : cast_i32_bad(n, xd, to);
        if (bad >= 0) {
            char val[48];
            const double v = src == RC_F32 ? (double)((const float *)xd)[bad] : 0.0;
            if (src == RC_F32 && v == trunc(v) && fabs(v) < 1e18)
                snprintf(val, sizeof val, "%.0f", v); /* integral: all digits */
            else if (src == RC_F32)
                snprintf(val, sizeof val, "%.9g", v);
            else
                snprintf(val, sizeof val, "%d", (int)((const int32_t *)xd)[bad]);
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input 0 blob '%s' %s: element %lld = %s cannot be cast to %s: %s [%lld, %lld]%s",
                              rc_in_name(op, 0), RC_SHAPE(X), (long long)bad, val, to->name,
                              src == RC_F32 && isnan(((const float *)xd)[bad]) ? "NaN has no integer value, range"
                                                                                : "out of the range",
                              (long long)to->lo, (long long)to->hi,
                              to->proto == 10 ? " (INT64 is stored as int32, our integer dtype)" : "");
        }
    }
    int64_t dims[RC_MAX_DIMS];
    const int ndim = X->ndim;
    memcpy(dims, X->dims, sizeof dims);
    /* X may be Y: same element size, so the resize keeps the buffer (xd stays valid). */
    st = rc_tensor_resize(rc_out(op, 0), to->dt, ndim, dims, err);
    if (st) return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    void *yd = rc_tensor_data(rc_out(op, 0));
    if (src == RC_F32) {
        const float *x = xd;
        if (to->dt == RC_F32) {
            if (yd != xd) memcpy(yd, x, (size_t)n * sizeof *x);
        } else if (to->is_bool) {
            int32_t *y = yd;
            for (int64_t i = 0; i < n; i++) y[i] = x[i] != 0.f;
        } else {
            int32_t *y = yd;
            for (int64_t i = 0; i < n; i++) y[i] = (int32_t)x[i]; /* in range: checked above */
        }
    } else {
        const int32_t *x = xd;
        if (to->dt == RC_F32) {
            float *y = yd;
            for (int64_t i = 0; i < n; i++) y[i] = (float)x[i];
        } else if (to->is_bool) {
            int32_t *y = yd;
            for (int64_t i = 0; i < n; i++) y[i] = x[i] != 0;
        } else if (yd != xd) {
            memcpy(yd, x, (size_t)n * sizeof *x);
        }
    }
    return RC_OK;
}

/* ================================================================ Conditional */

/* condition int32 (N,), X_true and X_false of one shape (N, ...) and one dtype (float32 or int32). */
static rc_status cond_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_I32, err))) return st;
    if ((st = rc_check_ndim(op, 0, 1, 1, err))) return st;
    const rc_tensor *c = rc_in(op, 0), *T = rc_in(op, 1), *F = rc_in(op, 2);
    if ((st = rc_check_input(op, 1, T->dtype == RC_I32 ? RC_I32 : RC_F32, err))) return st;
    if (F->dtype != RC_UNDEF && F->storage && F->dtype != T->dtype)
        return rc_op_fail(op, err, RC_ERR_TYPE, "input 2 blob '%s' %s must have the dtype of input 1 blob '%s' %s",
                          rc_in_name(op, 2), RC_SHAPE(F), rc_in_name(op, 1), RC_SHAPE(T));
    if ((st = rc_check_input(op, 2, T->dtype, err))) return st;
    if (T->ndim < 1 || T->dims[0] != c->dims[0])
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 1 blob '%s' %s must have first dim %lld (the length of input 0 blob '%s' %s)",
                          rc_in_name(op, 1), RC_SHAPE(T), (long long)c->dims[0], rc_in_name(op, 0), RC_SHAPE(c));
    if (!rc_tensor_same_shape(T, F))
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' %s must have the shape of input 1 blob '%s' %s",
                          rc_in_name(op, 2), RC_SHAPE(F), rc_in_name(op, 1), RC_SHAPE(T));
    return RC_OK;
}

/* Y may be X_true or X_false (not condition: the schema refuses it). */
static rc_status cond_run(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = cond_check(op, err))) return st;
    const rc_tensor *T = rc_in(op, 1);
    const int64_t N = T->dims[0];
    const size_t row = (size_t)rc_dims_prod(T, 1, T->ndim) * rc_dtype_size(T->dtype);
    if ((st = rc_tensor_resize_like(rc_out(op, 0), T, err)))
        return rc_op_fail(op, err, st, "output 0 blob '%s': %s", rc_out_name(op, 0), err->msg);
    const int32_t *c = rc_i32(rc_in(op, 0));
    const unsigned char *t = rc_tensor_data(rc_in(op, 1)), *f = rc_tensor_data(rc_in(op, 2));
    unsigned char *y = rc_tensor_data(rc_out(op, 0));
    if (row == 0) return RC_OK;
    for (int64_t i = 0; i < N; i++) {
        const unsigned char *src = (c[i] ? t : f) + (size_t)i * row;
        unsigned char *dst = y + (size_t)i * row;
        if (src != dst) memcpy(dst, src, row);
    }
    return RC_OK;
}

static int cond_inplace(int in, int out) { return out == 0 && (in == 1 || in == 2); }

/* ================================================================ the family table */
static void cast_args_free(void *p) { free(p); }

const rc_op_schema rc_ops_cast[] = {
    {"Cast", 1, 1, 1, 1, rc_inplace_any, cast_setup, cast_run, cast_args_free,
     "Y = X cast to 'to' (float types -> float32, integer types and bool -> int32; range-checked)"},
    {"Conditional", 3, 3, 1, 1, cond_inplace, NULL, cond_run, NULL,
     "(condition (N,) int32, X_true, X_false) -> Y: row i from X_true where condition[i] != 0, else X_false",
     cond_check},
    {0},
};
