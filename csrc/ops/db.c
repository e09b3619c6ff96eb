/* ops/db.c -- checkpoints in Caffe2's minidb format.
 *
 *   Save(X, ...) -> ()              writes the tensors X, ... to a minidb file
 *   Load([READER, ...]) -> (Y, ...) reads tensors back (from `db` / `dbs`, or from readers)
 *   CreateDB() -> READER            an opaque DBReader blob naming an open minidb file
 *
 * The file format is Caffe2's (core/db.cc MiniDB): a sequence of records
 *   [uint32 key length][uint32 value length][key bytes][value bytes]
 * with the lengths in native byte order. Each value is a serialized BlobProto
 * (proto/caffe2.proto) of type "Tensor" holding a TensorProto; each tensor is
 * stored in chunks of `chunk_size` elements (default 1000000, Caffe2's
 * caffe2_tensor_chunk_size), one record per chunk with key
 * "<name>#%<chunk index>" and a Segment [begin, end) saying where the chunk's
 * elements go. Save writes what Caffe2's TensorSerializer writes, field for
 * field: dims, data_type, float_data or int32_data (packed), name,
 * device_detail {device_type: CPU}, segment. Load reads packed and unpacked
 * repeated fields, raw_data, and the Caffe2 dtypes it can hold without loss of
 * meaning: FLOAT and INT32 as they are, INT64 into int32 (every value range
 * checked), DOUBLE into float32 (rounded; a finite value beyond float32's range
 * is an error), BOOL into int32 0/1. Other dtypes are refused naming the blob
 * and the dtype.
 *
 * Protobuf wire format is written and read here directly (varints, fixed32/64,
 * length-delimited, packed repeated), for these messages only. Every length
 * is checked against the bytes actually present before it is used; a
 * tensor's element count is capped by the bytes of the files being read
 * (every element costs at least one byte), so a corrupt file gives an error
 * naming the op, the file, the record and the key, never a crash or a huge
 * allocation. Unknown fields are skipped; groups (wire types 3, 4) and a known
 * field with an unexpected wire type are refused.
 *
 * Arguments (as Caffe2's load_save_op):
 *   Save: db, db_type ('minidb' only), absolute_path (0, the default: a
 *     relative path is under the workspace's root folder, rc_ws_path; an
 *     absolute one is used as given, where Caffe2 prefixed the root folder to
 *     it too), strip_prefix, blob_name_overrides,
 *     chunk_size (-1, the default: 1000000 elements per chunk; 0 one chunk
 *     per tensor; as Caffe2's Save argument, kDefaultChunkSize = -1 and
 *     kNoChunking = 0 -- newer Caffe2 swapped them in BlobSerializationOptions
 *     but kept this argument's meaning).
 *   Load: db or dbs, db_type, absolute_path, add_prefix, strip_prefix,
 *     source_blob_names, load_all, allow_incomplete, keep_device (accepted;
 *     everything is on the CPU).
 *   CreateDB: db, db_type. The file is opened when CreateDB runs; Load reads
 *     it from its start at every run (Caffe2's cursor kept its position, so a
 *     second Load from one reader saw nothing).
 * Differences from Caffe2 (doing better where it was loose):
 *  - Load is all or nothing: data are assembled in fresh tensors and moved
 *    into the blobs only when every record needed was read and checked;
 *  - chunks of one blob must agree on dims and dtype and must not overlap
 *    (Caffe2 only added up their sizes);
 *  - Save refuses blob names containing "#%" (Load would cut them there) and
 *    empty names, checks every input before it opens the file, and removes
 *    the file when a write fails;
 *  - records with lengths past the end of the file are errors (Caffe2's
 *    cursor could read garbage).
 * Nothing here keeps global state; op instances may run concurrently. */
#include "../core/rc_core.h"
#include "counter.h"
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK_SEP "#%"
#define CHUNK_SEP_FMT "#%%" /* the same inside a printf format */
#define DEFAULT_CHUNK 1000000

/* TensorProto.DataType values */
enum { DT_UNDEFINED = 0, DT_FLOAT = 1, DT_INT32 = 2, DT_BYTE = 3, DT_STRING = 4, DT_BOOL = 5, DT_UINT8 = 6,
       DT_INT8 = 7, DT_UINT16 = 8, DT_INT16 = 9, DT_INT64 = 10, DT_FLOAT16 = 12, DT_DOUBLE = 13 };

static const char *caffe2_dtype_name(int64_t dt)
{
    switch (dt) {
    case DT_UNDEFINED: return "UNDEFINED";
    case DT_FLOAT: return "FLOAT";
    case DT_INT32: return "INT32";
    case DT_BYTE: return "BYTE";
    case DT_STRING: return "STRING";
    case DT_BOOL: return "BOOL";
    case DT_UINT8: return "UINT8";
    case DT_INT8: return "INT8";
    case DT_UINT16: return "UINT16";
    case DT_INT16: return "INT16";
    case DT_INT64: return "INT64";
    case DT_FLOAT16: return "FLOAT16";
    case DT_DOUBLE: return "DOUBLE";
    default: return "unknown";
    }
}

/* s made printable ASCII for messages: bytes outside 0x20..0x7e as \xNN, cut
 * with "..." at cap; returns buf. Message text must be valid UTF-8 for Python
 * and keys read from a file need not be. */
static const char *esc_str(const char *s, char *buf, size_t cap)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (o + 8 >= cap) { memcpy(buf + o, "...", 4); return buf; }
        if (*p >= 0x20 && *p < 0x7f && *p != '\\') buf[o++] = (char)*p;
        else o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", *p);
    }
    buf[o] = 0;
    return buf;
}
#define ESC(s) esc_str((s), (char[240]){0}, 240)

/* 1 when s[0..n) is well-formed UTF-8 without NUL bytes */
static int valid_utf8(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c == 0) return 0;
        if (c < 0x80) { i++; continue; }
        const size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        if (!len || n - i < len) return 0;
        unsigned cp = c & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return 0;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if (len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) return 0;
        if (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) return 0;
        i += len;
    }
    return 1;
}

/* The object a CreateDB output blob holds (blob->obj, kind dbreader_kind). */
static const char dbreader_kind[] = "DBReader";
typedef struct dbreader {
    int fd;      /* open read-only, closed by dbreader_free */
    char *path;  /* owned */
} dbreader;

static void dbreader_free(void *p)
{
    dbreader *r = p;
    if (!r) return;
    if (r->fd >= 0) close(r->fd);
    free(r->path);
    free(r);
}

static rc_status check_db_type(rc_op *op, rc_err *err)
{
    const char *t = NULL;
    rc_status st = rc_arg_s(&op->def, "db_type", "", &t, err);
    if (st) return st;
    if (strcmp(t, "minidb") != 0)
        return rc_op_fail(op, err, RC_ERR_VALUE, "db_type '%s' is not supported: only 'minidb' is%s", ESC(t),
                          t[0] ? "" : " (give db_type='minidb')");
    return RC_OK;
}

/* ================================================================ protobuf writing */

/* A growable byte buffer; oom is set (and later writes ignored) when an allocation fails. */
typedef struct pbuf {
    uint8_t *p;  /* owned */
    size_t n, cap;
    int oom;
} pbuf;

static int pb_reserve(pbuf *b, size_t more)
{
    if (b->oom) return -1;
    if (more > SIZE_MAX / 2 - b->n) { b->oom = 1; return -1; }
    if (b->n + more <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) { b->oom = 1; return -1; }
    b->p = p;
    b->cap = cap;
    return 0;
}

static void pb_raw(pbuf *b, const void *d, size_t n)
{
    if (n == 0 || pb_reserve(b, n)) return;
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static size_t varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
}

