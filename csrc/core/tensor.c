/* Tensors over reference-counted storages. */
#include "rc_core.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rc_storage {
    size_t refcount;   /* atomic (__atomic builtins): views are taken from worker threads */
    uint64_t id;       /* unique in the process (never reused, unlike the address) */
    uint64_t writes;   /* atomic: rc_tensor_touch calls on any tensor over this storage */
    size_t nbytes;
    void *data;        /* 64-byte aligned, inside raw */
    void *raw;         /* what was allocated (freed) */
};

size_t rc_dtype_size(rc_dtype dt)
{
    switch (dt) {
    case RC_F32: return 4;
    case RC_I32: return 4;
    default: return 0;
    }
}

const char *rc_dtype_name(rc_dtype dt)
{
    switch (dt) {
    case RC_F32: return "float32";
    case RC_I32: return "int32";
    default: return "undefined";
    }
}

static uint64_t next_storage_id = 1; /* atomic; 0 is the stamp of a tensor without storage */

static rc_storage *storage_new(size_t nbytes)
{
    rc_storage *s = malloc(sizeof *s);
    if (!s) return NULL;
    /* Zeroed and 64-byte aligned. calloc: large buffers come from fresh,
     * lazily zeroed pages, so asking for more memory than exists fails here
     * (MemoryError) instead of touching every page first. At least 64 bytes
     * so that even an empty tensor has a valid pointer. */
    size_t n = nbytes > 64 ? nbytes : 64;
    if (n > SIZE_MAX - 64 || !(s->raw = calloc(1, n + 64))) {
        free(s);
        return NULL;
    }
    s->data = (void *)(((uintptr_t)s->raw + 63) & ~(uintptr_t)63);
    s->nbytes = nbytes;
    s->refcount = 1;
    s->id = __atomic_fetch_add(&next_storage_id, 1, __ATOMIC_RELAXED);
    s->writes = 0;
    return s;
}

static void storage_ref(rc_storage *s)
{
    if (s) __atomic_add_fetch(&s->refcount, 1, __ATOMIC_RELAXED);
}

static void storage_unref(rc_storage *s)
{
    if (s && __atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL) == 0) {
        free(s->raw);
        free(s);
    }
}

void rc_tensor_init(rc_tensor *t)
{
    memset(t, 0, sizeof *t);
}

void rc_tensor_release(rc_tensor *t)
{
    storage_unref(t->storage);
    rc_tensor_init(t);
}

int64_t rc_tensor_numel(const rc_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->dims[i];
    return n;
}

size_t rc_tensor_nbytes(const rc_tensor *t)
{
    return (size_t)rc_tensor_numel(t) * rc_dtype_size(t->dtype);
}

void *rc_tensor_data(const rc_tensor *t)
{
    if (!t->storage) return NULL;
    return (char *)t->storage->data + t->offset;
}

void rc_tensor_touch(const rc_tensor *t)
{
    if (t->storage) __atomic_add_fetch(&t->storage->writes, 1, __ATOMIC_RELEASE);
}

rc_stamp rc_tensor_stamp(const rc_tensor *t)
{
    rc_stamp s = {0, 0};
    if (t->storage) {
        s.id = t->storage->id;
        s.writes = __atomic_load_n(&t->storage->writes, __ATOMIC_ACQUIRE);
    }
    return s;
}

int64_t rc_dims_prod(const rc_tensor *t, int from, int to)
{
    int64_t n = 1;
    for (int i = from; i < to && i < t->ndim; i++) n *= t->dims[i];
    return n;
}

