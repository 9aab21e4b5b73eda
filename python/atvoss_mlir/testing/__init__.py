"""Builders shared by the test suite and the benchmarks: npu programs of known
shape for the simulator (`sim_programs`) and small ONNX models with
onnxruntime as their reference (`onnx_models`, needs the `test` extra)."""
