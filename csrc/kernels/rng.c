/* kernels/rng.c -- seeding of the random ops' streams (rng.h). */
#include "rng.h"

#include <time.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = rc_rng_hash(*x);
    *x += 0x9E3779B97F4A7C15ull;
    return z;
}

void rc_rng_seed(uint64_t s[4], uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) s[i] = splitmix64(&x);
}

/* The only mutable process-wide value here: bumped atomically, never read back. */
static uint64_t seed_counter;

uint64_t rc_rng_fresh_seed(void)
{
    uint64_t c = __atomic_add_fetch(&seed_counter, 1, __ATOMIC_RELAXED);
    struct timespec ts;
    uint64_t t = 0;
    if (timespec_get(&ts, TIME_UTC)) t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    uint64_t x = c * 0xD1B54A32D192ED03ull;
    return splitmix64(&x) ^ t;
}
