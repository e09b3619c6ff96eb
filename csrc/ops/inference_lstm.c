/* ops/inference_lstm.c -- Caffe2's InferenceLSTM (caffe2/operators/inference_lstm_op.cc): the forward
 * pass of torch.nn.LSTM over a whole sequence, taking torch's weights as they are. CPU, float32, no
 * gradient (Caffe2: NO_GRADIENT).
 *
 *   InferenceLSTM(input, hx, cx, w_ih, w_hh[, b_ih, b_hh], ...) -> (output, hy, cy)
 *   arguments: num_layers (default 1, >= 1), has_biases (1), batch_first (0), bidirectional (0); the
 *   last three 0 or 1.
 *
 *   input  (T, N, D), or (N, T, D) with batch_first
 *   hx, cx (L * dirs, N, H): the initial states, entry l * dirs + d for layer l and direction d
 *   then per layer l and direction d (forward, then reverse), in that order:
 *          w_ih (4H, D_l), w_hh (4H, H)[, b_ih (4H,), b_hh (4H,)]; D_0 = D, D_l = dirs * H
 *   output (T, N, dirs * H) ((N, T, dirs * H) with batch_first): the last layer's h of every step,
 *          the reverse direction's in the second half of the last dim
 *   hy, cy (L * dirs, N, H): the states after the last step (the reverse direction's: after step 0)
 *
 * Per step, in torch's gate order i, f, g, o:
 *   gates = x W_ih^T + h W_hh^T + (b_ih + b_hh)
 *   c' = sigmoid(f) c + sigmoid(i) tanh(g),  h' = sigmoid(o) tanh(c')
 * Layer l's input projection is one product over all T steps (x W_ih^T on OpenBLAS, then the bias sum
 * added), then each step adds h W_hh^T: on the packed kernel (kernels/packed_gemm.h, W_hh^T packed once
 * per layer and direction at each run) where rc_packed_rows_ok takes the shape, else OpenBLAS; the
 * nonlinearities are kernels/vmath.h's (vectorised; about 2e-7 from libm's). T = 0 gives an empty
 * output and hy = hx, cy = cx.
 * Every input is read before any output is written (the outputs are filled from scratch buffers at
 * the end), so an output that shares storage with an input gets the right values.
 */
#include "../core/rc_core.h"
#include "../kernels/packed_gemm.h"
#include "../kernels/vmath.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { IN_X, IN_HX, IN_CX, IN_W };

typedef struct {
    int64_t layers;
    int dirs, biases, batch_first;
    float *scratch; /* owned; grown as needed */
    size_t cap;     /* floats in scratch */
    void *pack_raw; /* owned (rc_pack_alloc): the packed W_hh^T of the direction running */
    float *pack;    /* inside pack_raw, 64-byte aligned */
    int64_t pack_cap;
} ilstm_state;

static void ilstm_free(void *p)
{
    ilstm_state *s = p;
    if (s) {
        free(s->scratch);
        free(s->pack_raw);
    }
    free(s);
}

static int per_cell(const ilstm_state *s) { return s->biases ? 4 : 2; }

static rc_status bool_arg(rc_op *op, const char *name, int64_t dflt, int *out, rc_err *err)
{
    int64_t v = 0;
    rc_status st = rc_arg_i(&op->def, name, dflt, &v, err);
    if (st) return st;
    if (v != 0 && v != 1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument '%s' must be 0 or 1, got %lld", name, (long long)v);
    *out = (int)v;
    return RC_OK;
}

static rc_status ilstm_setup(rc_op *op, rc_err *err)
{
    ilstm_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    rc_status st;
    int bidir = 0;
    if ((st = rc_arg_i(&op->def, "num_layers", 1, &s->layers, err)) ||
        (st = bool_arg(op, "has_biases", 1, &s->biases, err)) ||
        (st = bool_arg(op, "batch_first", 0, &s->batch_first, err)) ||
        (st = bool_arg(op, "bidirectional", 0, &bidir, err)))
        return st;
    s->dirs = bidir ? 2 : 1;
    if (s->layers < 1 || s->layers > INT32_MAX)
        return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'num_layers' must be in [1, %d], got %lld", (int)INT32_MAX,
                          (long long)s->layers);
    int64_t want = 3 + s->layers * s->dirs * per_cell(s);
    if (op->n_in != want)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "%d inputs, expected %lld: input, hx, cx, then %d weights (w_ih, w_hh%s) for each of "
                          "num_layers=%lld x %d direction%s", op->n_in, (long long)want, per_cell(s),
                          s->biases ? ", b_ih, b_hh" : "; has_biases=0", (long long)s->layers, s->dirs,
                          s->dirs == 2 ? "s (bidirectional)" : "");
    return RC_OK;
}