static void pb_varint(pbuf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    while (v >= 0x80) { tmp[n++] = (uint8_t)(v | 0x80); v >>= 7; }
    tmp[n++] = (uint8_t)v;
    pb_raw(b, tmp, n);
}

static void pb_tag(pbuf *b, unsigned field, unsigned wt) { pb_varint(b, ((uint64_t)field << 3) | wt); }

static void pb_lenbytes(pbuf *b, unsigned field, const void *d, size_t n)
{
    pb_tag(b, field, 2);
    pb_varint(b, n);
    pb_raw(b, d, n);
}

/* TensorProto of elements [begin, begin + n) of x (Caffe2's TensorSerializer layout). */
static void encode_tensor_chunk(pbuf *b, const rc_tensor *x, const char *name, int64_t begin, int64_t n)
{
    for (int d = 0; d < x->ndim; d++) { pb_tag(b, 1, 0); pb_varint(b, (uint64_t)x->dims[d]); }
    pb_tag(b, 2, 0);
    pb_varint(b, x->dtype == RC_F32 ? DT_FLOAT : DT_INT32);
    if (n > 0 && x->dtype == RC_F32) {
        const float *v = rc_f32(x) + begin;
        pb_tag(b, 3, 2);
        pb_varint(b, (uint64_t)n * 4);
        if (pb_reserve(b, (size_t)n * 4) == 0) {
            uint8_t *o = b->p + b->n;
            for (int64_t i = 0; i < n; i++) {  /* little-endian fixed32, whatever the host order */
                uint32_t u;
                memcpy(&u, v + i, 4);
                o[4 * i] = (uint8_t)u; o[4 * i + 1] = (uint8_t)(u >> 8);
                o[4 * i + 2] = (uint8_t)(u >> 16); o[4 * i + 3] = (uint8_t)(u >> 24);
            }
            b->n += (size_t)n * 4;
        }
    } else if (n > 0) {
        const int32_t *v = rc_i32(x) + begin;
        size_t len = 0;  /* int32 varints: negative values sign-extended to 64 bits (10 bytes) */
        for (int64_t i = 0; i < n; i++) len += varint_size((uint64_t)(int64_t)v[i]);
        pb_tag(b, 4, 2);
        pb_varint(b, len);
        if (pb_reserve(b, len) == 0)
            for (int64_t i = 0; i < n; i++) pb_varint(b, (uint64_t)(int64_t)v[i]);
    }
    pb_lenbytes(b, 7, name, strlen(name));
    static const uint8_t cpu_device[2] = {0x08, 0x00};  /* DeviceOption{device_type: 0} */
    pb_lenbytes(b, 8, cpu_device, sizeof cpu_device);
    pb_tag(b, 11, 2);
    pb_varint(b, varint_size((uint64_t)begin) + varint_size((uint64_t)(begin + n)) + 2);
    pb_tag(b, 1, 0);
    pb_varint(b, (uint64_t)begin);
    pb_tag(b, 2, 0);
    pb_varint(b, (uint64_t)(begin + n));
}

/* The TensorProto of a Counter's count, as Caffe2's CounterSerializer wrote it: data_type INT64, no dims,
 * int64_data [count]. */
static void encode_count(pbuf *b, int32_t count)
{
    pb_tag(b, 2, 0);
    pb_varint(b, DT_INT64);
    pb_tag(b, 10, 2);
    pb_varint(b, varint_size((uint64_t)(int64_t)count));
    pb_varint(b, (uint64_t)(int64_t)count);
}

/* ================================================================ protobuf reading */

/* A bounds-checked reader over [p, end). Every function returns 0 or -1 with
 * *why set to a static description. */
typedef struct pbr {
    const uint8_t *p, *end;
} pbr;

static int pr_varint(pbr *r, uint64_t *v, const char **why)
{
    uint64_t x = 0;
    for (int s = 0; s < 70; s += 7) {
        if (r->p >= r->end) { *why = "varint runs past the end of its message"; return -1; }
        uint8_t c = *r->p++;
        x |= (uint64_t)(c & 0x7f) << s;
        if (!(c & 0x80)) { *v = x; return 0; }
        if (s == 63) break;
    }
    *why = "varint longer than 10 bytes";
    return -1;
}

typedef struct pfield {
    unsigned field, wt;
    uint64_t u;              /* wire types 0, 1, 5 */
    const uint8_t *d;        /* wire type 2: data span */
    size_t n;
} pfield;

/* Reads the next field (tag and value) */
static int pr_field(pbr *r, pfield *f, const char **why)
{
    uint64_t tag;
    if (pr_varint(r, &tag, why)) return -1;
    f->field = (unsigned)(tag >> 3);
    f->wt = (unsigned)(tag & 7);
    if ((tag >> 3) == 0 || (tag >> 3) > 536870911u) { *why = "invalid field number"; return -1; }
    switch (f->wt) {
    case 0: return pr_varint(r, &f->u, why);
    case 1:
        if (r->end - r->p < 8) { *why = "fixed64 runs past the end of its message"; return -1; }
        f->u = 0;
        for (int i = 7; i >= 0; i--) f->u = (f->u << 8) | r->p[i];
        r->p += 8;
        return 0;
    case 5:
        if (r->end - r->p < 4) { *why = "fixed32 runs past the end of its message"; return -1; }
        f->u = (uint64_t)r->p[0] | (uint64_t)r->p[1] << 8 | (uint64_t)r->p[2] << 16 | (uint64_t)r->p[3] << 24;
        r->p += 4;
        return 0;
    case 2: {
        uint64_t len;
        if (pr_varint(r, &len, why)) return -1;
        if (len > (uint64_t)(r->end - r->p)) {
            *why = "length-delimited field runs past the end of its message";
            return -1;
        }
        f->d = r->p;
        f->n = (size_t)len;
        r->p += len;
        return 0;
    }
    default:
        *why = "unsupported wire type (groups 3/4 or invalid 6/7)";
        return -1;
    }
}

/* What pass 1 learns of a TensorProto. */
typedef struct tinfo {
    int ndim;
    int64_t dims[RC_MAX_DIMS];
    int64_t data_type, data_format;
    int has_seg;
    int64_t seg_begin, seg_end;
    /* element counts of the repeated data fields */
    int64_t n_float, n_i32, n_i64, n_double, n_string;
    const uint8_t *byte_data, *raw_data;  /* last occurrence (NULL if absent) */
    size_t n_byte_data, n_raw_data;
    int has_byte_data, has_raw_data;
} tinfo;

/* Number of varints in a packed span, each validated. */
static int count_varints(const uint8_t *d, size_t n, int64_t *count, const char **why)
{
    pbr r = {d, d + n};
    uint64_t v;
    while (r.p < r.end) {
        if (pr_varint(&r, &v, why)) return -1;
        (*count)++;
    }
    return 0;
}

static int want_wt(const pfield *f, unsigned a, unsigned b, const char **why)
{
    if (f->wt == a || f->wt == b) return 0;
    *why = "a known TensorProto field has an unexpected wire type";
    return -1;
}

/* A repeated fixed-width field: one element (wire type fixed_wt) or a packed
 * span (wire type 2) of `size`-byte elements; adds their number to *count. */
static int count_fixed(const pfield *f, unsigned fixed_wt, size_t size, int64_t *count, const char *bad_len,
                       const char **why)
{
    if (want_wt(f, fixed_wt, 2, why)) return -1;
    if (f->wt == fixed_wt) {
        (*count)++;
        return 0;
    }
    if (f->n % size) {
        *why = bad_len;
        return -1;
    }
    *count += (int64_t)(f->n / size);
    return 0;
}

