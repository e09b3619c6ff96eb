"""Per-parameter optimizers chosen where the parameters are made (Caffe2's
``caffe2.python.optimizer_context``).

Inside ``with UseOptimizer(optim):`` every parameter that
``ModelHelper.create_param`` makes (``brew.fc``'s weight and bias, an
``rnn_cell``'s parameters, ...) records ``optim`` as its own optimizer
(``ParameterInfo.optimizer``); ``build_sgd`` / ``build_adam`` / ... then update
that parameter with it instead of the one they build. A dict picks by the
parameter's tag: ``UseOptimizer({'WEIGHT': w_optim, 'BIAS': b_optim})``, with
``'DEFAULT'`` for parameters whose tags name none. Contexts nest; an inner one
overrides the keys it names until it exits. The contexts are per thread, as
the name scopes are. ``add_weight_decay`` ignores them (as in Caffe2).
"""

import threading

__all__ = ["DEFAULT_OPTIM", "DEFAULT_MODIFIER", "ModifierContext", "UseModifierBase",
           "OptimizerContext", "UseOptimizer"]

DEFAULT_MODIFIER = "DEFAULT"
DEFAULT_OPTIM = DEFAULT_MODIFIER


class ModifierContext:
    """A stack of ``{key: modifier}`` dicts; a key's modifier is that of the
    innermost dict naming it."""

    def __init__(self):
        self._modifiers = {}
        self._modifiers_list = []

    def _rebuild_modifiers(self):
        self._modifiers = {}
        for modifiers in self._modifiers_list:
            self._modifiers.update(modifiers)

    def _has_modifier(self, name):
        return name in self._modifiers

    def _get_modifier(self, name):
        return self._modifiers.get(name)

    def push_modifiers(self, modifiers):
        if not isinstance(modifiers, dict):
            raise TypeError("push_modifiers: expected a dict {key: modifier}, got %s"
                            % type(modifiers).__name__)
        self._modifiers_list.append(dict(modifiers))
        self._modifiers.update(modifiers)

    def pop_modifiers(self):
        if not self._modifiers_list:
            raise RuntimeError("pop_modifiers: no modifiers were pushed")
        self._modifiers_list.pop()
        self._rebuild_modifiers()


class OptimizerContext(ModifierContext):
    """The optimizers in force for the parameters being created.
    ``OptimizerContext.current()`` is this thread's context."""

    _local = threading.local()

    @classmethod
    def current(cls):
        ctx = getattr(cls._local, "ctx", None)
        if ctx is None:
            ctx = cls._local.ctx = cls()
        return ctx

    def has_optimizer(self, name):
        return self._has_modifier(name)

    def get_optimizer(self, name):
        if not self.has_optimizer(name):
            raise KeyError("%s optimizer is not provided!" % name)
        return self._get_modifier(name)


class UseModifierBase:
    """``with`` block that pushes a modifier (for the key ``'DEFAULT'``) or a
    dict of them on the context class's current context."""

    def __init__(self, modifier_or_dict):
        if isinstance(modifier_or_dict, dict):
            self._modifiers = dict(modifier_or_dict)
        else:
            self._modifiers = {DEFAULT_MODIFIER: modifier_or_dict}

    def _context_class(self):
        raise NotImplementedError("%s does not name its context class" % type(self).__name__)

    def __enter__(self):
        self._context_class().current().push_modifiers(self._modifiers)
        return self

    def __exit__(self, exc_type, exc, tb):
        self._context_class().current().pop_modifiers()


class UseOptimizer(UseModifierBase):
    """``with UseOptimizer(optim):`` or ``with UseOptimizer({'WEIGHT': a,
    'BIAS': b, 'DEFAULT': c}):`` (see the module docstring)."""

    def _context_class(self):
        return OptimizerContext


def optimizer_for_tags(tags):
    """The optimizer the current context gives a parameter with ``tags`` (a
    set of ParameterTags values): that of a tag it names (in sorted tag order),
    else its ``'DEFAULT'``, else None."""
    ctx = OptimizerContext.current()
    for tag in sorted(tags):
        if ctx.has_optimizer(tag):
            return ctx.get_optimizer(tag)
    if ctx.has_optimizer(DEFAULT_OPTIM):
        return ctx.get_optimizer(DEFAULT_OPTIM)
    return None
