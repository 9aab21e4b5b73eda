"""Numerical safety: what the conversions of results did to the values.

Per op (source location), the simulator counts
  overflow    non-finite results (inf/nan) produced from finite inputs: the
              accumulator or the conversion to the output type (fp16 tops out
              at 65504) overflowed
  underflow   nonzero results flushed to zero by the conversion
  saturation  int8 requantisation results clipped to [-128, 127]
and reports them as located warnings and in the report's `numerics` list
({op, loc, kind, dtype, count}), instead of passing silent infs and zeros on.
"""

from __future__ import annotations

import numpy as np

from . import numerics

DESCRIPTIONS = {
    "overflow": "{count} results overflowed {dtype} to inf/nan from finite inputs",
    "underflow": "{count} nonzero results underflowed to zero in {dtype}",
    "saturation": "{count} requantised results saturated to the int8 range [-128, 127]",
}


class NumericEvents:
    def __init__(self):
        self.counts: dict[tuple, int] = {}   # (info id, kind, dtype) -> count
        self.infos: dict[int, object] = {}

    def add(self, info, kind: str, dtype, count: int) -> None:
        if count:
            key = (id(info), kind, str(np.dtype(dtype)))
            self.counts[key] = self.counts.get(key, 0) + int(count)
            self.infos[id(info)] = info

    def check_float(self, info, stored: np.ndarray, value, inputs=()) -> None:
        """After `value` was stored as `stored` (a float array) by an op reading `inputs`."""
        if stored.dtype.kind != "f" or stored.size == 0:
            return
        value = np.asarray(value)
        bad = ~np.isfinite(stored)
        if bad.any():
            finite_inputs = all(np.isfinite(x).all() for x in inputs
                                if np.asarray(x).dtype.kind == "f")
            if not finite_inputs:  # only what the conversion itself overflowed
                bad &= np.isfinite(value) if value.dtype.kind == "f" else True
            self.add(info, "overflow", stored.dtype, np.count_nonzero(bad))
        if value.dtype.kind == "f" and value.dtype.itemsize > stored.dtype.itemsize:
            flushed = (stored == 0) & (value != 0) & np.isfinite(value)
            self.add(info, "underflow", stored.dtype, np.count_nonzero(flushed))

    def check_requantize(self, info, x: np.ndarray, scale, zero_point: int,
                         divide: bool = False, offset: float = 0.0) -> None:
        scaled = numerics.rounded(x, scale, divide, offset) + zero_point
        # A zero point at the bottom of the range makes the lower clamp a ReLU
        # (how a quantiser folds one): only the top end saturates then.
        low = (scaled < -128) if zero_point > -128 else np.zeros(scaled.shape, bool)
        self.add(info, "saturation", np.int8, np.count_nonzero(low | (scaled > 127)))

    def entries(self) -> list[dict]:
        found = []
        for (ident, kind, dtype), count in self.counts.items():
            info = self.infos[ident]
            found.append({"op": info.name, "loc": info.loc, "kind": kind, "dtype": dtype,
                          "count": count})
        merged: dict[tuple, dict] = {}  # ops sharing a location are one entry, as in "ops"
        for entry in found:
            key = (entry["op"], entry["loc"], entry["kind"], entry["dtype"])
            if key in merged:
                merged[key]["count"] += entry["count"]
            else:
                merged[key] = entry
        return list(merged.values())


def warning_lines(entries: list[dict]) -> list[str]:
    """`file:line:col: warning: op: ...` lines of a report's `numerics` list."""
    return [f"{e['loc']}: warning: {e['op']}: " + DESCRIPTIONS[e["kind"]].format(**e)
            for e in entries]
