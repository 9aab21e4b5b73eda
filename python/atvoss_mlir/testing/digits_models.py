"""Two small classifiers of scikit-learn's `digits` (1797 labelled 8x8
images of handwritten digits, shipped inside the package), trained here
and written as ONNX models with a fixed batch dimension:

- `mlp_model`: scikit-learn's MLPClassifier (64-64-10, relu), exported by
  skl2onnx and cut to its probabilities output.
- `cnn_model`: Conv 3x3 (16 filters) + Relu + MaxPool 2x2 + Gemm, trained in
  numpy with SGD and written with onnx.helper (PyTorch, the usual exporter
  of CNNs, is too heavy a dependency for the test extra).

Both train in about a second and are deterministic. Needs the `test` extra
(scikit-learn, skl2onnx)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
CLASSES = 10


@dataclass
class Split:
    """Images as float32 in [0, 1] ([N, 64], row-major 8x8) and their labels."""
    train_x: np.ndarray
    train_y: np.ndarray
    calibration_x: np.ndarray
    held_out_x: np.ndarray
    held_out_y: np.ndarray


def digits_split(calibration: int = 200, held_out: int = 500, seed: int = 0) -> Split:
    """A shuffled split of the 1797 images; the rest trains."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    x, y = x[order], y[order]
    train = len(x) - calibration - held_out
    return Split(x[:train], y[:train], x[train:train + calibration],
                 x[train + calibration:], y[train + calibration:])


def as_images(x: np.ndarray) -> np.ndarray:
    """[N, 64] rows -> the CNN's [N, 1, 8, 8] input."""
    return x.reshape(-1, 1, 8, 8)


# -- the MLP: scikit-learn + skl2onnx ----------------------------------------------------------

def mlp_model(train_x: np.ndarray, train_y: np.ndarray, batch: int) -> onnx.ModelProto:
    """Input 'input' [batch, 64], output 'probabilities' [batch, 10]."""
    import warnings

    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    classifier = MLPClassifier(hidden_layer_sizes=(64,), max_iter=300, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        classifier.fit(train_x, train_y)
    exported = to_onnx(classifier, initial_types=[("input", FloatTensorType([batch, 64]))],
                       options={id(classifier): {"zipmap": False}}, target_opset=OPSET)
    return probabilities_only(exported)


def probabilities_only(model: onnx.ModelProto) -> onnx.ModelProto:
    """skl2onnx's classifier graph cut to its 'probabilities' output: the label
    output (ArgMax, then ai.onnx.ml's ArrayFeatureExtractor to map the index
    to a class label, and Casts) is left to the caller's argmax."""
    graph = model.graph
    needed, kept = {"probabilities"}, []
    for node in reversed(graph.node):
        if needed & set(node.output):
            kept.append(node)
            needed.update(node.input)
    kept.reverse()
    output = next(o for o in graph.output if o.name == "probabilities")
    initializers = [i for i in graph.initializer if i.name in needed]
    cut = helper.make_graph(kept, graph.name, list(graph.input), [output], initializers)
    return helper.make_model(cut, opset_imports=[helper.make_opsetid("", OPSET)],
                             ir_version=model.ir_version, producer_name=model.producer_name)


# -- the CNN: numpy SGD + onnx.helper ----------------------------------------------------------

FILTERS = 16


def _patches(images: np.ndarray) -> np.ndarray:
    """[N, 8, 8] -> [N, 64, 9]: the 3x3 neighbourhood (zero padded) of each
    pixel, in the (kh, kw) order of a Conv weight."""
    padded = np.pad(images, ((0, 0), (1, 1), (1, 1)))
    columns = [padded[:, i:i + 8, j:j + 8] for i in range(3) for j in range(3)]
    return np.stack(columns, axis=-1).reshape(len(images), 64, 9)


def _forward(patches, conv_w, conv_b, dense_w, dense_b):
    n = len(patches)
    conv = patches @ conv_w.T + conv_b                           # [N, 64, F]
    relu = np.maximum(conv, 0).reshape(n, 4, 2, 4, 2, FILTERS)   # rows, 2, cols, 2
    pooled = relu.max(axis=(2, 4))                               # [N, 4, 4, F]
    # Flatten in ONNX's NCHW order: channel-major.
    flat = pooled.transpose(0, 3, 1, 2).reshape(n, -1)
    return relu, pooled, flat, flat @ dense_w + dense_b


def _train_cnn(train_x, train_y, epochs=12, batch=32, rate=0.05, momentum=0.9, seed=0):
    rng = np.random.default_rng(seed)
    conv_w = (rng.standard_normal((FILTERS, 9)) * np.sqrt(2 / 9)).astype(np.float32)
    conv_b = np.zeros(FILTERS, np.float32)
    dense_w = (rng.standard_normal((FILTERS * 16, CLASSES)) * np.sqrt(1 / (FILTERS * 16))
               ).astype(np.float32)
    dense_b = np.zeros(CLASSES, np.float32)
    parameters = [conv_w, conv_b, dense_w, dense_b]
    velocity = [np.zeros_like(p) for p in parameters]
    patches = _patches(train_x.reshape(-1, 8, 8))
    for _ in range(epochs):
        order = rng.permutation(len(patches))
        for start in range(0, len(order), batch):
            index = order[start:start + batch]
            p, n = patches[index], len(index)
            relu, pooled, flat, logits = _forward(p, *parameters)
            shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
            d_logits = shifted / shifted.sum(axis=1, keepdims=True)
            d_logits[np.arange(n), train_y[index]] -= 1
            d_logits /= n
            d_dense_w = flat.T @ d_logits
            d_dense_b = d_logits.sum(axis=0)
            d_pooled = (d_logits @ dense_w.T).reshape(n, FILTERS, 4, 4).transpose(0, 2, 3, 1)
            # The gradient flows to the maximum of each 2x2 window (after Relu: > 0).
            winner = (relu == pooled[:, :, None, :, None]) & (relu > 0)
            d_conv = (winner * d_pooled[:, :, None, :, None]).reshape(n, 64, FILTERS)
            d_conv_w = np.einsum("npf,npk->fk", d_conv, p)
            d_conv_b = d_conv.sum(axis=(0, 1))
            for v, p_, g in zip(velocity, parameters,
                                [d_conv_w, d_conv_b, d_dense_w, d_dense_b]):
                v *= momentum
                v -= rate * g.astype(np.float32)
                p_ += v
    return parameters


def cnn_model(train_x: np.ndarray, train_y: np.ndarray, batch: int) -> onnx.ModelProto:
    """Input 'image' [batch, 1, 8, 8], output 'logits' [batch, 10]."""
    conv_w, conv_b, dense_w, dense_b = _train_cnn(train_x, train_y)
    initializers = [numpy_helper.from_array(conv_w.reshape(FILTERS, 1, 3, 3), "conv.w"),
                    numpy_helper.from_array(conv_b, "conv.b"),
                    numpy_helper.from_array(dense_w, "dense.w"),
                    numpy_helper.from_array(dense_b, "dense.b")]
    nodes = [
        helper.make_node("Conv", ["image", "conv.w", "conv.b"], ["conv"], name="conv",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv"], ["relu"], name="relu"),
        helper.make_node("MaxPool", ["relu"], ["pool"], name="pool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Flatten", ["pool"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "dense.w", "dense.b"], ["logits"], name="dense"),
    ]
    graph = helper.make_graph(
        nodes, "digits_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [batch, 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, CLASSES])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model
