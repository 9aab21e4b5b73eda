"""npu-verify: placeholder replaced by the real pass."""
