"""atvoss-mlir: a compiler backend for a systolic-array NPU on upstream MLIR."""

__version__ = "0.1.0"