/* A repeated varint field: one element (wire type 0) or a packed span. */
static int count_varint_field(const pfield *f, int64_t *count, const char **why)
{
    if (want_wt(f, 0, 2, why)) return -1;
    if (f->wt == 0) {
        (*count)++;
        return 0;
    }
    return count_varints(f->d, f->n, count, why);
}

static int parse_tensor_pass1(const uint8_t *d, size_t n, tinfo *ti, const char **why)
{
    memset(ti, 0, sizeof *ti);
    ti->data_type = DT_FLOAT;  /* proto2 default */
    pbr r = {d, d + n};
    pfield f;
    while (r.p < r.end) {
        if (pr_field(&r, &f, why)) return -1;
        switch (f.field) {
        case 1: /* dims */
            if (want_wt(&f, 0, 2, why)) return -1;
            if (f.wt == 0) {
                if (ti->ndim >= RC_MAX_DIMS) { *why = "more than 8 dims"; return -1; }
                ti->dims[ti->ndim++] = (int64_t)f.u;
            } else {
                pbr q = {f.d, f.d + f.n};
                uint64_t v;
                while (q.p < q.end) {
                    if (pr_varint(&q, &v, why)) return -1;
                    if (ti->ndim >= RC_MAX_DIMS) { *why = "more than 8 dims"; return -1; }
                    ti->dims[ti->ndim++] = (int64_t)v;
                }
            }
            break;
        case 2:
            if (want_wt(&f, 0, 0, why)) return -1;
            ti->data_type = (int64_t)f.u;
            break;
        case 3:
            if (count_fixed(&f, 5, 4, &ti->n_float, "packed float_data length is not a multiple of 4", why))
                return -1;
            break;
        case 4:
            if (count_varint_field(&f, &ti->n_i32, why)) return -1;
            break;
        case 5:
            if (want_wt(&f, 2, 2, why)) return -1;
            ti->byte_data = f.d; ti->n_byte_data = f.n; ti->has_byte_data = 1;
            break;
        case 6:
            if (want_wt(&f, 2, 2, why)) return -1;
            ti->n_string++;
            break;
        case 9:
            if (count_fixed(&f, 1, 8, &ti->n_double, "packed double_data length is not a multiple of 8", why))
                return -1;
            break;
        case 10:
            if (count_varint_field(&f, &ti->n_i64, why)) return -1;
            break;
        case 11: { /* Segment: merged field by field, as protobuf merges repeated sub-messages */
            if (want_wt(&f, 2, 2, why)) return -1;
            pbr q = {f.d, f.d + f.n};
            pfield g;
            if (!ti->has_seg) { ti->seg_begin = 0; ti->seg_end = 0; }
            ti->has_seg = 1;
            while (q.p < q.end) {
                if (pr_field(&q, &g, why)) return -1;
                if ((g.field == 1 || g.field == 2) && g.wt != 0) {
                    *why = "segment field with a wrong wire type";
                    return -1;
                }
                if (g.field == 1) ti->seg_begin = (int64_t)g.u;
                else if (g.field == 2) ti->seg_end = (int64_t)g.u;
            }
            break;
        }
        case 13:
            if (want_wt(&f, 2, 2, why)) return -1;
            ti->raw_data = f.d; ti->n_raw_data = f.n; ti->has_raw_data = 1;
            break;
        case 15:
            if (want_wt(&f, 0, 0, why)) return -1;
            ti->data_format = (int64_t)f.u;
            break;
        case 7: case 8:
            if (want_wt(&f, 2, 2, why)) return -1;
            break;
        default: break;  /* unknown: already skipped by pr_field */
        }
    }
    return 0;
}

/* ================================================================ minidb reading */

/* One Load run's state. */
typedef struct lblob {
    char *name;             /* owned: the blob name the data go to */
    int out;                /* output index, -1 for load_all blobs that are no output */
    int db;                 /* index of the db it came from */
    rc_blob *blob;          /* destination, resolved before commit */
    rc_tensor t;            /* assembled data (owned reference) */
    int64_t numel, filled;
    int64_t *seg;           /* owned: [begin, end) pairs seen */
    int nseg, capseg;
    int is_counter;         /* a serialized Counter: t is its int32 count, of shape () */
    void *counter;          /* owned until the commit: the new Counter (rc_counter_new) */
} lblob;

typedef struct lctx {
    rc_op *op;
    const char *add_prefix, *strip_prefix;
    char *const *src_names; /* what each output is called in the file */
    int n_src;
    int load_all;
    int64_t cap_elems;      /* bytes of the files read: the most elements a tensor may claim */
    lblob *b;               /* owned */
    int nb, capb;
    int complete_outputs;   /* outputs fully read (not load_all: stop when all are) */
    /* the record being read, for messages */
    const char *path;
    long long rec, rec_off;
    const char *key;
} lctx;

