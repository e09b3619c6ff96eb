/* Tensors: resize keep/reallocate rules (rc_core.h), views and aliases that
 * share storage and outlive their source, reference counts, size overflow and
 * huge sizes, zero-size and scalar tensors, copy, write stamps, shape strings. */
#include "rc_test.h"
#include <stdint.h>

static const int64_t D23[] = {2, 3};
static const int64_t D32[] = {3, 2};
static const int64_t D6[] = {6};
static const int64_t D4[] = {4};
static const int64_t D44[] = {4, 4};

static void fill_iota(rc_tensor *t, float base)
{
    float *p = rc_f32(t);
    for (int64_t i = 0; i < rc_tensor_numel(t); i++) p[i] = base + (float)i;
}

static int is_iota(const rc_tensor *t, float base, int64_t n)
{
    const float *p = rc_f32(t);
    for (int64_t i = 0; i < n; i++)
        if (p[i] != base + (float)i) return 0;
    return 1;
}

static int is_zero(const rc_tensor *t)
{
    const unsigned char *p = rc_tensor_data(t);
    for (size_t i = 0; i < rc_tensor_nbytes(t); i++)
        if (p[i]) return 0;
    return 1;
}

static void test_init_and_basic_resize(void)
{
    rc_err err;
    rc_tensor t;
    rc_tensor_init(&t);
    CHECK_EQ(t.dtype, RC_UNDEF);
    CHECK_EQ(t.ndim, 0);
    CHECK(t.storage == NULL);
    CHECK(rc_tensor_data(&t) == NULL);
    CHECK_EQ(rc_tensor_nbytes(&t), 0);

    CHECK_OK(rc_tensor_resize(&t, RC_F32, 2, D23, &err), err);
    CHECK_EQ(t.dtype, RC_F32);
    CHECK_EQ(t.ndim, 2);
    CHECK_EQ(t.dims[0], 2);
    CHECK_EQ(t.dims[1], 3);
    CHECK_EQ(rc_tensor_numel(&t), 6);
    CHECK_EQ(rc_tensor_nbytes(&t), 24);
    REQUIRE(rc_f32(&t) != NULL);
    CHECK_EQ((uintptr_t)rc_tensor_data(&t) % 64, 0);
    CHECK(is_zero(&t)); /* fresh buffers are zero-filled */
    CHECK_EQ(rc_dims_prod(&t, 0, 2), 6);
    CHECK_EQ(rc_dims_prod(&t, 1, 2), 3);
    CHECK_EQ(rc_dims_prod(&t, 1, 1), 1);
    CHECK_EQ(rc_dims_prod(&t, 0, 99), 6); /* clipped at ndim */
    rc_tensor_release(&t);
    CHECK(t.storage == NULL);
    CHECK_EQ(t.dtype, RC_UNDEF);
    CHECK_EQ(t.ndim, 0);
    rc_tensor_release(&t); /* releasing an empty tensor is harmless */

    CHECK_EQ(rc_dtype_size(RC_F32), 4);
    CHECK_EQ(rc_dtype_size(RC_I32), 4);
    CHECK_EQ(rc_dtype_size(RC_UNDEF), 0);
    CHECK(strcmp(rc_dtype_name(RC_F32), "float32") == 0);
    CHECK(strcmp(rc_dtype_name(RC_I32), "int32") == 0);
    CHECK(strcmp(rc_dtype_name((rc_dtype)77), "undefined") == 0);
}

/* Unshared tensor: kept (contents preserved) when the new size fits, else a
 * fresh zero-filled buffer. */
