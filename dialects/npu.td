//===- npu.td - the npu dialect ----------------------------*- tablegen -*-===//
//
// The one definition of the `npu` dialect: a systolic-array NPU with on-chip
// SRAM (memory space 1), DMA engines between DRAM and SRAM, a matrix unit and
// a vector unit. The Python op classes, the IRDL registration module and
// docs/npu-dialect.md are generated from this file (`utils/generate.py`).
//
// The dialect is registered at run time through IRDL, so its ops print in
// generic form. IRDL checks operand/result counts and kinds and required
// attributes; semantic checks (SRAM placement, shapes, token use, offsets)
// live in the `npu-verify` pass.
//
//===----------------------------------------------------------------------===//

#ifndef NPU_OPS
#define NPU_OPS

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypes.td"
include "mlir/IR/CommonAttrConstraints.td"

def Npu_Dialect : Dialect {
  let name = "npu";
  let cppNamespace = "::npu";
  let summary = "A systolic-array NPU: SRAM tiles, DMA with tokens, matrix and vector units";
  let description = [{
    Programs in this dialect move tiles between DRAM (memory space 0) and the
    NPU's SRAM (memory space 1) with asynchronous DMA, synchronise on
    completion tokens, and compute on SRAM tiles with the matrix unit
    (matmul, conv2d) and the vector unit (elementwise, activation, pooling,
    layout transforms, requantisation).
  }];
}

//===----------------------------------------------------------------------===//
// Types and attribute constraints
//===----------------------------------------------------------------------===//

class Npu_Type<string name, string typeMnemonic> : TypeDef<Npu_Dialect, name> {
  let mnemonic = typeMnemonic;
}

def Npu_TokenType : Npu_Type<"Token", "token"> {
  let summary = "completion token of an asynchronous DMA transfer";
  let description = [{
    Produced by `npu.dma_load` / `npu.dma_store`, consumed by `npu.wait`.
    Data moved by a DMA may be used only after a wait on its token.
  }];
}

// A string attribute restricted to a fixed set of values. The IRDL generator
// turns `cases` into an `irdl.any_of` of `irdl.is` constraints, so the parser
// rejects any other value.
class Npu_StrEnum<string enumName, list<string> enumCases>
    : StringBasedAttr<CPred<"::llvm::isa<::mlir::StringAttr>($_self)">,
                      "one of: " # !interleave(enumCases, ", ")> {
  string name = enumName;
  list<string> cases = enumCases;
}

def Npu_ActivationAttr : Npu_StrEnum<"activation",
    ["none", "relu", "relu6", "clip", "gelu", "sigmoid", "tanh", "exp", "log", "erf",
     "reciprocal", "rsqrt", "sqrt", "neg", "abs"]>;
def Npu_BinaryKindAttr : Npu_StrEnum<"binary_kind",
    ["add", "sub", "mul", "div", "max", "min"]>;
def Npu_ReduceKindAttr : Npu_StrEnum<"reduce_kind", ["sum", "max", "min"]>;
def Npu_CompareKindAttr : Npu_StrEnum<"compare_kind", ["eq", "ne", "lt", "le", "gt", "ge"]>;
def Npu_PoolKindAttr : Npu_StrEnum<"pool_kind", ["max", "avg", "sum"]>;
def Npu_DataflowAttr : Npu_StrEnum<"dataflow", ["ws", "os"]>;

class Npu_Op<string mnemonic, list<Trait> traits = []>
    : Op<Npu_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// SRAM buffers
//===----------------------------------------------------------------------===//

