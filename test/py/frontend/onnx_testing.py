"""The importer tests' model builders (shared with the benchmarks)."""

from atvoss_mlir.testing.onnx_models import *  # noqa: F401,F403
