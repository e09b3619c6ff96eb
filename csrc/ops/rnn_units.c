/* ops/rnn_units.c -- the fused recurrent cell units: LSTMUnit, GRUUnit and their gradients
 * (spec/recurrent-network.md §5).
 *
 * Layout of every tensor here: states are 1xNxD, gates 1xNxG with G = 4D (LSTM, [i, f, o, g]) or
 * G = 3D (GRU, [reset, update, output]). N and D come from the previous cell state (LSTM) or the
 * previous hidden state (GRU). Optional int32 seq_lengths (N) -- present when the argument
 * `sequence_lengths` is 1, the default -- and a CPU int32 timestep t (one element): row n is
 * *valid* when there are no seq_lengths or t < seq_lengths[n]. Invalid rows carry the previous
 * state through (or zeros with `drop_states`) and get zero gate gradients.
 *
 * The outputs are usually views into rows of a (T+1)xNxD state buffer: they are resized to exactly
 * the shape of their "like" input (rc_tensor_resize_like keeps a view of the same byte size) and
 * written through their data pointer; nothing assumes an output starts at offset 0 of its storage.
 *
 * Thread safety: arguments are parsed once at setup into op->state and only read afterwards; the
 * kernels touch nothing but their own inputs and outputs. No allocation once the outputs are sized.
 * Aliasing: the schemas do not allow in-place names, but every kernel still reads all inputs of an
 * element before writing that element's outputs, so exact-position aliasing would be harmless.
 *
 * tanh is tanhf in both the forward and the gradient kernels (Caffe2 computed 2*sigmoid(2x)-1,
 * which is the same function with a worse rounding error near 0).
 */
#include "../core/rc_core.h"
#include <math.h>
#include <stdlib.h>
#include "../kernels/vmath.h"

typedef struct {
    float forget_bias;  /* LSTM only; GRU accepts the argument and ignores it */
    int drop_states;
    int seq;            /* 1: a seq_lengths input precedes the timestep input */
} unit_args;

#define sigmoidf rc_sigmoidf
/* LSTMUnit's forward kernel works through a row in blocks of this many
 * columns, one loop per gate activation and then c and h: one element's
 * work is a long chain of dependent operations (exp, divide, then tanh of the
 * new c: ~250 cycles), and with all of it in one loop the core overlapped
 * only ~2 iterations; short loops of independent elements keep it busy
 * (16 x 256 on Zen 5, hot cache: 7.3 -> 5.0 us). Every element gets the same
 * operations as before, so the same bits. The gradient kernel has no such
 * chain (its activations are all of inputs) and measured no faster blocked. */
#define RC_UNIT_BLK 128
#define tanhf rc_tanhf
/* LSTMUnitGradient reads eight streams (c_prev, the four gates, c, dh, dc), most of them written long
 * before (the forward's gates and cells), and prefetches the next row's while it works on a row, a
 * block of this many columns at a time: in the RNN executor (a Xeon VM, 2 threads) its tasks took
 * 23.4 -> 15.7 us at hidden 256 / batch 16 and 175 -> 124 us at hidden 512 / batch 64 (alone, data
 * in cache: 8.6 and 70 us); training at hidden 512 / batch 64 1.02x entries/s, at 256 / 16 within
 * noise. The forward kernel's gates come straight from the FC before it: prefetching there
 * measured nothing. */
#define RC_UNIT_PF_BLK 64

/* ---------------------------------------------------------------- kernels */

/* The cell kernels compute rows [n0, n1) of their [N, ...] tensors.
 *
 * LSTM forward.
 * h_prev, c_prev: [N, D]; x: [N, 4D] ([i, f, o, g] pre-activations); seq: [N] or NULL;
 * h, c: [N, D] outputs. */