def Npu_AllocOp : Npu_Op<"alloc"> {
  let summary = "allocate a buffer in SRAM";
  let description = [{
    Allocates a statically shaped buffer in SRAM (memory space 1). `offset`,
    when present, is the buffer's byte offset in SRAM, assigned by the SRAM
    allocator; a program without offsets is placed by the simulator.

    ```mlir
    %a = "npu.alloc"() {offset = 0 : i64} : () -> memref<64x64xf16, 1>
    ```
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$offset);
  let results = (outs AnyMemRef:$buffer);
}

def Npu_DeallocOp : Npu_Op<"dealloc"> {
  let summary = "release an SRAM buffer";
  let description = [{
    Ends the lifetime of a buffer made by `npu.alloc`; its SRAM may be reused.

    ```mlir
    "npu.dealloc"(%a) : (memref<64x64xf16, 1>) -> ()
    ```
  }];
  let arguments = (ins AnyMemRef:$buffer);
}

//===----------------------------------------------------------------------===//
// DMA and synchronisation
//===----------------------------------------------------------------------===//

def Npu_DmaLoadOp : Npu_Op<"dma_load"> {
  let summary = "asynchronous copy DRAM -> SRAM";
  let description = [{
    Starts a copy of a DRAM (sub)view into an SRAM buffer of the same shape
    on DMA channel `channel` and returns its completion token. The SRAM data
    may be read only after an `npu.wait` on the token.

    ```mlir
    %t = "npu.dma_load"(%src, %dst) {channel = 0 : i64}
        : (memref<64x64xf16, strided<[1024, 1], offset: ?>>, memref<64x64xf16, 1>) -> !npu.token
    ```
  }];
  let arguments = (ins AnyMemRef:$source, AnyMemRef:$target, I64Attr:$channel);
  let results = (outs Npu_TokenType:$token);
}

def Npu_DmaStoreOp : Npu_Op<"dma_store"> {
  let summary = "asynchronous copy SRAM -> DRAM";
  let description = [{
    Starts a copy of an SRAM buffer into a DRAM (sub)view of the same shape
    on DMA channel `channel` and returns its completion token.

    ```mlir
    %t = "npu.dma_store"(%src, %dst) {channel = 1 : i64}
        : (memref<64x64xf32, 1>, memref<64x64xf32, strided<[1024, 1], offset: ?>>) -> !npu.token
    ```
  }];
  let arguments = (ins AnyMemRef:$source, AnyMemRef:$target, I64Attr:$channel);
  let results = (outs Npu_TokenType:$token);
}

def Npu_WaitOp : Npu_Op<"wait"> {
  let summary = "wait for DMA transfers to complete";
  let description = [{
    Blocks issue of later ops until every given token's transfer is complete.

    ```mlir
    "npu.wait"(%t0, %t1) : (!npu.token, !npu.token) -> ()
    ```
  }];
  let arguments = (ins Variadic<Npu_TokenType>:$tokens);
}

def Npu_BarrierEnginesAttr : Npu_StrEnum<"barrier_engines", ["all", "compute", "matrix", "vector"]>;

def Npu_BarrierOp : Npu_Op<"barrier"> {
  let summary = "wait until every engine, the compute engines or one compute unit is idle";
  let description = [{
    Later ops issue only when all DMA channels, the matrix unit and the vector
    unit have finished everything issued before the barrier. With
    `engines = "compute"` it waits for the matrix, vector and fallback engines
    only: DMAs keep running (their tokens still need an `npu.wait`), and later
    DMAs are ordered after the compute ops issued before it. This is what a
    pipeline needs to refill a tile's buffer while other DMAs are in flight.
    With `engines = "matrix"` or `"vector"` it waits for that unit alone:
    the other keeps computing, so a tile loop can refill the buffers of the
    tile whose matmul ended, or store the tile whose vector epilogue (a
    requantisation) ended, while the next tile is computed. Later DMAs are
    ordered after that unit's ops issued before it, and after the other
    unit's ops whose results those read; not after the other unit's other ops.

    ```mlir
    "npu.barrier"() : () -> ()
    "npu.barrier"() {engines = "compute"} : () -> ()
    "npu.barrier"() {engines = "matrix"} : () -> ()
    "npu.barrier"() {engines = "vector"} : () -> ()
    ```
  }];
  let arguments = (ins OptionalAttr<Npu_BarrierEnginesAttr>:$engines);
}

//===----------------------------------------------------------------------===//
// Matrix unit
//===----------------------------------------------------------------------===//

def Npu_MatmulOp : Npu_Op<"matmul"> {
  let summary = "tile matrix multiply on the systolic array";
  let description = [{
    `output[M,N] = (accumulate ? output : 0) + lhs[M,K] * rhs[K,N]`, then, when
    given, `+ bias[N]` and the `activation` epilogue. Inputs are fp16, fp32 or
    int8; the output is the accumulator type (fp32 for fp16/fp32, i32 for i8)
    or the input type. `clip_min`/`clip_max` bound the `clip` activation. All
    operands are SRAM tiles. fp16 products are added to the fp32 accumulator
    (started from `output` when `accumulate`) one k at a time, k ascending,
    each add rounded to fp32: a K split into tiles gives the same bits.
    `dataflow` is the array's mapping the compiler chose for the op,
    weight-stationary (`ws`) or output-stationary (`os`); without it the
    target's `-dataflow` applies (`auto`: the cheaper one per tile).

    ```mlir
    "npu.matmul"(%a, %b, %c) {accumulate = true, activation = "none", dataflow = "os"}
        : (memref<64x32xf16, 1>, memref<32x64xf16, 1>, memref<64x64xf32, 1>) -> ()
    ```
  }];
  let arguments = (ins AnyMemRef:$lhs, AnyMemRef:$rhs, AnyMemRef:$output,
                       Optional<AnyMemRef>:$bias,
                       BoolAttr:$accumulate, Npu_ActivationAttr:$activation,
                       OptionalAttr<F64Attr>:$clip_min,
                       OptionalAttr<F64Attr>:$clip_max,
                       OptionalAttr<Npu_DataflowAttr>:$dataflow);
}

def Npu_Conv2dOp : Npu_Op<"conv2d"> {
  let summary = "tile 2-D convolution on the systolic array";
  let description = [{
    NHWC input tile (halo and padding included), HWCF filter, NHWC output:
    `output[n,oh,ow,f] = (accumulate ? output : 0) +
     sum input[n, oh*sh + kh*dh, ow*sw + kw*dw, c] * filter[kh,kw,c,f]`,
    then the optional `bias[F]` and `activation` epilogue. The output size
    follows from `(H - dh*(KH-1) - 1) / sh + 1`. fp16 products are added to the
    fp32 accumulator one at a time in the order c, then kh, then kw (as for
    npu.matmul), so channel tiles run in sequence give the same bits.
    `dataflow` is the GEMM mapping chosen for the op, as for npu.matmul.

    ```mlir
    "npu.conv2d"(%in, %w, %out) {accumulate = false, activation = "relu",
                                 strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
        : (memref<1x10x10x16xf16, 1>, memref<3x3x16x32xf16, 1>, memref<1x8x8x32xf32, 1>) -> ()
    ```
  }];
  let arguments = (ins AnyMemRef:$input, AnyMemRef:$filter, AnyMemRef:$output,
                       Optional<AnyMemRef>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                       BoolAttr:$accumulate, Npu_ActivationAttr:$activation,
                       OptionalAttr<F64Attr>:$clip_min,
                       OptionalAttr<F64Attr>:$clip_max,
                       OptionalAttr<Npu_DataflowAttr>:$dataflow);
}

//===----------------------------------------------------------------------===//
// Vector unit
//===----------------------------------------------------------------------===//

def Npu_DepthwiseConv2dOp : Npu_Op<"depthwise_conv2d"> {
  let summary = "tile depthwise 2-D convolution on the vector unit";
  let description = [{
    NHWC input tile (halo included), HWC filter, NHWC output with the input's
    channels: each channel is convolved with its own KHxKW window. Optional
    `bias[C]` and `activation` epilogue.

    ```mlir
    "npu.depthwise_conv2d"(%in, %w, %out) {activation = "relu6",
                                           strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>}
        : (memref<1x17x17x32xf16, 1>, memref<3x3x32xf16, 1>, memref<1x8x8x32xf16, 1>) -> ()
    ```
  }];
  let arguments = (ins AnyMemRef:$input, AnyMemRef:$filter, AnyMemRef:$output,
                       Optional<AnyMemRef>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                       Npu_ActivationAttr:$activation,
                       OptionalAttr<F64Attr>:$clip_min,
                       OptionalAttr<F64Attr>:$clip_max);
}

def Npu_ElementwiseOp : Npu_Op<"elementwise"> {
  let summary = "elementwise binary op on SRAM tiles";
  let description = [{
    `output = lhs <kind> rhs` with `kind` one of add, sub, mul, div, max, min.
    `rhs` broadcasts to the output shape by numpy rules. `div` runs at a
    quarter of the other kinds' throughput (a reciprocal seed refined by
    Newton-Raphson steps). An optional `activation` epilogue (relu, relu6,
    clip with `clip_min`/`clip_max`, neg or abs: the kinds the lanes apply in
    one pass) is applied to each result on its way out, in the same pass, as
    the depthwise conv's.

    ```mlir
    "npu.elementwise"(%a, %b, %c) {kind = "add", activation = "relu"}
        : (memref<8x64xf16, 1>, memref<8x64xf16, 1>, memref<8x64xf16, 1>) -> ()
    ```
  }];
  let arguments = (ins AnyMemRef:$lhs, AnyMemRef:$rhs, AnyMemRef:$output,
                       Npu_BinaryKindAttr:$kind,
                       OptionalAttr<Npu_ActivationAttr>:$activation,
                       OptionalAttr<F64Attr>:$clip_min,
                       OptionalAttr<F64Attr>:$clip_max);
}