static void test_resize_unshared(void)
{
    rc_err err;
    rc_tensor t;
    rc_tensor_init(&t);
    CHECK_OK(rc_tensor_resize(&t, RC_F32, 2, D23, &err), err);
    fill_iota(&t, 1.f);
    void *p0 = rc_tensor_data(&t);

    CHECK_OK(rc_tensor_resize(&t, RC_F32, 2, D23, &err), err); /* same shape: no allocation */
    CHECK(rc_tensor_data(&t) == p0);
    CHECK(is_iota(&t, 1.f, 6));

    CHECK_OK(rc_tensor_resize(&t, RC_F32, 2, D32, &err), err); /* reshape, same bytes */
    CHECK(rc_tensor_data(&t) == p0);
    CHECK_EQ(t.dims[0], 3);
    CHECK(is_iota(&t, 1.f, 6));

    CHECK_OK(rc_tensor_resize(&t, RC_F32, 1, D4, &err), err); /* smaller: kept */
    CHECK(rc_tensor_data(&t) == p0);
    CHECK_EQ(t.ndim, 1);
    CHECK_EQ(t.dims[1], 0); /* dims past ndim are cleared */
    CHECK(is_iota(&t, 1.f, 4));

    CHECK_OK(rc_tensor_resize(&t, RC_F32, 2, D23, &err), err); /* back up to the storage's size: kept */
    CHECK(rc_tensor_data(&t) == p0);
    CHECK(is_iota(&t, 1.f, 6));

    CHECK_OK(rc_tensor_resize(&t, RC_I32, 2, D23, &err), err); /* dtype change, same bytes: kept */
    CHECK(rc_tensor_data(&t) == p0);
    CHECK_EQ(t.dtype, RC_I32);

    CHECK_OK(rc_tensor_resize(&t, RC_F32, 2, D44, &err), err); /* larger than storage: new, zero */
    CHECK_EQ(rc_tensor_numel(&t), 16);
    CHECK(is_zero(&t));
    rc_tensor_release(&t);
}

/* Shared storage: kept only when the byte size is unchanged (so a resize
 * through a link view keeps writing into the viewed rows); otherwise the
 * resized tensor detaches and the other holder keeps the old data. */
static void test_resize_shared(void)
{
    rc_err err;
    rc_tensor a, b;
    rc_tensor_init(&a);
    rc_tensor_init(&b);
    CHECK_OK(rc_tensor_resize(&a, RC_F32, 2, D23, &err), err);
    fill_iota(&a, 10.f);
    rc_tensor_share(&b, &a);
    CHECK(b.storage == a.storage);
    CHECK(rc_tensor_data(&b) == rc_tensor_data(&a));
    CHECK(rc_tensor_same_shape(&a, &b));
    CHECK_EQ(b.dtype, RC_F32);

    void *p0 = rc_tensor_data(&a);
    CHECK_OK(rc_tensor_resize(&a, RC_F32, 1, D6, &err), err); /* same bytes while shared: kept */
    CHECK(rc_tensor_data(&a) == p0);
    rc_f32(&a)[0] = -1.f;
    CHECK(rc_f32(&b)[0] == -1.f); /* still the same buffer */

    CHECK_OK(rc_tensor_resize(&a, RC_F32, 1, D4, &err), err); /* smaller while shared: detaches */
    CHECK(rc_tensor_data(&a) != p0);
    CHECK(a.storage != b.storage);
    CHECK(is_zero(&a));
    CHECK(rc_f32(&b)[0] == -1.f && rc_f32(&b)[5] == 15.f); /* b untouched */
    CHECK_EQ(b.dims[0], 2);

    /* b is now the only holder again: shrinking it keeps the buffer */
    CHECK_OK(rc_tensor_resize(&b, RC_F32, 1, D4, &err), err);
    CHECK(rc_tensor_data(&b) == p0);

    /* share onto itself is a no-op; share replaces (and drops) the old storage */
    rc_tensor_share(&b, &b);
    CHECK(rc_tensor_data(&b) == p0);
    rc_tensor_share(&b, &a);
    CHECK(b.storage == a.storage);
    rc_tensor_release(&a);
    rc_tensor_release(&b);
}

/* resize_private: always ends with an unshared buffer. Also shows the
 * reference count going back to 1 once every view is released. */
