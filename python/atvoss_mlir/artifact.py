"""Programs as files: MLIR text or bytecode, one self-contained file per model.

A compiled module records, as module attributes, what a user of the file needs
besides the program:

    npu.target        the target string it was compiled for
    npu.input_names   the model's input names, in argument order
    npu.output_names  its output names, in result order

Bytecode (`.mlirbc`, magic `ML\\xefR`) stores the weights as `dense_resource`
blobs and an `npu.checksum` attribute: the sha256 of the file with the digest
itself zeroed. It is checked before the MLIR reader sees the bytes, because
the reader aborts the whole process on some corrupt inputs (an assertion in
the attribute section), and a flipped bit in a weight would otherwise load as
a silently different program. Bytecode written by other tools has no
checksum: it is first parsed in a child process, so that an abort or an
endless loop of the reader becomes an error instead of taking this process
down.

Files are written to a temporary file in the same directory and renamed on
success: a failed compile or write leaves no partial output file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import math
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
from mlir import ir

from .bytecode import resource_blobs
from .diagnostics import (Diagnostic, DiagnosticError, SourcePosition, diagnostics_of,
                          source_position)
from .parse_guard import parse_module
from .target import NpuTarget, TargetError, parse_target

BYTECODE_MAGIC = b"ML\xefR"
BYTECODE_SUFFIX = ".mlirbc"
EMIT_FORMATS = ("text", "bytecode")

TARGET_ATTR = "npu.target"
INPUT_NAMES_ATTR = "npu.input_names"
OUTPUT_NAMES_ATTR = "npu.output_names"
CHECKSUM_ATTR = "npu.checksum"
_CHECKSUM_PREFIX = b"sha256:"
_CHECKSUM_PLACEHOLDER = _CHECKSUM_PREFIX + b"0" * 64
# The digest is a null-terminated string of the bytecode's string section.
_CHECKSUM_DIGEST = re.compile(rb"[0-9a-f]{64}\x00")

# Bytecode without a checksum is first read in a child process, given this long.
READER_SECONDS = 20.0
# Where weights live: op name -> attribute.
_WEIGHT_ATTRIBUTES = {"memref.global": "initial_value", "arith.constant": "value"}
_NUMPY_DTYPES = {name: np.dtype(name.replace("f", "float").replace("i", "int"))
                 for name in ("f16", "f32", "f64", "i8", "i16", "i32", "i64")}
# Constants smaller than this stay inline: a blob's header costs more than it saves.
RESOURCE_MIN_BYTES = 64


class ArtifactError(DiagnosticError):
    """A file that cannot be read as a program, located at the file."""

    def __init__(self, filename: str, message: str):
        super().__init__([Diagnostic("error", message,
                                     position=SourcePosition(filename, 1, 1))])


def is_bytecode(data: bytes | str) -> bool:
    return isinstance(data, (bytes, bytearray, memoryview)) and bytes(data[:4]) == BYTECODE_MAGIC


def emit_format(path: str, emit: str | None = None) -> str:
    """'bytecode' or 'text': `emit` if given, else from the file's suffix."""
    if emit is not None:
        if emit not in EMIT_FORMATS:
            raise ValueError(f"emit must be one of {', '.join(EMIT_FORMATS)}, not {emit!r}")
        return emit
    return "bytecode" if str(path).endswith(BYTECODE_SUFFIX) else "text"


# -- metadata ----------------------------------------------------------------------------------

@dataclasses.dataclass
class Metadata:
    position: SourcePosition                 # of the module that records it
    target: NpuTarget | None = None          # None: the module records no target
    input_names: list[str] | None = None
    output_names: list[str] | None = None


def record_metadata(module: ir.Module, target: NpuTarget, input_names: list[str],
                    output_names: list[str]) -> None:
    with module.context:
        attributes = module.operation.attributes
        attributes[TARGET_ATTR] = ir.StringAttr.get(str(target))
        attributes[INPUT_NAMES_ATTR] = ir.ArrayAttr.get(
            [ir.StringAttr.get(name) for name in input_names])
        attributes[OUTPUT_NAMES_ATTR] = ir.ArrayAttr.get(
            [ir.StringAttr.get(name) for name in output_names])


def read_metadata(module: ir.Module, filename: str = "-") -> Metadata:
    """The recorded target and names; a malformed record is a located error."""
    attributes = module.operation.attributes
    position = _position_in(filename, module.operation.location)

    def fail(message: str) -> DiagnosticError:
        return DiagnosticError([Diagnostic("error", message, position=position)])

    metadata = Metadata(position)
    if TARGET_ATTR in attributes:
        attr = attributes[TARGET_ATTR]
        if not isinstance(attr, ir.StringAttr):
            raise fail(f"'{TARGET_ATTR}' must be a string, got {attr}")
        try:
            metadata.target = parse_target(attr.value)
        except TargetError as error:
            raise fail(f"the recorded target '{attr.value}' is not valid here: {error}") from None
    for name, field in ((INPUT_NAMES_ATTR, "input_names"), (OUTPUT_NAMES_ATTR, "output_names")):
        if name not in attributes:
            continue
        attr = attributes[name]
        if not isinstance(attr, ir.ArrayAttr) or \
                not all(isinstance(item, ir.StringAttr) for item in attr):
            raise fail(f"'{name}' must be an array of strings, got {attr}")
        setattr(metadata, field, [ir.StringAttr(item).value for item in attr])
    return metadata