def Npu_CompareOp : Npu_Op<"compare"> {
  let summary = "elementwise comparison of SRAM tiles into an i1 mask";
  let description = [{
    `output = lhs <kind> rhs` with `kind` one of eq, ne, lt, le, gt, ge; the
    output is an i1 tile. `rhs` broadcasts to the output shape by numpy rules.
    Floats compare as IEEE ordered predicates, except `ne`, which a NaN
    operand makes true.

    ```mlir
    "npu.compare"(%a, %b, %mask) {kind = "eq"}
        : (memref<8x1xf32, 1>, memref<1xf32, 1>, memref<8x1xi1, 1>) -> ()
    ```
  }];
  let arguments = (ins AnyMemRef:$lhs, AnyMemRef:$rhs, AnyMemRef:$output,
                       Npu_CompareKindAttr:$kind);
}

def Npu_SelectOp : Npu_Op<"select"> {
  let summary = "elementwise choice between two SRAM tiles by an i1 mask";
  let description = [{
    `output = condition ? on_true : on_false`, elementwise. The condition is an
    i1 tile; all three inputs broadcast to the output shape by numpy rules.

    ```mlir
    "npu.select"(%mask, %zero, %probs, %out)
        : (memref<8x1xi1, 1>, memref<1xf32, 1>, memref<8x16xf32, 1>, memref<8x16xf32, 1>) -> ()
    ```
  }];
  let arguments = (ins AnyMemRef:$condition, AnyMemRef:$on_true, AnyMemRef:$on_false,
                       AnyMemRef:$output);
}