RC_TARGET_CLONES static void lstm_unit_fwd(int64_t n0, int64_t n1, int64_t D, int32_t t, const float *restrict h_prev,
                          const float *restrict c_prev, const float *restrict x, const int32_t *seq,
                          int drop_states, float forget_bias, float *restrict h, float *restrict c)
{
    for (int64_t n = n0; n < n1; n++) {
        const float *hp = h_prev + n * D, *cp = c_prev + n * D, *xr = x + n * 4 * D;
        float *hr = h + n * D, *cr = c + n * D;
        if (seq && !(t < seq[n])) {
            for (int64_t d = 0; d < D; d++) {
                float hv = drop_states ? 0.0f : hp[d];
                float cv = drop_states ? 0.0f : cp[d];
                hr[d] = hv;
                cr[d] = cv;
            }
            continue;
        }
        for (int64_t d0 = 0; d0 < D; d0 += RC_UNIT_BLK) {
            const int64_t w = D - d0 < RC_UNIT_BLK ? D - d0 : RC_UNIT_BLK;
            float gi[RC_UNIT_BLK], gf[RC_UNIT_BLK], go[RC_UNIT_BLK], gg[RC_UNIT_BLK];
            const float *x0 = xr + d0;
            for (int64_t d = 0; d < w; d++) gi[d] = sigmoidf(x0[d]);
            for (int64_t d = 0; d < w; d++) gf[d] = sigmoidf(x0[D + d] + forget_bias);
            for (int64_t d = 0; d < w; d++) go[d] = sigmoidf(x0[2 * D + d]);
            for (int64_t d = 0; d < w; d++) gg[d] = tanhf(x0[3 * D + d]);
            for (int64_t d = 0; d < w; d++) cr[d0 + d] = gf[d] * cp[d0 + d] + gi[d] * gg[d];
            for (int64_t d = 0; d < w; d++) hr[d0 + d] = go[d] * tanhf(cr[d0 + d]);
        }
    }
}

/* LSTM gradient (§5.1).
 * c_prev: [N, D]; x: [N, 4D]; seq: [N] or NULL; c: [N, D] (forward cell_t);
 * dh, dc: [N, D] output gradients; dh_prev, dc_prev: [N, D] and dx: [N, 4D] outputs. */
RC_TARGET_CLONES static void lstm_unit_bwd(int64_t n0, int64_t n1, int64_t D, int32_t t, const float *restrict c_prev,
                          const float *restrict x, const int32_t *seq, const float *restrict c,
                          const float *restrict dh, const float *restrict dc, int drop_states, float forget_bias,
                          float *restrict dh_prev, float *restrict dc_prev, float *restrict dx)
{
    for (int64_t n = n0; n < n1; n++) {
        const float *cp = c_prev + n * D, *xr = x + n * 4 * D, *cr = c + n * D;
        const float *dhr = dh + n * D, *dcr = dc + n * D;
        float *dhp = dh_prev + n * D, *dcp = dc_prev + n * D, *dxr = dx + n * 4 * D;
        if (seq && !(t < seq[n])) {
            for (int64_t d = 0; d < D; d++) {
                float gh = drop_states ? 0.0f : dhr[d];
                float gc = drop_states ? 0.0f : dcr[d];
                dhp[d] = gh;
                dcp[d] = gc;
                dxr[d] = 0.0f;
                dxr[D + d] = 0.0f;
                dxr[2 * D + d] = 0.0f;
                dxr[3 * D + d] = 0.0f;
            }
            continue;
        }
        for (int64_t d0 = 0; d0 < D; d0 += RC_UNIT_PF_BLK) {
            const int64_t d1 = D - d0 < RC_UNIT_PF_BLK ? D : d0 + RC_UNIT_PF_BLK;
            if (n + 1 < n1) /* the next row's inputs, a block ahead: 8 lines at a time, one per stream */
                for (int64_t q = d0; q < d1; q += 16) {
                    __builtin_prefetch(cp + D + q, 0, 3);
                    __builtin_prefetch(cr + D + q, 0, 3);
                    __builtin_prefetch(dhr + D + q, 0, 3);
                    __builtin_prefetch(dcr + D + q, 0, 3);
                    for (int g = 0; g < 4; g++) __builtin_prefetch(xr + 4 * D + g * D + q, 0, 3);
                }
            for (int64_t d = d0; d < d1; d++) {
                float i = sigmoidf(xr[d]);
                float f = sigmoidf(xr[D + d] + forget_bias);
                float o = sigmoidf(xr[2 * D + d]);
                float g = tanhf(xr[3 * D + d]);
                float cpv = cp[d];
                float tc = tanhf(cr[d]);
                float gh = dhr[d];
                float ct = dcr[d] + gh * o * (1.0f - tc * tc);
                dcp[d] = ct * f;
                dhp[d] = 0.0f; /* h_prev reaches h_t only through the gates (an FC outside this op) */
                dxr[d] = ct * g * i * (1.0f - i);
                dxr[D + d] = ct * cpv * f * (1.0f - f);
                dxr[2 * D + d] = gh * tc * o * (1.0f - o);
                dxr[3 * D + d] = ct * i * (1.0f - g * g);
            }
        }
    }
}

