"""Pytrees for ``numgrad.func``: nested tuples, lists, dicts and namedtuples of leaves.

``flatten(tree)`` gives ``(leaves, spec)``; ``unflatten(leaves, spec)`` rebuilds the tree;
``broadcast(prefix, spec)`` spreads a prefix tree (an ``in_dims``/``out_dims`` value) over
the leaves of ``spec``, or returns None when it does not fit.
"""

class _Leaf:
    """The spec of a leaf (one shared instance)."""

    __slots__ = ()

    def __repr__(self, indent=0):
        return "*"


LEAF = _Leaf()


class Spec:
    """The structure of a tree: its node type, context (dict keys) and children's specs;
    printed as PyTorch prints its ``TreeSpec``."""

    __slots__ = ("kind", "context", "children", "n")

    def __init__(self, kind, context, children):
        self.kind = kind
        self.context = context
        self.children = children
        self.n = sum(1 if c is LEAF else c.n for c in children)

    def __eq__(self, other):
        return (isinstance(other, Spec) and self.kind is other.kind
                and self.context == other.context and self.children == other.children)

    def __hash__(self):
        return hash((self.kind, self.context, self.children))

    def __repr__(self, indent=0):
        if self.kind in (tuple, list, dict):
            name, ctx = self.kind.__name__, list(self.context) if self.context else None
        else:
            name, ctx = "namedtuple", self.kind
        inner = ""
        if self.children:
            indent += 2
            parts = [c.__repr__(indent) for c in self.children]
            inner = parts[0] + ("," if len(parts) > 1 else "") + ",".join(
                "\n" + " " * indent + p for p in parts[1:])
        return f"TreeSpec({name}, {ctx}, [{inner}])"


def _is_node(x):
    return isinstance(x, (tuple, list, dict))


def flatten(tree):
    """``(leaves, spec)``; a lone leaf has spec ``LEAF``."""
    leaves = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree, leaves):
    if isinstance(tree, dict):
        keys = list(tree)
        return Spec(dict, tuple(keys), tuple(_flatten(tree[k], leaves) for k in keys))
    if isinstance(tree, (tuple, list)):
        kind = type(tree) if type(tree) in (tuple, list) or hasattr(tree, "_fields") else (
            tuple if isinstance(tree, tuple) else list)
        return Spec(kind, None, tuple(_flatten(c, leaves) for c in tree))
    leaves.append(tree)
    return LEAF


def unflatten(leaves, spec):
    it = iter(leaves)
    return _build(it, spec)


def _build(it, spec):
    if spec is LEAF:
        return next(it)
    children = [_build(it, c) for c in spec.children]
    if spec.kind is dict:
        return dict(zip(spec.context, children))
    if spec.kind is list:
        return children
    if spec.kind is tuple:
        return tuple(children)
    return spec.kind(*children)  # a namedtuple


def broadcast(prefix, spec):
    """The leaves' values of ``prefix`` spread over ``spec`` (a prefix value that is not a
    container applies to the whole subtree), or None when the structures do not fit."""
    out = []
    return out if _broadcast(prefix, spec, out) else None


def _broadcast(prefix, spec, out):
    if not _is_node(prefix):
        out.extend([prefix] * (1 if spec is LEAF else spec.n))
        return True
    if spec is LEAF or not isinstance(prefix, spec.kind if spec.kind in (dict, list) else tuple):
        return False
    if spec.kind is dict:
        if set(prefix) != set(spec.context):
            return False
        values = [prefix[k] for k in spec.context]
    else:
        values = list(prefix)
    if len(values) != len(spec.children):
        return False
    return all(_broadcast(v, c, out) for v, c in zip(values, spec.children))
