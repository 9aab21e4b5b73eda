"""Run the command-line tools in-process on one input and judge the outcome.

Every input must either work (exit 0) or be refused with a located
diagnostic (`file:line:col: error: ...`) and exit 1. Anything else is a
finding: a Python traceback, an "internal error" (an unexpected exception
turned into a message by the tool's top level), an unlocated error, another
exit status, or no answer within the per-input time limit.
"""

from __future__ import annotations

import contextlib
import io
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

LOCATED_ERROR = re.compile(r"^\S.*:\d+:\d+: error: ", re.MULTILINE)
TIME_LIMIT_SECONDS = 20.0


class InputTimeout(BaseException):
    """Raised by the alarm (a BaseException: the tools' `except Exception` must not eat it)."""


@dataclass
class Outcome:
    status: int | None          # None: did not finish in time
    stdout: str
    stderr: str
    seconds: float
    signal: int | None = None   # subprocess killed by a signal


def _tool_main(tool: str):
    if tool == "atvoss-opt":
        from atvoss_mlir.tools.opt import main
    elif tool == "atvoss":
        from atvoss_mlir.tools.atvoss import main
    elif tool == "atvoss-sim":
        from atvoss_mlir.sim.cli import main
    else:
        raise ValueError(f"unknown tool {tool}")
    return main


def _alarm(signum, frame):
    raise InputTimeout()


def run_in_process(tool: str, argv: list[str], time_limit: float = TIME_LIMIT_SECONDS) -> Outcome:
    """Call the tool's main(argv) with stdout/stderr captured and a time limit."""
    main = _tool_main(tool)
    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, time_limit)
    start = time.perf_counter()
    status = None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
    except InputTimeout:
        status = None
    except SystemExit as exit_:  # argparse --help/--version
        status = exit_.code if isinstance(exit_.code, int) else 1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return Outcome(status, out.getvalue(), err.getvalue(), time.perf_counter() - start)


def run_subprocess(tool: str, argv: list[str], time_limit: float = TIME_LIMIT_SECONDS) -> Outcome:
    import os
    executable = os.path.join(os.path.dirname(sys.executable), tool)
    start = time.perf_counter()
    try:
        done = subprocess.run([executable, *argv], capture_output=True, text=True,
                              timeout=time_limit)
    except subprocess.TimeoutExpired as expired:
        return Outcome(None, str(expired.stdout or ""), str(expired.stderr or ""),
                       time.perf_counter() - start)
    killed = -done.returncode if done.returncode < 0 else None
    return Outcome(done.returncode, done.stdout, done.stderr, time.perf_counter() - start, killed)


def finding(outcome: Outcome) -> str | None:
    """None if the outcome is acceptable, else the kind of finding."""
    if outcome.signal is not None:
        return "crash"
    if outcome.status is None:
        return "hang"
    if "Traceback (most recent call last)" in outcome.stderr:
        return "traceback"
    if "internal error" in outcome.stderr:
        return "internal error"
    if outcome.status == 0:
        return None
    if outcome.status != 1:
        return "exit status"
    if not LOCATED_ERROR.search(outcome.stderr):
        return "unlocated error"
    return None


# A located error whose message is a Python exception the importer caught
# generically: handled (no traceback, exit 1) but not a purpose-written
# diagnostic. Counted separately in the figures.
RAW_EXCEPTION = re.compile(r"\b(KeyError|IndexError|TypeError|ValueError|AttributeError|"
                           r"ZeroDivisionError|OverflowError|AssertionError|RuntimeError|"
                           r"MemoryError|RecursionError|NotImplementedError|NameError): ")


def label(outcome: Outcome) -> str:
    """ok / error / raw exception / the kind of finding."""
    kind = finding(outcome)
    if kind:
        return kind
    if outcome.status == 0:
        return "ok"
    return "raw exception" if RAW_EXCEPTION.search(outcome.stderr) else "error"


def signature(kind: str, outcome: Outcome) -> str:
    """A short key grouping findings of one cause (the first message line, numbers elided)."""
    lines = [line for line in outcome.stderr.splitlines() if "error" in line] or [""]
    text = re.sub(r"\d+", "N", lines[0].split(": error: ", 1)[-1])[:120]
    return f"{kind}: {text}"
