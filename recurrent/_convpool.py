"""The arguments and output geometry of the convolution and pooling ops, for shape inference.

The same rules as csrc/ops/convpool.c (read its header, csrc/ops/convpool.h, for what the
arguments mean): ``geometry(op, x_shape, kind)`` returns a ``Geometry`` or raises
``ShapeError`` where the op refuses its arguments or an input of that shape.
``parse(op, PAD)`` is PadImage's kind (RC_CP_PAD): the pads only (2-D, 4 values, negative allowed,
strides and dilations 1, no kernel: kernel arguments are ignored); its geometry is the caller's.
"""

import collections

from .shape_inference import ShapeError, args as _args

CONV, POOL, PAD = "conv", "pool", "pad"
NOTSET, VALID, SAME, CAFFE_LEGACY_POOLING = 0, 1, 2, 3
MAX_ND = 3
_INT32_MAX = 2 ** 31 - 1

Geometry = collections.namedtuple(
    "Geometry", ["nd", "nhwc", "N", "C", "inp", "out", "kernel", "stride", "dilation", "pad_head", "pad_tail"])


def _int(op, a, name):
    v = a[name]
    if isinstance(v, bool) or not isinstance(v, int):
        raise ShapeError("op %s: argument %s must be an int" % (op.type, name))
    return v


def _family(op, a, lst, one, reps, parts):
    given = [n for n in parts if n in a]
    vals = a.get(lst)
    if vals is not None and not isinstance(vals, (list, tuple)):
        raise ShapeError("op %s: argument %s must be a list" % (op.type, lst))
    vals = list(vals or [])
    if (len(vals) > 0) + (one in a) + (len(given) > 0) > 1:
        raise ShapeError("op %s: give argument %s, %s or %s one way only" % (op.type, lst, one, parts[0]))
    if vals:
        if len(vals) > (2 * MAX_ND if lst == "pads" else MAX_ND):
            raise ShapeError("op %s: argument %s has too many values" % (op.type, lst))
        if any(isinstance(v, bool) or not isinstance(v, int) for v in vals):
            raise ShapeError("op %s: argument %s must be ints" % (op.type, lst))
        return vals
    if one in a:
        return [_int(op, a, one)] * reps
    if given:
        if len(given) != len(parts):
            raise ShapeError("op %s: argument %s needs all of %s" % (op.type, given[0], parts))
        return [_int(op, a, n) for n in parts]
    return []


def parse(op, kind):
    """The op's arguments: a dict with nhwc, legacy, glob, kernel, stride, dilation, pads (lists; nd
    is len(kernel), 0 with global pooling)."""
    a = _args(op)
    order = a.get("order", "NCHW")
    if order not in ("NCHW", "NHWC"):
        raise ShapeError("op %s: argument order must be NCHW or NHWC" % op.type)
    legacy = _int(op, a, "legacy_pad") if "legacy_pad" in a else NOTSET
    glob = _int(op, a, "global_pooling") if "global_pooling" in a else 0
    if legacy not in (0, 1, 2, 3):
        raise ShapeError("op %s: bad legacy_pad %r" % (op.type, legacy))
    if glob and kind != POOL:
        raise ShapeError("op %s: global_pooling is for the pooling ops only" % op.type)
    if kind == PAD:
        return _parse_pad(op, a, dict(nhwc=order == "NHWC", legacy=legacy, glob=False))
    k = _family(op, a, "kernels", "kernel", 2, ("kernel_h", "kernel_w"))
    s = _family(op, a, "strides", "stride", 2, ("stride_h", "stride_w"))
    d = _family(op, a, "dilations", "dilation", 2, ("dilation_h", "dilation_w"))
    p = _family(op, a, "pads", "pad", 4, ("pad_t", "pad_l", "pad_b", "pad_r"))
    for name, vals, lo in (("kernels", k, 1), ("strides", s, 1), ("dilations", d, 1), ("pads", p, 0)):
        if any(v < lo or v > _INT32_MAX for v in vals):
            raise ShapeError("op %s: argument %s out of range" % (op.type, name))
    if p and legacy in (VALID, SAME):
        raise ShapeError("op %s: legacy_pad %d takes no pads" % (op.type, legacy))
    r = dict(nhwc=order == "NHWC", legacy=legacy, glob=bool(glob))
    if glob:
        if any(v != 1 for v in s + d) or any(v != 0 for v in p):
            raise ShapeError("op %s: global_pooling takes no strides, dilations or pads" % op.type)
        r.update(kernel=[], stride=[], dilation=[], pads=[])
        return r
    nd = len(k)
    if nd == 0:
        raise ShapeError("op %s: needs the kernel size" % op.type)
    if (s and len(s) != nd) or (d and len(d) != nd) or (p and len(p) != 2 * nd):
        raise ShapeError("op %s: strides, dilations or pads do not match the %d-D kernel" % (op.type, nd))
    d = d or [1] * nd
    if any(v != 1 for v in d) and (kind == POOL or legacy in (SAME, CAFFE_LEGACY_POOLING)):
        raise ShapeError("op %s: dilation must be 1 here" % op.type)
    r.update(kernel=k, stride=s or [1] * nd, dilation=d, pads=p or [0] * (2 * nd))
    return r