static void test_resize_private_and_refcount(void)
{
    rc_err err;
    rc_tensor a, v[8];
    rc_tensor_init(&a);
    CHECK_OK(rc_tensor_resize(&a, RC_F32, 2, D23, &err), err);
    fill_iota(&a, 0.f);
    void *p0 = rc_tensor_data(&a);
    CHECK_OK(rc_tensor_resize_private(&a, RC_F32, 2, D32, &err), err); /* unshared and fits: kept */
    CHECK(rc_tensor_data(&a) == p0);
    CHECK(is_iota(&a, 0.f, 6));

    for (int i = 0; i < 8; i++) {
        rc_tensor_init(&v[i]);
        rc_tensor_share(&v[i], &a);
    }
    for (int i = 0; i < 7; i++) rc_tensor_release(&v[i]);
    /* one view left: a is still shared, so a private resize must reallocate */
    CHECK_OK(rc_tensor_resize_private(&a, RC_F32, 2, D32, &err), err);
    CHECK(rc_tensor_data(&a) != p0);
    CHECK(rc_tensor_data(&v[7]) == p0);
    CHECK(is_iota(&v[7], 0.f, 6)); /* the view keeps the old contents alive */
    void *p1 = rc_tensor_data(&a);
    rc_tensor_release(&v[7]);

    /* all views of p1's storage: none. Share and drop many times; the count returns to 1 */
    for (int r = 0; r < 100; r++) {
        for (int i = 0; i < 8; i++) rc_tensor_share(&v[i], &a);
        for (int i = 0; i < 8; i++) rc_tensor_release(&v[i]);
    }
    CHECK_OK(rc_tensor_resize_private(&a, RC_F32, 1, D4, &err), err);
    CHECK(rc_tensor_data(&a) == p1);

    /* private resize larger than the storage: fresh buffer */
    CHECK_OK(rc_tensor_resize_private(&a, RC_F32, 2, D44, &err), err);
    CHECK(rc_tensor_data(&a) != p1);
    CHECK(is_zero(&a));
    rc_tensor_release(&a);
}

/* Row views share storage, write through, and survive the release of their
 * source (the storage is reference counted). */
static void test_views(void)
{
    rc_err err;
    rc_tensor src, v, w;
    rc_tensor_init(&src);
    rc_tensor_init(&v);
    rc_tensor_init(&w);
    const int64_t d[] = {4, 3};
    CHECK_OK(rc_tensor_resize(&src, RC_F32, 2, d, &err), err);
    fill_iota(&src, 0.f);

    rc_tensor_view_rows(&v, &src, 1, 2);
    CHECK_EQ(v.ndim, 2);
    CHECK_EQ(v.dims[0], 2);
    CHECK_EQ(v.dims[1], 3);
    CHECK_EQ(v.dtype, RC_F32);
    CHECK(v.storage == src.storage);
    CHECK(rc_f32(&v) == rc_f32(&src) + 3);
    CHECK(is_iota(&v, 3.f, 6));
    rc_f32(&v)[0] = 100.f;
    CHECK(rc_f32(&src)[3] == 100.f);

    /* a view of a view: offsets add up */
    rc_tensor_view_rows(&w, &v, 1, 1);
    CHECK(rc_f32(&w) == rc_f32(&src) + 6);
    CHECK_EQ(w.dims[0], 1);

    /* re-pointing a view drops its old reference */
    rc_tensor_view_rows(&w, &src, 3, 1);
    CHECK(rc_f32(&w) == rc_f32(&src) + 9);

    /* a resize of the view to the same byte size keeps writing into src's rows */
    const int64_t d6[] = {6};
    CHECK_OK(rc_tensor_resize(&v, RC_F32, 1, d6, &err), err);
    CHECK(rc_f32(&v) == rc_f32(&src) + 3);
    /* ... a resize within the remaining storage while shared and of another size detaches */
    const int64_t d2[] = {2};
    CHECK_OK(rc_tensor_resize(&v, RC_F32, 1, d2, &err), err);
    CHECK(v.storage != src.storage);
    CHECK(is_zero(&v));
    CHECK(rc_f32(&src)[3] == 100.f);

    /* the source is released first: the views stay valid */
    rc_tensor_view_rows(&v, &src, 0, 4);
    float *keep = rc_f32(&src);
    rc_tensor_release(&src);
    CHECK(rc_f32(&v) == keep);
    CHECK(rc_f32(&v)[3] == 100.f && rc_f32(&v)[11] == 11.f);
    CHECK(rc_f32(&w)[0] == 9.f);
    rc_f32(&w)[2] = 7.f; /* writes stay in bounds of the shared buffer (ASan) */
    CHECK(rc_f32(&v)[11] == 7.f);

    /* empty views: zero rows at the end of the buffer */
    rc_tensor_view_rows(&w, &v, 4, 0);
    CHECK_EQ(rc_tensor_numel(&w), 0);
    CHECK_EQ(rc_tensor_nbytes(&w), 0);
    rc_tensor_release(&v);
    rc_tensor_release(&w);

    /* a view of a tensor without storage has none either */
    rc_tensor e;
    rc_tensor_init(&e);
    rc_tensor_view_rows(&w, &e, 0, 0);
    CHECK(w.storage == NULL);
    rc_tensor_release(&w);
}

