"""The ONNX exporter's exceptions, as ``torch.onnx.errors`` names them."""

__all__ = ["OnnxExporterError", "OnnxExporterWarning", "UnsupportedOperatorError"]


class OnnxExporterWarning(UserWarning):
    """Warnings of the ONNX exporter."""


class OnnxExporterError(RuntimeError):
    """Errors of the ONNX exporter (the base class of the others)."""


class UnsupportedOperatorError(OnnxExporterError):
    """An op of the traced forward has no ONNX form here (at this opset)."""

    def __init__(self, name, version, supported_version=None, detail=None):
        if supported_version is not None:
            msg = (f"Exporting the operator '{name}' to ONNX opset version {version} is not "
                   f"supported. Support for this operator was added in version "
                   f"{supported_version}, try exporting with this version")
        else:
            msg = (f"Exporting the operator '{name}' to ONNX opset version {version} is not "
                   "supported")
        if detail:
            msg += f": {detail}"
        super().__init__(msg)
