"""``numgrad.amp``: PyTorch's mixed-precision API, so training scripts written for it run.

* ``autocast`` checks its arguments and disables itself with PyTorch's warnings where PyTorch
  would (CUDA absent, a dtype CPU autocast does not support). Where PyTorch would compute in
  bfloat16/float16, numgrad keeps computing in the tensors' own dtype (numgrad has no
  half-precision kernels) and says so once with a ``UserWarning``: results then follow
  float32 arithmetic, not PyTorch's reduced precision.
* ``GradScaler`` is PyTorch's dynamic loss scaling (scale, unscale with an overflow check,
  skipped steps, growth and backoff), with its defaults, errors and state dict. Its default
  device is ``"cuda"``: without a GPU it disables itself with PyTorch's warning.
"""

import math
import sys
import types
import warnings

_DEVICE_TYPES = ("cpu", "cuda")
_state = {"cpu": None, "cuda": None}  # device type -> the dtype of the innermost autocast
_HALF_WARNED = []


def _check_device_type(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in _DEVICE_TYPES:
        raise RuntimeError("Expected one of cpu, cuda device type at start of device string: "
                           f"{device_type}")


def _cuda_available():
    from numgrad import cuda
    return cuda.is_available()


def _half_dtypes():
    import numgrad
    return tuple(getattr(numgrad, n) for n in ("bfloat16", "float16") if hasattr(numgrad, n))


class autocast:  # noqa: N801  (PyTorch's name)
    """``with autocast(device_type, dtype=None, enabled=True, cache_enabled=None):`` (also a
    decorator)."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        _check_device_type(device_type)
        import numgrad
        self.device = device_type
        self.fast_dtype = dtype
        if dtype is None:
            dtype = getattr(numgrad, "bfloat16" if device_type == "cpu" else "float16", None)
        self._enabled = bool(enabled)
        if self._enabled and device_type == "cuda" and not _cuda_available():
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                          UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled and device_type == "cpu" and (dtype is None
                                                       or dtype not in _half_dtypes()):
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling "
                          "autocast.\nCPU Autocast only supports dtypes of torch.bfloat16, "
                          "torch.float16 currently.", UserWarning, stacklevel=2)
            self._enabled = False
        self.fast_dtype = dtype

    def __enter__(self):
        self._previous = _state[self.device]
        if self._enabled:
            if not _HALF_WARNED:
                _HALF_WARNED.append(True)
                warnings.warn("numgrad has no half-precision kernels: under autocast it keeps "
                              "computing in each tensor's own dtype (float32 results, not "
                              f"PyTorch's {self.fast_dtype})", UserWarning, stacklevel=2)
            _state[self.device] = self.fast_dtype
        else:
            _state[self.device] = None
        return self

    def __exit__(self, *exc):
        _state[self.device] = self._previous
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled):
                return fn(*args, **kwargs)
        return wrapped


def is_autocast_enabled(device_type="cuda"):
    _check_device_type(device_type)
    return _state[device_type] is not None


def get_autocast_dtype(device_type):
    _check_device_type(device_type)
    import numgrad
    d = _state[device_type]
    if d is not None:
        return d
    return getattr(numgrad, "bfloat16" if device_type == "cpu" else "float16", None)


class GradScaler:
    """Dynamic loss scaling: ``scaler.scale(loss).backward(); scaler.step(opt);
    scaler.update()``. Gradients are unscaled in place (once per optimizer and iteration);
    a step whose gradients hold an inf or NaN is skipped and the scale backs off."""

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = bool(enabled)
        if self._enabled and device == "cuda" and not _cuda_available():
            warnings.warn(f"torch.{device}.amp.GradScaler is enabled, but CUDA is not "
                          "available.  Disabling.", UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled:
            if not growth_factor > 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if not backoff_factor < 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale = float(init_scale)
        self._scale = None  # set by the first scale()
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._init_growth_tracker = 0
        self._growth_tracker = None
        self._per_optimizer = {}  # id(optimizer) -> {"unscaled": bool, "stepped": bool, "inf"}

    def is_enabled(self):
        return self._enabled

    def _need_scale(self, funcname):
        if self._scale is None:
            raise AssertionError(
                f"Attempted {funcname} but _scale is None.  This may indicate your script did "
                "not use scaler.scale(loss or outputs) earlier in the iteration.")

    def _lazy_init(self):
        self._scale = self._init_scale
        self._growth_tracker = self._init_growth_tracker

    def scale(self, outputs):
        """``outputs`` (a tensor, or nested lists/tuples of them) times the current scale."""
        if not self._enabled:
            return outputs
        from numgrad.tensor import Tensor
        if self._scale is None:
            self._lazy_init()
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _opt_state(self, optimizer):
        return self._per_optimizer.setdefault(
            id(optimizer), {"unscaled": False, "stepped": False, "inf": False})

    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale, in place, and note any inf/NaN."""
        if not self._enabled:
            return
        self._need_scale("unscale_")
        st = self._opt_state(optimizer)
        if st["unscaled"]:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if st["stepped"]:
            raise RuntimeError("unscale_() is being called after step().")
        from numgrad.autograd.grad_mode import no_grad
        inv = 1.0 / self._scale
        found = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.grad.mul_(inv)
                    if int(p.grad.isfinite().sum()) != p.grad.numel():
                        found = True
        st["unscaled"], st["inf"] = True, found

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step()`` unless the unscaled gradients hold an inf or NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._need_scale("step")
        st = self._opt_state(optimizer)
        if st["stepped"]:
            raise RuntimeError("step() has already been called since the last update().")
        if not st["unscaled"]:
            self.unscale_(optimizer)
        result = None
        if not st["inf"]:
            result = optimizer.step(*args, **kwargs)
        st["stepped"] = True
        return result

    def update(self, new_scale=None):
        """Back off after an overflow, grow after ``growth_interval`` clean steps."""
        if not self._enabled:
            return
        self._need_scale("update")
        if new_scale is not None:
            from numgrad.tensor import Tensor
            self._scale = float(new_scale.item() if isinstance(new_scale, Tensor)
                                else new_scale)
        else:
            found = any(st["inf"] for st in self._per_optimizer.values())
            if found:
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    grown = self._scale * self._growth_factor
                    if math.isfinite(grown):
                        self._scale = grown
                    self._growth_tracker = 0
        self._per_optimizer = {}

    def get_scale(self):
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def state_dict(self):
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker or 0}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale = self._init_scale
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker = self._init_growth_tracker


# ``numgrad.cuda.amp``: the older, deprecated spellings with PyTorch's FutureWarnings


class _CudaGradScaler(GradScaler):
    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


_CudaGradScaler.__name__ = _CudaGradScaler.__qualname__ = "GradScaler"


class _CudaAutocast(autocast):
    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        import numgrad
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", dtype if dtype is not None else getattr(numgrad, "float16",
                                                                         None), enabled)


_CudaAutocast.__name__ = _CudaAutocast.__qualname__ = "autocast"

cuda_amp = types.ModuleType("numgrad.cuda.amp", "PyTorch's deprecated torch.cuda.amp names.")
cuda_amp.GradScaler = _CudaGradScaler
cuda_amp.autocast = _CudaAutocast
sys.modules["numgrad.cuda.amp"] = cuda_amp