static void test_bad_sizes(void)
{
    rc_err err;
    rc_tensor t;
    rc_tensor_init(&t);
    CHECK_OK(rc_tensor_resize(&t, RC_F32, 2, D23, &err), err);
    fill_iota(&t, 5.f);
    void *p0 = rc_tensor_data(&t);

    int64_t d9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    CHECK_ERR(rc_tensor_resize(&t, RC_F32, 9, d9, &err), RC_ERR_VALUE, err, "rank 9");
    CHECK_ERR(rc_tensor_resize(&t, RC_F32, -1, d9, &err), RC_ERR_VALUE, err, "rank -1");
    const int64_t neg[] = {2, -3};
    CHECK_ERR(rc_tensor_resize(&t, RC_F32, 2, neg, &err), RC_ERR_VALUE, err, "negative dimension -3");
    CHECK_ERR(rc_tensor_resize(&t, RC_UNDEF, 2, D23, &err), RC_ERR_TYPE, err, "unsupported dtype");
    CHECK_ERR(rc_tensor_resize(&t, (rc_dtype)42, 2, D23, &err), RC_ERR_TYPE, err, "unsupported dtype");

    /* element-count overflow of int64 / size_t */
    const int64_t big2[] = {INT64_MAX, INT64_MAX};
    CHECK_ERR(rc_tensor_resize(&t, RC_F32, 2, big2, &err), RC_ERR_MEMORY, err, "too large");
    const int64_t big8[] = {1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20};
    CHECK_ERR(rc_tensor_resize(&t, RC_F32, 8, big8, &err), RC_ERR_MEMORY, err, "too large");
    /* just over the 2^46-byte cap: 2^44 + 1 float32 elements */
    const int64_t over[] = {((int64_t)1 << 44) + 1};
    CHECK_ERR(rc_tensor_resize(&t, RC_F32, 1, over, &err), RC_ERR_MEMORY, err, "too large");
    CHECK_ERR(rc_tensor_resize_private(&t, RC_I32, 1, over, &err), RC_ERR_MEMORY, err, "too large");
    /* an empty tensor still needs its non-zero dims to multiply to <= 2^46, so that
     * no later product of dims (numel, rows x cols) overflows (fuzz finding 9) */
    const int64_t zbig[] = {0, INT64_MAX};
    CHECK_ERR(rc_tensor_resize(&t, RC_F32, 2, zbig, &err), RC_ERR_VALUE, err, "refused even though the tensor is empty");
    const int64_t zbig3[] = {(int64_t)1 << 33, (int64_t)1 << 62, 0};
    CHECK_ERR(rc_tensor_resize(&t, RC_F32, 3, zbig3, &err), RC_ERR_VALUE, err, "over 2^46 elements");
    const int64_t zok[] = {0, (int64_t)1 << 40};
    CHECK_OK(rc_tensor_resize(&t, RC_F32, 2, zok, &err), err);
    CHECK_EQ(rc_tensor_numel(&t), 0);
    CHECK_OK(rc_tensor_resize(&t, RC_F32, 2, D23, &err), err);
    CHECK(rc_tensor_data(&t) == p0);

    /* every failure above left the tensor as it was */
    CHECK_EQ(t.ndim, 2);
    CHECK(is_iota(&t, 5.f, 6));

    /* within the cap but far beyond any machine: malloc fails -> RC_ERR_MEMORY.
     * Only where the kernel refuses such a malloc (overcommit mode 0 or 2);
     * with mode 1 malloc would succeed and the zero-fill would touch 32 TiB. */
    if (rct_huge_alloc_fails()) {
        const int64_t huge[] = {(int64_t)1 << 43};
        CHECK_ERR(rc_tensor_resize(&t, RC_F32, 1, huge, &err), RC_ERR_MEMORY, err, "cannot allocate");
        CHECK_ERR(rc_tensor_resize_private(&t, RC_F32, 1, huge, &err), RC_ERR_MEMORY, err, "cannot allocate");
        CHECK(rc_tensor_data(&t) == p0);
        CHECK(is_iota(&t, 5.f, 6));
    } else {
        fprintf(stderr, "note: vm.overcommit_memory=1, skipping the 32 TiB malloc-failure case\n");
    }
    rc_tensor_release(&t);

    /* err may be NULL */
    CHECK_EQ(rc_tensor_resize(&t, RC_F32, 1, neg + 1, NULL), RC_ERR_VALUE);
}

