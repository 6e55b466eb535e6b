"""Experiment (not the product): an ONNX encoder whose weights stay in the model's own
``model.safetensors``, so that running a downloaded sentence-transformers model needs no torch.

Given an ONNX export of a model (made once, where torch is) and that model's safetensors file,
writes a *skeleton*: the same graph, each large float32 initializer replaced by an external
reference (``location``, ``offset``, ``length``) into the safetensors file as it is, and one whose
export stored it transposed (``nn.Linear`` weights) by a ``Transpose`` of that reference, which
onnxruntime folds when it loads the model. Everything else (small constants) stays inline. The
skeleton is loaded from a folder that holds it and ``model.safetensors``; its outputs are compared
with the full export's.

For all-mpnet-base-v2 (stop 46): 14 references as stored, 72 transposed, 0.34 MB inline; a 549 KB
skeleton whose outputs equal the full export's exactly (max abs difference 0.0), loaded in 850 ms
with a peak RSS of 452 MiB against 1,076 ms and 575 MiB for the 436 MB export. So clio could ship
the skeleton (pinned to the safetensors file's sha256: the offsets are that file's) and run the
downloaded weights without converting them. Needs ``onnx``, ``numpy`` and ``onnxruntime``:

    python benches/recall_dev/onnx_skeleton.py mpnet.onnx all-mpnet-base-v2/model.safetensors out/skeleton.onnx
"""

from __future__ import annotations

import argparse
import json
import shutil
import struct
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

INLINE_BELOW = 1024  # elements: layer norms, biases and constants stay in the graph


def safetensors_index(path: Path) -> tuple[bytes, dict[str, tuple[int, int, tuple[int, ...]]]]:
    """The file's bytes and, per float32 tensor, (absolute offset, length in bytes, shape)."""
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    out = {}
    for name, info in header.items():
        if name != "__metadata__" and info["dtype"] == "F32":
            begin, end = info["data_offsets"]
            out[name] = (8 + size + begin, end - begin, tuple(info["shape"]))
    return raw, out


def external(name: str, offset: int, length: int, shape: tuple[int, ...]) -> TensorProto:
    t = TensorProto()
    t.name, t.data_type, t.data_location = name, TensorProto.FLOAT, TensorProto.EXTERNAL
    t.dims.extend(shape)
    for key, value in (("location", "model.safetensors"), ("offset", str(offset)), ("length", str(length))):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    return t


def skeleton(export: Path, weights: Path, out: Path) -> str:
    model = onnx.load(str(export))
    raw, tensors = safetensors_index(weights)
    candidates: dict[int, list[tuple[np.ndarray, bool, tuple[int, int, tuple[int, ...]]]]] = {}
    for offset, length, shape in tensors.values():
        a = np.frombuffer(raw, dtype="<f4", count=length // 4, offset=offset).reshape(shape)
        candidates.setdefault(a.size, []).append((a, False, (offset, length, shape)))
        if a.ndim == 2:
            candidates[a.size].append((a.T, True, (offset, length, shape)))
    inits, transposes = [], []
    counts = {"as stored": 0, "transposed": 0, "inline": 0}
    inline_bytes = 0
    for init in model.graph.initializer:
        a = numpy_helper.to_array(init)
        match = None
        if a.dtype == np.float32 and a.size >= INLINE_BELOW:
            match = next((c for c in candidates.get(a.size, []) if c[0].shape == a.shape and np.array_equal(c[0], a)), None)
        if match is None:
            inits.append(init)
            counts["inline"] += 1
            inline_bytes += a.nbytes
            continue
        _, transposed, (offset, length, shape) = match
        if transposed:
            inits.append(external(init.name + "__stored", offset, length, shape))
            transposes.append(helper.make_node("Transpose", [init.name + "__stored"], [init.name], perm=[1, 0]))
            counts["transposed"] += 1
        else:
            inits.append(external(init.name, offset, length, shape))
            counts["as stored"] += 1
    del model.graph.initializer[:]
    model.graph.initializer.extend(inits)
    nodes = list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(transposes + nodes)
    out.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(out))
    return (
        f"{counts['as stored']} references as stored, {counts['transposed']} transposed, {counts['inline']} inline "
        f"({inline_bytes / 1e6:.2f} MB); skeleton {out.stat().st_size / 1e3:.0f} KB"
    )


def compare(export: Path, skeleton_path: Path) -> str:
    import onnxruntime as ort

    rng = np.random.default_rng(0)
    ids = rng.integers(5, 1000, size=(3, 24)).astype(np.int64)
    mask = np.ones_like(ids)
    outs, notes = [], []
    for path in (export, skeleton_path):
        started = time.perf_counter()
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        notes.append(f"{path.name} loads in {(time.perf_counter() - started) * 1000:.0f} ms")
        names = {i.name for i in session.get_inputs()}
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        outs.append(session.run(None, {k: v for k, v in feeds.items() if k in names})[0])
    return "; ".join(notes) + f"; max abs difference {float(np.abs(outs[0] - outs[1]).max()):.3g}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("export", type=Path, help="the full ONNX export")
    ap.add_argument("weights", type=Path, help="the model's model.safetensors")
    ap.add_argument("out", type=Path, help="the skeleton to write (model.safetensors is copied beside it)")
    args = ap.parse_args()
    print(skeleton(args.export, args.weights, args.out))
    beside = args.out.parent / "model.safetensors"
    if not beside.exists():
        shutil.copyfile(args.weights, beside)
    print(compare(args.export, args.out))


if __name__ == "__main__":
    main()
