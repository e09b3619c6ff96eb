/* Allocation-failure injection, for tests only.
 *
 * A binary linked with csrc/testing/alloc_fail.c and
 *   -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=free,--wrap=pthread_create
 * sends every such call made by the objects of that link (the core, the
 * binding, the test itself; not libc, NumPy, Python or OpenBLAS) through a
 * countdown, so a test can make the n-th allocation after a point fail and
 * check that the failure is reported (RC_ERR_MEMORY / MemoryError), nothing
 * leaks and the workspace stays usable. CMake: the C tests always link it
 * (disarmed it only counts); the extension only with -DRECURRENT_ALLOC_FAIL=ON,
 * which also adds recurrent._C._alloc_fail / _alloc_live. Thread-safe. */
#ifndef RC_ALLOC_FAIL_H
#define RC_ALLOC_FAIL_H

/* From now on the nth call (1-based) of malloc/calloc/realloc/strdup/
 * pthread_create fails (NULL, or EAGAIN for pthread_create); with sticky != 0
 * every later call fails too. nth = 0 disarms. Returns the number of calls
 * counted since the previous rc_alloc_fail_arm (the counter restarts at 0). */
long long rc_alloc_fail_arm(long long nth, int sticky);

/* Blocks allocated through the wrappers and not yet freed (malloc/calloc/
 * strdup/realloc(NULL, ..) +1, free(non-NULL) -1). Only differences between
 * two points mean something: a pointer freed here that was allocated outside
 * the wrapped objects would count -1. */
long long rc_alloc_live(void);

#endif