static rc_status rec_fail(lctx *c, rc_err *err, rc_status code, const char *fmt, ...) RC_PRINTF(4, 5);
static rc_status rec_fail(lctx *c, rc_err *err, rc_status code, const char *fmt, ...)
{
    char body[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    if (c->key)
        return rc_op_fail(c->op, err, code, "file '%s' record %lld (key '%s', at byte %lld): %s", ESC(c->path),
                          c->rec, ESC(c->key), c->rec_off, body);
    return rc_op_fail(c->op, err, code, "file '%s' record %lld (at byte %lld): %s", ESC(c->path), c->rec, c->rec_off,
                      body);
}

static void lctx_free(lctx *c)
{
    for (int i = 0; i < c->nb; i++) {
        free(c->b[i].name);
        free(c->b[i].seg);
        free(c->b[i].counter);
        rc_tensor_release(&c->b[i].t);
    }
    free(c->b);
    c->b = NULL;
    c->nb = c->capb = 0;
}

static lblob *find_lblob(lctx *c, const char *name)
{
    for (int i = 0; i < c->nb; i++)
        if (strcmp(c->b[i].name, name) == 0) return &c->b[i];
    return NULL;
}

/* The blob name of a db key: cut at "#%", strip_prefix removed with what
 * precedes it (its first occurrence), add_prefix prepended. Owned; NULL on OOM. */
static char *blob_name_of_key(const char *key, const char *strip, const char *add)
{
    size_t klen = strlen(key);
    const char *sep = strstr(key, CHUNK_SEP);
    if (sep) klen = (size_t)(sep - key);
    const char *k = key;
    if (strip[0]) {
        const char *m = NULL;
        /* search within the first klen bytes */
        for (size_t i = 0; i + strlen(strip) <= klen; i++)
            if (strncmp(key + i, strip, strlen(strip)) == 0) { m = key + i; break; }
        if (m) { klen -= (size_t)(m + strlen(strip) - key); k = m + strlen(strip); }
    }
    size_t alen = strlen(add);
    char *s = malloc(alen + klen + 1);
    if (!s) return NULL;
    memcpy(s, add, alen);
    memcpy(s + alen, k, klen);
    s[alen + klen] = 0;
    return s;
}

/* Output index whose source name is name, or -1. */
static int output_of(const lctx *c, const char *name)
{
    for (int i = 0; i < c->op->n_out; i++) {
        const char *src = c->n_src ? c->src_names[i] : rc_out_name(c->op, i);
        if (strcmp(src, name) == 0) return i;
    }
    return -1;
}

static int read_full(int fd, void *buf, size_t n, off_t off)
{
    uint8_t *p = buf;
    while (n > 0) {
        ssize_t k = pread(fd, p, n, off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) { if (k == 0) errno = EIO; return -1; }
        p += k; n -= (size_t)k; off += k;
    }
    return 0;
}

/* Pass 2: writes the chosen data field's elements to dst (count elements). */
static rc_status fill_data(lctx *c, lblob *lb, const uint8_t *msg, size_t n, const tinfo *ti, int64_t begin,
                           int64_t count, rc_err *err)
{
    const int64_t dt = ti->data_type;
    const char *ename = ESC(lb->name);
    float *fo = lb->t.dtype == RC_F32 ? rc_f32(&lb->t) + begin : NULL;
    int32_t *io = lb->t.dtype == RC_I32 ? rc_i32(&lb->t) + begin : NULL;
    const char *why = NULL;
    int64_t k = 0;
    /* raw_data / byte_data: fixed-size little-endian elements */
    int use_raw = 0, use_bytes = 0;
    if (dt == DT_BOOL && ti->has_byte_data) use_bytes = 1;
    else if (ti->has_raw_data && (dt == DT_FLOAT || dt == DT_INT32 || dt == DT_INT64 || dt == DT_DOUBLE))
        use_raw = 1;
    if (use_bytes) {
        for (k = 0; k < count; k++) io[k] = ti->byte_data[k] != 0;
        return RC_OK;
    }
    if (use_raw) {
        const uint8_t *p = ti->raw_data;
        for (k = 0; k < count; k++) {
            if (dt == DT_FLOAT || dt == DT_INT32) {
                uint32_t u = (uint32_t)p[4 * k] | (uint32_t)p[4 * k + 1] << 8 | (uint32_t)p[4 * k + 2] << 16 |
                             (uint32_t)p[4 * k + 3] << 24;
                if (fo) memcpy(fo + k, &u, 4);
                else memcpy(io + k, &u, 4);
            } else {
                uint64_t u = 0;
                for (int j = 7; j >= 0; j--) u = (u << 8) | p[8 * k + j];
                if (dt == DT_INT64) {
                    int64_t v = (int64_t)u;
                    if (v < INT32_MIN || v > INT32_MAX)
                        return rec_fail(c, err, RC_ERR_VALUE,
                                        "blob '%s': INT64 value %lld at element %lld does not fit in int32",
                                        ename, (long long)v, (long long)(begin + k));
                    io[k] = (int32_t)v;
                } else {
                    double v;
                    memcpy(&v, &u, 8);
                    float fv = (float)v;
                    if (isfinite(v) && !isfinite(fv))
                        return rec_fail(c, err, RC_ERR_VALUE,
                                        "blob '%s': DOUBLE value %g at element %lld is beyond float32's range",
                                        ename, v, (long long)(begin + k));
                    fo[k] = fv;
                }
            }
        }
        return RC_OK;
    }
    unsigned want = dt == DT_FLOAT ? 3 : dt == DT_INT32 || dt == DT_BOOL ? 4 : dt == DT_INT64 ? 10 : 9;
    pbr r = {msg, msg + n};
    pfield f;
    while (r.p < r.end) {
        if (pr_field(&r, &f, &why)) return rec_fail(c, err, RC_ERR_VALUE, "corrupt TensorProto: %s", why);
        if (f.field != want) continue;
        int packed = f.wt == 2;
        /* f.d is NULL for a value that is not packed (and NULL + 0 is undefined in C) */
        pbr q = {packed ? f.d : NULL, packed ? f.d + f.n : NULL};
        for (;;) {
            uint64_t u;
            if (packed) {
                if (q.p >= q.end) break;
                if (want == 3) {
                    u = (uint64_t)q.p[0] | (uint64_t)q.p[1] << 8 | (uint64_t)q.p[2] << 16 | (uint64_t)q.p[3] << 24;
                    q.p += 4;
                } else if (want == 9) {
                    u = 0;
                    for (int j = 7; j >= 0; j--) u = (u << 8) | q.p[j];
                    q.p += 8;
                } else if (pr_varint(&q, &u, &why)) {
                    return rec_fail(c, err, RC_ERR_VALUE, "corrupt TensorProto: %s", why);
                }
            } else {
                u = f.u;
            }
            if (k >= count)  /* pass 1 counted these; cannot happen unless the counts disagree */
                return rec_fail(c, err, RC_ERR_VALUE, "blob '%s': more data than counted", ename);
            if (want == 3) {
                uint32_t w = (uint32_t)u;
                memcpy(fo + k, &w, 4);
            } else if (want == 4) {
                int32_t v = (int32_t)(uint32_t)u;  /* protobuf's int32: the low 32 bits */
                io[k] = dt == DT_BOOL ? v != 0 : v;
            } else if (want == 10) {
                int64_t v = (int64_t)u;
                if (v < INT32_MIN || v > INT32_MAX)
                    return rec_fail(c, err, RC_ERR_VALUE,
                                    "blob '%s': INT64 value %lld at element %lld does not fit in int32", ename,
                                    (long long)v, (long long)(begin + k));
                io[k] = (int32_t)v;
            } else {
                double v;
                memcpy(&v, &u, 8);
                float fv = (float)v;
                if (isfinite(v) && !isfinite(fv))
                    return rec_fail(c, err, RC_ERR_VALUE,
                                    "blob '%s': DOUBLE value %g at element %lld is beyond float32's range",
                                    ename, v, (long long)(begin + k));
                fo[k] = fv;
            }
            k++;
            if (!packed) break;
        }
    }
    if (k != count)
        return rec_fail(c, err, RC_ERR_VALUE, "blob '%s': read %lld elements, expected %lld", ename,
                        (long long)k, (long long)count);
    return RC_OK;
}

/* Parses one record's value (a BlobProto) into the blob state of name. */
static rc_status load_record(lctx *c, int db, const char *bname, int out, const uint8_t *val, size_t vlen,
                             rc_err *err)
{
    const char *why = NULL;
    const char *name = ESC(bname); /* for messages */
    pbr r = {val, val + vlen};
    pfield f;
    const uint8_t *tmsg = NULL, *type = NULL, *content = NULL;
    size_t tlen = 0, typelen = 0, clen = 0;
    int n_tensor = 0;
    while (r.p < r.end) {
        if (pr_field(&r, &f, &why)) return rec_fail(c, err, RC_ERR_VALUE, "corrupt BlobProto: %s", why);
        if (f.field >= 2 && f.field <= 4 && f.wt != 2)
            return rec_fail(c, err, RC_ERR_VALUE, "corrupt BlobProto: field %u has wire type %u", f.field, f.wt);
        if (f.field == 2) { type = f.d; typelen = f.n; }
        if (f.field == 3) { tmsg = f.d; tlen = f.n; n_tensor++; }
        if (f.field == 4) { content = f.d; clen = f.n; }
    }
    static const char counter_type[] = RC_COUNTER_PROTO_TYPE;
    const int is_counter = type && typelen == sizeof counter_type - 1 && memcmp(type, counter_type, typelen) == 0;
    if (is_counter) {
        /* Caffe2's CounterSerializer: the count in `content`, a TensorProto of one INT64 and no dims */
        tmsg = content;
        tlen = clen;
        n_tensor = content ? 1 : 0;
    } else if (!type || typelen != 6 || memcmp(type, "Tensor", 6) != 0) {
        char tbuf[64] = {0};
        if (type) memcpy(tbuf, type, typelen < sizeof tbuf - 1 ? typelen : sizeof tbuf - 1);
        return rec_fail(c, err, RC_ERR_TYPE, "blob '%s' is of type '%s', only 'Tensor' and Counter ('"
                        RC_COUNTER_PROTO_TYPE "') blobs can be loaded", name, ESC(tbuf));
    }
    if (is_counter && !content)
        return rec_fail(c, err, RC_ERR_VALUE, "blob '%s': a serialized Counter without its count (no content "
                        "field)", name);
    if (n_tensor != 1)
        return rec_fail(c, err, RC_ERR_VALUE, "blob '%s': BlobProto has %d tensor fields, expected 1", name,
                        n_tensor);
    tinfo ti;
    if (parse_tensor_pass1(tmsg, tlen, &ti, &why))
        return rec_fail(c, err, RC_ERR_VALUE, "blob '%s': corrupt TensorProto: %s", name, why);
    if (ti.data_format != 0)
        return rec_fail(c, err, RC_ERR_VALUE, "blob '%s': data_format %lld is not supported (only 0, protobuf)",
                        name, (long long)ti.data_format);
    if (is_counter && (ti.ndim != 0 || ti.has_seg || (ti.data_type != DT_INT64 && ti.data_type != DT_INT32)))
        return rec_fail(c, err, RC_ERR_VALUE, "blob '%s': a serialized Counter's count must be one INT64 (or "
                        "INT32) without dims or segment, got Caffe2 dtype %s (%lld) with %d dims", name,
                        caffe2_dtype_name(ti.data_type), (long long)ti.data_type, ti.ndim);
    rc_dtype dt;
    switch (ti.data_type) {
    case DT_FLOAT: case DT_DOUBLE: dt = RC_F32; break;
    case DT_INT32: case DT_INT64: case DT_BOOL: dt = RC_I32; break;
    default:
        return rec_fail(c, err, RC_ERR_TYPE,
                        "blob '%s' has Caffe2 dtype %s (%lld), which recurrent cannot hold (float32 and int32 "
                        "only; Load converts FLOAT, DOUBLE, INT32, INT64 and BOOL)", name,
                        caffe2_dtype_name(ti.data_type), (long long)ti.data_type);
    }
    int64_t numel = 1;
    for (int d = 0; d < ti.ndim; d++) {
        if (ti.dims[d] < 0)
            return rec_fail(c, err, RC_ERR_VALUE, "blob '%s': negative dim %lld", name, (long long)ti.dims[d]);
        if (ti.dims[d] && numel > INT64_MAX / ti.dims[d])
            return rec_fail(c, err, RC_ERR_VALUE, "blob '%s': element count overflows", name);
        numel *= ti.dims[d];
    }
    if (numel > c->cap_elems)
        return rec_fail(c, err, RC_ERR_VALUE, "blob '%s' claims %lld elements, more than the %lld bytes of the "
                        "file(s) can hold", name, (long long)numel, (long long)c->cap_elems);
    int64_t begin = 0, end = numel;
    if (ti.has_seg) { begin = ti.seg_begin; end = ti.seg_end; }
    if (begin < 0 || begin > end || end > numel)
        return rec_fail(c, err, RC_ERR_VALUE, "blob '%s': segment [%lld, %lld) is outside the tensor's %lld "
                        "elements", name, (long long)begin, (long long)end, (long long)numel);
    const int64_t count = end - begin;
    /* the data field and its element count */
    int64_t have;
    const char *field;
    size_t esz = 0;
    switch (ti.data_type) {
    case DT_FLOAT: have = ti.n_float; field = "float_data"; esz = 4; break;
    case DT_INT32: have = ti.n_i32; field = "int32_data"; esz = 4; break;
    case DT_INT64: have = ti.n_i64; field = "int64_data"; esz = 8; break;
    case DT_DOUBLE: have = ti.n_double; field = "double_data"; esz = 8; break;
    default: have = ti.n_i32; field = "int32_data"; break; /* BOOL */
    }
    if (ti.data_type == DT_BOOL && ti.has_byte_data) {
        if (have) return rec_fail(c, err, RC_ERR_VALUE, "blob '%s': both int32_data and byte_data", name);
        have = (int64_t)ti.n_byte_data;
        field = "byte_data";
    } else if (esz && ti.has_raw_data) {
        if (have) return rec_fail(c, err, RC_ERR_VALUE, "blob '%s': both %s and raw_data", name, field);
        if (ti.n_raw_data % esz)
            return rec_fail(c, err, RC_ERR_VALUE, "blob '%s': raw_data of %zu bytes is not a whole number of "
                            "%zu-byte elements", name, ti.n_raw_data, esz);
        have = (int64_t)(ti.n_raw_data / esz);
        field = "raw_data";
    }
    if (have != count)
        return rec_fail(c, err, RC_ERR_VALUE, "blob '%s': %s holds %lld elements, the segment [%lld, %lld) "
                        "needs %lld", name, field, (long long)have, (long long)begin, (long long)end,
                        (long long)count);
    lblob *lb = find_lblob(c, bname);
    if (lb) {
        if (lb->db != db)
            return rec_fail(c, err, RC_ERR_VALUE, "blob '%s' is also in an earlier db (duplicate key)", name);
        if (lb->is_counter || is_counter)
            return rec_fail(c, err, RC_ERR_VALUE, "blob '%s' is also in an earlier record (duplicate key)", name);
        int same = lb->t.ndim == ti.ndim && lb->t.dtype == dt;
        for (int d = 0; same && d < ti.ndim; d++) same = lb->t.dims[d] == ti.dims[d];
        if (!same) {
            rc_tensor want;
            rc_tensor_init(&want);
            want.dtype = dt;
            want.ndim = ti.ndim;
            memcpy(want.dims, ti.dims, sizeof ti.dims);
            return rec_fail(c, err, RC_ERR_VALUE, "blob '%s': this chunk says %s, an earlier one %s", name,
                            RC_SHAPE(&want), RC_SHAPE(&lb->t));
        }
        for (int s = 0; s < lb->nseg; s++) {
            int64_t b0 = lb->seg[2 * s], e0 = lb->seg[2 * s + 1];
            int overlap = count == 0 ? (b0 == e0 && b0 == begin && lb->numel == 0) : begin < e0 && b0 < end;
            if (overlap)
                return rec_fail(c, err, RC_ERR_VALUE, "blob '%s': segment [%lld, %lld) overlaps data read "
                                "before ([%lld, %lld)): duplicate key or chunk", name, (long long)begin,
                                (long long)end, (long long)b0, (long long)e0);
        }
    } else {
        if (c->nb == c->capb) {
            int cap = c->capb ? 2 * c->capb : 8;
            lblob *nb = realloc(c->b, (size_t)cap * sizeof *nb);
            if (!nb) return rc_op_fail(c->op, err, RC_ERR_MEMORY, "out of memory");
            c->b = nb;
            c->capb = cap;
        }
        lb = &c->b[c->nb];
        memset(lb, 0, sizeof *lb);
        rc_tensor_init(&lb->t);
        lb->name = strdup(bname);
        if (!lb->name) return rc_op_fail(c->op, err, RC_ERR_MEMORY, "out of memory");
        c->nb++;
        lb->out = out;
        lb->db = db;
        lb->numel = numel;
        lb->is_counter = is_counter;
        if (rc_tensor_resize_private(&lb->t, dt, ti.ndim, ti.dims, err))
            return rec_fail(c, err, err->code, "blob '%s': %s", name, err->msg);
    }
    if (lb->nseg == lb->capseg) {
        int cap = lb->capseg ? 2 * lb->capseg : 4;
        int64_t *s = realloc(lb->seg, (size_t)cap * 2 * sizeof *s);
        if (!s) return rc_op_fail(c->op, err, RC_ERR_MEMORY, "out of memory");
        lb->seg = s;
        lb->capseg = cap;
    }
    rc_status st = count ? fill_data(c, lb, tmsg, tlen, &ti, begin, count, err) : RC_OK;
    if (st) return st;
    lb->seg[2 * lb->nseg] = begin;
    lb->seg[2 * lb->nseg + 1] = end;
    lb->nseg++;
    const int64_t was = lb->filled;
    lb->filled += count;
    if (lb->out >= 0 && lb->filled == lb->numel && (was < lb->numel || lb->nseg == 1)) c->complete_outputs++;
    return RC_OK;
}

/* Reads the records of one open file. */
static rc_status load_fd(lctx *c, int db, int fd, const char *path, rc_err *err)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return rc_op_fail(c->op, err, RC_ERR_IO, "cannot stat '%s': %s", ESC(path), strerror(errno));
    if (!S_ISREG(sb.st_mode)) return rc_op_fail(c->op, err, RC_ERR_IO, "'%s' is not a regular file", ESC(path));
    const int64_t size = (int64_t)sb.st_size;
    int64_t off = 0;
    c->path = path;
    c->rec = 0;
    rc_status st = RC_OK;
    char *key = NULL;
    uint8_t *val = NULL;
    char *name = NULL;
    while (off < size) {
        if (!c->load_all && c->complete_outputs == c->op->n_out) break;
        c->rec_off = off;
        c->key = NULL;
        if (size - off < 8) {
            st = rec_fail(c, err, RC_ERR_VALUE, "truncated record header: %lld bytes left, 8 needed",
                          (long long)(size - off));
            break;
        }
        uint32_t lens[2];
        if (read_full(fd, lens, 8, (off_t)off)) {
            st = rc_op_fail(c->op, err, RC_ERR_IO, "cannot read '%s': %s", ESC(path), strerror(errno));
            break;
        }
        const int64_t left = size - off - 8;
        if ((int64_t)lens[0] > left || (int64_t)lens[1] > left - (int64_t)lens[0]) {
            st = rec_fail(c, err, RC_ERR_VALUE, "key length %u and value length %u run past the end of the file "
                          "(%lld bytes left)", lens[0], lens[1], (long long)left);
            break;
        }
        key = malloc((size_t)lens[0] + 1);
        if (!key) { st = rc_op_fail(c->op, err, RC_ERR_MEMORY, "out of memory"); break; }
        if (read_full(fd, key, lens[0], (off_t)(off + 8))) {
            st = rc_op_fail(c->op, err, RC_ERR_IO, "cannot read '%s': %s", ESC(path), strerror(errno));
            break;
        }
        key[lens[0]] = 0;
        if (!valid_utf8((const unsigned char *)key, lens[0])) {
            c->key = key;
            st = rec_fail(c, err, RC_ERR_VALUE, "the key is not UTF-8 text without NUL bytes");
            break;
        }
        c->key = key;
        name = blob_name_of_key(key, c->strip_prefix, c->add_prefix);
        if (!name) { st = rc_op_fail(c->op, err, RC_ERR_MEMORY, "out of memory"); break; }
        /* the output whose name (or source_blob_names entry) is the key's blob name */
        const int out = output_of(c, name);
        if (c->load_all || out >= 0) {
            if (!name[0]) { st = rec_fail(c, err, RC_ERR_VALUE, "empty blob name"); break; }
            const char *dest = out >= 0 ? rc_out_name(c->op, out) : name;
            val = malloc(lens[1] ? lens[1] : 1);
            if (!val) { st = rc_op_fail(c->op, err, RC_ERR_MEMORY, "out of memory"); break; }
            if (read_full(fd, val, lens[1], (off_t)(off + 8 + lens[0]))) {
                st = rc_op_fail(c->op, err, RC_ERR_IO, "cannot read '%s': %s", ESC(path), strerror(errno));
                break;
            }
            if ((st = load_record(c, db, dest, out, val, lens[1], err))) break;
            free(val);
            val = NULL;
        }
        free(name);
        name = NULL;
        free(key);
        key = NULL;
        c->key = NULL;
        off += 8 + (int64_t)lens[0] + (int64_t)lens[1];
        c->rec++;
    }
    free(name);
    free(val);
    free(key);
    c->key = NULL;
    return st;
}

