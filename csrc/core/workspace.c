/* Workspaces: named blobs (hash-indexed, insertion-ordered), nets, parent lookup. */
#include "rc_core.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *name;     /* owned */
    rc_net *net;    /* owned */
} net_entry;

struct rc_workspace {
    rc_workspace *parent;   /* borrowed */
    rc_blob **blobs;        /* owned array of owned blobs, insertion order */
    int n_blobs, cap_blobs;
    int *index;             /* open-addressing table of blob indices, -1 empty */
    int index_cap;          /* power of two */
    net_entry *nets;
    int n_nets, cap_nets;
    /* the print log (rc_ws_log_append); used in the root of a tree only */
    pthread_mutex_t log_mu;
    char *log;              /* owned, log_len bytes used of log_cap, guarded by log_mu */
    size_t log_len, log_cap;
    int64_t log_dropped, log_dropped_bytes;
    char *root_folder;      /* owned; NULL: "." (rc_ws_set_root_folder); used in the root of a tree only */
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) { h ^= (unsigned char)*s; h *= 1099511628211ULL; }
    return h;
}

rc_workspace *rc_ws_new(rc_workspace *parent)
{
    rc_workspace *ws = calloc(1, sizeof *ws);
    if (!ws) return NULL;
    if (pthread_mutex_init(&ws->log_mu, NULL)) {
        free(ws);
        return NULL;
    }
    ws->parent = parent;
    return ws;
}

static void blob_free(rc_blob *b)
{
    rc_tensor_release(&b->t);
    if (b->obj && b->obj_free) b->obj_free(b->obj);
    free(b->name);
    free(b);
}

void rc_ws_reset(rc_workspace *ws)
{
    /* nets first: ops hold pointers to blobs */
    for (int i = 0; i < ws->n_nets; i++) {
        rc_net_free(ws->nets[i].net);
        free(ws->nets[i].name);
    }
    free(ws->nets);
    ws->nets = NULL;
    ws->n_nets = ws->cap_nets = 0;
    for (int i = 0; i < ws->n_blobs; i++) blob_free(ws->blobs[i]);
    free(ws->blobs);
    free(ws->index);
    ws->blobs = NULL;
    ws->index = NULL;
    ws->n_blobs = ws->cap_blobs = ws->index_cap = 0;
}

void rc_ws_free(rc_workspace *ws)
{
    if (!ws) return;
    rc_ws_reset(ws);
    free(ws->log);
    free(ws->root_folder);
    pthread_mutex_destroy(&ws->log_mu);
    free(ws);
}

rc_workspace *rc_ws_parent(rc_workspace *ws) { return ws->parent; }

rc_blob *rc_ws_get_local(rc_workspace *ws, const char *name)
{
    if (!ws->index_cap) return NULL;
    size_t mask = (size_t)ws->index_cap - 1;
    for (size_t h = hash_str(name) & mask;; h = (h + 1) & mask) {
        int i = ws->index[h];
        if (i < 0) return NULL;
        if (strcmp(ws->blobs[i]->name, name) == 0) return ws->blobs[i];
    }
}

rc_blob *rc_ws_get(rc_workspace *ws, const char *name)
{
    for (; ws; ws = ws->parent) {
        rc_blob *b = rc_ws_get_local(ws, name);
        if (b) return b;
    }
    return NULL;
}

static int index_rebuild(rc_workspace *ws, int cap)
{
    int *idx = malloc(sizeof(int) * (size_t)cap);
    if (!idx) return -1;
    for (int i = 0; i < cap; i++) idx[i] = -1;
    size_t mask = (size_t)cap - 1;
    for (int i = 0; i < ws->n_blobs; i++) {
        size_t h = hash_str(ws->blobs[i]->name) & mask;
        while (idx[h] >= 0) h = (h + 1) & mask;
        idx[h] = i;
    }
    free(ws->index);
    ws->index = idx;
    ws->index_cap = cap;
    return 0;
}

rc_blob *rc_ws_create_local(rc_workspace *ws, const char *name, rc_err *err)
{
    rc_blob *b = rc_ws_get_local(ws, name);
    if (b) return b;
    if (ws->n_blobs == ws->cap_blobs) {
        int nc = ws->cap_blobs ? ws->cap_blobs * 2 : 16;
        rc_blob **nb = realloc(ws->blobs, sizeof *nb * (size_t)nc);
        if (!nb) goto oom;
        ws->blobs = nb;
        ws->cap_blobs = nc;
    }
    if ((ws->n_blobs + 1) * 2 > ws->index_cap) {
        if (index_rebuild(ws, ws->index_cap ? ws->index_cap * 2 : 32)) goto oom;
    }
    b = calloc(1, sizeof *b);
    if (!b) goto oom;
    b->name = strdup(name);
    if (!b->name) { free(b); goto oom; }
    b->ws = ws;
    rc_tensor_init(&b->t);
    ws->blobs[ws->n_blobs] = b;
    size_t mask = (size_t)ws->index_cap - 1;
    size_t h = hash_str(name) & mask;
    while (ws->index[h] >= 0) h = (h + 1) & mask;
    ws->index[h] = ws->n_blobs++;
    return b;
oom:
    rc_err_set(err, RC_ERR_MEMORY, "out of memory creating blob '%s'", name);
    return NULL;
}

rc_blob *rc_ws_create(rc_workspace *ws, const char *name, rc_err *err)
{
    rc_blob *b = rc_ws_get(ws, name);
    if (b) return b;
    return rc_ws_create_local(ws, name, err);
}

int rc_ws_num_blobs(const rc_workspace *ws) { return ws->n_blobs; }
rc_blob *rc_ws_blob_at(const rc_workspace *ws, int i) { return ws->blobs[i]; }

