"""``einsum``: Einstein summation written with existing ops (diagonal, permute, sum, reshape,
bmm, mul), so its gradient and double backward come from theirs.

Each operand is brought to one shared dim order: the output dims, then the summed ones
(repeated subscripts become a diagonal, missing ones size-1 dims). One operand is then summed;
several are contracted pairwise with one batched matrix product each, summing a dim as soon as
no later operand has it. That is PyTorch's plan too, so the graphs have its node names
(``ViewBackward0`` over ``BmmBackward0``; ``MulBackward0`` when nothing is summed)."""

import string

from numgrad._shape import broadcast_shapes
from numgrad.ops import elementwise as ew
from numgrad.ops import linalg as la
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops._util import Tensor
from numgrad.ops.diagonal import diagonal
from numgrad.ops.registry import declare

_LETTERS = string.ascii_uppercase + string.ascii_lowercase  # PyTorch's label order
ELLIPSIS = "..."


def _fail(msg):
    raise RuntimeError("einsum(): " + msg)


def _parse_operands(lhs):
    """The subscripts of each operand: a list of letters and ``ELLIPSIS`` per operand."""
    terms = [[]]
    ellipsis_seen = [False]
    i = 0
    while i < len(lhs):
        c = lhs[i]
        if c == ",":
            terms.append([])
            ellipsis_seen.append(False)
        elif c == ".":
            k = len(terms) - 1
            if ellipsis_seen[k]:
                _fail(f"found '.' for operand {k} for which an ellipsis was already found")
            if lhs[i:i + 3] != ELLIPSIS:
                _fail(f"found '.' for operand {k} that is not part of any ellipsis")
            terms[k].append(ELLIPSIS)
            ellipsis_seen[k] = True
            i += 2
        elif c in _LETTERS:
            terms[-1].append(c)
        elif c != " ":
            _fail(f"invalid subscript given at index {i} in the equation string, subscripts "
                  "must be in [a-zA-Z]")
        i += 1
    return terms


def _parse_output(rhs, at, counts):
    out = []
    i = 0
    while i < len(rhs):
        c = rhs[i]
        if c == ".":
            if ELLIPSIS in out:
                _fail("found '.' for output but an ellipsis (...) was already found")
            if rhs[i:i + 3] != ELLIPSIS:
                _fail("found '.' for output that is not part of any ellipsis (...)")
            out.append(ELLIPSIS)
            i += 2
        elif c in _LETTERS:
            if c not in counts:
                _fail(f"output subscript {c} does not appear in the equation for any input "
                      "operand")
            if c in out:
                _fail(f"output subscript {c} appears more than once in the output")
            out.append(c)
        elif c != " ":
            _fail(f"invalid subscript given at index {at + i} in the equation string, "
                  "subscripts must be in [a-zA-Z]")
        i += 1
    return out


def _operands(args):
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    for i, t in enumerate(args):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 1, but got "
                            f"{type(t).__name__}")
    return list(args)


def _from_sublists(args):
    """``einsum(op1, sublist1, op2, sublist2, ..., [out])``: the equation and operands."""
    def letters(sub):
        s = ""
        for v in sub:
            if v is Ellipsis:
                s += ELLIPSIS
            elif isinstance(v, int) and 0 <= v < 52:
                s += _LETTERS[v]
            else:
                raise ValueError("einsum(): expected subscript to be within the range [0, 52), "
                                 f"but got {v}")
        return s
    ops = list(args[0::2])
    subs = list(args[1::2])
    out = None
    if len(ops) > len(subs):
        out = ops.pop()
        if isinstance(out, Tensor):
            raise ValueError("einsum(): must specify the equation string and at least one "
                             "operand, or at least one operand and its subscripts list")
    eq = ",".join(letters(s) for s in subs)
    if out is not None:
        eq += "->" + letters(out)
    return eq, ops


def _expand_terms(terms, ops):
    """Each operand's dims as labels (ellipsis dims as ``0``, ``1``, ... counted from the
    right of the widest ellipsis); the number of ellipsis dims."""
    ell = 0
    for k, (term, t) in enumerate(zip(terms, ops)):
        nd = t._data.ndim
        n = len(term) - (ELLIPSIS in term)
        if ELLIPSIS in term:
            if n > nd:
                _fail(f"the number of subscripts in the equation ({n}) is more than the number "
                      f"of dimensions ({nd}) for operand {k}")
            ell = max(ell, nd - n)
        elif n != nd:
            _fail(f"the number of subscripts in the equation ({n}) does not match the number "
                  f"of dimensions ({nd}) for operand {k} and no ellipsis was given")
    labels = []
    for term, t in zip(terms, ops):
        nd = t._data.ndim
        row = []
        for s in term:
            if s == ELLIPSIS:
                k = nd - (len(term) - 1)
                row.extend(ell - k + j for j in range(k))  # right-aligned ellipsis dims
            else:
                row.append(s)
        labels.append(row)
    return labels, ell


def _check_sizes(labels, ops):
    """PyTorch's errors for subscripts whose sizes differ (size 1 broadcasts)."""
    sizes = {}
    for k, (row, t) in enumerate(zip(labels, ops)):
        shape = t._data.shape
        seen = {}
        for d, lab in enumerate(row):
            n = shape[d]
            if lab in seen:
                if isinstance(lab, str) and n != seen[lab]:
                    _fail(f"subscript {lab} is repeated for operand {k} but the sizes don't "
                          f"match, {n} != {seen[lab]}")
                continue
            seen[lab] = n
            if isinstance(lab, int):
                continue
            old = sizes.get(lab)
            if old is None or old == 1:
                sizes[lab] = n
            elif n != 1 and n != old:
                _fail(f"subscript {lab} has size {n} for operand {k} which does not broadcast "
                      f"with previously seen size {old}")
    ell_shapes = []
    for row, t in zip(labels, ops):
        ell_shapes.append(tuple(n for lab, n in zip(row, t._data.shape) if isinstance(lab, int)))
    try:
        shape = ()
        for s in ell_shapes:
            shape = broadcast_shapes(shape, s)
    except RuntimeError:
        described = " ".join(f"{list(t._data.shape)}->{list(t._data.shape)}" for t in ops)
        _fail("operands do not broadcast with remapped shapes [original->remapped]: "
              + described)