/* ================================================================ Save */

typedef struct save_state {
    char *path;         /* owned: the file (`db`, under the workspace's root folder: rc_ws_path) */
    char **names;       /* owned: the key name of each input */
    int n;
    int64_t chunk;      /* elements per chunk, > 0; 0: one chunk per tensor */
} save_state;

static void save_free(void *p)
{
    save_state *s = p;
    if (!s) return;
    free(s->path);
    for (int i = 0; s->names && i < s->n; i++) free(s->names[i]);
    free(s->names);
    free(s);
}

static rc_status save_setup(rc_op *op, rc_err *err)
{
    save_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    rc_status st;
    const char *strip = NULL;
    char *const *over = NULL;
    int n_over = 0;
    int64_t chunk = 0, absolute = 0;
    const char *db = NULL;
    if ((st = check_db_type(op, err))) return st;
    if ((st = rc_arg_s(&op->def, "db", "", &db, err))) return st;
    if (!db[0]) return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'db' (the file to write) must be given");
    if ((st = rc_arg_s(&op->def, "strip_prefix", "", &strip, err))) return st;
    if ((st = rc_arg_strings(&op->def, "blob_name_overrides", &over, &n_over, err))) return st;
    if ((st = rc_arg_i(&op->def, "chunk_size", -1, &chunk, err))) return st;
    if ((st = rc_arg_i(&op->def, "absolute_path", 0, &absolute, err))) return st;
    if (!(s->path = rc_ws_path(op->ws, db, absolute != 0))) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    if (n_over && n_over != op->n_in)
        return rc_op_fail(op, err, RC_ERR_VALUE, "blob_name_overrides has %d names for %d inputs", n_over, op->n_in);
    if (n_over && strip[0])
        return rc_op_fail(op, err, RC_ERR_VALUE, "strip_prefix and blob_name_overrides are mutually exclusive");
    if (chunk < -1)
        return rc_op_fail(op, err, RC_ERR_VALUE, "chunk_size must be > 0, -1 (default, %d) or 0 (no chunking), got "
                          "%lld", DEFAULT_CHUNK, (long long)chunk);
    s->chunk = chunk == -1 ? DEFAULT_CHUNK : chunk; /* 0: no chunking */
    s->names = calloc((size_t)op->n_in, sizeof *s->names);
    if (!s->names) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    s->n = op->n_in;
    for (int i = 0; i < op->n_in; i++) {
        const char *in = rc_in_name(op, i);
        if (n_over) {
            s->names[i] = strdup(over[i]);
        } else {
            const char *m = strip[0] ? strstr(in, strip) : NULL;
            s->names[i] = strdup(m ? m + strlen(strip) : in);
        }
        if (!s->names[i]) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
        if (!s->names[i][0])
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' would be saved under an empty name", i, in);
        if (strstr(s->names[i], CHUNK_SEP))
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' would be saved as '%s', which contains the "
                              "chunk separator '" CHUNK_SEP_FMT "' (Load would cut the name there)", i, in,
                              s->names[i]);
        for (int j = 0; j < i; j++)
            if (strcmp(s->names[j], s->names[i]) == 0)
                return rc_op_fail(op, err, RC_ERR_VALUE, "inputs %d ('%s') and %d ('%s') would both be saved as '%s'",
                                  j, rc_in_name(op, j), i, in, s->names[i]);
    }
    return RC_OK;
}