/* The input index of weight k (0 w_ih, 1 w_hh, 2 b_ih, 3 b_hh) of layer l, direction d. */
static int w_index(const ilstm_state *s, int64_t l, int d, int k)
{
    return IN_W + (int)((l * s->dirs + d) * per_cell(s)) + k;
}

static rc_status want_shape(rc_op *op, int i, int ndim, const int64_t *dims, const char *what, int64_t l, int d,
                            rc_err *err)
{
    rc_status st = rc_check_input(op, i, RC_F32, err);
    if (st) return st;
    const rc_tensor *t = rc_in(op, i);
    int ok = t->ndim == ndim;
    for (int k = 0; ok && k < ndim; k++) ok = t->dims[k] == dims[k];
    if (ok) return RC_OK;
    char buf[96];
    int n = snprintf(buf, sizeof buf, "(");
    for (int k = 0; k < ndim; k++)
        n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%lld", k ? ", " : "", (long long)dims[k]);
    snprintf(buf + n, sizeof buf - (size_t)n, "%s)", ndim == 1 ? "," : "");
    return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' (%s of layer %lld%s) has shape %s, expected %s",
                      i, rc_in_name(op, i), what, (long long)l, d ? ", reverse direction" : "", RC_SHAPE(t), buf);
}

/* Dtypes and shapes of every input; reads no data. */
static rc_status ilstm_check(rc_op *op, rc_err *err)
{
    const ilstm_state *s = op->state;
    rc_status st;
    if ((st = rc_check_input(op, IN_X, RC_F32, err)) || (st = rc_check_input(op, IN_HX, RC_F32, err)) ||
        (st = rc_check_input(op, IN_CX, RC_F32, err)))
        return st;
    const rc_tensor *x = rc_in(op, IN_X), *hx = rc_in(op, IN_HX), *cx = rc_in(op, IN_CX);
    if (x->ndim != 3)
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 0 blob '%s' must be 3-D %s, got %s", rc_in_name(op, IN_X),
                          s->batch_first ? "(N, T, D) (batch_first=1)" : "(T, N, D)", RC_SHAPE(x));
    int64_t N = x->dims[s->batch_first ? 0 : 1], LD = s->layers * s->dirs;
    if (hx->ndim != 3 || hx->dims[0] != LD || hx->dims[1] != N)
        return rc_op_fail(op, err, RC_ERR_VALUE,
                          "input 1 blob '%s' (hx) must be (num_layers * directions, N, H) = (%lld, %lld, H) for "
                          "input '%s' %s, got %s", rc_in_name(op, IN_HX), (long long)LD, (long long)N,
                          rc_in_name(op, IN_X), RC_SHAPE(x), RC_SHAPE(hx));
    if (!rc_tensor_same_shape(cx, hx))
        return rc_op_fail(op, err, RC_ERR_VALUE, "input 2 blob '%s' (cx) has shape %s, expected hx's %s",
                          rc_in_name(op, IN_CX), RC_SHAPE(cx), RC_SHAPE(hx));
    int64_t H = hx->dims[2], G;
    if (__builtin_mul_overflow(H, (int64_t)4, &G))
        return rc_op_fail(op, err, RC_ERR_VALUE, "hidden size %lld is too large", (long long)H);
    for (int64_t l = 0; l < s->layers; l++)
        for (int d = 0; d < s->dirs; d++) {
            int64_t in_l = l ? s->dirs * H : x->dims[2];
            int64_t wih[2] = {G, in_l}, whh[2] = {G, H};
            if ((st = want_shape(op, w_index(s, l, d, 0), 2, wih, "w_ih", l, d, err)) ||
                (st = want_shape(op, w_index(s, l, d, 1), 2, whh, "w_hh", l, d, err)))
                return st;
            if (s->biases && ((st = want_shape(op, w_index(s, l, d, 2), 1, &G, "b_ih", l, d, err)) ||
                              (st = want_shape(op, w_index(s, l, d, 3), 1, &G, "b_hh", l, d, err))))
                return st;
        }
    return RC_OK;
}