/* reserve, keep_bytes: see rc_tensor_resize_keep (0 and 0 for the plain resizes). */
static rc_status resize_impl(rc_tensor *t, rc_dtype dt, int ndim, const int64_t *dims, int force_private,
                             size_t reserve, int keep_bytes, rc_err *err)
{
    if (ndim < 0 || ndim > RC_MAX_DIMS)
        return rc_err_set(err, RC_ERR_VALUE, "tensor rank %d is outside [0, %d]", ndim, RC_MAX_DIMS);
    size_t esz = rc_dtype_size(dt);
    if (esz == 0) return rc_err_set(err, RC_ERR_TYPE, "unsupported dtype %d", (int)dt);
    /* overflow-checked byte count; cap at 2^46 bytes (64 TiB). The non-zero dims
     * must multiply to under the cap even when another dim is 0, so that no
     * product of dims taken later (numel, rows x cols in a kernel) can overflow. */
    const uint64_t cap = (uint64_t)1 << 46;
    uint64_t nz = 1;
    int zero = 0;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] < 0) return rc_err_set(err, RC_ERR_VALUE, "negative dimension %lld", (long long)dims[i]);
        if (dims[i] == 0) zero = 1;
        else if (nz > cap / (uint64_t)dims[i]) nz = cap + 1;
        else nz *= (uint64_t)dims[i];
    }
    if (zero && nz > cap)
        return rc_err_set(err, RC_ERR_VALUE,
                          "tensor dims multiply to over 2^46 elements (not counting the zero dims): refused even "
                          "though the tensor is empty");
    uint64_t n = zero ? 0 : nz;
    if (n > cap / esz)
        return rc_err_set(err, RC_ERR_MEMORY, "tensor of %s elements is too large to allocate",
                          n > cap ? "overflowing" : "too many");
    size_t nbytes = (size_t)n * esz;
    size_t old_bytes = t->storage ? rc_tensor_nbytes(t) : 0;
    int keep = 0;
    if (t->storage) {
        size_t avail = t->storage->nbytes - t->offset;
        size_t rc = __atomic_load_n(&t->storage->refcount, __ATOMIC_ACQUIRE);
        if (force_private) keep = (rc == 1 && nbytes <= avail);
        else keep = (nbytes <= avail) && (rc == 1 || nbytes == old_bytes);
    }
    if (!keep) {
        rc_storage *s = storage_new(reserve > nbytes ? reserve : nbytes);
        if (!s)
            return rc_err_set(err, RC_ERR_MEMORY, "cannot allocate %zu bytes", reserve > nbytes ? reserve : nbytes);
        if (keep_bytes && t->storage && (old_bytes < nbytes ? old_bytes : nbytes))
            memcpy(s->data, rc_tensor_data(t), old_bytes < nbytes ? old_bytes : nbytes);
        storage_unref(t->storage);
        t->storage = s;
        t->offset = 0;
    }
    t->dtype = dt;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->dims[i] = dims[i];
    for (int i = ndim; i < RC_MAX_DIMS; i++) t->dims[i] = 0;
    return RC_OK;
}

rc_status rc_tensor_resize(rc_tensor *t, rc_dtype dt, int ndim, const int64_t *dims, rc_err *err)
{
    return resize_impl(t, dt, ndim, dims, 0, 0, 0, err);
}

rc_status rc_tensor_resize_private(rc_tensor *t, rc_dtype dt, int ndim, const int64_t *dims, rc_err *err)
{
    return resize_impl(t, dt, ndim, dims, 1, 0, 0, err);
}

rc_status rc_tensor_resize_keep(rc_tensor *t, rc_dtype dt, int ndim, const int64_t *dims, size_t reserve,
                                rc_err *err)
{
    return resize_impl(t, dt, ndim, dims, 0, reserve, 1, err);
}

rc_status rc_tensor_resize_like(rc_tensor *t, const rc_tensor *like, rc_err *err)
{
    if (t == like) return RC_OK;
    int64_t dims[RC_MAX_DIMS];
    memcpy(dims, like->dims, sizeof dims);
    return resize_impl(t, like->dtype, like->ndim, dims, 0, 0, 0, err);
}

void rc_tensor_view_rows(rc_tensor *dst, const rc_tensor *src, int64_t row0, int64_t nrows)
{
    size_t row_bytes = (size_t)rc_dims_prod(src, 1, src->ndim) * rc_dtype_size(src->dtype);
    rc_storage *s = src->storage;
    storage_ref(s);
    storage_unref(dst->storage);
    dst->storage = s;
    dst->offset = src->offset + (size_t)row0 * row_bytes;
    dst->dtype = src->dtype;
    dst->ndim = src->ndim;
    for (int i = 0; i < RC_MAX_DIMS; i++) dst->dims[i] = src->dims[i];
    dst->dims[0] = nrows;
}

void rc_tensor_share(rc_tensor *dst, const rc_tensor *src)
{
    if (dst == src) return;
    storage_ref(src->storage);
    storage_unref(dst->storage);
    *dst = *src;
}

rc_status rc_tensor_copy(rc_tensor *dst, const rc_tensor *src, rc_err *err)
{
    if (dst == src) return RC_OK;
    if (src->dtype == RC_UNDEF) return rc_err_set(err, RC_ERR_VALUE, "copy from an empty tensor");
    void *sd = rc_tensor_data(src);
    rc_status st = rc_tensor_resize_like(dst, src, err);
    if (st) return st;
    void *dd = rc_tensor_data(dst);
    size_t nb = rc_tensor_nbytes(src);
    if (nb && dd != sd) memmove(dd, sd, nb);
    rc_tensor_touch(dst);
    return RC_OK;
}

int rc_tensor_same_shape(const rc_tensor *a, const rc_tensor *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

const char *rc_shape_str(const rc_tensor *t, char *buf, size_t n)
{
    if (!n) return buf;
    if (t->dtype == RC_UNDEF) {
        snprintf(buf, n, "(empty)");
        return buf;
    }
    size_t k = 0;
    k += (size_t)snprintf(buf + k, n - k, "(");
    for (int i = 0; i < t->ndim && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, i ? ", %lld" : "%lld", (long long)t->dims[i]);
    if (k < n) k += (size_t)snprintf(buf + k, n - k, t->ndim == 1 ? ",) %s" : ") %s", rc_dtype_name(t->dtype));
    buf[n - 1] = 0;
    return buf;
}