def Npu_ActivationOp : Npu_Op<"activation"> {
  let summary = "activation function on an SRAM tile";
  let description = [{
    `output = kind(input)`; `clip` (and `relu6`, which is `clip` to [0, 6])
    bounds come from `clip_min`/`clip_max`. The output may have another float
    type than the input (`none` then converts, rounding to nearest).
    Throughput, in elements per cycle: the vector lanes for none, relu, relu6,
    clip, neg and abs; a quarter of them for reciprocal, rsqrt and sqrt
    (Newton-Raphson from a table seed); an eighth for exp, log, erf, tanh,
    sigmoid and gelu (range reduction and a polynomial).

    ```mlir
    "npu.activation"(%a, %b) {kind = "gelu"} : (memref<8x64xf16, 1>, memref<8x64xf16, 1>) -> ()
    ```
  }];
  let arguments = (ins AnyMemRef:$input, AnyMemRef:$output,
                       Npu_ActivationAttr:$kind,
                       OptionalAttr<F64Attr>:$clip_min,
                       OptionalAttr<F64Attr>:$clip_max);
}

def Npu_ReduceOp : Npu_Op<"reduce"> {
  let summary = "sum, max or min of an SRAM tile along some of its dimensions";
  let description = [{
    `output = combine(accumulate ? output : identity, reduce(input, dims))`:
    the input dimensions listed in `dims` (ascending) are reduced away, so the
    output has the input's other dimensions, in order. With `accumulate` the
    output tile's value is combined in: a reduction split into several tiles
    accumulates across them. fp16 sums add in fp32 and round once per op.
    Throughput: the vector lanes, in input elements per cycle.

    ```mlir
    "npu.reduce"(%x, %row_max) {kind = "max", dims = array<i64: 1>, accumulate = false}
        : (memref<16x128xf32, 1>, memref<16xf32, 1>) -> ()
    ```
  }];
  let arguments = (ins AnyMemRef:$input, AnyMemRef:$output,
                       Npu_ReduceKindAttr:$kind, DenseI64ArrayAttr:$dims,
                       BoolAttr:$accumulate);
}

