/* Error buffer helpers. */
#include "rc_core.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

rc_status rc_err_set(rc_err *err, rc_status code, const char *fmt, ...)
{
    if (!err) return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

void rc_err_prefix(rc_err *err, const char *fmt, ...)
{
    if (!err) return;
    char pre[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    size_t lp = strlen(pre), lm = strnlen(err->msg, RC_ERR_LEN - 1);
    if (lp > RC_ERR_LEN - 1) lp = RC_ERR_LEN - 1;
    if (lp + lm > RC_ERR_LEN - 1) lm = RC_ERR_LEN - 1 - lp;
    memmove(err->msg + lp, err->msg, lm);
    memcpy(err->msg, pre, lp);
    err->msg[lp + lm] = 0;
}

void rc_err_clear(rc_err *err)
{
    if (!err) return;
    err->code = RC_OK;
    err->op_pos = -1;
    err->msg[0] = 0;
}