static void test_zero_size_and_scalar(void)
{
    rc_err err;
    rc_tensor t, c;
    rc_tensor_init(&t);
    rc_tensor_init(&c);
    const int64_t d03[] = {0, 3};
    CHECK_OK(rc_tensor_resize(&t, RC_F32, 2, d03, &err), err);
    CHECK_EQ(rc_tensor_numel(&t), 0);
    CHECK_EQ(rc_tensor_nbytes(&t), 0);
    CHECK(rc_tensor_data(&t) != NULL); /* empty tensors still have a valid pointer */
    CHECK_OK(rc_tensor_copy(&c, &t, &err), err);
    CHECK(rc_tensor_same_shape(&c, &t));
    CHECK_EQ(c.dtype, RC_F32);
    CHECK(strcmp(RC_SHAPE(&t), "(0, 3) float32") == 0);

    /* 0-d (scalar): one element */
    CHECK_OK(rc_tensor_resize(&t, RC_I32, 0, NULL, &err), err);
    CHECK_EQ(t.ndim, 0);
    CHECK_EQ(rc_tensor_numel(&t), 1);
    CHECK_EQ(rc_tensor_nbytes(&t), 4);
    rc_i32(&t)[0] = 42;
    CHECK_OK(rc_tensor_copy(&c, &t, &err), err);
    CHECK_EQ(rc_i32(&c)[0], 42);
    CHECK_EQ(c.ndim, 0);
    CHECK(strcmp(RC_SHAPE(&c), "() int32") == 0);

    /* growing from an empty buffer */
    CHECK_OK(rc_tensor_resize(&t, RC_F32, 2, D44, &err), err);
    CHECK(is_zero(&t));
    rc_tensor_release(&t);
    rc_tensor_release(&c);
}

