"""Dialects defined by atvoss-mlir."""