/* The cell of N rows: g (N, 4H) the gates before their nonlinearities (i, f, g, o); c, h (N, H) updated;
 * h also copied to out (rows ldo apart). rc_tanhf / rc_sigmoidf (kernels/vmath.h) vectorise; blocks of
 * 128 columns, one short loop per activation, as LSTMUnit's kernel (ops/rnn_units.c: one long chain per
 * element kept the core from overlapping iterations). */
#define ILSTM_BLK 128
RC_TARGET_CLONES
static void lstm_cells(int64_t N, int64_t H, const float *restrict g, float *restrict c, float *restrict h,
                       float *restrict out, int64_t ldo)
{
    for (int64_t n = 0; n < N; n++) {
        const float *gn = g + n * 4 * H;
        float *hn = h + n * H, *cn = c + n * H, *on = out + n * ldo;
        for (int64_t j0 = 0; j0 < H; j0 += ILSTM_BLK) {
            const int64_t w = H - j0 < ILSTM_BLK ? H - j0 : ILSTM_BLK;
            float gi[ILSTM_BLK], gf[ILSTM_BLK], gg[ILSTM_BLK], go[ILSTM_BLK];
            const float *x0 = gn + j0;
            for (int64_t j = 0; j < w; j++) gi[j] = rc_sigmoidf(x0[j]);
            for (int64_t j = 0; j < w; j++) gf[j] = rc_sigmoidf(x0[H + j]);
            for (int64_t j = 0; j < w; j++) gg[j] = rc_tanhf(x0[2 * H + j]);
            for (int64_t j = 0; j < w; j++) go[j] = rc_sigmoidf(x0[3 * H + j]);
            for (int64_t j = 0; j < w; j++) cn[j0 + j] = gf[j] * cn[j0 + j] + gi[j] * gg[j];
            for (int64_t j = 0; j < w; j++) hn[j0 + j] = go[j] * rc_tanhf(cn[j0 + j]);
            for (int64_t j = 0; j < w; j++) on[j0 + j] = hn[j0 + j];
        }
    }
}

/* One direction of one layer over T steps.
 * in (T, N, Din) -> out columns [col, col + H) of (T, N, OW); h, c (N, H) hold the initial states and are
 * left holding the final ones; P (T, N, 4H), G (N, 4H) and bias (4H) are scratch; pack (rc_pack_floats(H,
 * 4H) floats, 64-byte aligned) or NULL: the recurrent product on the packed kernel (W_hh^T packed here)
 * or on OpenBLAS. reverse: steps T-1 down to 0. */