/* GRU forward.
 * h_prev: [N, D]; x: [N, 3D] ([reset, update, output]; reset unused); seq: [N] or NULL; h: [N, D]. */
RC_TARGET_CLONES static void gru_unit_fwd(int64_t n0, int64_t n1, int64_t D, int32_t t, const float *restrict h_prev,
                         const float *restrict x, const int32_t *seq, int drop_states, float *restrict h)
{
    for (int64_t n = n0; n < n1; n++) {
        const float *hp = h_prev + n * D, *xr = x + n * 3 * D;
        float *hr = h + n * D;
        if (seq && !(t < seq[n])) {
            for (int64_t d = 0; d < D; d++) hr[d] = drop_states ? 0.0f : hp[d];
            continue;
        }
        for (int64_t d = 0; d < D; d++) {
            float u = sigmoidf(xr[D + d]);
            float o = tanhf(xr[2 * D + d]);
            hr[d] = u * hp[d] + (1.0f - u) * o;
        }
    }
}

/* GRU gradient (§5.2).
 * h_prev: [N, D]; x: [N, 3D]; seq: [N] or NULL; dh: [N, D];
 * dh_prev: [N, D] and dx: [N, 3D] outputs. */
RC_TARGET_CLONES static void gru_unit_bwd(int64_t n0, int64_t n1, int64_t D, int32_t t, const float *restrict h_prev,
                         const float *restrict x, const int32_t *seq, const float *restrict dh, int drop_states,
                         float *restrict dh_prev, float *restrict dx)
{
    for (int64_t n = n0; n < n1; n++) {
        const float *hp = h_prev + n * D, *xr = x + n * 3 * D, *dhr = dh + n * D;
        float *dhp = dh_prev + n * D, *dxr = dx + n * 3 * D;
        if (seq && !(t < seq[n])) {
            for (int64_t d = 0; d < D; d++) {
                float gh = drop_states ? 0.0f : dhr[d];
                dhp[d] = gh;
                dxr[d] = 0.0f;
                dxr[D + d] = 0.0f;
                dxr[2 * D + d] = 0.0f;
            }
            continue;
        }
        for (int64_t d = 0; d < D; d++) {
            float u = sigmoidf(xr[D + d]);
            float o = tanhf(xr[2 * D + d]);
            float hpv = hp[d];
            float gh = dhr[d];
            dhp[d] = gh * u;
            dxr[d] = 0.0f;
            dxr[D + d] = (gh * hpv - gh * o) * u * (1.0f - u);
            dxr[2 * D + d] = gh * (1.0f - u) * (1.0f - o * o);
        }
    }
}

/* ---------------------------------------------------------------- argument parsing (setup) */

/* Parses forget_bias (LSTM only; GRU ignores it, whatever its kind) / drop_states /
 * sequence_lengths into op->state and checks that the input
 * count matches: n_base inputs before the optional seq_lengths, n_after after the timestep. */
