/* Allocation-failure injection for tests: see alloc_fail.h. The __real_*
 * symbols are resolved by the linker's --wrap to the C library's functions. */
#include "alloc_fail.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void __real_free(void *p);
int __real_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

static atomic_llong calls, fail_at, live;
static atomic_int fail_sticky;

long long rc_alloc_fail_arm(long long nth, int sticky)
{
    atomic_store(&fail_at, 0); /* disarm before the counter restarts */
    long long n = atomic_exchange(&calls, 0);
    atomic_store(&fail_sticky, sticky != 0);
    atomic_store(&fail_at, nth > 0 ? nth : 0);
    return n;
}

long long rc_alloc_live(void) { return atomic_load(&live); }

static int fail_now(void)
{
    long long c = atomic_fetch_add(&calls, 1) + 1, f = atomic_load(&fail_at);
    return f > 0 && (c == f || (c > f && atomic_load(&fail_sticky)));
}

void *__wrap_malloc(size_t n)
{
    if (fail_now()) return NULL;
    void *p = __real_malloc(n);
    if (p) atomic_fetch_add(&live, 1);
    return p;
}

void *__wrap_calloc(size_t n, size_t size)
{
    if (fail_now()) return NULL;
    void *p = __real_calloc(n, size);
    if (p) atomic_fetch_add(&live, 1);
    return p;
}

void *__wrap_realloc(void *old, size_t n)
{
    if (fail_now()) return NULL; /* like a real failure: old stays valid */
    void *p = __real_realloc(old, n);
    if (p && !old) atomic_fetch_add(&live, 1);
    return p;
}

char *__wrap_strdup(const char *s)
{
    if (fail_now()) return NULL;
    char *p = __real_strdup(s);
    if (p) atomic_fetch_add(&live, 1);
    return p;
}

void __wrap_free(void *p)
{
    if (p) atomic_fetch_sub(&live, 1);
    __real_free(p);
}

int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    if (fail_now()) return EAGAIN;
    return __real_pthread_create(t, attr, fn, arg);
}