static void run_direction(int64_t T, int64_t N, int64_t Din, int64_t H, const float *in, const float *w_ih,
                          const float *w_hh, const float *b_ih, const float *b_hh, float *P, float *G, float *bias,
                          float *pack, float *h, float *c, float *out, int64_t OW, int64_t col, int reverse)
{
    const int64_t Gw = 4 * H, rows = T * N;
    if (rows && Gw) {
        if (Din) rc_sgemm(0, 1, rows, Gw, Din, 1.0f, in, w_ih, 0.0f, P); /* P = in W_ih^T */
        else memset(P, 0, sizeof(float) * (size_t)(rows * Gw));
    }
    if (b_ih) {
        for (int64_t j = 0; j < Gw; j++) bias[j] = b_ih[j] + b_hh[j];
        for (int64_t r = 0; r < rows; r++) {
            float *p = P + r * Gw;
            for (int64_t j = 0; j < Gw; j++) p[j] += bias[j];
        }
    }
    if (pack) rc_pack_b(H, Gw, w_hh, 1, H, pack); /* B[i][o] = W_hh[o][i] */
    /* the steps in a step loop's BLAS setting (rc_core.h, "Step loops"): OpenBLAS single-threaded, each
     * product split over the loop's threads (the packed kernel's helpers), so that OpenBLAS's threads and
     * those helpers do not take turns on the cores; the input product above ran on OpenBLAS's threads */
    const int blas_prev = rc_step_blas_enter();
    for (int64_t k = 0; k < T; k++) {
        const int64_t t = reverse ? T - 1 - k : k;
        float *g = P + t * N * Gw;
        if (N && H) {
            if (pack) { /* G = h W_hh^T + P[t] */
                rc_gemm_packed(N, Gw, H, h, H, pack, NULL, g, G, Gw);
                g = G;
            } else {
                rc_sgemm(0, 1, N, Gw, H, 1.0f, h, w_hh, 1.0f, g); /* P[t] += h W_hh^T */
            }
        }
        lstm_cells(N, H, g, c, h, out + t * N * OW + col, OW);
    }
    rc_step_blas_leave(blas_prev);
}

static rc_status too_large(rc_op *op, rc_err *err)
{
    return rc_op_fail(op, err, RC_ERR_MEMORY, "input 0 blob '%s' %s with hidden size %lld: the scratch buffers "
                      "would overflow the address space", rc_in_name(op, IN_X), RC_SHAPE(rc_in(op, IN_X)),
                      (long long)rc_in(op, IN_HX)->dims[2]);
}

static rc_status out_fail(rc_op *op, int o, rc_err *err)
{
    return rc_op_fail(op, err, err->code, "output %d blob '%s': %s", o, rc_out_name(op, o), err->msg);
}

