/* ops/metric.c -- Caffe2's evaluation metrics Perplexity (caffe2/operators/perplexity_op.cc) and
 * MultiClassAccuracy (multi_class_accuracy_op.cc). CPU, float32 scores, int32 labels; neither
 * has a gradient (recurrent/_grad_loss.py; Caffe2's SHOULD_NOT_DO_GRADIENT).
 *
 *   Perplexity(P (N,) float32) -> Y () float32
 *     Y = prod(P_i) ^ (-1/N), computed as exp(-mean(log P_i)) in double and rounded once
 *     (Caffe2 multiplied the factors pow(P_i, -1/N) in float). N = 0 gives 1 (the empty
 *     product: Caffe2's value). A P_i of 0 gives +inf (Caffe2's value too). A negative, NaN or
 *     infinite P_i is a ValueError naming its position and value, and nothing is written
 *     (Caffe2 gave NaN, or 0 for +inf). Values above 1 are taken as they are, as Caffe2 did.
 *
 *   MultiClassAccuracy(X (N, D) float32, LABEL (N,) int32) -> (ACC (D,) float32, COUNT (D,) int32)
 *     COUNT[c] = the number of rows labelled c; ACC[c] = the fraction of them whose predicted
 *     class (the first position of the row's largest score) is c, 0 where COUNT[c] is 0.
 *     The prediction is Caffe2's: the first score strictly greater than every score before it,
 *     starting from 0; NaN scores never win and a row without a score above -inf predicts 0
 *     (Caffe2 started from -FLT_MAX, so a row whose best score is -FLT_MAX predicted 0 there).
 *     A label outside [0, D) is an IndexError naming the row and the label, raised before
 *     anything is written (Caffe2 only DCHECKed label < D: release builds wrote out of bounds).
 *     N = 0 gives D zeros in both outputs. N above INT32_MAX is a ValueError (COUNT is int32).
 */
#include "../core/rc_core.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static rc_status out_fail(rc_op *op, int o, rc_err *err)
{
    return rc_op_fail(op, err, err->code, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
}

/* ================================================================ Perplexity */

/* P: float32, 1-D. */
static rc_status perplexity_check(rc_op *op, rc_err *err)
{
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (st) return st;
    const rc_tensor *p = rc_in(op, 0);
    if (p->ndim != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (probabilities) must be 1-D, got %s",
                          rc_in_name(op, 0), RC_SHAPE(p));
    return RC_OK;
}

/* P (N,) -> Y (): exp(-sum(log P) / N) in double; 1 for N = 0. */
static rc_status perplexity_run(rc_op *op, rc_err *err)
{
    rc_status st = perplexity_check(op, err);
    if (st) return st;
    const rc_tensor *p = rc_in(op, 0);
    const int64_t n = p->dims[0];
    const float *pd = rc_f32(p);
    double sum_log = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const float v = pd[i];
        if (!(v >= 0.0f) || isinf(v))
            return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s (probabilities) holds %g at position %lld; "
                              "a probability must be finite and >= 0", rc_in_name(op, 0), RC_SHAPE(p), (double)v,
                              (long long)i);
        sum_log += log((double)v); /* -inf for 0: the result is +inf */
    }
    const double y = n ? exp(-sum_log / (double)n) : 1.0;
    if ((st = rc_tensor_resize(rc_out(op, 0), RC_F32, 0, NULL, err))) return out_fail(op, 0, err);
    rc_f32(rc_out(op, 0))[0] = (float)y;
    return RC_OK;
}

/* ================================================================ MultiClassAccuracy */

/* X float32 (N, D); LABEL int32 (N,); N fits int32 (the counts are int32). */
static rc_status mca_check(rc_op *op, rc_err *err)
{
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err)) || (st = rc_check_input(op, 1, RC_I32, err))) return st;
    const rc_tensor *x = rc_in(op, 0), *l = rc_in(op, 1);
    if (x->ndim != 2)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' (prediction) must be 2-D (N, D), got %s",
                          rc_in_name(op, 0), RC_SHAPE(x));
    if (l->ndim != 1 || l->dims[0] != x->dims[0])
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 1 blob '%s' %s (label) must be 1-D with one label per row "
                          "of input 0 blob '%s' %s (prediction)", rc_in_name(op, 1), RC_SHAPE(l), rc_in_name(op, 0),
                          RC_SHAPE(x));
    if (x->dims[0] > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' %s (prediction) has more rows than the int32 "
                          "counts can hold", rc_in_name(op, 0), RC_SHAPE(x));
    return RC_OK;
}

/* X (N, D), LABEL (N,) -> ACC (D,), COUNT (D,). */
static rc_status mca_run(rc_op *op, rc_err *err)
{
    rc_status st = mca_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, 0), *l = rc_in(op, 1);
    const int64_t n = x->dims[0], d = x->dims[1];
    const int32_t *lab = n ? rc_i32(l) : NULL;
    for (int64_t i = 0; i < n; i++)
        if (lab[i] < 0 || lab[i] >= d)
            return rc_op_fail(op, err, RC_ERR_INDEX, "input 1 blob '%s' %s (label): label %d at row %lld is out of "
                              "range [0, %lld) (input 0 blob '%s' %s)", rc_in_name(op, 1), RC_SHAPE(l), (int)lab[i],
                              (long long)i, (long long)d, rc_in_name(op, 0), RC_SHAPE(x));
    /* the correct rows of each class (int32: at most N <= INT32_MAX); D is below 2^44 (X's size cap) */
    int32_t *correct = calloc(d ? (size_t)d : 1, sizeof *correct);
    if (!correct) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory counting %lld classes", (long long)d);
    const int64_t dims[1] = {d};
    for (int o = 0; o < 2; o++)
        if ((st = rc_tensor_resize(rc_out(op, o), o ? RC_I32 : RC_F32, 1, dims, err))) {
            free(correct);
            return out_fail(op, o, err);
        }
    float *acc = rc_f32(rc_out(op, 0));
    int32_t *count = rc_i32(rc_out(op, 1));
    if (d) memset(count, 0, (size_t)d * sizeof *count);
    const float *xd = n ? rc_f32(x) : NULL;
    for (int64_t i = 0; i < n; i++) {
        const float *row = xd + i * d;
        float best = -INFINITY;
        int64_t pred = 0;
        for (int64_t j = 0; j < d; j++)
            if (row[j] > best) {
                best = row[j];
                pred = j;
            }
        count[lab[i]]++;
        if (pred == lab[i]) correct[lab[i]]++;
    }
    for (int64_t c = 0; c < d; c++) acc[c] = count[c] ? (float)((double)correct[c] / count[c]) : 0.0f;
    free(correct);
    return RC_OK;
}

const rc_op_schema rc_ops_metric[] = {
    {"Perplexity", 1, 1, 1, 1, NULL, NULL, perplexity_run, NULL,
     "(P (N,) float32) -> () = prod(P)^(-1/N), in double (1 for N = 0, inf for a 0; P must be finite and >= 0)",
     perplexity_check},
    {"MultiClassAccuracy", 2, 2, 2, 2, NULL, NULL, mca_run, NULL,
     "(X (N, D), LABEL (N,) int32) -> (ACC (D,) float32, COUNT (D,) int32): per-class accuracy of the first "
     "argmax and the number of rows of each class", mca_check},
    {0},
};