static rc_status units_setup(rc_op *op, int lstm, int n_base, int n_after, const char *names, rc_err *err)
{
    float fb = 0.0f;
    int64_t drop = 0, seq = 1;
    rc_status st;
    if (lstm && (st = rc_arg_f(&op->def, "forget_bias", 0.0f, &fb, err)))
        return st;
    if ((st = rc_arg_i(&op->def, "drop_states", 0, &drop, err))) return st;
    if ((st = rc_arg_i(&op->def, "sequence_lengths", 1, &seq, err))) return st;
    int want = n_base + (seq ? 1 : 0) + 1 + n_after;
    if (op->n_in != want)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "expects %d inputs (%s) when sequence_lengths=%d, got %d%s", want, names, seq ? 1 : 0,
                          op->n_in, op->n_in < want ? " (is the timestep input missing?)" : "");
    unit_args *a = malloc(sizeof *a);
    if (!a) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    a->forget_bias = fb;
    a->drop_states = drop != 0;
    a->seq = seq != 0;
    op->state = a;
    return RC_OK;
}

static rc_status lstm_setup(rc_op *op, rc_err *err)
{
    return units_setup(op, 1, 3, 0, "hidden_t_prev, cell_t_prev, gates, [seq_lengths,] timestep", err);
}

static rc_status lstm_grad_setup(rc_op *op, rc_err *err)
{
    return units_setup(op, 1, 3, 4,
                       "hidden_t_prev, cell_t_prev, gates, [seq_lengths,] timestep, hidden_t, cell_t, "
                       "hidden_t_grad, cell_t_grad",
                       err);
}

static rc_status gru_setup(rc_op *op, rc_err *err)
{
    return units_setup(op, 0, 2, 0, "hidden_t_prev, gates, [seq_lengths,] timestep", err);
}

static rc_status gru_grad_setup(rc_op *op, rc_err *err)
{
    return units_setup(op, 0, 2, 2, "hidden_t_prev, gates, [seq_lengths,] timestep, hidden_t, hidden_t_grad", err);
}

/* ---------------------------------------------------------------- run-time input checks */

/* Input i must be float32 of shape 1xNxD (role names it in messages). Sets *N, *D. */
static rc_status check_state(rc_op *op, int i, const char *role, int64_t *N, int64_t *D, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_F32, err);
    if (st) return st;
    const rc_tensor *t = rc_in(op, i);
    if (t->ndim != 3 || t->dims[0] != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s) must be 1xNxD, got %s", i,
                          rc_in_name(op, i), role, RC_SHAPE(t));
    *N = t->dims[1];
    *D = t->dims[2];
    return RC_OK;
}

/* Input i must be float32 with exactly the shape of input ref. */
static rc_status check_like(rc_op *op, int i, const char *role, int ref, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_F32, err);
    if (st) return st;
    const rc_tensor *t = rc_in(op, i), *r = rc_in(op, ref);
    if (!rc_tensor_same_shape(t, r))
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' (%s) must have the shape of input %d '%s' %s, got %s", i,
                          rc_in_name(op, i), role, ref, rc_in_name(op, ref), RC_SHAPE(r), RC_SHAPE(t));
    return RC_OK;
}

/* Input i (gates) must be float32 of shape 1 x N x (k*D). */
static rc_status check_gates(rc_op *op, int i, int64_t N, int64_t D, int k, rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_F32, err);
    if (st) return st;
    const rc_tensor *t = rc_in(op, i);
    if (t->ndim != 3 || t->dims[0] != 1 || t->dims[1] != N || t->dims[2] != k * D)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input %d blob '%s' (gates) must be (1, N=%lld, G=%d*D=%lld), got %s", i, rc_in_name(op, i),
                          (long long)N, k, (long long)(k * D), RC_SHAPE(t));
    return RC_OK;
}

/* Optional seq_lengths (at input i when a->seq) and the timestep (input i or i+1).
 * Sets *seq (NULL when absent) and *t; returns the index after the timestep in *next. */