static rc_status ilstm_run(rc_op *op, rc_err *err)
{
    ilstm_state *s = op->state;
    rc_status st = ilstm_check(op, err);
    if (st) return st;
    const rc_tensor *x = rc_in(op, IN_X), *hx = rc_in(op, IN_HX), *cx = rc_in(op, IN_CX);
    const int bf = s->batch_first, dirs = s->dirs;
    const int64_t T = x->dims[bf ? 1 : 0], N = x->dims[bf ? 0 : 1], D = x->dims[2], H = hx->dims[2];
    const int64_t LD = s->layers * dirs, OW = dirs * H;
    /* scratch floats: the time-major input (batch_first only), two layer outputs (T, N, OW), the
     * projections (T, N, 4H), the bias sum (4H), the states (LD, N, H) twice */
    int64_t tn, xin = 0, lo, proj, ldn, st_n, gates, total;
    if (__builtin_mul_overflow(T, N, &tn) || (bf && __builtin_mul_overflow(tn, D, &xin)) ||
        __builtin_mul_overflow(tn, OW, &lo) || __builtin_mul_overflow(tn, 4 * H, &proj) ||
        __builtin_mul_overflow(LD, N, &ldn) || __builtin_mul_overflow(ldn, H, &st_n) ||
        __builtin_mul_overflow(N, 4 * H, &gates) || __builtin_add_overflow(xin, 2 * lo, &total) ||
        __builtin_add_overflow(total, proj, &total) || __builtin_add_overflow(total, gates, &total) ||
        __builtin_add_overflow(total, 4 * H + 2 * st_n, &total) || total > (int64_t)(SIZE_MAX / sizeof(float)) / 2)
        return too_large(op, err);
    /* the recurrent products on the packed kernel where it is faster than OpenBLAS (kernels/packed_gemm.h) */
    const int packed = T && N && H && rc_packed_available() && rc_packed_rows_ok(N, H);
    if (packed) {
        const int64_t pf = rc_pack_floats(H, 4 * H);
        if (pf > s->pack_cap) {
            void *raw = NULL;
            float *p = rc_pack_alloc(pf, &raw);
            if (!p) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory: a pack of %lld floats for the "
                                      "recurrent weights of hidden size %lld", (long long)pf, (long long)H);
            free(s->pack_raw);
            s->pack_raw = raw;
            s->pack = p;
            s->pack_cap = pf;
        }
    }
    if ((size_t)total > s->cap) {
        float *p = malloc((size_t)(total ? total : 1) * sizeof(float));
        if (!p) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory: %lld floats of scratch for input '%s' %s",
                                  (long long)total, rc_in_name(op, IN_X), RC_SHAPE(x));
        free(s->scratch);
        s->scratch = p;
        s->cap = (size_t)total;
    }
    float *xt = s->scratch, *out_a = xt + xin, *out_b = out_a + lo, *P = out_b + lo, *G = P + proj,
          *bias = G + gates, *hy = bias + 4 * H, *cy = hy + st_n;
    const float *src = rc_f32(x);
    if (bf && xin) { /* (N, T, D) -> (T, N, D); nothing to move when empty (src may then be NULL) */
        for (int64_t n = 0; n < N; n++)
            for (int64_t t = 0; t < T; t++) memcpy(xt + (t * N + n) * D, src + (n * T + t) * D, sizeof(float) * D);
        src = xt;
    }
    if (st_n) {
        memcpy(hy, rc_f32(hx), sizeof(float) * (size_t)st_n);
        memcpy(cy, rc_f32(cx), sizeof(float) * (size_t)st_n);
    }
    const float *in = src;
    int64_t din = D;
    float *out = out_a;
    for (int64_t l = 0; l < s->layers; l++) {
        for (int d = 0; d < dirs; d++) {
            const int64_t e = l * dirs + d;
            const float *bi = s->biases ? rc_f32(rc_in(op, w_index(s, l, d, 2))) : NULL,
                        *bh = s->biases ? rc_f32(rc_in(op, w_index(s, l, d, 3))) : NULL;
            run_direction(T, N, din, H, in, rc_f32(rc_in(op, w_index(s, l, d, 0))),
                          rc_f32(rc_in(op, w_index(s, l, d, 1))), bi, bh, P, G, bias, packed ? s->pack : NULL,
                          hy + e * N * H, cy + e * N * H, out, OW, d * H, d);
        }
        in = out;
        din = OW;
        out = out == out_a ? out_b : out_a;
    }
    /* every input is read: now the outputs */
    const float *res = in;
    int64_t od[3] = {bf ? N : T, bf ? T : N, OW};
    if ((st = rc_tensor_resize(rc_out(op, 0), RC_F32, 3, od, err))) return out_fail(op, 0, err);
    if ((st = rc_tensor_resize(rc_out(op, 1), RC_F32, 3, hx->dims, err))) return out_fail(op, 1, err);
    if ((st = rc_tensor_resize(rc_out(op, 2), RC_F32, 3, hx->dims, err))) return out_fail(op, 2, err);
    float *y = rc_f32(rc_out(op, 0));
    if (bf && lo) {
        for (int64_t t = 0; t < T; t++)
            for (int64_t n = 0; n < N; n++) memcpy(y + (n * T + t) * OW, res + (t * N + n) * OW, sizeof(float) * OW);
    } else if (lo) {
        memcpy(y, res, sizeof(float) * (size_t)lo);
    }
    if (st_n) {
        memcpy(rc_f32(rc_out(op, 1)), hy, sizeof(float) * (size_t)st_n);
        memcpy(rc_f32(rc_out(op, 2)), cy, sizeof(float) * (size_t)st_n);
    }
    return RC_OK;
}

const rc_op_schema rc_ops_inference_lstm[] = {
    {"InferenceLSTM", 3, -1, 3, 3, NULL, ilstm_setup, ilstm_run, ilstm_free,
     "(input (T, N, D), hx, cx (L*dirs, N, H), then w_ih, w_hh[, b_ih, b_hh] per layer and direction) -> "
     "(output (T, N, dirs*H), hy, cy): torch.nn.LSTM's forward with its weights (gates i, f, g, o)",
     ilstm_check},
    {0},
};
