/* ops/norm.h -- the statistics shared by the normalization ops (ops/norm.c:
 * GroupNorm, InstanceNorm, SpatialBN; ops/layer_norm.c: LayerNorm).
 *
 * X is seen as (N, C, S) (NCHW: index (n C + c) S + s) or (N, S, C) (NHWC:
 * index (n S + s) C + c). The C channels fall into G groups of D = C / G
 * consecutive channels; a statistic covers one group of one sample (per_n = 1:
 * N G statistics, index n G + c / D) or one group over the whole batch
 * (per_n = 0: G statistics, index c / D).
 */
#ifndef RC_OPS_NORM_H
#define RC_OPS_NORM_H

#include <stdint.h>

typedef struct {
    int64_t N, C, S, G;
    int nhwc, per_n;
} rc_norm_layout;

/* Number of statistics, and of values each covers. */
RC_INTERNAL int64_t rc_norm_nstats(const rc_norm_layout *L);
RC_INTERNAL int64_t rc_norm_count(const rc_norm_layout *L);

/* mean[k] = sum(x) / count, var[k] = sum((x - mean)^2) / count (population
 * variance, two passes, in double, summed in index order: the same bits every
 * run); a statistic of no values has mean 0 and var 0. */
RC_INTERNAL void rc_norm_moments(const rc_norm_layout *L, const float *x, double *mean, double *var);

#endif