static rc_status check_seq_t(rc_op *op, const unit_args *a, int i, int64_t N, const int32_t **seq, int32_t *t,
                             int *next, rc_err *err)
{
    rc_status st;
    *seq = NULL;
    if (a->seq) {
        if ((st = rc_check_input(op, i, RC_I32, err))) return st;
        const rc_tensor *s = rc_in(op, i);
        if (rc_tensor_numel(s) != N)
            return rc_op_fail(op, err, RC_ERR_VALUE,
                              "input %d blob '%s' (seq_lengths) must have N=%lld elements, got %s", i,
                              rc_in_name(op, i), (long long)N, RC_SHAPE(s));
        *seq = rc_i32(s);
        i++;
    }
    if ((st = rc_check_input(op, i, RC_I32, err))) return st;
    const rc_tensor *ts = rc_in(op, i);
    if (rc_tensor_numel(ts) != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (timestep) must hold exactly 1 element, got %s", i,
                          rc_in_name(op, i), RC_SHAPE(ts));
    *t = rc_i32(ts)[0];
    *next = i + 1;
    return RC_OK;
}

/* Resizes output o like input i (keeps a view of equal size); names the blob on failure. */
static rc_status out_like(rc_op *op, int o, int i, rc_err *err)
{
    rc_status st = rc_tensor_resize_like(rc_out(op, o), rc_in(op, i), err);
    if (st) return rc_op_fail(op, err, st, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
    return RC_OK;
}

/* ---------------------------------------------------------------- rows over the step threads
 * In a serial step loop the products are split over the step threads
 * (rc_step_blas_threads: the caller and rc_par_run's helpers), and while the
 * caller ran a cell alone the helpers only polled for the next product (13%
 * of the samples at hidden 64 / batch 128). So a cell of at least
 * RC_UNIT_SPLIT_MIN elements is split by rows over the same threads. Rows are
 * independent and every element gets the same operations whichever part it
 * is in, so the bits do not depend on the split; inside an executor's run
 * the parts go to its idle threads (rc_step_split_threads). */
#define RC_UNIT_SPLIT_MIN 4096
enum { UNIT_LSTM, UNIT_LSTM_GRAD, UNIT_GRU, UNIT_GRU_GRAD };
typedef struct {
    int kind, drop_states;
    int64_t N, D;
    int32_t t;
    float forget_bias;
    const int32_t *seq;
    const float *in[5]; /* the kernel's inputs and outputs in its argument order */
    float *out[3];
} unit_job;

static void unit_rows(const unit_job *j, int64_t n0, int64_t n1)
{
    const float *const *in = j->in;
    float *const *out = j->out;
    switch (j->kind) {
    case UNIT_LSTM:
        lstm_unit_fwd(n0, n1, j->D, j->t, in[0], in[1], in[2], j->seq, j->drop_states, j->forget_bias, out[0],
                      out[1]);
        break;
    case UNIT_LSTM_GRAD:
        lstm_unit_bwd(n0, n1, j->D, j->t, in[0], in[1], j->seq, in[2], in[3], in[4], j->drop_states,
                      j->forget_bias, out[0], out[1], out[2]);
        break;
    case UNIT_GRU: gru_unit_fwd(n0, n1, j->D, j->t, in[0], in[1], j->seq, j->drop_states, out[0]); break;
    default: gru_unit_bwd(n0, n1, j->D, j->t, in[0], in[1], j->seq, in[2], j->drop_states, out[0], out[1]); break;
    }
}

static void unit_part(const void *ctx, int p, int parts)
{
    const unit_job *j = ctx;
    unit_rows(j, j->N * p / parts, j->N * (p + 1) / parts);
}

static int64_t n_splits;
int64_t rc_unit_splits(void) { return __atomic_load_n(&n_splits, __ATOMIC_RELAXED); }

/* Runs the job's rows, split over the calling thread's step threads when
 * it is big enough (see above). */
static void unit_run(const unit_job *j)
{
    int threads = rc_step_split_threads((double)j->N * (double)j->D, RC_UNIT_SPLIT_MIN);
    if (threads > j->N) threads = (int)j->N;
    if (threads < 2 || j->N * j->D < RC_UNIT_SPLIT_MIN) {
        unit_rows(j, 0, j->N);
        return;
    }
    __atomic_add_fetch(&n_splits, 1, __ATOMIC_RELAXED);
    rc_par_run(threads, threads, unit_part, j);
}

/* ---------------------------------------------------------------- runs */

/* LSTMUnit: (hidden_t_prev, cell_t_prev, gates, [seq_lengths], timestep) -> (hidden_t, cell_t) */
/* The inputs of each op (run and check): sizes N, D, seq_lengths' data (NULL: none), the timestep's
 * value and the index after it. A few comparisons: the ops run once per timestep. */
static rc_status lstm_inputs(rc_op *op, int64_t *N, int64_t *D, const int32_t **seq, int32_t *t, int *next,
                             rc_err *err)
{
    rc_status st;
    if ((st = check_state(op, 1, "cell_t_prev", N, D, err))) return st;
    if ((st = check_like(op, 0, "hidden_t_prev", 1, err))) return st;
    if ((st = check_gates(op, 2, *N, *D, 4, err))) return st;
    return check_seq_t(op, op->state, 3, *N, seq, t, next, err);
}

static rc_status lstm_grad_inputs(rc_op *op, int64_t *N, int64_t *D, const int32_t **seq, int32_t *t, int *next,
                                  rc_err *err)
{
    rc_status st;
    if ((st = lstm_inputs(op, N, D, seq, t, next, err))) return st;
    const int k = *next;
    if ((st = check_like(op, k, "hidden_t", 1, err)) || (st = check_like(op, k + 1, "cell_t", 1, err)) ||
        (st = check_like(op, k + 2, "hidden_t_grad", 1, err)) || (st = check_like(op, k + 3, "cell_t_grad", 1, err)))
        return st;
    return RC_OK;
}

static rc_status gru_inputs(rc_op *op, int64_t *N, int64_t *D, const int32_t **seq, int32_t *t, int *next,
                            rc_err *err)
{
    rc_status st;
    if ((st = check_state(op, 0, "hidden_t_prev", N, D, err))) return st;
    if ((st = check_gates(op, 1, *N, *D, 3, err))) return st;
    return check_seq_t(op, op->state, 2, *N, seq, t, next, err);
}

static rc_status gru_grad_inputs(rc_op *op, int64_t *N, int64_t *D, const int32_t **seq, int32_t *t, int *next,
                                 rc_err *err)
{
    rc_status st;
    if ((st = gru_inputs(op, N, D, seq, t, next, err))) return st;
    const int k = *next;
    if ((st = check_like(op, k, "hidden_t", 0, err)) || (st = check_like(op, k + 1, "hidden_t_grad", 0, err)))
        return st;
    return RC_OK;
}

#define UNIT_CHECK(name, inputs)                                 \
    static rc_status name(rc_op *op, rc_err *err)                \
    {                                                            \
        int64_t N = 0, D = 0;                                    \
        const int32_t *seq;                                      \
        int32_t t;                                               \
        int next;                                                \
        return inputs(op, &N, &D, &seq, &t, &next, err);         \
    }
UNIT_CHECK(lstm_check, lstm_inputs)
UNIT_CHECK(lstm_grad_check, lstm_grad_inputs)
UNIT_CHECK(gru_check, gru_inputs)
UNIT_CHECK(gru_grad_check, gru_grad_inputs)

static rc_status lstm_run(rc_op *op, rc_err *err)
{
    const unit_args *a = op->state;
    int64_t N = 0, D = 0;
    const int32_t *seq = NULL;
    int32_t t = 0;
    int next = 0;
    rc_status st;
    if ((st = lstm_inputs(op, &N, &D, &seq, &t, &next, err))) return st;
    if ((st = out_like(op, 0, 1, err)) || (st = out_like(op, 1, 1, err))) return st;
    unit_job j = {UNIT_LSTM, a->drop_states, N, D, t, a->forget_bias, seq,
                  {rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), rc_f32(rc_in(op, 2))},
                  {rc_f32(rc_out(op, 0)), rc_f32(rc_out(op, 1))}};
    unit_run(&j);
    return RC_OK;
}