def _position_in(filename: str, location: ir.Location) -> SourcePosition:
    # A compiled module's location points at its source model; a problem of
    # the file itself is reported at the file.
    position = source_position(location, filename)
    if position is None or position.filename != filename:
        return SourcePosition(filename, 1, 1)
    return position


def resolve_target(metadata: Metadata, requested: NpuTarget | None) -> NpuTarget:
    """The target to run a program on: the requested one, which must be the
    recorded one when the program records a target."""
    recorded = metadata.target
    if requested is None or recorded is None:
        return requested or recorded or parse_target(None)
    if requested != recorded:
        differences = [
            f"-{field.metadata['option']}={getattr(recorded, field.name)} "
            f"(requested {getattr(requested, field.name)})"
            for field in dataclasses.fields(NpuTarget)
            if getattr(recorded, field.name) != getattr(requested, field.name)]
        raise DiagnosticError([Diagnostic(
            "error", "the program was compiled for another target: " + ", ".join(differences)
            + "; recompile it for the requested target or drop the target",
            position=metadata.position)])
    return recorded


# -- reading -----------------------------------------------------------------------------------

def read_file(path: str) -> bytes:
    """The bytes of a file ('-': standard input); an unreadable file is a located error."""
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as stream:
            return stream.read()
    except OSError as error:
        raise ArtifactError(path, f"cannot read '{path}': {error.strerror}") from None


def parse_program(data: bytes | str, context: ir.Context, filename: str = "-") -> ir.Module:
    """A module from MLIR text or bytecode; every failure is a DiagnosticError."""
    if not is_bytecode(data):
        if not isinstance(data, str):
            try:
                data = bytes(data).decode("utf-8")
            except UnicodeDecodeError:
                raise ArtifactError(filename, "cannot read the program: not UTF-8 text "
                                    "and not MLIR bytecode") from None
        return parse_module(data, context, filename)
    data = bytes(data)
    signed = _verify_checksum(data, filename)
    failure = None if signed else _reader_failure(data)
    if failure:
        raise ArtifactError(filename, f"corrupt MLIR bytecode: {failure}")
    try:
        module = ir.Module.parse(data, context)
    except ir.MLIRError as error:
        reasons = "; ".join(d.message for d in diagnostics_of(error))
        raise ArtifactError(filename, f"corrupt or truncated MLIR bytecode: {reasons}") from None
    _dense_weights(module, data)
    attributes = module.operation.attributes
    if CHECKSUM_ATTR in attributes:
        if not signed:  # the digest itself was damaged
            raise ArtifactError(filename, f"corrupt MLIR bytecode: malformed '{CHECKSUM_ATTR}'")
        del attributes[CHECKSUM_ATTR]  # an envelope of the file, not part of the program
    return module


def _dense_weights(module: ir.Module, data: bytes) -> None:
    """Turn the weights of a bytecode file back into dense attributes, read
    from the file's blobs: the module is then the one the compiler built in
    memory (the simulator and the text form read dense data directly).
    A blob that cannot be found or does not fit stays a resource."""
    blobs = resource_blobs(data)

    def visit(op):
        name = _WEIGHT_ATTRIBUTES.get(op.name)
        attr = op.attributes[name] if name is not None and name in op.attributes else None
        text = str(attr) if attr is not None else ""
        if text.startswith("dense_resource<"):
            attr = ir.DenseResourceElementsAttr(attr)
            key = text[len("dense_resource<"):].split(">", 1)[0].strip('"')
            shaped = ir.ShapedType(attr.type)
            dtype = _NUMPY_DTYPES.get(str(shaped.element_type))
            blob = blobs.get(key)
            if dtype is not None and blob is not None and \
                    len(blob) == math.prod(shaped.shape) * dtype.itemsize:
                array = np.frombuffer(blob, dtype).reshape(shaped.shape)
                op.attributes[name] = ir.DenseElementsAttr.get(array, type=attr.type)
        return ir.WalkResult.ADVANCE

    if blobs:
        with module.context:
            module.operation.walk(visit)


def _verify_checksum(data: bytes, filename: str) -> bool:
    """True if the file carries a digest and it matches; False if it has none."""
    # The string section, which holds the digest, is written last.
    start = data.rfind(_CHECKSUM_PREFIX) + len(_CHECKSUM_PREFIX)
    digest = data[start:start + 65]
    if start < len(_CHECKSUM_PREFIX) or not _CHECKSUM_DIGEST.fullmatch(digest):
        return False
    view = memoryview(data)
    unsigned = hashlib.sha256(view[:start])
    unsigned.update(b"0" * 64)
    unsigned.update(view[start + 64:])
    if unsigned.hexdigest().encode() != digest[:64]:
        raise ArtifactError(filename, "corrupt MLIR bytecode: the checksum does not match the "
                            "contents (the file was truncated or modified after it was written)")
    return True


