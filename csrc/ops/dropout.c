/* ops/dropout.c -- Dropout and DropoutGrad (Caffe2's semantics).
 *
 * Dropout(X) -> (Y, mask), arguments ratio (default 0.5, 0 <= ratio < 1),
 * is_test (default 0), seed (optional int).
 *  - is_test = 0: each element is kept with probability 1 - ratio:
 *    mask = 1 and Y = X / (1 - ratio); otherwise mask = 0 and Y = X * 0 (so an
 *    inf or NaN in X gives NaN, as in Caffe2 and torch). The mask output is
 *    required. It is int32 0/1: the project stores bool as int32.
 *  - is_test = 1: Y = X; a mask output, when given, is all ones.
 * Y may be X (in place).
 *
 * DropoutGrad(dY, mask) -> dX = dY * mask / (1 - ratio) (is_test = 0), or
 * DropoutGrad(dY) -> dX = dY (is_test = 1). dX may be dY.
 *
 * Random stream. The mask is a function of (seed, key) only, never of which
 * thread runs the op or in which order, so the RNN executor and the serial
 * loop draw the same masks:
 *  - inside a recurrent step net (op->timestep >= 0) the key is
 *    (op->run_seq, timestep): run_seq is the forward RecurrentNetwork run the
 *    instance belongs to, which the gradient op passes on, so a Dropout
 *    recomputed on backward (recompute_blobs_on_backward) draws the forward's
 *    mask again;
 *  - elsewhere the key is the op's own run count: each run draws a new mask.
 * The seed is argument `seed` when given, else drawn once at creation
 * (rc_rng_fresh_seed). RecurrentNetwork gives a step-net Dropout without a
 * seed one fresh seed for all its timesteps' instances (rnn/recurrent_network.c).
 */
#include "../core/rc_core.h"
#include "../kernels/rng.h"
#include <math.h>
#include <stdlib.h>

typedef struct dropout_state {
    float ratio;
    int is_test;
    uint64_t seed;
    uint64_t runs; /* runs outside step nets (the key there) */
} dropout_state;

static rc_status dropout_args(rc_op *op, int grad, rc_err *err)
{
    dropout_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    rc_status st;
    int64_t is_test;
    if ((st = rc_arg_f(&op->def, "ratio", 0.5f, &s->ratio, err))) return st;
    if ((st = rc_arg_i(&op->def, "is_test", 0, &is_test, err))) return st;
    s->is_test = is_test != 0;
    if (!(s->ratio >= 0.f && s->ratio < 1.f))
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'ratio' must be in [0, 1), got %g", (double)s->ratio);
    if (grad) {
        int want = s->is_test ? 1 : 2;
        if (op->n_in != want)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "with is_test=%d the inputs are %s, got %d input%s", s->is_test,
                              s->is_test ? "(dY)" : "(dY, mask)", op->n_in, op->n_in == 1 ? "" : "s");
        return RC_OK;
    }
    if (!s->is_test && op->n_out != 2)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "with is_test=0 the outputs are (Y, mask): output 1 (the mask) is missing for input "
                          "blob '%s'", rc_in_name(op, 0));
    if (rc_opdef_arg(&op->def, "seed")) {
        int64_t seed;
        if ((st = rc_arg_i(&op->def, "seed", 0, &seed, err))) return st;
        s->seed = (uint64_t)seed;
    } else {
        s->seed = rc_rng_fresh_seed();
    }
    return RC_OK;
}

static rc_status dropout_setup(rc_op *op, rc_err *err) { return dropout_args(op, 0, err); }
static rc_status dropout_grad_setup(rc_op *op, rc_err *err) { return dropout_args(op, 1, err); }

