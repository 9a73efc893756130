"""Live explorers: a chapter's own trained model, run on the reader's input, in Jupyter and on the site.

One definition serves both places. In Jupyter or Colab, :meth:`Recall.widget` reads the
reader's typed input with ipywidgets and runs the PyTorch model. On the published site
(``make execute`` sets ``BEFOREQKV_EXPLORERS=static``) the same object exports the model
to ONNX (float32) and writes a small component whose script (``book/_static/bqkv-live.js``)
runs it with onnxruntime-web, served by the site itself (``tools/vendor.py``). Nothing of
the runtime or the model is fetched until the reader touches the explorer. Where the
browser has no WebAssembly, the component says so and the precomputed figures below it
remain.

The exported files go to ``$BEFOREQKV_LIVE_DIR`` (the Makefile's ``live``, beside the
executed notebooks; the site copies them to ``_static/live/``), with the PyTorch outputs
for a few fixed inputs: ``tests/test_browser.py`` checks that the browser gives the same
numbers.
"""
from __future__ import annotations

import html
import json
import math
import os
import re
import warnings
from pathlib import Path

import torch
import torch.nn as nn

from .i18n import _
from .recorder import record_weights

__all__ = ["Recall", "Rows", "Heads", "Slots", "SoftmaxRow", "Prompt", "Sentences", "NextToken", "Crosstalk",
           "parse_pairs",
           "parse_sequence", "encode_prompt", "parse_tokens", "export_onnx", "grid_weights", "LIVE_DIR_ENV",
           "FORMAT"]

LIVE_DIR_ENV = "BEFOREQKV_LIVE_DIR"
FORMAT = 1                      # the fixture files' layout (bqkv-live.js reads it)
_PAIR = re.compile(r"^(\d+):(\d+)$")


def parse_pairs(text: str, n_keys: int = 64, n_values: int = 16) -> tuple[list[int], list[int]]:
    """``"12:3 40:7"`` -> keys ``[12, 40]``, values ``[3, 7]``; a ``ValueError`` in words otherwise.

    Pairs are ``key:value``, separated by spaces or commas; keys are distinct and below
    ``n_keys``, values below ``n_values``. ``bqkv-live.js`` reads the same rules.
    """
    if not isinstance(text, str):
        raise ValueError(_("type the pairs as text, e.g. 12:3 40:7"))
    keys, values = [], []
    for item in text.replace(",", " ").split():
        m = _PAIR.match(item)
        if not m:
            raise ValueError(_("{item!r} is not a pair key:value, e.g. 12:3").format(item=item))
        k, v = int(m.group(1)), int(m.group(2))
        if k >= n_keys or v >= n_values:
            raise ValueError(_("{item}: keys go from 0 to {k}, values from 0 to {v}").format(
                item=item, k=n_keys - 1, v=n_values - 1))
        if k in keys:
            raise ValueError(_("key {k} is stored twice: keys must be distinct").format(k=k))
        keys.append(k)
        values.append(v)
    if not keys:
        raise ValueError(_("type at least one pair, e.g. 12:3"))
    return keys, values


def parse_sequence(text: str, names, n_payloads: int) -> tuple[list[int], list[int]]:
    """``"R0:3 S0:5"`` -> item ids ``[0, 1]``, payloads ``[3, 5]``; a ``ValueError`` in words otherwise.

    ``names``: each item id's name (id ``i`` is ``names[i]``). Tokens are ``item:payload``,
    separated by spaces or commas; items are distinct, payloads below ``n_payloads``.
    ``bqkv-live.js`` reads the same rules.
    """
    names = list(names)
    if not isinstance(text, str):
        raise ValueError(_("type the sequence as text, e.g. {a}:3 {b}:5").format(a=names[0], b=names[1]))
    index = {n: i for i, n in enumerate(names)}
    items, payloads = [], []
    for token in text.replace(",", " ").split():
        name, colon, payload = token.rpartition(":")
        if not colon or name not in index or not payload.isdigit() or not payload.isascii():
            raise ValueError(_("{token!r} is not item:payload, e.g. {a}:3 (items {a} to {z})").format(
                token=token, a=names[0], z=names[-1]))
        if int(payload) >= n_payloads:
            raise ValueError(_("{token}: payloads go from 0 to {p}").format(token=token, p=n_payloads - 1))
        if index[name] in items:
            raise ValueError(_("item {name} appears twice: items must be distinct").format(name=name))
        items.append(index[name])
        payloads.append(int(payload))
    if not items:
        raise ValueError(_("type at least one item:payload, e.g. {a}:3").format(a=names[0]))
    return items, payloads


def parse_tokens(text: str, n_ctx: int = 16, d_vocab: int = 16) -> list[int]:
    """``"3 9 14 0 ..."`` -> ``[3, 9, 14, 0, ...]``: exactly ``n_ctx`` tokens below ``d_vocab``,
    separated by spaces or commas; a ``ValueError`` in words otherwise. ``bqkv-live.js``
    reads the same rules."""
    if not isinstance(text, str):
        raise ValueError(_("type the tokens as text, e.g. 3 9 14 0"))
    tokens = []
    for item in text.replace(",", " ").split():
        if not (item.isdigit() and item.isascii()) or int(item) >= d_vocab:
            raise ValueError(_("{item!r} is not a token: tokens go from 0 to {v}").format(item=item, v=d_vocab - 1))
        tokens.append(int(item))
    if len(tokens) != n_ctx:
        raise ValueError(_("type {t} tokens, one per position; there are {n}").format(t=n_ctx, n=len(tokens)))
    return tokens


def encode_prompt(text: str, chars, n_ctx: int) -> list[int]:
    """A prompt's ids in the alphabet ``chars``, its last ``n_ctx`` characters; a
    ``ValueError`` in words otherwise. ``bqkv-live.js`` reads the same rules."""
    if not isinstance(text, str) or not text:
        raise ValueError(_("type a prompt of at least one character"))
    unknown = sorted(set(text) - set(chars))
    if unknown:
        raise ValueError(_("not in the model's alphabet: {chars}").format(
            chars=" ".join(f"'{c}'" for c in unknown)))
    index = {c: i for i, c in enumerate(chars)}
    return [index[c] for c in text[-n_ctx:]]