static int net_find(const rc_workspace *ws, const char *name)
{
    for (int i = 0; i < ws->n_nets; i++)
        if (strcmp(ws->nets[i].name, name) == 0) return i;
    return -1;
}

rc_status rc_ws_add_net(rc_workspace *ws, const char *name, rc_net *net, int overwrite, rc_err *err)
{
    int i = net_find(ws, name);
    if (i >= 0) {
        if (ws->nets[i].net == net) /* already held under this name: freeing it would leave a dangling entry */
            return overwrite ? RC_OK
                             : rc_err_set(err, RC_ERR_VALUE, "net '%s' is already in this workspace", name);
        if (!overwrite) {
            rc_net_free(net);
            return rc_err_set(err, RC_ERR_VALUE,
                              "a net named '%s' already exists in this workspace (pass overwrite=True to replace it)",
                              name);
        }
        rc_net_free(ws->nets[i].net);
        ws->nets[i].net = net;
        return RC_OK;
    }
    if (ws->n_nets == ws->cap_nets) {
        int nc = ws->cap_nets ? ws->cap_nets * 2 : 8;
        net_entry *ne = realloc(ws->nets, sizeof *ne * (size_t)nc);
        if (!ne) { rc_net_free(net); return rc_err_set(err, RC_ERR_MEMORY, "out of memory adding net '%s'", name); }
        ws->nets = ne;
        ws->cap_nets = nc;
    }
    char *nm = strdup(name);
    if (!nm) { rc_net_free(net); return rc_err_set(err, RC_ERR_MEMORY, "out of memory adding net '%s'", name); }
    ws->nets[ws->n_nets].name = nm;
    ws->nets[ws->n_nets].net = net;
    ws->n_nets++;
    return RC_OK;
}

rc_net *rc_ws_get_net(rc_workspace *ws, const char *name)
{
    int i = net_find(ws, name);
    return i < 0 ? NULL : ws->nets[i].net;
}

int rc_ws_num_nets(const rc_workspace *ws) { return ws->n_nets; }
const char *rc_ws_net_name_at(const rc_workspace *ws, int i) { return ws->nets[i].name; }

void rc_ws_remove_net(rc_workspace *ws, const char *name)
{
    int i = net_find(ws, name);
    if (i < 0) return;
    rc_net_free(ws->nets[i].net);
    free(ws->nets[i].name);
    memmove(ws->nets + i, ws->nets + i + 1, sizeof *ws->nets * (size_t)(ws->n_nets - i - 1));
    ws->n_nets--;
}

/* ---------------------------------------------------------------- print log */
static rc_workspace *ws_root(rc_workspace *ws)
{
    while (ws->parent) ws = ws->parent;
    return ws;
}

rc_status rc_ws_log_append(rc_workspace *ws, const char *text, size_t n, rc_err *err)
{
    rc_workspace *r = ws_root(ws);
    rc_status st = RC_OK;
    pthread_mutex_lock(&r->log_mu);
    if (n > RC_PRINT_LOG_MAX - r->log_len) {
        r->log_dropped++;
        r->log_dropped_bytes += (int64_t)n;
    } else {
        if (r->log_len + n > r->log_cap) {
            size_t cap = r->log_cap ? r->log_cap : 4096;
            while (cap < r->log_len + n) cap *= 2;
            if (cap > RC_PRINT_LOG_MAX) cap = RC_PRINT_LOG_MAX;
            char *p = realloc(r->log, cap);
            if (!p) st = rc_err_set(err, RC_ERR_MEMORY, "out of memory growing the print log to %zu bytes", cap);
            else {
                r->log = p;
                r->log_cap = cap;
            }
        }
        if (!st) {
            memcpy(r->log + r->log_len, text, n);
            r->log_len += n;
        }
    }
    pthread_mutex_unlock(&r->log_mu);
    return st;
}

char *rc_ws_log_take(rc_workspace *ws, size_t *n, int64_t *dropped_pieces, int64_t *dropped_bytes)
{
    rc_workspace *r = ws_root(ws);
    pthread_mutex_lock(&r->log_mu);
    char *text = r->log_len ? r->log : NULL;
    *n = r->log_len;
    *dropped_pieces = r->log_dropped;
    *dropped_bytes = r->log_dropped_bytes;
    if (text) {
        r->log = NULL;
        r->log_cap = 0;
    }
    r->log_len = 0;
    r->log_dropped = r->log_dropped_bytes = 0;
    pthread_mutex_unlock(&r->log_mu);
    return text;
}

/* ---------------------------------------------------------------- root folder */
const char *rc_ws_root_folder(rc_workspace *ws)
{
    rc_workspace *r = ws_root(ws);
    return r->root_folder ? r->root_folder : ".";
}

rc_status rc_ws_set_root_folder(rc_workspace *ws, const char *root, rc_err *err)
{
    char *copy = NULL;
    if (root && strcmp(root, ".") != 0 && !(copy = strdup(root)))
        return rc_err_set(err, RC_ERR_MEMORY, "out of memory");
    free(ws->root_folder);
    ws->root_folder = copy;
    return RC_OK;
}

char *rc_ws_path(rc_workspace *ws, const char *name, int absolute)
{
    const char *root = rc_ws_root_folder(ws);
    if (absolute || name[0] == '/' || strcmp(root, ".") == 0) return strdup(name);
    size_t nr = strlen(root), nn = strlen(name);
    int slash = nr > 0 && root[nr - 1] != '/';
    char *p = malloc(nr + (size_t)slash + nn + 1);
    if (!p) return NULL;
    memcpy(p, root, nr);
    if (slash) p[nr] = '/';
    memcpy(p + nr + (size_t)slash, name, nn + 1);
    return p;
}