static rc_status resize_like(rc_op *op, int o, rc_dtype dt, const rc_tensor *like, rc_err *err)
{
    int64_t dims[RC_MAX_DIMS];
    for (int i = 0; i < like->ndim; i++) dims[i] = like->dims[i];
    rc_status st = rc_tensor_resize(rc_out(op, o), dt, like->ndim, dims, err);
    if (st) return rc_op_fail(op, err, st, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
    return RC_OK;
}

/* Net-creation (and run-time) check: X float32; DropoutGrad's mask int32 of dY's shape. */
static rc_status dropout_check(rc_op *op, rc_err *err) { return rc_check_input(op, 0, RC_F32, err); }

static rc_status dropout_grad_check(rc_op *op, rc_err *err)
{
    rc_status st = rc_check_input(op, 0, RC_F32, err);
    if (st || op->n_in < 2) return st;
    if ((st = rc_check_input(op, 1, RC_I32, err))) return st;
    if (!rc_tensor_same_shape(rc_in(op, 1), rc_in(op, 0)))
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 1 blob '%s' (the mask) of shape %s must have the shape of input 0 blob '%s' %s",
                          rc_in_name(op, 1), RC_SHAPE(rc_in(op, 1)), rc_in_name(op, 0), RC_SHAPE(rc_in(op, 0)));
    return RC_OK;
}

static rc_status dropout_run(rc_op *op, rc_err *err)
{
    dropout_state *s = op->state;
    rc_status st;
    if ((st = rc_check_input(op, 0, RC_F32, err))) return st;
    const rc_tensor *x = rc_in(op, 0);
    int64_t n = rc_tensor_numel(x);
    if ((st = resize_like(op, 0, RC_F32, x, err))) return st;
    if (op->n_out > 1 && (st = resize_like(op, 1, RC_I32, x, err))) return st;
    const float *xd = rc_f32(x);
    float *yd = rc_f32(rc_out(op, 0));
    int32_t *md = op->n_out > 1 ? rc_i32(rc_out(op, 1)) : NULL;
    if (s->is_test) {
        /* Y = X; mask = 1 */
        if (yd != xd)
            for (int64_t i = 0; i < n; i++) yd[i] = xd[i];
        if (md)
            for (int64_t i = 0; i < n; i++) md[i] = 1;
        return RC_OK;
    }
    uint64_t key = op->timestep >= 0 ? rc_rng_hash(rc_rng_hash(op->run_seq) ^ (uint64_t)op->timestep)
                                     : rc_rng_hash(s->runs++) ^ 0x5bd1e995u;
    uint64_t rng[4];
    rc_rng_seed(rng, s->seed ^ key);
    /* keep with probability 1 - ratio: u in [0, 1) below 1 - ratio */
    double keep_p = 1.0 - (double)s->ratio;
    float scale = 1.f / (1.f - s->ratio);
    /* mask[i] ~ Bernoulli(1 - ratio); Y[i] = X[i] * (mask[i] ? scale : 0) */
    for (int64_t i = 0; i < n; i++) {
        int keep = rc_rng_unit(rng) < keep_p;
        md[i] = keep;
        yd[i] = xd[i] * (keep ? scale : 0.f);
    }
    return RC_OK;
}

static rc_status dropout_grad_run(rc_op *op, rc_err *err)
{
    const dropout_state *s = op->state;
    rc_status st = dropout_grad_check(op, err); /* setup made the inputs match is_test */
    if (st) return st;
    const rc_tensor *dy = rc_in(op, 0);
    int64_t n = rc_tensor_numel(dy);
    const int32_t *md = s->is_test ? NULL : rc_i32(rc_in(op, 1));
    if ((st = resize_like(op, 0, RC_F32, dy, err))) return st;
    const float *g = rc_f32(dy);
    float *dx = rc_f32(rc_out(op, 0));
    if (!md) {
        /* dX = dY */
        if (dx != g)
            for (int64_t i = 0; i < n; i++) dx[i] = g[i];
        return RC_OK;
    }
    float scale = 1.f / (1.f - s->ratio);
    /* dX[i] = dY[i] * (mask[i] ? scale : 0) */
    for (int64_t i = 0; i < n; i++) dx[i] = g[i] * (md[i] ? scale : 0.f);
    return RC_OK;
}

const rc_op_schema rc_ops_dropout[] = {
    {"Dropout", 1, 1, 1, 2, rc_inplace_first, dropout_setup, dropout_run, free,
     "(Y, mask) = X * Bernoulli(1 - ratio) / (1 - ratio) (is_test=0); Y = X (is_test=1)", dropout_check},
    {"DropoutGrad", 1, 2, 1, 1, rc_inplace_first, dropout_grad_setup, dropout_grad_run, free,
     "dX = dY * mask / (1 - ratio) (is_test=0); dX = dY (is_test=1)", dropout_grad_check},
    {0},
};
