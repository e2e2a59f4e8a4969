"""``numgrad.load(f, weights_only=False)``: Python's own unpickler, for trusted files only.

It loads whole modules and any other object, as ``torch.load(weights_only=False)`` does,
and so it runs whatever code the file names. Tensors, parameters, storages, dtypes,
``torch.Size`` and devices are made by the allow-listed reader's checked constructors
(``numgrad/_pickle_reader.py``); every other ``torch.X`` name is looked up as
``numgrad.X`` (``torch.nn.modules.linear.Linear`` is numgrad's Linear where numgrad has
it), any other name as pickle looks it up."""

import importlib
import io
import pickle

from numgrad import _pickle_reader


class CallerError(Exception):
    """What the objects' own code raised while they loaded (load re-raises it as it is)."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


def _numgrad_global(module, name):
    """``numgrad.<module>.<name>`` for a ``torch.<module>.<name>``, or None."""
    try:
        obj = importlib.import_module("numgrad" + module[len("torch"):])
        for part in name.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    return obj


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, reader, **kwargs):
        super().__init__(file, **kwargs)
        self.reader = reader

    def find_class(self, module, name):
        if module == "torch" or module.startswith("torch."):
            try:
                found = _pickle_reader._resolve(module, name)
            except _pickle_reader.Malformed:
                found = _numgrad_global(module, name)
            if type(found) is _pickle_reader._Name:
                if found is _pickle_reader._NDARRAY:
                    return super().find_class("numpy", "ndarray")
                return getattr(self.reader, _pickle_reader._CALLS[found.name])
            if found is not None:
                return found
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if type(pid) is tuple and len(pid) == 4 and pid[0] == "module":  # legacy format
            return pid[1]
        return self.reader.storage_ref(pid)


def load(data, reader, open_storage=None, pos=0, **pickle_load_args):
    """(the object, the end of its pickle) of the pickle at ``pos`` of ``data``. With
    ``open_storage``, storages are read as the pickle names them, so objects see their
    tensors' values while they load; else ``reader.attach`` puts them in afterwards."""
    reader.open_storage = open_storage
    file = io.BytesIO(data)
    file.seek(pos)
    try:
        obj = _Unpickler(file, reader, **pickle_load_args).load()
    except (_pickle_reader.Malformed, EOFError, pickle.UnpicklingError):
        raise  # the file's problems: load's one RuntimeError
    except Exception as e:
        raise CallerError(e) from e
    return obj, file.tell()
