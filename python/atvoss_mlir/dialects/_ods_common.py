"""Support module that the generated `_npu_ops_gen.py` imports relatively,
as out-of-tree dialects do: the upstream helpers, re-exported."""

from mlir.dialects._ods_common import *  # noqa: F401,F403
from mlir.dialects._ods_common import _cext  # noqa: F401