static void test_copy(void)
{
    rc_err err;
    rc_tensor a, b, e, st, v;
    rc_tensor_init(&a);
    rc_tensor_init(&b);
    rc_tensor_init(&e);
    rc_tensor_init(&st);
    rc_tensor_init(&v);
    CHECK_ERR(rc_tensor_copy(&b, &e, &err), RC_ERR_VALUE, err, "empty tensor");
    CHECK(b.storage == NULL);

    CHECK_OK(rc_tensor_resize(&a, RC_F32, 2, D23, &err), err);
    fill_iota(&a, 1.f);
    CHECK_OK(rc_tensor_copy(&b, &a, &err), err);
    CHECK(rc_tensor_same_shape(&a, &b));
    CHECK(b.storage != a.storage);
    CHECK(is_iota(&b, 1.f, 6));
    void *pb = rc_tensor_data(&b);
    fill_iota(&a, 2.f);
    CHECK_OK(rc_tensor_copy(&b, &a, &err), err); /* sized already: no allocation */
    CHECK(rc_tensor_data(&b) == pb);
    CHECK(is_iota(&b, 2.f, 6));
    CHECK_OK(rc_tensor_copy(&a, &a, &err), err); /* self copy: no-op */
    CHECK(is_iota(&a, 2.f, 6));

    /* copying into a row view of a state tensor writes into the state */
    const int64_t d[] = {3, 2, 3};
    CHECK_OK(rc_tensor_resize(&st, RC_F32, 3, d, &err), err);
    rc_tensor_view_rows(&v, &st, 1, 1);
    const int64_t d123[] = {1, 2, 3};
    CHECK_OK(rc_tensor_resize(&v, RC_F32, 3, d123, &err), err);
    CHECK_OK(rc_tensor_copy(&v, &b, &err), err); /* (2,3) into a (1,2,3) view: same bytes */
    CHECK(v.storage == st.storage);
    CHECK(rc_f32(&st)[6] == 2.f && rc_f32(&st)[11] == 7.f);
    CHECK(rc_f32(&st)[5] == 0.f && rc_f32(&st)[12] == 0.f);
    CHECK_EQ(v.ndim, 2); /* the copy takes the source's shape */

    /* overlapping copy within one storage (alias) */
    rc_tensor_share(&e, &st);
    CHECK_OK(rc_tensor_copy(&e, &st, &err), err);

    /* resize_like */
    CHECK_OK(rc_tensor_resize_like(&e, &a, &err), err);
    CHECK(rc_tensor_same_shape(&e, &a));
    CHECK_OK(rc_tensor_resize_like(&e, &e, &err), err);

    rc_tensor_release(&a);
    rc_tensor_release(&b);
    rc_tensor_release(&e);
    rc_tensor_release(&st);
    rc_tensor_release(&v);
}

/* rc_tensor_stamp: equal stamps only while nothing recorded a write; a new
 * storage (even at a freed one's address) never repeats an old stamp. */
static void test_write_stamps(void)
{
    rc_err err;
    rc_tensor a, b, v;
    rc_tensor_init(&a);
    rc_tensor_init(&b);
    rc_tensor_init(&v);
    rc_stamp none = rc_tensor_stamp(&a);
    CHECK(none.id == 0 && none.writes == 0);
    rc_tensor_touch(&a); /* no storage: nothing to record, no crash */

    CHECK_OK(rc_tensor_resize(&a, RC_F32, 2, D23, &err), err);
    rc_stamp s0 = rc_tensor_stamp(&a);
    CHECK(s0.id != 0);
    CHECK(rc_stamp_eq(s0, rc_tensor_stamp(&a)));
    rc_tensor_touch(&a);
    rc_stamp s1 = rc_tensor_stamp(&a);
    CHECK(s1.id == s0.id && s1.writes == s0.writes + 1 && !rc_stamp_eq(s0, s1));

    /* a resize that keeps the buffer keeps the stamp (no bytes written) */
    CHECK_OK(rc_tensor_resize(&a, RC_F32, 2, D32, &err), err);
    CHECK(rc_stamp_eq(s1, rc_tensor_stamp(&a)));

    /* views share the storage's stamp both ways */
    rc_tensor_view_rows(&v, &a, 1, 1);
    CHECK(rc_stamp_eq(s1, rc_tensor_stamp(&v)));
    rc_tensor_touch(&v);
    CHECK(!rc_stamp_eq(s1, rc_tensor_stamp(&a)));
    rc_stamp s2 = rc_tensor_stamp(&a);

    /* rc_tensor_copy records its write on the destination */
    CHECK_OK(rc_tensor_copy(&b, &a, &err), err);
    rc_stamp sb = rc_tensor_stamp(&b);
    CHECK(sb.id != s2.id);
    CHECK_OK(rc_tensor_copy(&b, &a, &err), err); /* same size: buffer kept, write recorded */
    CHECK(rc_tensor_stamp(&b).id == sb.id && rc_tensor_stamp(&b).writes == sb.writes + 1);
    CHECK(rc_stamp_eq(s2, rc_tensor_stamp(&a)));  /* the source is only read */

    /* freed and allocated again, maybe at the same address: a new id */
    uint64_t ids[8];
    for (int i = 0; i < 8; i++) {
        rc_tensor_release(&b);
        CHECK_OK(rc_tensor_resize(&b, RC_F32, 2, D23, &err), err);
        ids[i] = rc_tensor_stamp(&b).id;
        CHECK(ids[i] != s2.id && ids[i] != sb.id);
        for (int j = 0; j < i; j++) CHECK(ids[j] != ids[i]);
    }
    /* a resize that reallocates gives a new id too */
    const int64_t big[] = {64, 64};
    uint64_t before = rc_tensor_stamp(&b).id;
    CHECK_OK(rc_tensor_resize(&b, RC_F32, 2, big, &err), err);
    CHECK(rc_tensor_stamp(&b).id != before);

    rc_tensor_release(&a);
    rc_tensor_release(&b);
    rc_tensor_release(&v);
}