/* LSTMUnitGradient: (hidden_t_prev, cell_t_prev, gates, [seq_lengths], timestep, hidden_t, cell_t,
 *                    hidden_t_grad, cell_t_grad) -> (hidden_t_prev_grad, cell_t_prev_grad, gates_grad) */
static rc_status lstm_grad_run(rc_op *op, rc_err *err)
{
    const unit_args *a = op->state;
    int64_t N = 0, D = 0;
    const int32_t *seq = NULL;
    int32_t t = 0;
    int k = 0;
    rc_status st;
    if ((st = lstm_grad_inputs(op, &N, &D, &seq, &t, &k, err))) return st;
    if ((st = out_like(op, 0, 0, err)) || (st = out_like(op, 1, 1, err)) || (st = out_like(op, 2, 2, err))) return st;
    unit_job j = {UNIT_LSTM_GRAD, a->drop_states, N, D, t, a->forget_bias, seq,
                  {rc_f32(rc_in(op, 1)), rc_f32(rc_in(op, 2)), rc_f32(rc_in(op, k + 1)), rc_f32(rc_in(op, k + 2)),
                   rc_f32(rc_in(op, k + 3))},
                  {rc_f32(rc_out(op, 0)), rc_f32(rc_out(op, 1)), rc_f32(rc_out(op, 2))}};
    unit_run(&j);
    return RC_OK;
}