static int write_record(FILE *fp, const char *key, const pbuf *v)
{
    uint32_t lens[2] = {(uint32_t)strlen(key), (uint32_t)v->n};
    return fwrite(lens, 4, 2, fp) == 2 && fwrite(key, 1, lens[0], fp) == lens[0] &&
           (v->n == 0 || fwrite(v->p, 1, v->n, fp) == v->n) ? 0 : -1;
}

static rc_status save_run(rc_op *op, rc_err *err)
{
    save_state *s = op->state;
    for (int i = 0; i < op->n_in; i++) {
        const rc_blob *b = op->in[i];
        if (rc_counter_is(b)) continue;
        if (b->obj)
            return rc_op_fail(op, err, RC_ERR_TYPE, "input %d blob '%s' holds a %s, not a tensor: only tensors and "
                              "Counters can be saved", i, rc_in_name(op, i),
                              b->obj_kind ? b->obj_kind : "non-tensor object");
        if (b->t.dtype == RC_UNDEF || (rc_tensor_numel(&b->t) > 0 && !b->t.storage))
            return rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s' holds no tensor (was it fed or computed?)",
                              i, rc_in_name(op, i));
    }
    FILE *fp = fopen(s->path, "wbe");
    if (!fp) return rc_op_fail(op, err, RC_ERR_IO, "cannot open '%s' for writing: %s", s->path, strerror(errno));
    pbuf t = {0}, v = {0};
    rc_status st = RC_OK;
    for (int i = 0; i < op->n_in && !st; i++) {
        const rc_tensor *x = rc_in(op, i);
        const int64_t numel = rc_tensor_numel(x);
        const int64_t chunk = s->chunk ? s->chunk : numel + 1;
        for (int64_t b0 = 0; b0 < (numel > 1 ? numel : 1); b0 += chunk) {
            const int64_t n = numel - b0 < chunk ? numel - b0 : chunk;
            t.n = v.n = 0;
            pb_lenbytes(&v, 1, s->names[i], strlen(s->names[i]));
            if (rc_counter_is(op->in[i])) {  /* as Caffe2's CounterSerializer (one record) */
                encode_count(&t, rc_counter_get(op->in[i]));
                pb_lenbytes(&v, 2, RC_COUNTER_PROTO_TYPE, sizeof RC_COUNTER_PROTO_TYPE - 1);
                pb_lenbytes(&v, 4, t.p, t.n);
            } else {
                encode_tensor_chunk(&t, x, s->names[i], b0, n);
                pb_lenbytes(&v, 2, "Tensor", 6);
                pb_lenbytes(&v, 3, t.p, t.n);
            }
            if (t.oom || v.oom) {
                st = rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory encoding input %d blob '%s'", i,
                                rc_in_name(op, i));
                break;
            }
            char key[RC_ERR_LEN];
            int kl = snprintf(key, sizeof key, "%s" CHUNK_SEP_FMT "%lld", s->names[i], (long long)(b0 / chunk));
            if (kl < 0 || (size_t)kl >= sizeof key) {
                st = rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s': name too long", i, rc_in_name(op, i));
                break;
            }
            if (v.n > INT32_MAX) {
                st = rc_op_fail(op, err, RC_ERR_VALUE, "input %d blob '%s': a record of %zu bytes is too large for "
                                "minidb (use a chunk_size that keeps chunks under 2 GiB)", i, rc_in_name(op, i), v.n);
                break;
            }
            if (write_record(fp, key, &v)) {
                st = rc_op_fail(op, err, RC_ERR_IO, "cannot write '%s': %s", s->path, strerror(errno));
                break;
            }
        }
    }
    free(t.p);
    free(v.p);
    if (fclose(fp) != 0 && !st)
        st = rc_op_fail(op, err, RC_ERR_IO, "cannot write '%s': %s", s->path, strerror(errno));
    if (st) unlink(s->path);  /* no half-written checkpoint is left behind */
    return st;
}

