"""Precision: quantised ONNX models (QDQ and the QLinear operator forms) and
the `-precision` target option, which rewrites an fp32 ONNX model before
import to compute in fp16, int8 (calibrated with onnxruntime's quantiser) or
int8/fp16 chosen per layer."""
