"""-layout-pref=auto over the whole program: the faster of two layout plans.

Under `auto` the passes keep NHWC between convolutions and weigh each
transform fold by the machine model (npu-fold-transposes). Those per-op
estimates do not see all that the layout changes downstream (which tensors the
buffer plan keeps, how tiles fall), so where NHWC saves nothing the model's
own NCHW may still be faster. The npu pipeline therefore also runs on a copy
of the input with `-layout-pref=NCHW`; both programs are simulated (timing
only), and the NCHW one is the result, its remarks with it, when it takes
NCHW_MARGIN fewer cycles: on a near tie NHWC stays, which keeps transforms off
the path between convolutions. Either way `auto` is then within NCHW_MARGIN of
the better fixed layout. A remark at the entry function gives both figures.
This costs a second compilation and two timing simulations, for `auto` only.
"""

from __future__ import annotations

import dataclasses

from mlir import ir

from .diagnostics import DiagnosticError
from .passes import PassContext
from .pipeline import named_pipeline, run_pipeline

PIPELINE = "npu-pipeline"
# How much faster the NCHW program must be to be taken.
NCHW_MARGIN = 0.02


def copy_module(module: ir.Module) -> ir.Module:
    """A copy of `module` (its ops and attributes) in the same context."""
    with module.context, module.operation.location:
        copy = ir.Module.create()
        for attribute in module.operation.attributes:
            copy.operation.attributes[attribute.name] = attribute.attr
        with ir.InsertionPoint(copy.body):
            for op in module.body.operations:
                op.clone()
    return copy


def take_body(module: ir.Module, source: ir.Module) -> None:
    """`module` holds `source`'s ops instead of its own."""
    for op in list(module.body.operations):
        op.erase()
    for op in list(source.body.operations):
        module.body.append(op.operation)


def entry_location(module: ir.Module) -> ir.Location:
    functions = [op for op in module.body.operations if op.operation.name == "func.func"]
    return (functions[0] if functions else module).operation.location


def simulated_cycles(module: ir.Module, target) -> int:
    from .sim import simulate   # the simulator imports the compiler: imported late
    return simulate(module, target=target, timing_only=True).total_cycles


def run_npu_pipeline(module: ir.Module, pass_context: PassContext, configure=None,
                     print_before: tuple = (), print_after: tuple = (),
                     verify_each: bool = True) -> None:
    """Run the npu pipeline on `module`; under -layout-pref=auto, keep the
    faster of its program and the NCHW one (see the module docstring). With
    `verify_each=False` the IR is verified once, after the last pass."""
    text = named_pipeline(PIPELINE)
    target = pass_context.target
    trial = copy_module(module) if target.layout_pref == "auto" else None
    run_pipeline(module, text, pass_context, configure, print_before, print_after, verify_each)
    if trial is None:
        return
    trial_context = PassContext(target=dataclasses.replace(target, layout_pref="NCHW"),
                                tuned_schedule=pass_context.tuned_schedule)
    location = entry_location(module)
    try:
        run_pipeline(trial, text, trial_context, verify_each=verify_each)
        planned = simulated_cycles(module, target)
        nchw = simulated_cycles(trial, target)
    except Exception as error:  # noqa: BLE001 - the NHWC program stands on its own
        reason = error.diagnostics[0].message if isinstance(error, DiagnosticError) \
            and error.diagnostics else f"{type(error).__name__}: {error}"
        pass_context.diagnostics.remark(
            location, f"-layout-pref=auto: NHWC between convolutions, not compared with "
            f"NCHW ({reason})")
        return
    taken = planned > nchw * (1 + NCHW_MARGIN)
    if taken:
        take_body(module, trial)
        pass_context.diagnostics = trial_context.diagnostics
    pass_context.diagnostics.remark(
        location, f"-layout-pref=auto: {'NCHW' if taken else 'NHWC'} taken: {planned} "
        f"simulated cycles with NHWC between convolutions, {nchw} with the model's NCHW "
        f"(taken when it needs over {int(NCHW_MARGIN * 100)}% fewer)")