def _to_global(t, row, order):
    """Operand ``t`` (dims labelled ``row``) as a tensor with dims ``order``: repeated labels
    become one diagonal dim, absent ones size-1 dims."""
    cur = []
    for lab in row:
        if lab in cur:
            k = cur.index(lab)
            t = sh.movedim(diagonal(t, 0, k, len(cur)), -1, k)
        else:
            cur.append(lab)
    for lab in order:
        if lab not in cur:
            t = sh.unsqueeze(t, t._data.ndim)
            cur.append(lab)
    return sh.permute(t, [cur.index(lab) for lab in order])


def _pair(a, b, summed):
    """sum over dims ``summed`` of a * b (both already in the shared order; other dims broadcast)
    as one bmm: dims of both are the batch, dims of one side the rows or columns. Summed dims
    stay as size 1."""
    if not summed:
        return ew.mul(a, b)
    sa, sb = a._data.shape, b._data.shape
    both, left, right = [], [], []
    for d in range(len(sa)):
        if d in summed:
            continue
        if sa[d] != 1 and sb[d] != 1:
            both.append(d)
        elif sa[d] != 1:
            left.append(d)
        else:
            right.append(d)

    def size(shape, dims):
        n = 1
        for d in dims:
            n *= shape[d]
        return n
    nb, nl, nr, ns = size(sa, both), size(sa, left), size(sb, right), size(sa, summed)
    a2 = sh.reshape(sh.permute(a, both + left + summed + right), (nb, nl, ns))
    b2 = sh.reshape(sh.permute(b, both + summed + right + left), (nb, ns, nr))
    r = la.bmm(a2, b2)
    order = both + left + summed + right
    r = sh.view(r, [sa[d] for d in both + left] + [1] * len(summed) + [sb[d] for d in right])
    return sh.permute(r, [order.index(d) for d in range(len(sa))])


@declare(nodes=("ViewBackward0", "MulBackward0", "PermuteBackward0", "SumBackward1"),
         variants=("function",))
def einsum(*args):
    """``einsum(equation, *operands)`` (or the operands as one list, or PyTorch's sublist form
    ``einsum(op1, [0, 1], op2, [1, 2], [0, 2])``)."""
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, "
                         "or at least one operand and its subscripts list")
    if isinstance(args[0], Tensor):
        equation, ops = _from_sublists(args)
    else:
        equation, ops = args[0], args[1:]
        if not isinstance(equation, str):
            raise TypeError("einsum(): argument 'equation' (position 1) must be str, not "
                            f"{type(equation).__name__}")
    ops = _operands(ops)
    arrow = equation.find("->")
    lhs = equation if arrow < 0 else equation[:arrow]
    terms = _parse_operands(lhs)
    if len(terms) > len(ops):
        _fail("fewer operands were provided than specified in the equation")
    if len(terms) < len(ops):
        _fail("more operands were provided than specified in the equation")
    labels, ell = _expand_terms(terms, ops)
    counts = {}
    for row in labels:
        for lab in row:  # every occurrence: "ii" sums i
            if isinstance(lab, str):
                counts[lab] = counts.get(lab, 0) + 1
    ell_dims = list(range(ell))
    summed_ell = []  # ellipsis dims an explicit output leaves out are summed
    if arrow < 0:
        out = ell_dims + sorted((c for c, n in counts.items() if n == 1), key=_LETTERS.index)
    else:
        spec = _parse_output(equation[arrow + 2:], arrow + 2, counts)
        out = []
        for s in spec:
            out.extend(ell_dims if s == ELLIPSIS else [s])
        if ELLIPSIS not in spec:
            summed_ell = ell_dims
    _check_sizes(labels, ops)
    summed = summed_ell + sorted((c for c in counts if c not in out), key=_LETTERS.index)
    order = out + summed
    ts = [_to_global(t, row, order) for t, row in zip(ops, labels)]
    n_out = len(out)
    if len(ts) == 1:
        t = ts[0]
        return red.sum(t, list(range(n_out, len(order)))) if summed else t
    result = _contract(ts, n_out, len(order))
    if summed:  # the summed dims are size 1 now
        result = sh.reshape(result, result._data.shape[:n_out])
    return result


def _contract(ts, n_out, n_all):
    """Pairwise products of the operands (each in the shared order), left to right."""
    present = {d: sum(t._data.shape[d] != 1 for t in ts) for d in range(n_out, n_all)}
    a = ts[0]
    for k, b in enumerate(ts[1:]):
        summed = []
        for d in range(n_out, n_all):
            if a._data.shape[d] != 1 and b._data.shape[d] != 1:
                present[d] -= 1
                if present[d] == 1:  # no later operand has it: sum it in this product
                    summed.append(d)
                    present[d] = 0
            elif present[d] == 1:  # only one side has it: sum it right away
                if a._data.shape[d] != 1:
                    a = red.sum(a, d, keepdim=True)
                    present[d] = 0
                elif b._data.shape[d] != 1:
                    b = red.sum(b, d, keepdim=True)
                    present[d] = 0
        # the product of the first two is the left operand of the next, as PyTorch's
        # contraction path lists it (the new operand first)
        a = _pair(a, b, summed) if k == 0 else _pair(b, a, summed)
    return a
