/* Bounded spin-waiting before a thread blocks (see rc_spin_while). */
#include "rc_core.h"
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RC_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define RC_CPU_RELAX() __asm__ __volatile__("yield")
#else
#define RC_CPU_RELAX() ((void)0)
#endif

static int64_t flag_spin_ns = -1; /* -1: not yet read from the environment */

int64_t rc_flag_spin_ns(void)
{
    int64_t v = __atomic_load_n(&flag_spin_ns, __ATOMIC_RELAXED);
    if (v < 0) {
        v = rc_env_us_as_ns("RECURRENT_RNN_EXECUTOR_SPIN_US", RC_SPIN_NS_DEFAULT, RC_SPIN_US_MAX);
        __atomic_store_n(&flag_spin_ns, v, __ATOMIC_RELAXED);
    }
    return v;
}

void rc_flag_set_spin_ns(int64_t ns) { __atomic_store_n(&flag_spin_ns, ns < 0 ? 0 : ns, __ATOMIC_RELAXED); }

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int rc_spin_while(const int *word, int value, int64_t budget_ns)
{
    if (budget_ns <= 0) return __atomic_load_n(word, __ATOMIC_ACQUIRE) != value;
    int64_t end = 0;
    for (unsigned i = 0;; i++) {
        if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != value) return 1;
        RC_CPU_RELAX();
        if ((i & 63) == 63) {
            /* every ~64 pauses: the clock, and the core to any other runnable
             * thread (another library's BLAS thread, say) */
            int64_t t = now_ns();
            if (!end) end = t + budget_ns;
            else if (t >= end) return __atomic_load_n(word, __ATOMIC_ACQUIRE) != value;
            sched_yield();
        }
    }
}

int rc_spin_while_unlocked(pthread_mutex_t *mu, const int *word, int value, int64_t budget_ns)
{
    pthread_mutex_unlock(mu);
    rc_spin_while(word, value, budget_ns);
    pthread_mutex_lock(mu);
    return __atomic_load_n(word, __ATOMIC_RELAXED) != value;
}