class _Outputs(nn.Module):
    """A model that returns its output and the attention weights it recorded (for export)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, *inputs):
        with record_weights(self.model) as weights:
            out = self.model(*inputs)
        return (out, *weights)


def export_onnx(model: nn.Module, inputs: tuple, path, input_names, output_names,
                dynamic_axes: dict, record: bool = True) -> Path:
    """Write ``model`` (float32, on the CPU) to ONNX, its attention weights as extra outputs.

    ``output_names``: the model's output first, then one name per recorded weight tensor
    (``record=False``: the model's own outputs only, for a model without attention).
    """
    import copy
    try:
        import onnx  # noqa: F401  (torch's exporter writes the file with it)
    except ImportError as err:
        raise ImportError("exporting a live explorer's model needs onnx: pip install onnx "
                          "(requirements.txt has the version the book is built with)") from err
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.register_custom_op_symbolic("aten::rms_norm", _rms_norm, 17)
    wrapped = copy.deepcopy(model).float().cpu().eval()
    wrapped = _Outputs(wrapped) if record else wrapped
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")     # the tracer's notes on the input checks' .item()
        torch.onnx.export(wrapped, tuple(x.cpu() for x in inputs), str(path), dynamo=False,
                          input_names=list(input_names), output_names=list(output_names),
                          dynamic_axes=dynamic_axes, opset_version=17)
    return path


def _rms_norm(g, x, shape, weight, eps):
    """ONNX for torch's rms_norm over the last axis (opset 17 has no RMSNormalization):
    ``x / sqrt(mean(x^2) + eps) * weight``."""
    from torch.onnx import symbolic_helper as sh
    eps = sh._maybe_get_const(eps, "f")
    eps = torch.finfo(torch.float32).eps if sh._is_none(eps) or eps is None else float(eps)
    mean = g.op("ReduceMean", g.op("Mul", x, x), axes_i=[-1], keepdims_i=1)
    h = g.op("Div", x, g.op("Sqrt", g.op("Add", mean, g.op("Constant", value_t=torch.tensor(eps)))))
    return h if sh._is_none(weight) else g.op("Mul", h, weight)


def quantize_weights(path, out, min_size: int = 4096) -> Path:
    """An ONNX model whose large weight matrices are stored in 8 bits, computed in float32.

    Each matrix a ``MatMul`` multiplies by gets one scale per output column
    (``DequantizeLinear`` back to float32 before the product); each embedding table a
    ``Gather`` reads gets one scale per row, applied to the rows it reads. Only the stored
    weights are rounded (symmetric int8, scale = max |w| / 127): activations stay float32.
    """
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper
    model = onnx.load(str(path))
    graph = model.graph
    weights = {t.name: t for t in graph.initializer}
    users = {}
    for node in graph.node:
        for k, name in enumerate(node.input):
            users.setdefault(name, []).append((node, k))
    new_nodes, done = [], 0
    for name, tensor in list(weights.items()):
        w = numpy_helper.to_array(tensor)
        uses = users.get(name, [])
        if w.dtype != np.float32 or w.ndim != 2 or w.size < min_size or len(uses) != 1:
            continue
        node, k = uses[0]
        axis = {("MatMul", 1): 0, ("Gather", 0): 1}.get((node.op_type, k))
        if axis is None or (node.op_type == "Gather" and any(a.name == "axis" and a.i != 0
                                                             for a in node.attribute)):
            continue
        scale = np.maximum(np.abs(w).max(axis=axis, keepdims=True), 1e-12) / 127   # per column / row
        q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        graph.initializer.remove(tensor)
        graph.initializer.append(numpy_helper.from_array(q, name + ".int8"))
        if node.op_type == "MatMul":
            graph.initializer.append(numpy_helper.from_array(scale[0].astype(np.float32), name + ".scale"))
            new_nodes.append(helper.make_node("DequantizeLinear", [name + ".int8", name + ".scale"],
                                              [name], axis=1, name=name + ".dequantize"))
        else:                       # read the rows, then scale them: no float copy of the table
            graph.initializer.append(numpy_helper.from_array(scale.astype(np.float32), name + ".scale"))
            ids, out_name = node.input[1], node.output[0]
            node.input[0], node.output[0] = name + ".int8", out_name + ".int8"
            new_nodes += [helper.make_node("Gather", [name + ".scale", ids], [out_name + ".rowscale"]),
                          helper.make_node("Cast", [out_name + ".int8"], [out_name + ".float"],
                                           to=onnx.TensorProto.FLOAT),
                          helper.make_node("Mul", [out_name + ".float", out_name + ".rowscale"], [out_name])]
        done += 1
    if not done:
        raise ValueError(f"{path}: no weight matrix to store in 8 bits")
    nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(_in_order(new_nodes + nodes, graph))
    onnx.checker.check_model(model)
    onnx.save(model, str(out))
    return Path(out)


def _on_grid(w, bits: int, block: int):
    """The grid of ``bits`` per block of ``block`` rows that fits ``w`` (K, N) best.

    Returns the integers (N, K / block, block * bits / 8) uint8, the scales and zero points
    (N * K / block,) float32 (zero points None for 8 bits: onnxruntime's default, 128) and
    the largest error of the grid's numbers, relative to max |w|. 4 bits: ``d * q + m``,
    q in 0..15, one d and m per block (GGUF's Q4_1); 8 bits: ``d * q``, q in -127..127
    (Q8_0), stored as q + 128.
    """
    import numpy as np
    k, n = w.shape
    b = w.T.reshape(n, k // block, block).astype(np.float64)   # (N, blocks, block)
    if bits == 4:
        lo = b.min(-1, keepdims=True)
        d = (b.max(-1, keepdims=True) - lo) / 15
        d[d == 0] = 1
        q = np.clip(np.round((b - lo) / d), 0, 15)
        zero = (-lo / d).astype(np.float32)
    else:
        d = np.abs(b).max(-1, keepdims=True) / 127
        d[d == 0] = 1
        q = np.clip(np.round(b / d), -127, 127) + 128
        zero = np.full(d.shape, 128, dtype=np.float32)
    d = d.astype(np.float32)
    err = np.abs((q.astype(np.float32) - zero) * d - w.T.reshape(b.shape)).max() / max(np.abs(w).max(), 1e-30)
    q = q.astype(np.uint8)
    if bits == 4:
        return q[..., 0::2] | (q[..., 1::2] << 4), d.ravel(), zero.ravel(), float(err)
    return q, d.ravel(), None, float(err)


def grid_weights(path, out, block: int = 32, tolerance: float = 1e-6) -> Path:
    """An ONNX model whose weight matrices are stored on the grids they came from, computed in float32.

    A model read from a quantised file (chapter 11's GGUF: Q4_1 for the layers, Q8_0 for
    the embedding) holds float32 copies of numbers that sit on a grid. This finds each
    matrix's grid again (4 bits, else 8, blocks of ``block`` along the input) and stores
    its integers and scales: onnxruntime's ``MatMulNBits`` for a matrix product, a
    ``Gather`` of the 8-bit rows for an embedding table; a tied unembedding (a product
    with the table's transpose) reads the same 8-bit copy. A matrix on no grid within
    ``tolerance`` of its largest weight stays float32: nothing is rounded that was not
    rounded already.
    """
    import onnx
    from onnx import helper
    model = onnx.load(str(path))
    graph = model.graph
    grid = _Grid(graph, block, tolerance)
    for node in list(graph.node):
        if node.op_type == "Gather" and grid.usable(node, 0):
            grid.gather(node)
    for node in list(graph.node):
        if node.op_type == "MatMul" and grid.usable(node, 1):
            grid.matmul(node)
    if not grid.drop:
        raise ValueError(f"{path}: no weight matrix sits on a 4- or 8-bit grid")
    for t in [t for t in graph.initializer if t.name in grid.drop]:
        graph.initializer.remove(t)
    nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(_in_order(grid.new + nodes, graph))
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.save(model, str(out))
    return Path(out)


class _Grid:
    """:func:`grid_weights`' work on one graph: the nodes it adds, the float tables it drops."""

    def __init__(self, graph, block: int, tolerance: float):
        from onnx import numpy_helper
        self.graph, self.block, self.tolerance = graph, block, tolerance
        self.weights = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        self.users = {}
        for node in graph.node:
            for name in node.input:
                self.users[name] = self.users.get(name, 0) + 1
        self.new, self.drop, self.tables = [], set(), set()     # tables: embeddings stored in 8 bits

    def usable(self, node, k) -> bool:
        """Input ``k`` of ``node`` is a float32 matrix it alone reads, in whole blocks."""
        import numpy as np
        w = self.weights.get(node.input[k])
        return (w is not None and w.dtype == np.float32 and w.ndim == 2 and self.users[node.input[k]] == 1
                and w.shape[1 - k] % self.block == 0 and not any(a.name == "axis" and a.i for a in node.attribute))

    def fit(self, w, widths=(4, 8)):
        """(bits, integers, scales, zero points) of the first grid that holds w (K, N), or None."""
        for bits in widths:
            q, d, zero, err = _on_grid(w, bits, self.block)
            if err <= self.tolerance:
                return bits, q, d, zero
        return None

    def store(self, array, name):
        from onnx import numpy_helper
        self.graph.initializer.append(numpy_helper.from_array(array, name))

    def gather(self, node):
        """An embedding table on the 8-bit grid: read its rows' integers, then scale them."""
        import numpy as np
        import onnx
        from onnx import helper
        name, ids, out = node.input[0], node.input[1], node.output[0]
        table = self.weights[name]
        fit = self.fit(table.T, (8,))
        if fit is None:
            return
        _bits, q, d, _zero = fit
        self.tables.add(name)
        v, width = table.shape
        self.store(q, name + ".q")
        self.store(d, name + ".scale")
        self.store(np.array([v, width // self.block, 1], np.int64), name + ".rows")
        self.store(np.array(128, np.float32), name + ".128")
        self.store(np.array([width], np.int64), name + ".width")
        node.input[0], node.output[0] = name + ".q", out + ".q"
        self.new += [helper.make_node("Reshape", [name + ".scale", name + ".rows"], [name + ".rowscale"]),
                     helper.make_node("Gather", [name + ".rowscale", ids], [out + ".scale"]),
                     helper.make_node("Cast", [out + ".q"], [out + ".f"], to=onnx.TensorProto.FLOAT),
                     helper.make_node("Sub", [out + ".f", name + ".128"], [out + ".c"]),
                     helper.make_node("Mul", [out + ".c", out + ".scale"], [out + ".b"]),
                     helper.make_node("Shape", [ids], [out + ".ids"]),
                     helper.make_node("Concat", [out + ".ids", name + ".width"], [out + ".shape"], axis=0),
                     helper.make_node("Reshape", [out + ".b", out + ".shape"], [out])]
        self.drop.add(name)

    def matmul(self, node):
        """A product with a stored matrix, on its grid: MatMulNBits (a tied table's transpose
        reads the table's 8-bit copy)."""
        import numpy as np
        from onnx import helper
        name = node.input[1]
        w = self.weights[name]
        tied = [t for t in self.tables if self.weights[t].shape == w.T.shape and np.array_equal(self.weights[t].T, w)]
        if tied:
            bits, source, zero = 8, tied[0], None
        else:
            fit = self.fit(w)
            if fit is None:
                return
            bits, q, d, zero = fit
            source = name
            self.store(q, name + ".q")
            self.store(d, name + ".scale")
            if zero is not None:
                self.store(zero, name + ".zero")
        inputs = [node.input[0], source + ".q", source + ".scale"] + ([name + ".zero"] if zero is not None else [])
        self.new.append(helper.make_node("MatMulNBits", inputs, list(node.output), domain="com.microsoft",
                                         K=w.shape[0], N=w.shape[1], bits=bits, block_size=self.block,
                                         name=node.name))
        self.graph.node.remove(node)
        self.drop.add(name)


def _grids(path) -> dict:
    """{bits: how many matrix products} of an ONNX file's MatMulNBits nodes; 0: float32 MatMuls
    with a stored weight matrix."""
    import onnx
    model = onnx.load(str(path))
    stored = {t.name for t in model.graph.initializer}
    out = {}
    for node in model.graph.node:
        if node.op_type == "MatMulNBits":
            bits = next(a.i for a in node.attribute if a.name == "bits")
            out[bits] = out.get(bits, 0) + 1
        elif node.op_type == "MatMul" and node.input[1] in stored:
            out[0] = out.get(0, 0) + 1
    return out


def _in_order(nodes, graph):
    """The nodes in an order where each runs after what it reads (ONNX requires it)."""
    ready = {t.name for t in graph.initializer} | {i.name for i in graph.input} | {""}
    out, waiting = [], list(nodes)
    while waiting:
        left = []
        for node in waiting:
            if all(i in ready for i in node.input):
                out.append(node)
                ready.update(node.output)
            else:
                left.append(node)
        if len(left) == len(waiting):
            raise ValueError("the graph has a node whose input nothing produces")
        waiting = left
    return out


def _live_dir():
    where = os.environ.get(LIVE_DIR_ENV, "").strip()
    return Path(where) if where else None


class _Live:
    """What every live explorer shares: where its files go, and the site's component."""

    kind = name = ""

    def export(self, where=None) -> dict:
        """The ONNX files and the PyTorch outputs for fixed inputs, in ``where``."""
        where = Path(where) if where is not None else _live_dir()
        if where is None:
            raise ValueError(f"no folder for the live explorer's files: set {LIVE_DIR_ENV}")
        files, fixtures = self._export(where)
        spec = {"format": FORMAT, "kind": self.kind, "files": files, "fixtures": fixtures}
        (where / f"{self.name}.json").write_text(json.dumps(spec), encoding="utf-8")
        self.files = files
        return spec

    def html(self, fallback: str = "") -> str:
        """The site's component: the live panel, then ``fallback`` (the precomputed figures)."""
        if self.files is None:
            self.export()
        w = self.words()
        spec = dict(self._spec(), kind=self.kind, name=self.name, files=self.files, words=w)
        payload = json.dumps(spec, ensure_ascii=False).replace("</", "<\\/")
        return (f'<div class="bqkv-live" data-kind="{self.kind}" data-state="idle">\n'
                f'<p class="bqkv-live-title">{html.escape(w["title"])}</p>\n'
                f'<div class="bqkv-live-panel" aria-live="polite"></div>\n'
                f'<noscript>{html.escape(w["no_wasm"])}</noscript>\n'
                f'<script type="application/json" class="bqkv-live-spec">{payload}</script>\n'
                f"</div>\n{fallback}")

    def _repr_html_(self):
        return self.html()

    def _interactive(self, **controls):
        """ipywidgets' ``interactive`` over :meth:`figure`; a refused input is said in words."""
        import ipywidgets as w
        from IPython.display import display

        def show(**values):
            try:
                display(self.figure(**values))
            except ValueError as err:
                print(err)
        ui = w.interactive(show, **controls)
        ui.layout = w.Layout(border="1px solid #ddd", padding="4px")
        return ui


def _shown(name: str) -> str:
    """A model's name as the chapters' figures print it, in the language in force."""
    from .figures import ch04, ch05, ch09
    for named in (ch04._mixer, ch05._variant, ch09._memory):
        if named(name) != name:
            return named(name)
    return name


def _common_words() -> dict:
    return {"loading": _("loading the model (runs in your browser)"),
            "no_wasm": _("This browser cannot run WebAssembly, so the live explorer is off: "
                         "the figures below were drawn when the book was built."),
            "failed": _("The live explorer could not start ({why}); the figures below were "
                        "drawn when the book was built.")}


class Recall(_Live):
    """Chapter 1's live explorer: the reader's own pairs and query, read by a trained model.

    ``models``: {N it was trained at: RecallAttention}. ``pairs`` and ``query`` are the
    starting input. In Jupyter, :meth:`widget`; on the site, the component of
    ``_repr_html_`` (after :meth:`export`).
    """

    kind = "recall"
    name = "ch01-recall"
    n_keys, n_values = 64, 16
    FIXTURES = (("12:3 40:7 7:9 33:1 5:12 60:0", 40), ("1:1 2:2 3:3", 3),
                ("0:15 63:0 31:8 8:4 50:2 21:6 44:11 17:5 9:9 38:14", 50))

    def __init__(self, models: dict, pairs: str = "12:3 40:7 7:9 33:1 5:12 60:0", query: int = 40,
                 start: int | None = None):
        if not models or not all(isinstance(m, nn.Module) for m in models.values()):
            raise ValueError("models must map each N to a trained RecallAttention")
        self.models = dict(models)
        self.start = start if start is not None else max(self.models)
        if self.start not in self.models:
            raise ValueError(f"start={self.start} is not one of the models' N: {sorted(self.models)}")
        parse_pairs(pairs)
        self.pairs, self.query = pairs, int(query)
        self.files = None

    def run(self, n: int, pairs: str, query: int):
        """The weights over the typed pairs (P,) and the logits over the values (16,), float32."""
        keys, values = parse_pairs(pairs, self.n_keys, self.n_values)
        if not 0 <= int(query) < self.n_keys:
            raise ValueError(_("the query is a key from 0 to {k}").format(k=self.n_keys - 1))
        model = self.models[n]
        device = next(model.parameters()).device
        k, v = torch.tensor([keys], device=device), torch.tensor([values], device=device)
        q = torch.tensor([int(query)], device=device)
        with torch.inference_mode(), record_weights(model) as w:
            logits = model(k, v, q)
        return w[0][0].float().cpu(), logits[0].float().cpu()

    def figure(self, n: int, pairs: str, query: int):
        """The read's weights over the typed pairs, the matching pair framed, the answer in the title."""
        from .figures import ch01
        weights, logits = self.run(n, pairs, query)
        keys, values = parse_pairs(pairs, self.n_keys, self.n_values)
        answer = [keys.index(query)] if query in keys else []
        fig = ch01.read_weights_figure(weights[None], answer, n)
        p = torch.softmax(logits, -1)
        fig.axes[0].set_xticks(range(len(keys)), [f"{k}:{v}" for k, v in zip(keys, values)],
                               rotation=90 if len(keys) > 8 else 0)
        fig.axes[0].set_yticks([])
        fig.axes[0].set_ylabel("")
        fig.axes[0].set_title(_("model trained at N = {n}: reads value {v} (p = {p:.2f})").format(
            n=n, v=int(p.argmax()), p=float(p.max())))
        return fig

    def widget(self):
        """ipywidgets: the model's N, the pairs and the query; redraws :meth:`figure`."""
        import ipywidgets as w
        return self._interactive(
            n=w.Dropdown(options=sorted(self.models), value=self.start, description="N"),
            pairs=w.Text(value=self.pairs, description=_("pairs"), continuous_update=False),
            query=w.BoundedIntText(value=self.query, min=0, max=self.n_keys - 1, description=_("query")))

    def _export(self, where):
        files, fixtures = {}, []
        for n, model in sorted(self.models.items()):
            k, v, q = torch.tensor([[1, 2, 3]]), torch.tensor([[0, 1, 2]]), torch.tensor([2])
            f = export_onnx(model, (k, v, q), where / f"{self.name}-n{n}.onnx",
                            ("keys", "values", "query"), ("logits", "weights"),
                            {"keys": {1: "N"}, "values": {1: "N"}})
            files[str(n)] = f.name
            for pairs, query in self.FIXTURES:
                weights, logits = self.run(n, pairs, query)
                fixtures.append({"n": n, "pairs": pairs, "query": query,
                                 "weights": weights.tolist(), "logits": logits.tolist()})
        return files, fixtures

    def _spec(self):
        return {"start": self.start, "models": sorted(self.models), "pairs": self.pairs,
                "query": self.query, "n_keys": self.n_keys, "n_values": self.n_values}

    @staticmethod
    def words() -> dict:
        """What the page's script shows, in the language in force."""
        return {"title": _("Try your own pairs (live, in your browser)"),
                "model": _("model trained at N ="), "pairs": _("pairs key:value"),
                "query": _("query key"), "random": _("random pairs"), "count": _("how many"),
                "answer": _("reads value {v} (p = {p}). {truth}"),
                "truth": _("The stored value is {v}."),
                "absent": _("No stored pair has this key: the read has nothing to find."),
                "weights": _("attention weights a_j over the stored pairs"),
                **_common_words(),
                "errors": {"pair": _("{item!r} is not a pair key:value, e.g. 12:3"),
                           "range": _("{item}: keys go from 0 to {k}, values from 0 to {v}"),
                           "twice": _("key {k} is stored twice: keys must be distinct"),
                           "empty": _("type at least one pair, e.g. 12:3"),
                           "query": _("the query is a key from 0 to {k}")}}

    def __repr__(self):
        return f"<live.Recall: models at N = {sorted(self.models)}>"


class Rows(_Live):
    """Chapter 4's live explorer: the reader's tokens and query, read by every trained mixer.

    ``mixers``: {label: a mixer whose ``forward(tokens (B, T), query (B,))`` gives logits
    (B, d_vocab) and records its weights (B, T)}, all trained on ``tasks.pointer`` (the query
    is a position; the answer is the token there). The explorer draws each mixer's weights
    over the typed tokens for the chosen query, with its answer.
    """

    kind = "rows"
    name = "ch04-pointer"
    FIXTURES = (("3 9 14 0 9 5 1 12 7 7 2 15 4 0 11 6", 7), ("0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15", 0),
                ("5 5 5 5 5 5 5 5 5 5 5 5 5 5 5 9", 15))

    def __init__(self, mixers: dict, tokens: str = "3 9 14 0 9 5 1 12 7 7 2 15 4 0 11 6", query: int = 7,
                 n_ctx: int = 16, d_vocab: int = 16):
        if not mixers or not all(isinstance(m, nn.Module) for m in mixers.values()):
            raise ValueError("mixers must map each label to a trained mixer")
        self.mixers = {str(k): m for k, m in mixers.items()}
        self.n_ctx, self.d_vocab = int(n_ctx), int(d_vocab)
        self.tokens, self.query = tokens, self.check_query(query)
        self.parse(tokens)
        self.files = None

    def parse(self, text: str) -> list[int]:
        """The typed tokens (:func:`parse_tokens`)."""
        return parse_tokens(text, self.n_ctx, self.d_vocab)

    def check_query(self, query) -> int:
        if isinstance(query, bool) or not isinstance(query, int) or not 0 <= query < self.n_ctx:
            raise ValueError(_("the query is a position from 0 to {t}").format(t=self.n_ctx - 1))
        return query

    def run(self, text: str, query: int) -> dict:
        """{mixer: (its weights over the positions (T,), its logits (d_vocab,))}, float32, CPU."""
        tokens, query = self.parse(text), self.check_query(query)
        out = {}
        for label, model in self.mixers.items():
            device = next(model.parameters()).device
            with torch.inference_mode(), record_weights(model) as w:
                logits = model(torch.tensor([tokens], device=device), torch.tensor([query], device=device))
            out[label] = w[0][0].float().cpu(), logits[0].float().cpu()
        return out

    def figure(self, tokens: str, query: int):
        """Each mixer's weights over the positions, position ``query`` shaded (chapter 4's figure)."""
        from .figures import ch04
        rows = {label: (w, int(lo.argmax())) for label, (w, lo) in self.run(tokens, query).items()}
        return ch04.pointer_row_figure(rows, self.parse(tokens), query)

    def widget(self):
        """ipywidgets: the tokens and the query; redraws :meth:`figure`."""
        import ipywidgets as w
        return self._interactive(
            tokens=w.Text(value=self.tokens, description=_("tokens"), continuous_update=False),
            query=w.IntSlider(value=self.query, min=0, max=self.n_ctx - 1, description=_("query")))

    def _export(self, where):
        files = {}
        for k, (label, model) in enumerate(self.mixers.items()):
            f = export_onnx(model, (torch.zeros(1, self.n_ctx, dtype=torch.long), torch.tensor([0])),
                            where / f"{self.name}-{k}.onnx", ("tokens", "query"), ("logits", "weights"), {})
            files[label] = f.name
        fixtures = []
        for text, query in self.FIXTURES:
            out = self.run(text, query)
            fixtures.append({"tokens": text, "query": query,
                             "weights": [x for w, _lo in out.values() for x in w.tolist()],
                             "logits": [x for _w, lo in out.values() for x in lo.tolist()]})
        return files, fixtures

    def _spec(self):
        return {"mixers": list(self.mixers), "labels": [_shown(m) for m in self.mixers], "tokens": self.tokens,
                "query": self.query, "n_ctx": self.n_ctx, "d_vocab": self.d_vocab}

    @staticmethod
    def words() -> dict:
        """What the page's script shows, in the language in force."""
        return {"title": _("Type your own tokens (live, in your browser)"),
                "tokens": _("tokens"), "query": _("query: read position"), "random": _("random tokens"),
                "row": _("each mixer's weights over the positions; position {p} shaded (its token: {t})"),
                "answer": _("{mixer} answers {a}"),
                **_common_words(),
                "errors": {"token": _("{item!r} is not a token: tokens go from 0 to {v}"),
                           "count": _("type {t} tokens, one per position; there are {n}")}}

    def __repr__(self):
        return f"<live.Rows: mixers {list(self.mixers)}>"


class Heads(_Live):
    """Chapters 5 and 6: a sequence of the reader's items and payloads, read by trained models.

    ``models``: {label: a model whose ``forward(items, payloads)`` gives logits (B, T, P) or
    (B, T, K, P) and records attention weights (B, T, T) or (B, H, T, T)}. ``names``: each
    item id's name; ``marks``: [(letter, target)] where ``target[i]`` is the item that item
    ``i`` must read (one mark per output of K; ``letter`` is drawn in the target's cell).
    The explorer shows every head's weights over the typed sequence, the target cells
    framed, and what the model predicts at each position against the target's payload.
    """

    kind = "heads"

    def __init__(self, models: dict, name: str, names, marks, sequence: str, n_payloads: int = 8,
                 start=None):
        if not models or not all(isinstance(m, nn.Module) for m in models.values()):
            raise ValueError("models must map each label to a trained model")
        self.models = {str(k): m for k, m in models.items()}
        self.name, self.names, self.n_payloads = name, [str(n) for n in names], int(n_payloads)
        self.marks = [(str(letter), [int(t) for t in target]) for letter, target in marks]
        if not self.marks or any(len(t) != len(self.names) for _l, t in self.marks):
            raise ValueError("marks: one (letter, target) per output, a target for every item")
        self.start = str(start) if start is not None else next(iter(self.models))
        if self.start not in self.models:
            raise ValueError(f"start={self.start!r} is not one of the models: {list(self.models)}")
        self.parse(sequence)
        self.sequence, self.files = sequence, None

    def parse(self, text: str):
        """The typed sequence's item ids and payloads (:func:`parse_sequence`)."""
        return parse_sequence(text, self.names, self.n_payloads)

    def run(self, label: str, text: str):
        """Logits (T, K, P) and every head's weights (H, T, T), float32, on the CPU."""
        items, payloads = self.parse(text)
        model = self.models[str(label)]
        device = next(model.parameters()).device
        x = torch.tensor([items], device=device), torch.tensor([payloads], device=device)
        with torch.inference_mode(), record_weights(model) as w:
            logits = model(*x)
        logits = logits[0].float().cpu()
        a = w[0][0].float().cpu()
        return logits.reshape(len(items), len(self.marks), -1), a.reshape(-1, len(items), len(items))

    def targets(self, items: list[int]) -> list[list[int | None]]:
        """For each position and mark, the position of the item it must read (None: absent)."""
        where = {item: t for t, item in enumerate(items)}
        return [[where.get(target[i]) for _l, target in self.marks] for i in items]

    def figure(self, model: str, sequence: str):
        """Every head's weights over the sequence, targets framed; predictions in the titles."""
        label, text = model, sequence
        from matplotlib.patches import Rectangle

        from .plot import heatmap, new_figure
        items, payloads = self.parse(text)
        logits, weights = self.run(label, text)
        labels = [f"{self.names[i]}:{p}" for i, p in zip(items, payloads)]
        targets, guess = self.targets(items), logits.argmax(-1)
        right = sum(int(guess[t, k]) == payloads[at] for t, row in enumerate(targets)
                    for k, at in enumerate(row) if at is not None)
        asked = sum(at is not None for row in targets for at in row)
        n = weights.shape[0]
        fig, axes = new_figure(1, n, figsize=(3.6 * n + 0.6, 3.8), squeeze=False)
        for h, ax in enumerate(axes[0]):
            heatmap(weights[h], xlabels=labels, ylabels=labels, ax=ax, vmin=0, vmax=1, colorbar=False,
                    title=_("{label}, head {h}").format(label=_shown(label), h=h + 1)
                    + ("" if h else "\n" + _("right payloads: {r} of {n}").format(r=right, n=asked)))
            for t, row in enumerate(targets):
                for (letter, _target), at in zip(self.marks, row):
                    if at is not None:
                        ax.add_patch(Rectangle((at - .5, t - .5), 1, 1, fill=False, ec="red", lw=2))
                        ax.text(at, t, letter, ha="center", va="center", color="red", fontsize=9)
        return fig

    def widget(self):
        """ipywidgets: the model and the typed sequence; redraws :meth:`figure`."""
        import ipywidgets as w
        return self._interactive(
            model=w.Dropdown(options=list(self.models), value=self.start, description=_("model")),
            sequence=w.Text(value=self.sequence, description=_("sequence"), continuous_update=False))

    def fixture_inputs(self) -> list[str]:
        """Three fixed sequences: the starting one, the same reversed, and its first half."""
        tokens = self.sequence.replace(",", " ").split()
        return [self.sequence, " ".join(reversed(tokens)), " ".join(tokens[: max(1, len(tokens) // 2)])]

    def _export(self, where):
        files, fixtures = {}, []
        for k, (label, model) in enumerate(self.models.items()):
            x = (torch.tensor([[0, 1, 2]]), torch.tensor([[0, 1, 2]]))
            f = export_onnx(model, x, where / f"{self.name}-{k}.onnx", ("items", "payloads"),
                            ("logits", "weights"), {"items": {1: "T"}, "payloads": {1: "T"},
                                                    "logits": {1: "T"}})
            files[label] = f.name
            for text in self.fixture_inputs():
                logits, weights = self.run(label, text)
                fixtures.append({"model": label, "sequence": text, "logits": logits.flatten().tolist(),
                                 "weights": weights.flatten().tolist()})
        return files, fixtures

    def _spec(self):
        return {"start": self.start, "models": list(self.models), "labels": [_shown(m) for m in self.models],
                "sequence": self.sequence,
                "names": self.names, "n_payloads": self.n_payloads,
                "marks": [{"letter": letter, "target": target} for letter, target in self.marks]}

    @staticmethod
    def words() -> dict:
        """What the page's script shows, in the language in force."""
        return {"title": _("Type your own sequence (live, in your browser)"),
                "model": _("model"), "sequence": _("sequence item:payload"),
                "shuffle": _("shuffle"), "head": _("{label}, head {h}"),
                "heads": _("attention weights of every head (rows: queries, columns: keys); "
                           "a red frame marks the item each query must read"),
                "right": _("right payloads: {r} of {n}"),
                "guess": _("predicts"),
                **_common_words(),
                "errors": {"token": _("{token!r} is not item:payload, e.g. {a}:3 (items {a} to {z})"),
                           "payload": _("{token}: payloads go from 0 to {p}"),
                           "twice": _("item {name} appears twice: items must be distinct"),
                           "empty": _("type at least one item:payload, e.g. {a}:3")}}

    def __repr__(self):
        return f"<live.Heads {self.name}: models {list(self.models)}>"


class _SlotRead(nn.Module):
    """Facts a and b, blended: ``x = (1 - t) k_a + t k_b`` -> slot weights (1, m), logits
    (1, C) and each slot's vote for every class (1, m, C), ``a_u W_out[c, u]``."""

    def __init__(self, memory: nn.Module, keys: torch.Tensor):
        super().__init__()
        self.memory = memory
        self.register_buffer("keys", keys.detach().float().cpu().clone())

    def forward(self, a, b, t):
        x = (1 - t)[:, None] * self.keys[a] + t[:, None] * self.keys[b]        # (1, d)
        w = self.memory.slot_weights(x)                                     # (1, m)
        return w, self.memory(x), w[:, :, None] * self.memory.W_out.weight.T[None]


class Slots(_Live):
    """Chapter 9's live explorer: any stored fact's key, or a blend of two, read by a slot memory.

    ``memories``: {label: :class:`~beforeqkv.models.MLPMemory`}; ``keys`` (N, d) and
    ``target`` (N,): the facts they store. The reader picks fact a, fact b and the blend
    ``t`` (0: fact a's key, 1: fact b's); the explorer shows every slot's weight, each
    slot's vote for fact a's class, and what the memory answers.
    """

    kind = "slots"
    name = "ch09-slots"
    FIXTURES = ((3, 20, 0.0), (3, 20, 0.5), (17, 5, 0.3), (31, 0, 1.0))

    def __init__(self, memories: dict, keys: torch.Tensor, target: torch.Tensor, fact: int = 3,
                 other: int = 20, blend: float = 0.0, start=None):
        if not memories or not all(hasattr(m, "slot_weights") for m in memories.values()):
            raise ValueError("memories must map each label to an MLPMemory")
        if keys.dim() != 2 or target.shape != keys.shape[:1]:
            raise ValueError(f"need keys (N, d) and target (N,), got {tuple(keys.shape)} and {tuple(target.shape)}")
        self.memories = {str(k): m for k, m in memories.items()}
        self.keys, self.target = keys.detach().float().cpu(), [int(c) for c in target.tolist()]
        self.start = str(start) if start is not None else next(iter(self.memories))
        if self.start not in self.memories:
            raise ValueError(f"start={self.start!r} is not one of the memories: {list(self.memories)}")
        self.fact, self.other, self.blend = self.check(fact, other, blend)
        self.files = None

    def check(self, a, b, t):
        """The two facts and the blend, or a ``ValueError`` in words."""
        n = len(self.target)
        for f in (a, b):
            if isinstance(f, bool) or not isinstance(f, int) or not 0 <= f < n:
                raise ValueError(_("a fact is a number from 0 to {n}, got {f!r}").format(n=n - 1, f=f))
        if not 0 <= float(t) <= 1:
            raise ValueError(_("the blend goes from 0 (fact a) to 1 (fact b), got {t!r}").format(t=t))
        return a, b, float(t)

    def run(self, label: str, a: int, b: int, t: float):
        """Slot weights (m,), logits (C,) and votes (m, C), float32, on the CPU."""
        a, b, t = self.check(a, b, t)
        memory = self.memories[str(label)]
        device = next(memory.parameters()).device
        read = _SlotRead(memory, self.keys).to(device)
        with torch.inference_mode():
            w, logits, votes = read(torch.tensor([a], device=device), torch.tensor([b], device=device),
                                    torch.tensor([t], device=device))
        return w[0].float().cpu(), logits[0].float().cpu(), votes[0].float().cpu()

    def figure(self, label: str, a: int, b: int, t: float):
        """Left, every slot's weight; right, each slot's vote for fact a's class."""
        from .plot import COLORS, new_figure
        w, logits, votes = self.run(label, a, b, t)
        c = self.target[a]
        v = votes[:, c]
        fig, (ax1, ax2) = new_figure(1, 2, figsize=(8.5, 3.0))
        ax1.bar(range(len(w)), w.numpy(), color=COLORS[0])
        ax1.set(xlabel=_("slot u"), ylabel=_("slot weight a_u"),
                title=_("{label}: facts {a} and {b}, blend {t:.2f}").format(label=_shown(label), a=a, b=b, t=t))
        ax2.bar(range(len(v)), v.numpy(), color=[COLORS[2] if x >= 0 else COLORS[1] for x in v.tolist()])
        ax2.axhline(0, color="gray", lw=0.8)
        ax2.set(xlabel=_("slot u"), ylabel=_("a_u · v_u[target]"),
                title=_("fact {a}'s class {c}; the memory answers {p}").format(a=a, c=c, p=int(logits.argmax())))
        return fig

    def widget(self):
        """ipywidgets: the memory, the two facts and the blend; redraws :meth:`figure`."""
        import ipywidgets as w
        n = len(self.target)
        return self._interactive(
            label=w.Dropdown(options=list(self.memories), value=self.start, description=_("memory")),
            a=w.IntSlider(value=self.fact, min=0, max=n - 1, description=_("fact a")),
            b=w.IntSlider(value=self.other, min=0, max=n - 1, description=_("fact b")),
            t=w.FloatSlider(value=self.blend, min=0, max=1, step=0.01, description=_("blend")))

    def _export(self, where):
        files, fixtures = {}, []
        for k, (label, memory) in enumerate(self.memories.items()):
            one = torch.tensor([0])
            f = export_onnx(_SlotRead(memory, self.keys), (one, one, torch.tensor([0.5])),
                            where / f"{self.name}-{k}.onnx", ("a", "b", "t"), ("weights", "logits", "votes"), {},
                            record=False)
            files[label] = f.name
            for a, b, t in self.FIXTURES:
                w, logits, votes = self.run(label, a, b, t)
                fixtures.append({"memory": label, "a": a, "b": b, "t": t, "weights": w.tolist(),
                                 "logits": logits.tolist(), "votes": votes.flatten().tolist()})
        return files, fixtures

    def _spec(self):
        return {"start": self.start, "memories": list(self.memories),
                "labels": [_shown(m) for m in self.memories], "target": self.target,
                "fact": self.fact, "other": self.other, "blend": self.blend}

    @staticmethod
    def words() -> dict:
        """What the page's script shows, in the language in force."""
        return {"title": _("Read any fact, or a blend of two (live, in your browser)"),
                "memory": _("memory"), "a": _("fact a"), "b": _("fact b"), "blend": _("blend"),
                "weights": _("slot weights a_u (one bar per slot u)"),
                "votes": _("each slot's vote for fact a's class, a_u · v_u[target] (green helps, red hurts)"),
                "answer": _("the memory answers class {p} (p = {q}); fact a's class is {a}, fact b's {b}"),
                **_common_words()}

    def __repr__(self):
        return f"<live.Slots: memories {list(self.memories)}, {len(self.target)} facts>"


class _CrosstalkTable(nn.Module):
    """Chapter 2's draws, stored once, and the read the reader explores: for each N of the
    sweep, the fraction of reads whose nearest value is the right one, by a softmax read at
    the scale picked and by the fixed memory (the linear read, ``M = sum_j k_j v_j``)."""

    def __init__(self, scores: list, ids: list, values: torch.Tensor):
        super().__init__()
        self.n = len(scores)
        for i, (s, v) in enumerate(zip(scores, ids)):
            self.register_buffer(f"scores{i}", s)    # (widths, trials, N_i): q . k_j, the query is key 0
            self.register_buffer(f"ids{i}", v)       # (widths, trials, N_i) uint8: each pair's value
        self.register_buffer("values", values)       # (widths, sweep, n_values, d_v): the unit value vectors

    def forward(self, width, scale):                 # (1,) int64: which width; (1,) float
        soft, fixed = [], []
        for i in range(self.n):
            s = getattr(self, f"scores{i}")[width[0]]                  # (trials, N)
            ids = getattr(self, f"ids{i}")[width[0]].long()            # (trials, N)
            e = self.values[width[0], i]                               # (n_values, d_v)
            v = e[ids]                                                 # (trials, N, d_v)
            for w, out in ((torch.softmax(s * scale, dim=-1), soft), (s, fixed)):
                read = torch.einsum("tj,tjd->td", w, v)                # (trials, d_v)
                nearest = (read @ e.T).argmax(-1)                      # (trials,)
                out.append((nearest == ids[:, 0]).float().mean())
        return torch.stack(soft), torch.stack(fixed)                   # (sweep,), (sweep,)


class Crosstalk(_Live):
    """Chapter 2's live explorer: untrained recall against the number of stored pairs N, by
    a softmax read at any scale of the range and by the fixed memory, for keys of each width.

    ``recall_fn(n_pairs, d_k, sharpness=None) -> fraction`` is the chapter's own function
    (``trials`` random unit keys, 16 unit value vectors and the pairs' values drawn, in that
    order, from a generator seeded with ``seed``; ``sharpness=None`` reads through the fixed
    memory). The explorer stores those draws once, each key's dot product with the query
    and each pair's value, for every width and N; the reads run on them, at whatever scale
    the reader picks. In Jupyter the chapter's own explorer over ``recall_fn`` is the widget.
    """

    kind = "crosstalk"
    name = "ch02-crosstalk"
    STEPS = 100                 # slider positions per tenfold of the scale
    FIXTURES = ((16, 248), (8, 100), (64, 100), (32, 57), (16, 130), (64, 300), (8, 0))     # (d_k, position)

    def __init__(self, recall_fn, widths=(8, 16, 32, 64), n_sweep=(1, 2, 4, 8, 16, 32, 64), trials: int = 2000,
                 seed: int = 0, scales=(0.1, 100.0), start=(16, 30.0), n_values: int = 16, d_v: int = 16):
        if not callable(recall_fn):
            raise ValueError("recall_fn must be the chapter's function recall_fn(n_pairs, d_k, sharpness=None)")
        self.widths, self.n_sweep = [int(d) for d in widths], [int(n) for n in n_sweep]
        self.lo, self.hi = float(scales[0]), float(scales[1])
        if not (self.widths and self.n_sweep and 0 < self.lo < self.hi and all(d > 0 for d in self.widths)
                and all(n > 0 for n in self.n_sweep)) or len(self.widths) * sum(self.n_sweep) * trials > 2_000_000:
            raise ValueError(f"widths={widths}, n_sweep={n_sweep}, trials={trials}, scales={scales}: positive sizes, "
                             "0 < lowest scale < highest, and at most 2,000,000 stored dot products")
        self.recall_fn, self.files = recall_fn, None
        self.start = self.check(*start)
        scores, ids, values = [], [], []
        for n in self.n_sweep:
            per = [self._draw(n, d, trials, seed, n_values, d_v) for d in self.widths]
            scores.append(torch.stack([p[0] for p in per]))
            ids.append(torch.stack([p[1] for p in per]).to(torch.uint8))
            values.append(torch.stack([p[2] for p in per]))
        self.table = _CrosstalkTable(scores, ids, torch.stack(values, dim=1))
        d, middle = self.start[0], math.sqrt(self.lo * self.hi)       # the start; a softer read (3.16 of 0.1..100)
        got = [*self.run(d, self.start[1]), self.run(d, middle)[0]]
        want = [[recall_fn(n, d, sharpness=self.start[1]) for n in self.n_sweep],
                [recall_fn(n, d) for n in self.n_sweep], [recall_fn(n, d, sharpness=middle) for n in self.n_sweep]]
        if got != want:
            raise ValueError("recall_fn does not draw what the explorer stores: its keys, values and pairs must come "
                             "from one generator seeded with seed, drawn in that order (chapter 2's function)")

    @staticmethod
    def _draw(n, d_k, trials, seed, n_values, d_v):
        """The chapter's draws for N pairs of width d_k: q . k_j (trials, N), values' ids, E."""
        import torch.nn.functional as F
        g = torch.Generator().manual_seed(seed)
        keys = F.normalize(torch.randn(trials, n, d_k, generator=g), dim=-1)    # (trials, N, d_k)
        e = F.normalize(torch.randn(n_values, d_v, generator=g), dim=-1)        # (n_values, d_v)
        ids = torch.randint(n_values, (trials, n), generator=g)                 # (trials, N)
        return (keys[:, :1] @ keys.transpose(1, 2))[:, 0], ids, e

    def scale_at(self, position: int) -> float:
        """The scale at a slider position: ``lo * 10 ** (position / STEPS)``."""
        return self.lo * 10 ** (position / self.STEPS)

    def check(self, d_k, scale):
        """The width and the scale, or a ``ValueError`` in words."""
        if isinstance(d_k, bool) or d_k not in self.widths:
            raise ValueError(_("d_k is one of {widths}, got {value!r}").format(widths=self.widths, value=d_k))
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not self.lo <= scale <= self.hi:
            raise ValueError(_("the scale is a number from {lo:g} to {hi:g}, got {value!r}").format(
                lo=self.lo, hi=self.hi, value=scale))
        return d_k, float(scale)

    def run(self, d_k: int, scale: float):
        """For each N of the sweep, the fraction of right reads: softmax at ``scale``, fixed memory."""
        d_k, scale = self.check(d_k, scale)
        with torch.inference_mode():
            soft, fixed = self.table(torch.tensor([self.widths.index(d_k)]), torch.tensor([scale]))
        return soft.tolist(), fixed.tolist()

    def widget(self):
        """None: in Jupyter the chapter's explorer over ``recall_fn`` is this explorer."""
        return None

    def _export(self, where):
        f = export_onnx(self.table, (torch.tensor([0]), torch.tensor([1.0])), where / f"{self.name}.onnx",
                        ("width", "scale"), ("soft", "fixed"), {}, record=False)
        fixtures = []
        for d_k, position in self.FIXTURES:
            scale = self.scale_at(position)
            if d_k in self.widths and self.lo <= scale <= self.hi:
                fixtures.append({"d_k": d_k, "position": position, "scale": scale,
                                 "soft": [self.recall_fn(n, d_k, sharpness=scale) for n in self.n_sweep],
                                 "fixed": [self.recall_fn(n, d_k) for n in self.n_sweep]})
        return {"model": f.name}, fixtures

    def _spec(self):
        from .plot import COLORS
        steps = round(self.STEPS * math.log10(self.hi / self.lo))
        return {"widths": self.widths, "n_sweep": self.n_sweep, "lo": self.lo, "steps": self.STEPS,
                "positions": steps, "start": [self.start[0], round(self.STEPS * math.log10(self.start[1] / self.lo))],
                "chance": 1 / 16, "colours": [COLORS[0], COLORS[1]]}

    def words(self) -> dict:
        """The figure's own words (legend, axes, title) and the controls named as the static
        explorer below names them, in the language in force."""
        from ._explorer_static import _tr
        return {"title": _("Recall against N at any softmax scale from {lo:g} to {hi:g} (live, in your "
                           "browser)").format(lo=self.lo, hi=self.hi),
                "d_k": _tr("d_k"), "scale": _tr("scale"),
                "soft": _("softmax read, scale {s:g} (keeps all pairs)").replace("{s:g}", "{s}"),
                "fixed": _("fixed memory M ({d_k} x 16)"),
                "x": _("number of stored pairs N"), "y": _("reads that return the right value"),
                "figure": _("Crosstalk, no training (d_k = {d_k})"), **_common_words()}

    def __repr__(self):
        return f"<live.Crosstalk: d_k in {self.widths}, N in {self.n_sweep}, scale {self.lo:g}..{self.hi:g}>"


class _RowTable(nn.Module):
    """Chapter 7's draws, stored once, and the arithmetic the reader explores: the scale,
    the softmax and the gradient ``J γ`` a row passes back, for the width and draw picked."""

    def __init__(self, scores: torch.Tensor, gamma: torch.Tensor, lowest: int, first: int):
        super().__init__()
        self.register_buffer("scores", scores)      # (K, S, T): raw q . k_j at width 2**(lowest + k), seed first + s
        self.register_buffer("gamma", gamma)        # (S, T): seed first + s's upstream gradient
        self.lowest, self.first = lowest, first

    def forward(self, log2_d, seed, scaled):        # (1,) int64, (1,) int64, (1,) float: 1 scaled, 0 not
        seed = seed - self.first
        s = self.scores[log2_d - self.lowest, seed]                   # (1, T)
        root = torch.pow(2.0, log2_d.float() / 2)                     # (1,): sqrt(d)
        s = torch.where(scaled[:, None] > 0.5, s / root[:, None], s)
        a = torch.softmax(s, dim=-1)                                  # (1, T)
        u = self.gamma[seed]                                          # (1, T)
        ju = a * u - a * (a * u).sum(dim=-1, keepdim=True)            # (diag(a) - a a^T) u
        return a, ju.norm(dim=-1)                                     # (1, T), (1,)


class SoftmaxRow(_Live):
    """Chapter 7's live explorer: one random query's softmax row over ``T`` random keys, at any
    width ``d = 2**log2_d`` of the range, scaled or not, for any of the draws.

    ``row_fn(log2_d, scaled, seed) -> (weights (T,), ||J γ||)`` is the chapter's own function
    (scores from :func:`beforeqkv.measure.saturation.random_scores`, ``γ`` from
    :func:`~beforeqkv.measure.saturation.row_gradient`, each from a generator seeded with
    ``seed``). The explorer stores those draws once, the raw scores at every width and seed,
    in the ONNX file; the scale, the softmax and ``J γ`` are computed there, for whatever
    the reader picks. In Jupyter the chapter's own explorer over ``row_fn`` is the widget.
    """

    kind = "softmax"
    name = "ch07-softmax"
    FIXTURES = ((10, False, 3), (10, True, 3), (0, True, 0), (6, False, 20), (12, False, 7), (12, True, 7))
    MAX_SETTINGS = 1024         # widths x seeds stored (the chapter's: 13 x 21 = 273)

    def __init__(self, row_fn, log2_d=(0, 12), seeds=(0, 20), T: int = 32, start=(6, False, 3)):
        if not callable(row_fn):
            raise ValueError("row_fn must be the chapter's function row_fn(log2_d, scaled, seed)")
        (self.lowest, self.highest), (self.first, self.last) = (int(x) for x in log2_d), (int(x) for x in seeds)
        if not 0 <= self.lowest <= self.highest <= 16 or not 0 <= self.first <= self.last:
            raise ValueError(f"log2_d=(lo, hi) needs 0 <= lo <= hi <= 16 and seeds=(first, last) 0 <= first <= last, "
                             f"got log2_d={log2_d}, seeds={seeds}")
        if (self.highest - self.lowest + 1) * (self.last - self.first + 1) > self.MAX_SETTINGS:
            raise ValueError(f"{log2_d} x {seeds}: more than {self.MAX_SETTINGS} widths x seeds to store")
        self.row_fn, self.T, self.files = row_fn, int(T), None
        self.start = self.check(*start)
        from .measure.saturation import random_scores
        scores = [[random_scores(2 ** k, n_queries=1, T=self.T, generator=torch.Generator().manual_seed(s))[0]
                   for s in range(self.first, self.last + 1)] for k in range(self.lowest, self.highest + 1)]
        gamma = [torch.randn((1, self.T), generator=torch.Generator().manual_seed(s))[0]
                 for s in range(self.first, self.last + 1)]
        self.table = _RowTable(torch.stack([torch.stack(r) for r in scores]).float(), torch.stack(gamma).float(),
                               self.lowest, self.first)
        log2_start, _scaled, seed_start = self.start
        if not all(self._agrees(log2_start, scaled, seed_start) for scaled in (False, True)):
            raise ValueError("row_fn does not draw what the explorer stores: its scores must come from "
                             "saturation.random_scores(2 ** log2_d, n_queries=1, T=T, generator=seeded(seed)) "
                             "and its gradient from row_gradient(weights, seeded(seed))")

    def _agrees(self, log2_d, scaled, seed) -> bool:
        """The stored draws give what the chapter's ``row_fn`` gives at this setting."""
        a, grad = self.run(log2_d, scaled, seed)
        want, want_grad = self.row_fn(log2_d, scaled, seed)
        want = torch.as_tensor(want).float()
        return (want.shape == a.shape and torch.allclose(a, want, atol=1e-6)
                and abs(grad - float(want_grad)) <= 1e-5 * max(1.0, abs(float(want_grad))))

    def check(self, log2_d, scaled, seed):
        """The width, the scale and the draw, or a ``ValueError`` in words."""
        for value, low, high, what in ((log2_d, self.lowest, self.highest, "log2_d"),
                                       (seed, self.first, self.last, "seed")):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(_("{what} is a whole number from {low} to {high}, got {value!r}").format(
                    what=what, low=low, high=high, value=value))
        if not isinstance(scaled, bool):
            raise ValueError(_("scaled is True or False, got {value!r}").format(value=scaled))
        return log2_d, scaled, seed

    def run(self, log2_d: int, scaled: bool, seed: int):
        """The row's weights (T,) and its gradient ||J γ||, from the stored draws."""
        log2_d, scaled, seed = self.check(log2_d, scaled, seed)
        with torch.inference_mode():
            a, grad = self.table(torch.tensor([log2_d]), torch.tensor([seed]),
                                 torch.tensor([float(scaled)]))
        return a[0], grad.item()

    def widget(self):
        """None: in Jupyter the chapter's explorer over ``row_fn`` is this explorer."""
        return None

    def _export(self, where):
        f = export_onnx(self.table, (torch.tensor([self.lowest]), torch.tensor([self.first]), torch.tensor([1.0])),
                        where / f"{self.name}.onnx", ("log2_d", "seed", "scaled"), ("weights", "grad"), {},
                        record=False)
        fixtures = []
        for log2_d, scaled, seed in self.FIXTURES:
            if self.lowest <= log2_d <= self.highest and self.first <= seed <= self.last:
                a, grad = self.row_fn(log2_d, scaled, seed)
                fixtures.append({"log2_d": log2_d, "scaled": scaled, "seed": seed,
                                 "weights": torch.as_tensor(a).float().tolist(), "grad": float(grad)})
        return {"model": f.name}, fixtures

    def _spec(self):
        from .plot import COLORS
        return {"log2_d": [self.lowest, self.highest], "seeds": [self.first, self.last], "start": list(self.start),
                "colours": [COLORS[1], COLORS[0]]}

    @staticmethod
    def titles() -> dict:
        """The figure's own titles, its format specs out (the page's script formats the numbers)."""
        def bare(text):
            return text.replace("{w:.4f}", "{w}").replace("{g:.1e}", "{g}")
        return {"scaled_title": bare(_("d = {d}, scaled: max weight {w:.4f}, ‖J γ‖ = {g:.1e}")),
                "unscaled_title": bare(_("d = {d}, unscaled: max weight {w:.4f}, ‖J γ‖ = {g:.1e}"))}

    def words(self) -> dict:
        """What the page's script shows, in the language in force: the controls named as the
        static explorer below names them, the figure's titles."""
        from ._explorer_static import _tr
        return {"title": _("One softmax row at every width from d = {lo} to {hi}, scaled or not "
                           "(live, in your browser)").format(lo=2 ** self.lowest, hi=2 ** self.highest),
                "log2_d": _tr("log2_d"), "scaled": _tr("scaled"), "seed": _tr("seed"),
                "weights": _("the softmax weight a_j of each key j (the bars' scale: 0 to 1)"),
                **self.titles(), **_common_words()}

    def __repr__(self):
        return (f"<live.SoftmaxRow: log2_d {self.lowest}..{self.highest}, seeds {self.first}..{self.last}, "
                f"T = {self.T}>")


class Prompt(_Live):
    """Chapter 8's live explorer: the reader's prompt, continued by the trained character GPT.

    ``model``: the chapter's :class:`~beforeqkv.models.GPT`; ``vocab``: its
    :class:`~beforeqkv.corpus.CharVocab`. The model reads the last ``n_ctx`` characters of
    the prompt; the explorer shows the likeliest next characters at the chosen temperature,
    a continuation, and every head's attention weights over the prompt's last characters.
    """

    kind = "prompt"
    name = "ch08-prompt"
    FIXTURES = ("Ham.\nWhat sh", "To be, or not to be, that is", "KING:\nMy lord, ")
    GREEDY = 40            # characters the fixtures continue at temperature 0
    SHOWN = 24             # the attention maps show the prompt's last SHOWN characters

    def __init__(self, model: nn.Module, vocab, prompt: str = "Ham.\nWhat sh", temperature: float = 0.75,
                 n_chars: int = 120):
        if not hasattr(model, "generate") or not hasattr(vocab, "chars"):
            raise ValueError("Prompt needs the chapter's GPT and its CharVocab")
        self.model, self.vocab = model, vocab
        self.n_ctx = model.config.n_ctx
        self.encode(prompt)
        self.prompt, self.temperature, self.n_chars = prompt, float(temperature), int(n_chars)
        self.files = None

    def encode(self, text: str) -> list[int]:
        """The prompt's ids, its last ``n_ctx`` characters (:func:`encode_prompt`)."""
        return encode_prompt(text, self.vocab.chars, self.n_ctx)

    def run(self, text: str):
        """Logits after the prompt (V,) and each layer's weights (n_heads, T, T), float32, CPU."""
        ids = torch.tensor([self.encode(text)], device=next(self.model.parameters()).device)
        was = self.model.training
        self.model.eval()
        with torch.inference_mode(), record_weights(self.model) as w:
            logits = self.model(ids)
        self.model.train(was)
        return logits[0, -1].float().cpu(), [a[0].float().cpu() for a in w]

    def continuation(self, text: str, n_chars: int, temperature: float, seed: int = 0) -> str:
        """``n_chars`` characters after the prompt (PyTorch's sampler; the page has its own)."""
        ids = torch.tensor(self.encode(text), device=next(self.model.parameters()).device)
        out = self.model.generate(ids, int(n_chars), temperature=float(temperature),
                                  generator=torch.Generator().manual_seed(int(seed)))
        return "".join(self.vocab.chars[i] for i in out[len(ids):].tolist())

    def figure(self, prompt: str, temperature: float, n_chars: int, seed: int = 0):
        """The likeliest next characters, a continuation, and the last layer's heads."""
        from .plot import new_figure
        logits, weights = self.run(prompt)
        shown = {" ": "␣", "\n": "\\n"}
        p = torch.softmax(logits / max(temperature, 1e-6), -1)
        top = p.topk(12)
        last = weights[-1][:, -self.SHOWN:, -self.SHOWN:]          # (H, T', T')
        fig, axes = new_figure(2, last.shape[0], figsize=(2.4 * last.shape[0], 5.6),
                               gridspec_kw={"height_ratios": [1, 1.2]})
        top_ax = axes[0][0].get_gridspec()
        for ax in axes[0]:
            ax.remove()
        bars = fig.add_subplot(top_ax[0, : max(1, last.shape[0] // 2)])
        bars.bar([shown.get(self.vocab.chars[i], self.vocab.chars[i]) for i in top.indices.tolist()],
                 top.values.tolist())
        bars.set_title(_("next character at temperature {t:g}").format(t=temperature))
        text = fig.add_subplot(top_ax[0, max(1, last.shape[0] // 2):])
        text.axis("off")
        said = prompt[-40:] + self.continuation(prompt, n_chars, temperature, seed)
        text.text(0, 1, said[:400], va="top", family="monospace", fontsize=9, wrap=True)
        labels = [shown.get(c, c) for c in prompt[-self.SHOWN:]]
        for h, ax in enumerate(axes[1]):
            ax.imshow(last[h].numpy(), cmap="viridis", vmin=0, vmax=1)
            ax.set_title(_("layer {l}, head {h}").format(l=len(weights) - 1, h=h))
            ax.set_xticks(range(len(labels)), labels, fontsize=7)
            ax.set_yticks(range(len(labels)), labels, fontsize=7)
        return fig

    def widget(self):
        """ipywidgets: the prompt, the temperature, the length and a seed; redraws :meth:`figure`."""
        import ipywidgets as w
        return self._interactive(
            prompt=w.Textarea(value=self.prompt, description=_("prompt"), continuous_update=False),
            temperature=w.FloatSlider(value=self.temperature, min=0, max=1.5, step=0.05,
                                      description=_("temperature")),
            n_chars=w.IntSlider(value=self.n_chars, min=0, max=300, description=_("length")),
            seed=w.IntText(value=0, description=_("seed")))

    def _export(self, where):
        names = [f"weights{i}" for i in range(len(self.model.blocks))]
        f = export_onnx(self.model, (torch.tensor([[0, 1, 2]]),), where / f"{self.name}.onnx",
                        ("tokens",), ("logits", *names),
                        {"tokens": {1: "T"}, "logits": {1: "T"},
                         **{n: {2: "T", 3: "T"} for n in names}})
        fixtures = []
        for text in self.FIXTURES:
            logits, weights = self.run(text)
            fixtures.append({"prompt": text, "logits": logits.tolist(),
                             "weights": [a.flatten().tolist() for a in weights],
                             "greedy": self.continuation(text, self.GREEDY, 0.0)})
        return {"model": f.name}, fixtures

    def _spec(self):
        return {"chars": self.vocab.chars, "n_ctx": self.n_ctx, "prompt": self.prompt,
                "temperature": self.temperature, "n_chars": self.n_chars, "shown": self.SHOWN,
                "n_layers": len(self.model.blocks), "n_heads": self.model.config.n_heads}

    @staticmethod
    def words() -> dict:
        """What the page's script shows, in the language in force."""
        return {"title": _("Type a prompt (live, in your browser)"),
                "prompt": _("prompt"), "temperature": _("temperature"), "length": _("length"),
                "again": _("sample again"),
                "next": _("the likeliest next characters"),
                "sample": _("a continuation"),
                "head": _("layer {l}, head {h}"),
                "heads": _("attention weights of every head over the prompt's last characters "
                           "(rows: queries, columns: keys)"),
                **_common_words(),
                "errors": {"empty": _("type a prompt of at least one character"),
                           "unknown": _("not in the model's alphabet: {chars}")}}

    def __repr__(self):
        return f"<live.Prompt: {type(self.model).__name__}, {len(self.vocab.chars)} characters>"


class _SentenceEncoder(nn.Module):
    """One sentence's ids (1, T) -> its MiniLM embedding (1, d): mean over tokens, unit length."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids):
        h = self.model.hidden_states(ids)                    # (1, T, d): every token is real
        return torch.nn.functional.normalize(h.mean(1), dim=-1)


class Sentences(_Live):
    """Chapter 10's live explorer: two sentences of the reader's, read by the real MiniLM.

    ``minilm``: the chapter's loaded :class:`~beforeqkv.pretrained.minilm.MiniLM`. The
    explorer shows the cosine of the two sentence embeddings and one head's attention
    weights over the first sentence's tokens. On the site the model is stored in 8 bits
    (onnxruntime's dynamic quantisation of every matrix product and of the embedding),
    fetched only when the reader touches the explorer; its WordPiece tokenizer runs
    in the page with the model's own ``vocab.txt``.
    """

    kind = "sentences"
    name = "ch10-minilm"
    FIXTURES = (("The animal didn't cross the street because it was too tired.",
                 "A person plays a musical instrument."),
                ("Tokenizers don't fear résumés, 東京 or 🤖.", "A man is playing a guitar."),
                ("Paris is the capital and largest city of France.", "The cat sat on the mat."))

    def __init__(self, minilm, first: str = "The animal didn't cross the street because it was too tired.",
                 second: str = "The animal was too tired to cross the street.", layer: int = 3, head: int = 1):
        if not hasattr(minilm, "tokenizer") or not hasattr(minilm, "model"):
            raise ValueError("Sentences needs the chapter's loaded MiniLM (load_minilm())")
        self.minilm, self.first, self.second = minilm, first, second
        self.layer, self.head = int(layer), int(head)
        self.files, self.mb = None, None

    def run(self, text: str):
        """The sentence's embedding (d,) and each layer's weights (n_heads, T, T), float32, CPU."""
        ids = torch.tensor([self.minilm.tokenize(text)], device=self.minilm.device)
        with torch.inference_mode(), record_weights(self.minilm.model) as w:
            emb = _SentenceEncoder(self.minilm.model)(ids)
        return emb[0].float().cpu(), [a[0].float().cpu() for a in w]

    def figure(self, first: str, second: str, layer: int, head: int):
        """One head's weights over the first sentence; the two sentences' cosine in the title."""
        from .plot import heatmap
        a, weights = self.run(first)
        b, _unused = self.run(second)
        tokens = self.minilm.tokens(first)
        fig = heatmap(weights[layer][head], vmin=0, vmax=1, figsize=(6.4, 5.6),
                      title=_("layer {l}, head {h}; cosine of the two sentences {c:.3f}").format(
                          l=layer, h=head, c=float(a @ b)))
        ax = fig.axes[0]
        ax.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=8)
        ax.set_yticks(range(len(tokens)), tokens, fontsize=8)
        return fig

    def widget(self):
        """ipywidgets: two sentences, a layer and a head; redraws :meth:`figure`."""
        import ipywidgets as w
        n_layers, n_heads = len(self.minilm.model.blocks), self.minilm.model.config.n_heads
        return self._interactive(
            first=w.Text(value=self.first, description="1", continuous_update=False),
            second=w.Text(value=self.second, description="2", continuous_update=False),
            layer=w.IntSlider(value=self.layer, min=0, max=n_layers - 1, description=_("layer")),
            head=w.IntSlider(value=self.head, min=0, max=n_heads - 1, description=_("head")))

    def _export(self, where):
        model = self.minilm.model
        names = [f"weights{i}" for i in range(len(model.blocks))]
        full = export_onnx(_SentenceEncoder(model), (torch.tensor([[101, 2023, 102]]),),
                           where / f"{self.name}-fp32.onnx", ("ids",), ("embedding", *names),
                           {"ids": {1: "T"}, **{n: {2: "T", 3: "T"} for n in names}})
        small = quantize_weights(full, where / f"{self.name}-int8.onnx")
        full.unlink()
        self.mb = round(small.stat().st_size / 1e6)
        vocab = where / f"{self.name}-vocab.txt"
        vocab.write_text("\n".join(self.minilm.tokenizer.pieces) + "\n", encoding="utf-8")
        import onnxruntime
        # the graph as written: float32 products of the dequantised weights, as in the browser
        # (onnxruntime's x86 fusions would quantise the activations too)
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
        session = onnxruntime.InferenceSession(str(small), options, providers=["CPUExecutionProvider"])
        fixtures = []
        for first, second in self.FIXTURES:
            out = {}
            for key, text in (("first", first), ("second", second)):
                ids = self.minilm.tokenize(text)
                emb8, *w8 = session.run(None, {"ids": torch.tensor([ids]).numpy()})
                emb, _unused = self.run(text)
                out[key] = {"text": text, "ids": ids, "embedding_int8": emb8[0].tolist(),
                            "weights_int8": w8[self.layer][0].ravel().tolist(),
                            "embedding": emb.tolist()}
            fixtures.append(out)
        return {"model": small.name, "vocab": vocab.name}, fixtures

    def _spec(self):
        cfg = self.minilm.model.config
        return {"first": self.first, "second": self.second, "layer": self.layer, "head": self.head,
                "n_layers": len(self.minilm.model.blocks), "n_heads": cfg.n_heads,
                "max_length": self.minilm.max_length, "mb": self.mb}

    @staticmethod
    def words() -> dict:
        return {"title": _("Type two sentences (live, in your browser, 8-bit MiniLM)"),
                "first": _("sentence 1"), "second": _("sentence 2"), "layer": _("layer"),
                "head": _("head"), "cosine": _("cosine of the two sentence embeddings: {c}"),
                "map": _("layer {l}, head {h}: attention weights over sentence 1 (rows: queries, "
                         "columns: keys)"),
                **_common_words(),
                "loading": _("loading the 8-bit MiniLM ({mb} MB, runs in your browser)"),
                "errors": {"long": _("the text is {n} tokens long (with [CLS] and [SEP]), longer "
                                     "than the model's context of {m} tokens")}}

    def __repr__(self):
        return "<live.Sentences: MiniLM>"


class _NextTokenProbs(nn.Module):
    """ids (1, T) -> the next token's probabilities after them (d_vocab,): only the last position."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return torch.softmax(self.model._last_logits(ids, None)[0].float(), -1)


class NextToken(_Live):
    """Chapter 11's live explorer: the reader's prompt, read by SmolLM2-135M; its likeliest next tokens.

    ``lm``: the chapter's :class:`~beforeqkv.pretrained.smollm2.SmolLM2`. On the site the
    model is stored on the grids the GGUF file already put its weights on (:func:`grid_weights`:
    4 bits for the layers, 8 for the tied embedding), so the browser computes with the
    chapter's own numbers; the byte-level BPE tokenizer runs in the page from the model's
    vocabulary and merges. A click on a bar appends that token to the prompt.
    """

    kind = "nexttoken"
    name = "ch11-smollm2"
    # prompts, then texts that hold the page's tokenizer to Python's ids (contractions, digits,
    # runs of spaces, a tab, accents, CJK, emoji, a no-break space, underscores, an
    # ideographic space, a zero-width space)
    FIXTURES = ("The capital of France is", "def add(a, b):\n    return", "Once upon a time, there was a",
                "I'm sure it's 2025, isn't it?", "  two  spaces\tand a tab\n\n", "naïve café, déjà vu",
                "東京は日本の首都です。", "emoji 🤖 and 👍🏽!", "a\u00a0b snake_case __init__", "x\u3000y ½ ²",
                "\u200bzero width")

    def __init__(self, lm, prompt: str = "The capital of France is", k: int = 8, max_tokens: int = 64):
        if not hasattr(lm, "tokenizer") or not hasattr(lm, "model") or not hasattr(lm, "next_token_probs"):
            raise ValueError("NextToken needs the chapter's loaded SmolLM2 (load_smollm2())")
        self.lm, self.k, self.max_tokens = lm, int(k), int(max_tokens)
        self.encode(prompt)
        self.prompt = prompt
        self.files, self.mb = None, None

    def encode(self, text: str) -> list[int]:
        """The prompt's token ids; a prompt of no tokens, or over ``max_tokens``, is refused in words."""
        ids = self.lm.tokenize(text)
        if not ids:
            raise ValueError(self.words()["errors"]["empty"])
        if len(ids) > self.max_tokens:
            raise ValueError(self.words()["errors"]["long"].format(n=len(ids), m=self.max_tokens))
        return ids

    def run(self, text: str) -> list[tuple[str, float]]:
        """The ``k`` likeliest next tokens after ``text`` and their probabilities."""
        self.encode(text)
        return self.lm.next_token_probs(text, k=self.k)

    def figure(self, prompt: str):
        """The chapter's bar chart of the likeliest next tokens after ``prompt``."""
        from .figures import ch11
        return ch11.next_token_figure(self.run(prompt), prompt)

    def widget(self):
        """ipywidgets: a prompt; redraws :meth:`figure`."""
        import ipywidgets as w
        return self._interactive(prompt=w.Textarea(value=self.prompt, description=_("prompt"),
                                                    continuous_update=False))

    def tokenizer_file(self, path) -> Path:
        """The tokenizer as the page reads it: the vocabulary, the merges (best first), the
        control tokens' ids and the id for a byte with no symbol."""
        tok = self.lm.tokenizer
        merges = [" ".join(pair) for pair, _rank in sorted(tok.ranks.items(), key=lambda kv: kv[1])]
        Path(path).write_text(json.dumps({"tokens": tok.tokens, "merges": merges, "special": sorted(tok.special),
                                          "unknown": tok.unknown}, ensure_ascii=False), encoding="utf-8")
        return Path(path)

    def _export(self, where):
        fixtures = []
        for text in self.FIXTURES:
            ids = self.encode(text)
            with torch.no_grad():
                probs = torch.softmax(self.lm.logits(ids)[-1].float(), -1)
            best = probs.topk(self.k)
            fixtures.append({"prompt": text, "ids": ids, "top": best.indices.tolist(), "probs": best.values.tolist(),
                             "labels": [repr(self.lm.decode([i])) for i in best.indices.tolist()]})
        # Tracing, the float32 file and its grids hold several copies of the model's 540 MB: the
        # export runs in a process of its own, so this one (a notebook's kernel) keeps the memory
        # the chapter measures. It loads the same file, and must give these fixtures' numbers.
        import subprocess
        import sys
        job = json.dumps({"where": str(where), "name": self.name, "n_ctx": self.lm.config.n_ctx,
                          "fixtures": [{k: f[k] for k in ("ids", "top", "probs")} for f in fixtures]})
        done = subprocess.run([sys.executable, "-c", "import sys; from beforeqkv import live; "
                               "live._export_smollm2(sys.stdin.read())"], input=job, capture_output=True, text=True)
        if done.returncode:
            raise ValueError(f"exporting SmolLM2 for the live explorer failed:\n{done.stderr[-2000:]}")
        self.mb = round((Path(where) / f"{self.name}.onnx").stat().st_size / 1e6)
        vocab = self.tokenizer_file(Path(where) / f"{self.name}-tokenizer.json")
        return {"model": f"{self.name}.onnx", "tokenizer": vocab.name}, fixtures

    def _spec(self):
        return {"prompt": self.prompt, "k": self.k, "max_tokens": self.max_tokens, "mb": self.mb}

    def words(self) -> dict:
        return {"title": _("Type a prompt (live, in your browser: SmolLM2-135M with the GGUF file's own "
                           "4- and 8-bit weights)"),
                "prompt": _("prompt"),
                "bars": _("the {k} likeliest next tokens after your prompt; click one to append it"),
                "after": _("after {prompt}"),
                **_common_words(),
                "loading": _("loading SmolLM2 ({mb} MB, runs in your browser)"),
                "errors": {"empty": _("type a prompt: the model needs at least one token"),
                           "long": _("the prompt is {n} tokens long, longer than the {m} tokens this "
                                     "explorer reads")}}

    def __repr__(self):
        return f"<live.NextToken: SmolLM2, top {self.k}>"


def _export_smollm2(job: str):
    """:meth:`NextToken._export`'s other process: SmolLM2 from its GGUF file, to ONNX on the file's
    grids; refuses to write a model that does not give the fixtures' probabilities (1e-5)."""
    from .pretrained import load_smollm2
    job = json.loads(job)
    where, name = Path(job["where"]), job["name"]
    lm = load_smollm2(n_ctx=job["n_ctx"])
    model = lm.model
    # recorded (export_onnx's default): the recording path repeats the shared key/value heads,
    # which torch's exporter can write (the fused grouped kernel it cannot); the page reads only
    # "probs", the layers' weights are outputs because the recording returns them
    names = [f"weights{i}" for i in range(len(model.blocks))]
    full = export_onnx(_NextTokenProbs(model), (torch.tensor([job["fixtures"][0]["ids"]]),),
                       where / f"{name}-fp32.onnx", ("ids",), ("probs", *names),
                       {"ids": {1: "T"}, **{n: {2: "T", 3: "T"} for n in names}})
    del lm, model
    small = grid_weights(full, where / f"{name}.onnx")
    full.unlink()
    _keep_if_same(small, job["fixtures"], {4: 7 * len(names), 8: 1})    # 7 matrices a block; W_U reads W_E's


def _keep_if_same(path, fixtures, grids):
    """Remove ``path`` and raise unless its weights sit on ``grids`` and it gives each fixture's
    probabilities (its ``top`` tokens' ``probs``) within 1e-5."""
    import numpy as np
    import onnxruntime
    path, found = Path(path), _grids(path)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    worst = max(float(np.abs(session.run(["probs"], {"ids": np.array([f["ids"]])})[0][f["top"]]
                             - np.array(f["probs"])).max()) for f in fixtures)
    if found != grids or worst > 1e-5:
        path.unlink()
        raise ValueError(f"{path.name}: weights on grids {found} (the GGUF file's: {grids}), probabilities up to "
                         f"{worst:.1e} from the chapter's model: the browser would not compute with the chapter's "
                         "numbers")

