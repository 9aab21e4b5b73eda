"""The atvoss-mlir simulator: runs npu programs with real numerics and a
cycle/SRAM model of the machine described by an `NpuTarget`."""