def _parse_pad(op, a, r):
    if r["legacy"] != NOTSET:
        raise ShapeError("op %s: takes explicit pads only (legacy_pad 0)" % op.type)
    s = _family(op, a, "strides", "stride", 2, ("stride_h", "stride_w"))
    d = _family(op, a, "dilations", "dilation", 2, ("dilation_h", "dilation_w"))
    p = _family(op, a, "pads", "pad", 4, ("pad_t", "pad_l", "pad_b", "pad_r"))
    if any(abs(v) > _INT32_MAX for v in p):
        raise ShapeError("op %s: argument pads out of range" % op.type)
    if any(v != 1 for v in s + d):
        raise ShapeError("op %s: padding takes strides and dilations 1 only" % op.type)
    if p and len(p) != 4:
        raise ShapeError("op %s: argument pads must have 4 values (2-D)" % op.type)
    r.update(kernel=[1, 1], stride=[1, 1], dilation=[1, 1], pads=p or [0] * 4)
    return r


def geometry(op, x_shape, kind):
    """The geometry for an input X of shape ``x_shape``; ShapeError where the op refuses it."""
    a = parse(op, kind)
    x = tuple(x_shape)
    nd = len(a["kernel"])
    if a["glob"]:
        if not 3 <= len(x) <= MAX_ND + 2:
            raise ShapeError("op %s: input %s must have 3 to %d dims" % (op.type, x, MAX_ND + 2))
        nd = len(x) - 2
    elif len(x) != nd + 2:
        raise ShapeError("op %s: input %s must have %d dims for a %d-D kernel" % (op.type, x, nd + 2, nd))
    nhwc = a["nhwc"]
    spatial = x[1:-1] if nhwc else x[2:]
    outs, ks, ss, ds, phs, pts = [], [], [], [], [], []
    for i, n in enumerate(spatial):
        if n < 1:
            raise ShapeError("op %s: input %s has spatial size 0" % (op.type, x))
        if a["glob"]:
            k, s, d, ph, pt, out = n, 1, 1, 0, 0, 1
        else:
            k, s, d = a["kernel"][i], a["stride"][i], a["dilation"][i]
            dk = d * (k - 1) + 1
            ph, pt = a["pads"][i], a["pads"][nd + i]
            legacy = a["legacy"]
            if legacy == VALID:
                ph = pt = 0
                span = n
            elif legacy == SAME:
                need = max(((n + s - 1) // s - 1) * s + k - n, 0)
                ph, pt = need // 2, need - need // 2
                span = n + need
            elif legacy == CAFFE_LEGACY_POOLING:
                span = n + 2 * ph
            else:
                span = n + ph + pt
            if span < dk:
                raise ShapeError("op %s: input %s is smaller than the window in dim %d" % (op.type, x, i))
            if legacy == CAFFE_LEGACY_POOLING:
                standard = (span - k) // s + 1
                out = -((k - span) // s) + 1
                if ph > 0 and (out - 1) * s >= n + ph:
                    out -= 1
                pt = ph + s * (out - standard)
            else:
                out = (span - dk) // s + 1
        outs.append(out), ks.append(k), ss.append(s), ds.append(d), phs.append(ph), pts.append(pt)
    return Geometry(nd, nhwc, x[0], x[-1] if nhwc else x[1], tuple(spatial), tuple(outs), tuple(ks),
                    tuple(ss), tuple(ds), tuple(phs), tuple(pts))


def out_shape(g, channels):
    """Y's shape for the geometry and ``channels`` output channels."""
    return (g.N,) + g.out + (channels,) if g.nhwc else (g.N, channels) + g.out