_PARSE_IN_CHILD = """
import sys
from mlir import ir
from atvoss_mlir.context import make_context
try:
    ir.Module.parse(sys.stdin.buffer.read(), make_context())
except ir.MLIRError:
    pass
"""


def _reader_failure(data: bytes) -> str | None:
    """How the MLIR reader fails to return on `data` (aborts, or runs past the
    time limit), or None: tried in a child process, without a core file."""
    def no_core_file():
        import resource
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Reading takes about 1 ms per MB; a corrupt length can make it loop.
    seconds = READER_SECONDS + len(data) / 2**20
    try:
        child = subprocess.run([sys.executable, "-c", _PARSE_IN_CHILD], input=data,
                               capture_output=True, preexec_fn=no_core_file, timeout=seconds)
    except subprocess.TimeoutExpired:
        return f"the MLIR reader does not finish on it within {seconds:.0f} s"
    if child.returncode < 0:  # killed by a signal
        return "the MLIR reader aborts on it"
    return None


# -- writing -----------------------------------------------------------------------------------

def program_bytes(module: ir.Module, emit: str, *, debug_info: bool = True,
                  generic: bool = False) -> bytes:
    """The module as text or as signed bytecode with its weights as blobs."""
    if emit == "text":
        return module.operation.get_asm(binary=True, enable_debug_info=debug_info,
                                        print_generic_op_form=generic)
    stream = io.BytesIO()
    with weights_as_resources(module), _checksum_placeholder(module):
        module.operation.write_bytecode(stream)
    data = stream.getvalue()
    start = data.find(_CHECKSUM_PLACEHOLDER)
    if start < 0 or data.find(_CHECKSUM_PLACEHOLDER, start + 1) >= 0:
        raise RuntimeError("the checksum placeholder is not unique in the bytecode")
    digest = hashlib.sha256(data).hexdigest().encode()
    view = memoryview(data)  # one copy of the weights, not three
    return b"".join((view[:start + len(_CHECKSUM_PREFIX)], digest,
                     view[start + len(_CHECKSUM_PLACEHOLDER):]))


def write_program(module: ir.Module, path: str, emit: str | None = None, **printing) -> None:
    """Write `module` to `path` ('-': standard output) as text or bytecode."""
    write_file(path, program_bytes(module, emit_format(path, emit), **printing))


def write_file(path: str, data: bytes | str) -> None:
    """Write `data` to `path` all at once: a temporary file in the same directory
    renamed over `path`, so a failure leaves no partial (or empty) file."""
    if path == "-":
        if isinstance(data, str) or not hasattr(sys.stdout, "buffer"):  # a text stream
            sys.stdout.write(data if isinstance(data, str)
                             else bytes(data).decode("utf-8", "surrogateescape"))
        else:
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        return
    data = data.encode() if isinstance(data, str) else data
    if os.path.exists(path) and not os.path.isfile(path):  # /dev/null, a pipe: write through
        with open(path, "wb") as stream:
            stream.write(data)
        return
    directory = os.path.dirname(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.",
                                             suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def _checksum_placeholder(module: ir.Module):
    attributes = module.operation.attributes
    with module.context:
        attributes[CHECKSUM_ATTR] = ir.StringAttr.get(_CHECKSUM_PLACEHOLDER.decode())
    try:
        yield
    finally:
        del attributes[CHECKSUM_ATTR]


@contextlib.contextmanager
def weights_as_resources(module: ir.Module):
    """While open: the module's large dense constants (memref.global initial
    values, arith.constant values) are `dense_resource` blobs over the same
    bytes (no copy); the dense attributes are put back on exit."""
    swapped: list[tuple[ir.Operation, str, ir.Attribute]] = []

    def visit(op):
        name = _WEIGHT_ATTRIBUTES.get(op.name)
        if name is not None and name in op.attributes:
            blob = _as_resource(op.attributes[name], op)
            if blob is not None:
                swapped.append((op, name, op.attributes[name]))
                op.attributes[name] = blob
        return ir.WalkResult.ADVANCE

    with module.context:
        module.operation.walk(visit)
    try:
        yield
    finally:
        for op, name, dense in swapped:
            op.attributes[name] = dense


def _as_resource(attr: ir.Attribute, op: ir.Operation) -> ir.Attribute | None:
    if not isinstance(attr, ir.DenseElementsAttr) or attr.is_splat:
        return None
    try:
        array = np.asarray(attr)
    except (TypeError, ValueError):  # element types numpy has no buffer for (bf16, index)
        return None
    if array.dtype == np.bool_ or array.nbytes < RESOURCE_MIN_BYTES:
        return None
    key = ir.StringAttr(op.attributes["sym_name"]).value if "sym_name" in op.attributes \
        else "constant"
    return ir.DenseResourceElementsAttr.get_from_buffer(memoryview(array), key, attr.type)