/* ================================================================ Load */

typedef struct load_state {
    char *const *dbs;   /* borrowed from op->def: `dbs` (no reader inputs) */
    int n_dbs;
    const char *single; /* borrowed: `db` */
    char **files;       /* owned: the files to read, `db` or each of `dbs` under the root folder (rc_ws_path) */
    int n_files;
    const char *add_prefix, *strip_prefix;
    char *const *src;   /* source_blob_names (borrowed) */
    int n_src;
    int load_all, allow_incomplete;
} load_state;

static void load_free(void *p)
{
    load_state *s = p;
    if (!s) return;
    for (int i = 0; i < s->n_files; i++) free(s->files[i]);
    free(s->files);
    free(s);
}

static rc_status load_setup(rc_op *op, rc_err *err)
{
    load_state *s = calloc(1, sizeof *s);
    if (!s) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    op->state = s;
    rc_status st;
    int64_t load_all = 0, allow = 0, keep = 0, absolute = 0;
    if ((st = rc_arg_s(&op->def, "add_prefix", "", &s->add_prefix, err))) return st;
    if ((st = rc_arg_s(&op->def, "strip_prefix", "", &s->strip_prefix, err))) return st;
    if ((st = rc_arg_strings(&op->def, "source_blob_names", &s->src, &s->n_src, err))) return st;
    if ((st = rc_arg_i(&op->def, "load_all", 0, &load_all, err))) return st;
    if ((st = rc_arg_i(&op->def, "allow_incomplete", 0, &allow, err))) return st;
    if ((st = rc_arg_i(&op->def, "keep_device", 0, &keep, err))) return st;
    if ((st = rc_arg_i(&op->def, "absolute_path", 0, &absolute, err))) return st;
    s->load_all = load_all != 0;
    s->allow_incomplete = allow != 0;
    if (op->n_in == 0) {
        if ((st = check_db_type(op, err))) return st;
        if ((st = rc_arg_s(&op->def, "db", "", &s->single, err))) return st;
        if ((st = rc_arg_strings(&op->def, "dbs", &s->dbs, &s->n_dbs, err))) return st;
        if (s->n_dbs && s->single[0])
            return rc_op_fail(op, err, RC_ERR_VALUE, "give either 'db' or 'dbs', not both");
        if (!s->n_dbs && !s->single[0])
            return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'db' (the file to read) or 'dbs' must be given "
                              "(or DBReader inputs from CreateDB)");
        for (int i = 0; i < s->n_dbs; i++) {
            if (!s->dbs[i][0]) return rc_op_fail(op, err, RC_ERR_VALUE, "dbs[%d] is empty", i);
            for (int j = 0; j < i; j++)
                if (strcmp(s->dbs[i], s->dbs[j]) == 0)
                    return rc_op_fail(op, err, RC_ERR_VALUE, "dbs names '%s' twice", s->dbs[i]);
        }
        int n = s->n_dbs ? s->n_dbs : 1;
        if (!(s->files = calloc((size_t)n, sizeof *s->files)))
            return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
        s->n_files = n;
        for (int i = 0; i < n; i++)
            if (!(s->files[i] = rc_ws_path(op->ws, s->n_dbs ? s->dbs[i] : s->single, absolute != 0)))
                return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    }
    if (s->n_src && s->n_src != op->n_out)
        return rc_op_fail(op, err, RC_ERR_VALUE, "source_blob_names has %d names for %d outputs", s->n_src,
                          op->n_out);
    if (s->n_src && s->strip_prefix[0])
        return rc_op_fail(op, err, RC_ERR_VALUE, "strip_prefix and source_blob_names are mutually exclusive");
    if (s->n_src && s->load_all)
        return rc_op_fail(op, err, RC_ERR_VALUE, "load_all and source_blob_names are mutually exclusive");
    for (int i = 0; i < s->n_src; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(s->src[i], s->src[j]) == 0)
                return rc_op_fail(op, err, RC_ERR_VALUE, "source_blob_names names '%s' twice", s->src[i]);
    return RC_OK;
}

