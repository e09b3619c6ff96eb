/* Vectorisable float32 exp / sigmoid / tanh for the elementwise kernels.
 *
 * glibc's expf/tanhf are scalar calls, which keeps loops such as LSTMUnit's
 * from vectorising (they dominated its time). These are branch-free
 * (selects only), so GCC -O3 turns loops over them into AVX2/AVX-512 code.
 * Accuracy: rc_expf is Cephes' expf polynomial (range reduction by ln 2 to
 * |r| <= ln2 / 2, degree-6 polynomial): relative error about 2e-7 over [-87, 88]; rc_tanhf uses
 * Cephes' odd polynomial below |x| = 0.625 and 1 - 2 / (exp(2|x|) + 1)
 * above (absolute error < 2e-7, relative < 4e-7); rc_sigmoidf is
 * 1 / (1 + exp(-x)) with the argument clamped so nothing overflows.
 * The same code runs in every thread, so results never depend on the executor. */
#ifndef RC_VMATH_H
#define RC_VMATH_H
#include <stdint.h>
#include <string.h>

/* Hot elementwise kernels are compiled for AVX-512, AVX2+FMA and baseline
 * x86-64; the loader picks the best one for the CPU (GCC function
 * multi-versioning), so the package stays portable. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define RC_TARGET_CLONES __attribute__((target_clones("avx512f", "arch=haswell", "default")))
#else
#define RC_TARGET_CLONES
#endif

static inline float rc_expf(float x)
{
    x = x > 88.3762626647949f ? 88.3762626647949f : x;
    x = x < -87.3365447504f ? -87.3365447504f : x;
    /* n = round(x / ln2) in float arithmetic: adding 1.5 * 2^23 leaves the
     * rounded value in the low mantissa bits of t (|x / ln2| < 2^22). No
     * float -> int conversion, so NaN needs no special case (converting it
     * would be undefined behaviour; here it just stays NaN), and the vector
     * code is shorter (measured 1.4x faster than floor() through an int). */
    float t = x * 1.44269504088896341f + 12582912.0f;
    float fn = t - 12582912.0f;
    int32_t tb;
    memcpy(&tb, &t, sizeof tb);
    int32_t n = tb - 0x4B400000; /* the bits of 12582912.0f: n in [-126, 127] after the clamps */
    x = x - fn * 0.693359375f;
    x = x - fn * -2.12194440e-4f;
    float z = x * x;
    float y = 1.9875691500E-4f;
    y = y * x + 1.3981999507E-3f;
    y = y * x + 8.3334519073E-3f;
    y = y * x + 4.1665795894E-2f;
    y = y * x + 1.6666665459E-1f;
    y = y * x + 5.0000001201E-1f;
    y = y * z + x + 1.0f;
    /* y * 2^n through the exponent bits */
    int32_t e = (int32_t)((uint32_t)(n + 127) << 23);
    float p;
    memcpy(&p, &e, sizeof p);
    return y * p;
}

static inline float rc_sigmoidf(float x) { return 1.0f / (1.0f + rc_expf(-x)); }

static inline float rc_tanhf(float x)
{
    float ax = x < 0.f ? -x : x;
    /* small |x|: odd polynomial */
    float z = x * x;
    float p = -5.70498872745E-3f;
    p = p * z + 2.06390887954E-2f;
    p = p * z - 5.37397155531E-2f;
    p = p * z + 1.33314422036E-1f;
    p = p * z - 3.33332819422E-1f;
    float small = p * z * x + x;
    /* large |x|: 1 - 2 / (e^{2|x|} + 1), clamped where that rounds to 1 (from |x| ~ 9.02; a clamp
     * at 9, e^18, left 1 - 2^-24, so tanh(+-Inf) was not +-1) */
    float a2 = ax > 9.5f ? 19.0f : 2.0f * ax;
    float large = 1.0f - 2.0f / (rc_expf(a2) + 1.0f);
    large = x < 0.f ? -large : large;
    return ax < 0.625f ? small : large;
}

#endif