/* GRUUnit: (hidden_t_prev, gates, [seq_lengths], timestep) -> hidden_t */
static rc_status gru_run(rc_op *op, rc_err *err)
{
    const unit_args *a = op->state;
    int64_t N = 0, D = 0;
    const int32_t *seq = NULL;
    int32_t t = 0;
    int next = 0;
    rc_status st;
    if ((st = gru_inputs(op, &N, &D, &seq, &t, &next, err))) return st;
    if ((st = out_like(op, 0, 0, err))) return st;
    unit_job j = {UNIT_GRU, a->drop_states, N, D, t, 0.f, seq, {rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1))},
                  {rc_f32(rc_out(op, 0))}};
    unit_run(&j);
    return RC_OK;
}

/* GRUUnitGradient: (hidden_t_prev, gates, [seq_lengths], timestep, hidden_t, hidden_t_grad)
 *                  -> (hidden_t_prev_grad, gates_grad) */
static rc_status gru_grad_run(rc_op *op, rc_err *err)
{
    const unit_args *a = op->state;
    int64_t N = 0, D = 0;
    const int32_t *seq = NULL;
    int32_t t = 0;
    int k = 0;
    rc_status st;
    if ((st = gru_grad_inputs(op, &N, &D, &seq, &t, &k, err))) return st;
    if ((st = out_like(op, 0, 0, err)) || (st = out_like(op, 1, 1, err))) return st;
    unit_job j = {UNIT_GRU_GRAD, a->drop_states, N, D, t, 0.f, seq,
                  {rc_f32(rc_in(op, 0)), rc_f32(rc_in(op, 1)), rc_f32(rc_in(op, k + 1))},
                  {rc_f32(rc_out(op, 0)), rc_f32(rc_out(op, 1))}};
    unit_run(&j);
    return RC_OK;
}

const rc_op_schema rc_ops_rnn_units[] = {
    {"LSTMUnit", 4, 5, 2, 2, NULL, lstm_setup, lstm_run, free,
     "(h_prev, c_prev, gates[i,f,o,g], [seq_lengths], timestep) -> (h, c): one LSTM step", lstm_check},
    {"LSTMUnitGradient", 8, 9, 3, 3, NULL, lstm_grad_setup, lstm_grad_run, free,
     "(h_prev, c_prev, gates, [seq_lengths], timestep, h, c, dh, dc) -> (dh_prev, dc_prev, dgates)", lstm_grad_check},
    {"GRUUnit", 3, 4, 1, 1, NULL, gru_setup, gru_run, free,
     "(h_prev, gates[reset,update,output], [seq_lengths], timestep) -> h: one GRU step", gru_check},
    {"GRUUnitGradient", 5, 6, 2, 2, NULL, gru_grad_setup, gru_grad_run, free,
     "(h_prev, gates, [seq_lengths], timestep, h, dh) -> (dh_prev, dgates)", gru_grad_check},
    {0},
};
