"""How a view was created, and PyTorch's errors for in-place changes it forbids.

Every view (``Tensor._base`` set) carries ``_cmeta``, one of the values below, as PyTorch's
``CreationMeta``: a view made with grad mode on by a single-output view op is ``DEFAULT``
(in-place changes are tracked through ``CopySlices``/``AsStridedBackward0``); the pieces of
``split``/``chunk``/``unbind`` are ``MULTI_OUTPUT_NODE`` (their one node cannot be rebased
for one piece); views made under ``no_grad`` or ``inference_mode``, and views a custom
``Function`` returns, are the other three. A view of a view inherits its base's value unless
it is ``DEFAULT`` (an inference-mode view stays one). Changing a non-``DEFAULT`` view in place
with grad mode on, or using it after its base (or another view of it) changed, raises.
"""

import re

DEFAULT = 0
IN_CUSTOM_FUNCTION = 1
MULTI_OUTPUT_NODE = 2
NO_GRAD_MODE = 3
INFERENCE_MODE = 4

_WHY = {
    MULTI_OUTPUT_NODE: (
        " This view is the output of a function that returns multiple views. Such functions do "
        "not allow the output views to be modified inplace. You should replace the inplace "
        "operation by an out-of-place one."),
    NO_GRAD_MODE: (
        " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
        "your code by moving both the view and the inplace either both inside the no_grad block "
        "(if you don't want the inplace to be tracked) or both outside (if you want the inplace "
        "to be tracked)."),
    INFERENCE_MODE: (
        " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
        "your code by moving both the view and the inplace either both inside the inference_mode "
        "block (if you don't want the inplace to be tracked) or both outside (if you want the "
        "inplace to be tracked)."),
    IN_CUSTOM_FUNCTION: (
        " This view was created inside a custom Function (or because an input was returned "
        "as-is) and the autograd logic to handle view+inplace would override the custom backward "
        "associated with the custom Function, leading to incorrect gradients. This behavior is "
        "forbidden. You can fix this by cloning the output of the custom Function."),
}


def for_new_view(base, enabled, inference, multi=False):
    """The creation meta of a view of ``base`` made now (grad mode ``enabled``, inside
    ``inference`` mode or not; ``multi``: a piece of split/chunk/unbind)."""
    if inference:
        new = INFERENCE_MODE
    elif not enabled:
        new = NO_GRAD_MODE
    else:
        new = MULTI_OUTPUT_NODE if multi else DEFAULT
    if base._base is None:
        return new
    prev = base._cmeta
    return prev if new == DEFAULT or prev == INFERENCE_MODE else new


def without_grad_mode(view):
    """Whether ``view`` (no grad_fn) was made under ``no_grad``/``inference_mode`` of a base
    that requires grad: it requires grad too, as in PyTorch, but is no leaf of its own (no
    gradient accumulator: what flows into it is dropped)."""
    return view._cmeta >= NO_GRAD_MODE and view._base._requires_grad


def node_name(fn):
    """A node's name as PyTorch's view errors print it (``Split`` for ``SplitBackward0``)."""
    return re.sub(r"Backward[0-9]*$", "", type(fn).__name__)


def rebase_error(view, indirect, name=None, nr=None):
    """PyTorch's RuntimeError for a non-``DEFAULT`` ``view`` changed in place (``indirect``:
    its base or another view of it was). ``name``/``nr``: the node and output number to print
    when the change goes through a view of ``view`` that is never made (``x[i] = v``)."""
    cm = view._cmeta
    fn = view._grad_fn
    what = "its base or another view of its base has been" if indirect else "is being"
    if name is None and fn is not None:
        name, nr = node_name(fn), view._output_nr
    if cm in (INFERENCE_MODE, NO_GRAD_MODE) or name is None:
        prefix = ("A view was created in" if name is None
                  else f"Output {nr} of {name} is a view of a view which was created in")
        if cm == INFERENCE_MODE:
            msg = f"{prefix} inference mode and {what} modified inplace in normal mode."
        else:
            msg = f"{prefix} no_grad mode and {what} modified inplace with grad mode enabled."
    else:
        msg = f"Output {nr} of {name} is a view and {what} modified inplace."
    return RuntimeError(msg + _WHY[cm])
