"""The import paths of ``torch.nn.modules.<name>`` (``linear``, ``conv``, ``loss``, ...):
thin modules that hand out numgrad's classes of the names PyTorch puts there, wherever
numgrad defines them. A name numgrad does not implement raises ``AttributeError`` (and
``ImportError`` in ``from ... import``)."""


def exports(module_name, names):
    """``(__all__, __getattr__, __dir__)`` for an alias module offering ``names``: the ones
    numgrad.nn.modules has, looked up when first asked for."""

    def available():
        from numgrad.nn import modules
        return [n for n in names if n in vars(modules)]

    def __getattr__(name):
        if name == "__all__":
            return available()
        if name in names:
            from numgrad.nn import modules
            value = vars(modules).get(name)
            if value is not None:
                return value
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(available()) | {"__name__", "__doc__"})

    return __getattr__, __dir__