static rc_status load_run(rc_op *op, rc_err *err)
{
    load_state *s = op->state;
    lctx c;
    memset(&c, 0, sizeof c);
    c.op = op;
    c.add_prefix = s->add_prefix;
    c.strip_prefix = s->strip_prefix;
    c.src_names = s->src;
    c.n_src = s->n_src;
    c.load_all = s->load_all;
    rc_status st = RC_OK;
    const int n_db = op->n_in ? op->n_in : s->n_dbs ? s->n_dbs : 1;
    int *fds = calloc((size_t)n_db, sizeof *fds);
    if (!fds) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    /* open everything first: the element cap is the bytes of all files */
    for (int i = 0; i < n_db; i++) fds[i] = -1;
    for (int i = 0; i < n_db && !st; i++) {
        struct stat sb;
        if (op->n_in) {
            const rc_blob *b = op->in[i];
            if (!b->obj || b->obj_kind != dbreader_kind) {
                st = rc_op_fail(op, err, RC_ERR_TYPE, "input %d blob '%s' must be a DBReader (CreateDB's output), "
                                "got %s", i, rc_in_name(op, i), b->obj ? b->obj_kind : RC_SHAPE(&b->t));
                break;
            }
            const dbreader *r = b->obj;
            if (fstat(r->fd, &sb) != 0) {
                st = rc_op_fail(op, err, RC_ERR_IO, "cannot stat '%s': %s", r->path, strerror(errno));
                break;
            }
        } else {
            const char *path = s->files[i];
            fds[i] = open(path, O_RDONLY | O_CLOEXEC);
            if (fds[i] < 0 || fstat(fds[i], &sb) != 0) {
                st = rc_op_fail(op, err, RC_ERR_IO, "cannot open '%s' for reading: %s", path, strerror(errno));
                break;
            }
        }
        c.cap_elems += (int64_t)sb.st_size;
    }
    for (int i = 0; i < n_db && !st; i++) {
        if (op->n_in) {
            const dbreader *r = op->in[i]->obj;
            st = load_fd(&c, i, r->fd, r->path, err);
        } else {
            st = load_fd(&c, i, fds[i], s->files[i], err);
        }
    }
    for (int i = 0; i < n_db; i++)
        if (fds[i] >= 0) close(fds[i]);
    free(fds);
    const char *where = op->n_in ? "the reader(s)" : s->n_dbs ? "the dbs" : s->files[0];
    /* every blob read must be complete */
    for (int i = 0; i < c.nb && !st; i++)
        if (c.b[i].filled != c.b[i].numel)
            st = rc_op_fail(op, err, RC_ERR_VALUE, "blob '%s' in '%s' is incomplete: %lld of its %lld "
                            "elements were found (chunks missing)", ESC(c.b[i].name), ESC(where),
                            (long long)c.b[i].filled, (long long)c.b[i].numel);
    /* every output must have been read */
    for (int o = 0; o < op->n_out && !st; o++) {
        int found = 0;
        for (int i = 0; i < c.nb && !found; i++) found = strcmp(c.b[i].name, rc_out_name(op, o)) == 0;
        if (!found && (s->load_all || !s->allow_incomplete))
            st = rc_op_fail(op, err, RC_ERR_KEY, "output %d blob '%s'%s%s%s is not in '%s'%s", o,
                            rc_out_name(op, o), s->n_src ? " (source name '" : "", s->n_src ? s->src[o] : "",
                            s->n_src ? "')" : "", ESC(where),
                            s->load_all ? "" : " (allow_incomplete=1 loads what is there)");
    }
    /* destinations: resolved before anything is written, so the commit cannot fail */
    for (int i = 0; i < c.nb && !st; i++) {
        lblob *lb = &c.b[i];
        lb->blob = lb->out >= 0 ? op->out[lb->out] : rc_ws_create(op->ws, lb->name, err);
        if (!lb->blob) {
            st = rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory creating blob '%s'", ESC(lb->name));
            break;
        }
        if (lb->is_counter) {  /* a new Counter replaces a tensor or a Counter */
            if (lb->blob->obj && !rc_counter_is(lb->blob))
                st = rc_op_fail(op, err, RC_ERR_TYPE, "blob '%s' holds a %s and cannot receive a Counter",
                                ESC(lb->name), lb->blob->obj_kind ? lb->blob->obj_kind : "non-tensor object");
            else if (!(lb->counter = rc_counter_new(rc_i32(&lb->t)[0])))
                st = rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory creating counter '%s'", ESC(lb->name));
        } else if (lb->blob->obj) {
            st = rc_op_fail(op, err, RC_ERR_TYPE, "blob '%s' holds a %s and cannot receive a tensor", ESC(lb->name),
                            lb->blob->obj_kind ? lb->blob->obj_kind : "non-tensor object");
        }
    }
    if (!st)
        for (int i = 0; i < c.nb; i++) {
            if (c.b[i].is_counter) {
                rc_counter_install(c.b[i].blob, c.b[i].counter);
                c.b[i].counter = NULL;
                continue;
            }
            rc_tensor_release(&c.b[i].blob->t);
            c.b[i].blob->t = c.b[i].t;  /* moves the storage reference */
            rc_tensor_init(&c.b[i].t);
        }
    lctx_free(&c);
    return st;
}

/* ================================================================ CreateDB */

static rc_status createdb_setup(rc_op *op, rc_err *err)
{
    rc_status st = check_db_type(op, err);
    if (st) return st;
    const char *path = NULL;
    if ((st = rc_arg_s(&op->def, "db", "", &path, err))) return st;
    if (!path[0]) return rc_op_fail(op, err, RC_ERR_VALUE, "argument 'db' (the file to read) must be given");
    return RC_OK;
}

static rc_status createdb_run(rc_op *op, rc_err *err)
{
    const char *path = NULL;
    rc_status st = rc_arg_s(&op->def, "db", "", &path, err);
    if (st) return st;
    rc_blob *b = op->out[0];
    if (b->obj && b->obj_kind != dbreader_kind)
        return rc_op_fail(op, err, RC_ERR_TYPE, "output blob '%s' holds a %s", rc_out_name(op, 0),
                          b->obj_kind ? b->obj_kind : "non-tensor object");
    dbreader *r = calloc(1, sizeof *r);
    if (!r) return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory");
    r->fd = -1;
    r->path = strdup(path);
    if (!r->path) { dbreader_free(r); return rc_op_fail(op, err, RC_ERR_MEMORY, "out of memory"); }
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (r->fd < 0 || fstat(r->fd, &sb) != 0) {
        st = rc_op_fail(op, err, RC_ERR_IO, "cannot open '%s' for reading: %s", path, strerror(errno));
        dbreader_free(r);
        return st;
    }
    if (!S_ISREG(sb.st_mode)) {
        dbreader_free(r);
        return rc_op_fail(op, err, RC_ERR_IO, "'%s' is not a regular file", path);
    }
    if (b->obj && b->obj_free) b->obj_free(b->obj);
    rc_tensor_release(&b->t);
    b->obj = r;
    b->obj_free = dbreader_free;
    b->obj_kind = dbreader_kind;
    return RC_OK;
}

const rc_op_schema rc_ops_db[] = {
    {"Save", 1, -1, 0, 0, NULL, save_setup, save_run, save_free,
     "writes tensors to a Caffe2 minidb file (db, db_type='minidb', strip_prefix, blob_name_overrides, chunk_size)",
     NULL},
    {"Load", 0, -1, 0, -1, NULL, load_setup, load_run, load_free,
     "reads tensors from minidb files or DBReaders (load_all, add_prefix, strip_prefix, source_blob_names, "
     "allow_incomplete)", NULL, RC_OP_OWN_OBJECT_OUT_CHECKS},
    {"CreateDB", 0, 0, 1, 1, NULL, createdb_setup, createdb_run, NULL,
     "opens a minidb file for Load: an opaque DBReader blob (db, db_type='minidb')", NULL, RC_OP_OBJECT_OUT_FIRST},
    {NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL},
};
