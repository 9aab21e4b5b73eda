"""Named pass pipelines, declared as data: `<name>.txt` holds the textual
pipeline that `atvoss-opt --<name>` runs (installed as atvoss_mlir.pipelines)."""
