/* ops/loss_math.h -- the numerically stable scalar functions shared by the
 * losses of ops/loss2.c and ops/loss3.c. Pure functions of double.
 */
#ifndef RC_OPS_LOSS_MATH_H
#define RC_OPS_LOSS_MATH_H

#include <math.h>

/* log(1 + exp(x)) without overflow */
static inline double rc_softplus(double x) { return (x > 0 ? x : 0.0) + log1p(exp(-fabs(x))); }

/* 1 / (1 + exp(-x)) without overflow */
static inline double rc_sigmoid(double x)
{
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

#endif