def Npu_Pool2dOp : Npu_Op<"pool2d"> {
  let summary = "2-D max, average or sum pooling on an NHWC SRAM tile";
  let description = [{
    Pools KHxKW windows (`window`) with `strides` over an NHWC input tile
    whose padding is included. `avg` divides by the window size; `sum` does
    not (a divisor that varies over the output follows as its own op).

    ```mlir
    "npu.pool2d"(%in, %out) {kind = "max", window = array<i64: 3, 3>, strides = array<i64: 2, 2>}
        : (memref<1x17x17x64xf16, 1>, memref<1x8x8x64xf16, 1>) -> ()
    ```
  }];
  let arguments = (ins AnyMemRef:$input, AnyMemRef:$output,
                       Npu_PoolKindAttr:$kind,
                       DenseI64ArrayAttr:$window, DenseI64ArrayAttr:$strides);
}

def Npu_TransposeOp : Npu_Op<"transpose"> {
  let summary = "permute the dimensions of an SRAM tile (layout transform)";
  let description = [{
    `output[i_perm(0), ..., i_perm(n-1)] = input[i_0, ..., i_n-1]`, i.e.
    `output = numpy.transpose(input, permutation)`; NCHW <-> NHWC is a
    transpose with permutation [0, 2, 3, 1] or [0, 3, 1, 2].

    ```mlir
    "npu.transpose"(%in, %out) {permutation = array<i64: 1, 0>}
        : (memref<32x64xf16, 1>, memref<64x32xf16, 1>) -> ()
    ```
  }];
  let arguments = (ins AnyMemRef:$input, AnyMemRef:$output,
                       DenseI64ArrayAttr:$permutation);
}

def Npu_Im2colOp : Npu_Op<"im2col"> {
  let summary = "unfold NHWC conv windows into GEMM rows";
  let description = [{
    For an NHWC input tile, writes one row per output pixel (N*OH*OW rows)
    holding its KH*KW*C window values, ordered (kh, kw, c), so that a conv
    becomes a matmul with the HWCF filter reshaped to (KH*KW*C) x F.

    ```mlir
    "npu.im2col"(%in, %cols) {window = array<i64: 3, 3>, strides = array<i64: 1, 1>,
                              dilations = array<i64: 1, 1>}
        : (memref<1x6x6x8xf16, 1>, memref<16x72xf16, 1>) -> ()
    ```
  }];
  let arguments = (ins AnyMemRef:$input, AnyMemRef:$output,
                       DenseI64ArrayAttr:$window, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$dilations);
}