static void test_shape_str(void)
{
    rc_err err;
    rc_tensor t;
    rc_tensor_init(&t);
    CHECK(strcmp(RC_SHAPE(&t), "(empty)") == 0);
    CHECK_OK(rc_tensor_resize(&t, RC_F32, 2, D23, &err), err);
    CHECK(strcmp(RC_SHAPE(&t), "(2, 3) float32") == 0);
    const int64_t d3[] = {3};
    CHECK_OK(rc_tensor_resize(&t, RC_I32, 1, d3, &err), err);
    CHECK(strcmp(RC_SHAPE(&t), "(3,) int32") == 0);

    /* long shapes are truncated, never overflow */
    t.ndim = 8;
    for (int i = 0; i < 8; i++) t.dims[i] = INT64_MAX;
    const char *s = RC_SHAPE(&t);
    CHECK(strlen(s) == 95);
    char small[5];
    memset(small, 'x', sizeof small);
    rc_shape_str(&t, small, sizeof small);
    CHECK(small[4] == 0 && strcmp(small, "(922") == 0);
    char one[1] = {'x'};
    rc_shape_str(&t, one, 1);
    CHECK(one[0] == 0);
    rc_shape_str(&t, one, 0); /* n == 0: nothing written */
    t.ndim = 1;
    t.dims[0] = 3;
    rc_tensor_release(&t);
}

static void test_errors(void)
{
    rc_err err;
    rc_err_clear(&err);
    CHECK_EQ(err.code, RC_OK);
    CHECK_EQ(rc_err_set(&err, RC_ERR_INDEX, "blob '%s' row %d", "h", 7), RC_ERR_INDEX);
    CHECK(strcmp(err.msg, "blob 'h' row 7") == 0);
    rc_err_prefix(&err, "op %s #%d: ", "FC", 3);
    CHECK(strcmp(err.msg, "op FC #3: blob 'h' row 7") == 0);
    CHECK_EQ(err.code, RC_ERR_INDEX);
    /* over-long messages are truncated and stay terminated */
    char big[3 * RC_ERR_LEN];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    rc_err_set(&err, RC_ERR_VALUE, "%s", big);
    CHECK_EQ(strlen(err.msg), RC_ERR_LEN - 1);
    rc_err_prefix(&err, "%s", big);
    CHECK_EQ(strlen(err.msg), RC_ERR_LEN - 1);
    CHECK_EQ(rc_err_set(NULL, RC_ERR_KEY, "x"), RC_ERR_KEY);
    rc_err_prefix(NULL, "x");
    rc_err_clear(NULL);
}

int main(void)
{
    RUN(test_init_and_basic_resize);
    RUN(test_resize_unshared);
    RUN(test_resize_shared);
    RUN(test_resize_private_and_refcount);
    RUN(test_views);
    RUN(test_bad_sizes);
    RUN(test_zero_size_and_scalar);
    RUN(test_copy);
    RUN(test_write_stamps);
    RUN(test_shape_str);
    RUN(test_errors);
    return TEST_REPORT();
}
