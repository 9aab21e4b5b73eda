"""Frontends: model formats imported as linalg on tensors."""

from .onnx_importer import import_onnx, import_onnx_text

__all__ = ["import_onnx", "import_onnx_text"]