def Npu_FillOp : Npu_Op<"fill"> {
  let summary = "fill an SRAM tile with a constant";
  let description = [{
    Sets every element of `output` to `value` (converted to its element type).

    ```mlir
    "npu.fill"(%a) {value = 0.0 : f64} : (memref<64x64xf32, 1>) -> ()
    ```
  }];
  let arguments = (ins AnyMemRef:$output, F64Attr:$value);
}

def Npu_RequantizeOp : Npu_Op<"requantize"> {
  let summary = "requantisation to int8";
  let description = [{
    `output = clamp(round_half_even(input * scale) + zero_point, -128, 127)`
    for an i32 (an accumulator) or f32 input tile and an i8 output tile, in
    f32 arithmetic. With `divide`, `input / scale` (QuantizeLinear's form).
    With `offset`, it is added before rounding:
    `round_half_even(input / scale + offset) + zero_point`, as onnxruntime's
    QLinearAveragePool adds its zero point. With `scales`, an f32 tile broadcast against the output (per channel: along
    the last dim) gives each element's scale instead of `scale`.

    ```mlir
    "npu.requantize"(%acc, %out) {scale = 0.0125 : f64, zero_point = 3 : i64}
        : (memref<64x64xi32, 1>, memref<64x64xi8, 1>) -> ()
    ```
  }];
  let arguments = (ins AnyMemRef:$input, AnyMemRef:$output, Optional<AnyMemRef>:$scales,
                       F64Attr:$scale, I64Attr:$zero_point, OptionalAttr<BoolAttr>:$divide,
                       OptionalAttr<F64Attr>:$offset);
}

def Npu_QuantizedAddOp : Npu_Op<"quantized_add"> {
  let summary = "int8 addition with per-input scale ratios (a quantised residual add)";
  let description = [{
    `output = clamp(round_half_even(fma(lhs + input_shift, lhs_scale,
    fma(rhs + input_shift, rhs_scale, offset))) + zero_point, -128, 127)`
    for i8 input tiles (`rhs` broadcast against the output) and an i8 output
    tile, in f32 with fused multiply-adds (one rounding each). The scales are
    the input scales over the output's, `offset` the output zero point less
    the inputs' scaled zero points: the form of onnxruntime's x86 QLinearAdd.
    `input_shift` and `zero_point` move uint8 data held as int8 (shifted by
    -128) into its own range and back.

    ```mlir
    "npu.quantized_add"(%a, %b, %out) {lhs_scale = 0.5 : f64, rhs_scale = 0.25 : f64,
        offset = 3.0 : f64, input_shift = 128 : i64, zero_point = -128 : i64}
        : (memref<8x64xi8, 1>, memref<8x64xi8, 1>, memref<8x64xi8, 1>) -> ()
    ```
  }];
  let arguments = (ins AnyMemRef:$lhs, AnyMemRef:$rhs, AnyMemRef:$output,
                       F64Attr:$lhs_scale, F64Attr:$rhs_scale, F64Attr:$offset,
                       I64Attr:$input_shift, I64Attr:$zero_point);
}

def Npu_DequantizeOp : Npu_Op<"dequantize"> {
  let summary = "int8 to float";
  let description = [{
    `output = (input - zero_point) * scale` for an i8 input tile and an f32
    output tile, in f32 arithmetic.

    ```mlir
    "npu.dequantize"(%q, %out) {scale = 0.0125 : f64, zero_point = 3 : i64}
        : (memref<64x64xi8, 1>, memref<64x64xf32, 1>) -> ()
    ```
  }];
  let arguments = (ins AnyMemRef:$input, AnyMemRef:$output, F64Attr:$scale,
                       I64Attr:$zero_point);
}

#endif // NPU_OPS
