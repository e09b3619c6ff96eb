/* ops/convpool.h -- the arguments and output geometry shared by the
 * convolution and pooling ops (Caffe2's ConvPoolOpBase).
 *
 * Arguments (each family given one way at most, else a ValueError):
 *  - kernel size: `kernels` (a list, one per spatial dim), or `kernel` (2-D:
 *    both dims), or `kernel_h` + `kernel_w` (2-D); required (>= 1) unless
 *    global_pooling;
 *  - `strides` / `stride` / `stride_h` + `stride_w` (default 1; >= 1);
 *  - `dilations` / `dilation` / `dilation_h` + `dilation_w` (default 1; >= 1;
 *    pooling: 1 only);
 *  - `pads` (nd heads, then nd tails) / `pad` (2-D: all four) / `pad_t` +
 *    `pad_l` + `pad_b` + `pad_r` (default 0; >= 0);
 *  - `order` "NCHW" (default) or "NHWC";
 *  - `legacy_pad` (Caffe2's LegacyPadding): 0 NOTSET (default: the pads as
 *    given), 1 VALID (no pads), 2 SAME (pads giving ceil(in / stride) outputs,
 *    the odd one at the tail; no pads may be given; dilation 1), 3
 *    CAFFE_LEGACY_POOLING (Caffe's pooling: output ceil((in + 2 pad_head -
 *    kernel) / stride) + 1, less one if the last window would start in the
 *    tail padding; the tail pad grows to cover the extra window);
 *  - `global_pooling` (pooling only): the window is the whole input, one
 *    output per channel; no pads, strides or dilations other than the
 *    defaults; kernel arguments, if given, are ignored.
 * Each value must lie in [0, 2^31 - 1] (Caffe2's were int).
 * Where Caffe2 differs: it let `kernel` overwrite part of `kernels` and
 * ignored a lone `kernel_h`; SAME with stride > kernel could give a negative
 * tail pad (here 0: the same output size); an input with a spatial size too
 * small for the window was an enforce (here a ValueError naming the blob).
 *
 * The number of spatial dims nd (1..3) is that of the kernel arguments (2 for
 * `kernel`, `kernel_h`...), or with global_pooling that of X. X must have
 * nd + 2 dims: (N, C, d1..dn) for NCHW, (N, d1..dn, C) for NHWC.
 *
 * Kind RC_CP_PAD (PadImage and its gradient, which use ConvPoolOpBase for
 * their pads only): no kernel is needed (kernel arguments, if given, are
 * ignored: Caffe2 replaced them by 1s); nd is 2; `pads` must have 4 values
 * (t, l, b, r) if given; pads may be negative (crop), each in
 * [-(2^31 - 1), 2^31 - 1]; strides and dilations must be 1; legacy_pad must
 * be 0 (NOTSET). On return kernel, stride and dilation are all 1. The caller
 * computes its own geometry (rc_cp_geometry is for RC_CP_CONV / RC_CP_POOL).
 */
#ifndef RC_OPS_CONVPOOL_H
#define RC_OPS_CONVPOOL_H

#include "../core/rc_core.h"

#define RC_CP_MAX_ND 3

enum { RC_CP_CONV = 1, RC_CP_POOL = 2, RC_CP_PAD = 3 };
enum { RC_CP_NOTSET = 0, RC_CP_VALID = 1, RC_CP_SAME = 2, RC_CP_CAFFE_LEGACY_POOLING = 3 };

typedef struct rc_cp_args {
    int kind;       /* RC_CP_CONV, RC_CP_POOL or RC_CP_PAD */
    int nd;         /* spatial dims of the kernel arguments; 0 with global_pooling */
    int nhwc;       /* order: 0 NCHW, 1 NHWC */
    int global;     /* global_pooling */
    int legacy_pad; /* RC_CP_NOTSET ... RC_CP_CAFFE_LEGACY_POOLING */
    int64_t kernel[RC_CP_MAX_ND], stride[RC_CP_MAX_ND], dilation[RC_CP_MAX_ND];
    int64_t pads[2 * RC_CP_MAX_ND]; /* nd heads, then nd tails (as given) */
} rc_cp_args;

typedef struct rc_cp_geom {
    int nd;
    int64_t N, C;                                     /* batch and channels of X */
    int64_t in[RC_CP_MAX_ND], out[RC_CP_MAX_ND];      /* spatial sizes of X and Y */
    int64_t kernel[RC_CP_MAX_ND], stride[RC_CP_MAX_ND], dilation[RC_CP_MAX_ND];
    int64_t pad_head[RC_CP_MAX_ND], pad_tail[RC_CP_MAX_ND]; /* effective */
    int64_t in_size, out_size, kernel_size;           /* products over the nd dims */
} rc_cp_geom;

/* Parses the arguments into *a (call from setup). Errors name the op and
 * the argument. */
RC_INTERNAL rc_status rc_cp_parse(rc_op *op, int kind, rc_cp_args *a, rc_err *err);

/* One argument family given as a list `list` (up to maxn values), or `one`
 * (its value `reps` times), or all of the named singles `parts` (nparts of
 * them), one way at most (else a ValueError); the values into vals, their
 * count into *n (0 when none is given). Used by ConvTranspose for adjs / adj /
 * adj_h + adj_w. */
RC_INTERNAL rc_status rc_cp_family(rc_op *op, const char *list, const char *one, int reps, const char *const *parts,
                                   int nparts, int64_t *vals, int maxn, int *n, rc_err *err);

/* Checks input xi (float32 with nd + 2 dims, spatial sizes that fit the
 * window: every output size >= 1) and fills *g. N and C may be 0; a spatial
 * size of 0 fits no window (ValueError). */
RC_INTERNAL rc_status rc_cp_geometry(rc_op *op, const rc_cp_args *a, int xi, rc_cp_geom *g, rc_err *err);

/* rc_cp_geometry for an input xi of any dtype, whose shape only is read
 * (Col2Im's image-shaped input). */
RC_INTERNAL rc_status rc_cp_geometry_shape(rc_op *op, const rc_cp_args *a, int xi, rc_cp_geom *g, rc_err *err);

/* The dims of Y for g and out_channels (N, M, o1..on) / (N, o1..on, M) into
 * dims[nd + 2]. */
RC_INTERNAL void rc_cp_out_dims(const rc_cp_args *a, const rc_cp_geom *g, int64_t out_channels, int64_t *dims);

#endif
