/* kernels/rng.h -- the random stream of the random ops (the fills in ops/fill.c,
 * WeightedSample in ops/embed.c): xoshiro256** seeded through splitmix64.
 *
 * A stream is four uint64_t the caller owns (the ops keep theirs in op->state);
 * nothing here allocates. rc_rng_next is not thread-safe on one stream (an op's
 * stream is used by that op only); rc_rng_fresh_seed is safe from any thread.
 */
#ifndef RC_RNG_H
#define RC_RNG_H

#include "../core/rc_core.h"
#include <stdint.h>

/* Seeds s from seed: the same seed always gives the same stream. */
RC_INTERNAL void rc_rng_seed(uint64_t s[4], uint64_t seed);

/* A seed for an op created without argument `seed`: a process-wide atomic
 * counter mixed with the clock, so no two calls return the same stream start. */
RC_INTERNAL uint64_t rc_rng_fresh_seed(void);

/* A 64-bit mix (splitmix64's finalizer): keys for streams that must not
 * depend on the order of calls (Dropout, ops/dropout.c). */
static inline uint64_t rc_rng_hash(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline uint64_t rc_rng_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* The next 64 random bits of stream s. */
static inline uint64_t rc_rng_next(uint64_t s[4])
{
    uint64_t r = rc_rng_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rc_rng_rotl(s[3], 45);
    return r;
}

/* u in [0, 1) with 53 random bits (exact in double). */
static inline double rc_rng_unit(uint64_t s[4]) { return (double)(rc_rng_next(s) >> 11) * 0x1.0p-53; }

#endif
