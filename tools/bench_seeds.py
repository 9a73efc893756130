"""Rerun every asserted claim that comes from training (chapters 1-9) on other seeds.

    python tools/bench_seeds.py                       # seeds 0 1 2, every chapter, CPU (+ CUDA if present)
    python tools/bench_seeds.py --chapters 07 08 --seeds 3 4 --devices cpu
    make bench-seeds                                  # writes _build/bench/seeds.csv

A chapter's claim should not hang on one trajectory: each claim below is the chapter's own
``assert``, on the chapter's own setting (its ``CONFIG`` dicts, copied here and kept equal to
the notebook's by tests/test_bench_seeds.py), with the seed that builds the model and draws
its training batches changed; the held-out data stay the chapter's. Seed 0 is the chapter's
own run. The notebooks are not executed: each chapter's experiment is rebuilt from the same
package functions (``train.fit``, ``models``, ``tasks``).

One row per claim, seed and device: ``chapter, claim, seed, device, value, threshold, pass``.
``value`` is the number the claim tests: for an inequality between two measurements it is
their difference (``a - b`` for ``a > b``), compared with the bound in ``threshold``.
Exits 1 when any claim fails.
"""
from __future__ import annotations

import argparse
import csv
import math
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

import beforeqkv
from beforeqkv import attention, models, tasks, train

# ---------------------------------------------------------------- the chapters' settings
# Each equals the notebook's own definition (tests/test_bench_seeds.py reads the notebook's
# cell and compares): change one, change both.
SETTINGS = {
    "01_squished_memory": {
        "CONFIG": dict(batch_lstm=64, steps_lstm=1000, lr_lstm=0.01, schedule_lstm="constant",
                       batch_attn=256, steps_attn=150, lr_attn=0.006),
        "N_ATTN": [2, 4, 8, 16, 32], "N_LSTM": [2, 8, 32],
    },
    "02_keep_every_state": {
        "CONFIG": dict(d_model=32, d_head=16, steps=600, batch=128, lr=3e-3),
        "N_PAIRS": [4, 16, 64], "WINDOW": 16,
    },
    "04_dynamic_weights": {
        "CONFIG": dict(batch=64, steps=800, lr=3e-3),
    },
    "05_queries_keys": {
        "CONFIG": dict(batch=64, steps=1000, lr=3e-3),
    },
    "06_values_heads": {
        "CONFIG": dict(d_attn=16, batch=64, steps=800, lr=5e-3),
        "HEADS": [1, 2, 4],
    },
    "07_scaling": {
        "CONFIG": dict(n_pairs=16, batch=128, steps=200, optimizer="sgd", lr=0.1, momentum=0.9,
                       grad_clip=3.0, init_std=32 ** -0.5),
        "D_HEADS": (16, 256, 1024),
    },
    "08_transformer": {
        "MASK_CFG": dict(d_vocab=16, n_ctx=16, d_model=32, n_heads=2, n_layers=1),
        "MASK_TRAIN": dict(steps=60, lr=6e-3),
        "RES_CFG": dict(d_model=32, n_heads=2, n_layers=6),
        "RES_TRAIN": dict(steps=150, lr=7e-3),
        "LM_TRAIN": dict(steps=450, lr=1e-2, optimizer="adamw", log_every=20, warmup=50,
                         schedule="cosine"),
        "TEMPERATURES": [0.25, 0.5, 0.75, 1.0, 1.25, 1.5],
    },
    "09_mlp_memory": {
        "CONFIG": dict(steps=1000, lr=1e-2, optimizer="adam"),
        "M_HAND": 16,
    },
}
CHAPTERS = {name[:2]: name for name in SETTINGS}


@dataclass
class Claim:
    chapter: str
    claim: str
    value: float
    threshold: str
    passed: bool


class Claims:
    """Collects one chapter's claims as it checks them (never raises: every claim is reported)."""

    def __init__(self, chapter: str):
        self.chapter, self.rows = chapter, []

    def _add(self, claim, value, threshold, passed):
        self.rows.append(Claim(self.chapter, claim, float(value), threshold, bool(passed)))

    def at_least(self, claim, value, bound):
        self._add(claim, value, f">= {bound:.4g}", value >= bound)

    def at_most(self, claim, value, bound):
        self._add(claim, value, f"<= {bound:.4g}", value <= bound)

    def above(self, claim, value, bound):
        self._add(claim, value, f"> {bound:.4g}", value > bound)

    def below(self, claim, value, bound):
        self._add(claim, value, f"< {bound:.4g}", value < bound)

    def equal(self, claim, value, expected):
        self._add(claim, value, f"== {expected}", value == expected)


def _fit(make, batches, steps, lr, seed, device, **kwargs):
    return train.fit(make, batches, steps, lr, seed=seed, device=device, progress=False, **kwargs)


# ---------------------------------------------------------------- chapter 1: LSTM vs attention
def ch01(seed: int, device) -> list[Claim]:
    s = SETTINGS["01_squished_memory"]
    cfg, c = s["CONFIG"], Claims("01")
    attn = dict(batch=cfg["batch_attn"], steps=cfg["steps_attn"], lr=cfg["lr_attn"], schedule="constant")
    lstm = dict(batch=cfg["batch_lstm"], steps=cfg["steps_lstm"], lr=cfg["lr_lstm"],
                schedule=cfg["schedule_lstm"])

    def held_out(n, held_seed=1234):
        return tasks.associative_recall(4000, n, generator=torch.Generator().manual_seed(held_seed))

    def run(make, n, opt):
        return _fit(make, lambda g: tasks.associative_recall(opt["batch"], n, generator=g), opt["steps"],
                    opt["lr"], seed, device, schedule=opt["schedule"], test=held_out(n))

    jobs = [(models.RecallLSTM, 32, "LSTM", lstm), (lambda: models.RecallLSTM(hidden=128), 8, "h128", lstm),
            (models.RecallLSTM, 8, "LSTM", lstm), (models.RecallLSTM, 2, "LSTM", lstm),
            (lambda: models.RecallLSTM(hidden=16), 8, "h16", lstm)]
    jobs += [(models.RecallAttention, n, "attention", attn) for n in reversed(s["N_ATTN"])]
    fits = {(name, n): f for (_, n, name, _), f in zip(jobs, train.map_runs(lambda j: run(*j[:2], j[3]), jobs))}
    acc_attn = {n: fits["attention", n].accuracy for n in s["N_ATTN"]}
    acc_lstm = {n: fits["LSTM", n].accuracy for n in s["N_LSTM"]}
    c.at_least("attention recalls every N: min accuracy", min(acc_attn.values()), 0.99)
    c.at_least("LSTM at N = 2", acc_lstm[2], 0.85)
    c.below("LSTM at N = 32 (3 x chance)", acc_lstm[32], 3 / 16)
    (k, v, q), _ = held_out(32, held_seed=99)
    with torch.inference_mode():
        _, (w,) = attention.with_weights(fits["attention", 32].model, k.to(device), v.to(device), q.to(device))
    on_answer = (w.cpu() * (k == q[:, None]).float()).sum(-1).mean().item()
    c.at_least("attention N = 32: weight on the answer", on_answer, 0.8)
    acc_hid = {16: fits["h16", 8].accuracy, 64: acc_lstm[8], 128: fits["h128", 8].accuracy}
    c.above("LSTM N = 8: d_hid 64 - d_hid 16", acc_hid[64] - acc_hid[16], 0)
    c.above("LSTM N = 8: d_hid 128 - d_hid 64", acc_hid[128] - acc_hid[64], 0)
    c.at_least("LSTM N = 8: d_hid 128 - d_hid 16", acc_hid[128] - acc_hid[16], 0.2)
    lstm_8 = fits["LSTM", 8].model
    train.train(lstm_8, lambda g: tasks.associative_recall(64, 8, generator=g), steps=1000, lr=cfg["lr_lstm"],
                seed=seed + 1, progress=False)
    acc_twice = train.accuracy(lstm_8, held_out(8))
    c.at_least("LSTM N = 8: 2000 steps - 1000 steps", acc_twice - acc_lstm[8], 0.1)
    c.at_least("N = 8: attention - LSTM after 2000 steps", acc_attn[8] - acc_twice, 0.2)
    c.at_least("N = 8: attention - LSTM of d_hid 128", acc_attn[8] - acc_hid[128], 0.2)
    return c.rows


# ---------------------------------------------------------------- chapter 2: linear vs softmax reads
class LastWindow(nn.Module):
    """Chapter 2's control: a softmax read over the last ``window`` pair tokens only."""

    def __init__(self, window, **kwargs):
        super().__init__()
        self.window = window
        self.read = models.RecallAttention(kind="softmax", **kwargs)

    def forward(self, keys, values, query):
        return self.read(keys[:, -self.window:], values[:, -self.window:], query)


def ch02(seed: int, device) -> list[Claim]:
    s = SETTINGS["02_keep_every_state"]
    cfg, c, window = s["CONFIG"], Claims("02"), s["WINDOW"]

    def run(make, n):
        test = tasks.associative_recall(4000, n, generator=torch.Generator().manual_seed(1234))
        return _fit(make, lambda g: tasks.associative_recall(cfg["batch"], n, generator=g), cfg["steps"],
                    cfg["lr"], seed, device, test=test).accuracy

    def read(kind):
        return lambda: models.RecallAttention(d_model=cfg["d_model"], d_head=cfg["d_head"], kind=kind)

    jobs = [(read(kind), n) for kind in ("linear", "softmax") for n in s["N_PAIRS"]]
    jobs += [(lambda: models.RecallAttention(d_model=64, d_head=64, kind="linear"), 64),
             (lambda: LastWindow(window, d_model=32, d_head=16), 64)]
    accs = train.map_runs(lambda j: run(*j), jobs)
    lin, soft = dict(zip(s["N_PAIRS"], accs[:3])), dict(zip(s["N_PAIRS"], accs[3:6]))
    acc_wide, acc_win = accs[6:]
    c.at_least("softmax read, every N: min accuracy", min(soft.values()), 0.99)
    c.at_most("linear read, N = 64", lin[64], 0.5)
    c.at_least("linear read, N = 4", lin[4], 0.9)
    c.above("linear read: N = 4 - N = 16", lin[4] - lin[16], 0)
    c.above("linear read: N = 16 - N = 64", lin[16] - lin[64], 0)
    c.at_least("linear d_k = 64, N = 64", acc_wide, 0.8)
    c.at_least("N = 64: linear d_k = 64 - linear d_k = 16", acc_wide - lin[64], 0.4)
    expected = window / 64 + (1 - window / 64) / 16
    c.at_most("last-16 window: |accuracy - expected|", abs(acc_win - expected), 0.06)
    c.at_least("N = 64: softmax all - last-16 window", soft[64] - acc_win, 0.5)
    return c.rows


# ---------------------------------------------------------------- chapter 4: static vs content mixers
def ch04(seed: int, device) -> list[Claim]:
    cfg, c = SETTINGS["04_dynamic_weights"]["CONFIG"], Claims("04")
    mixers = {"static": lambda: models.StaticMixer(), "content": lambda: models.ContentMixer(),
              "nopos": lambda: models.ContentMixer(positions=False)}
    runs = [("fixed", "static"), ("fixed", "content"), ("salient", "static"), ("salient", "content"),
            ("pointer", "static"), ("pointer", "content"), ("pointer", "nopos"), ("fixed", "nopos"),
            ("salient", "nopos")]

    def run(task_name, mixer_name):
        task = tasks.ROUTING_TASKS[task_name]
        test = task(4000, generator=torch.Generator().manual_seed(1234))
        return _fit(mixers[mixer_name], lambda g: task(cfg["batch"], generator=g), cfg["steps"], cfg["lr"],
                    seed, device, test=test).accuracy

    acc = dict(zip(runs, train.map_runs(lambda r: run(*r), runs)))
    (tokens, _), target = tasks.pointer(20000, generator=torch.Generator().manual_seed(6))
    majority = (F.one_hot(tokens, 16).sum(1).argmax(-1) == target).float().mean().item()
    c.at_least("fixed task, static and content: min", min(acc["fixed", "static"], acc["fixed", "content"]), 0.99)
    c.at_least("salient task, static and content: min",
               min(acc["salient", "static"], acc["salient", "content"]), 0.99)
    c.at_least("pointer task, content", acc["pointer", "content"], 0.99)
    c.at_most("pointer task, static - majority", acc["pointer", "static"] - majority, 0.03)
    c.at_most("pointer: |no positions - static|", abs(acc["pointer", "nopos"] - acc["pointer", "static"]), 0.05)
    c.at_most("fixed task, no positions: |accuracy - majority|", abs(acc["fixed", "nopos"] - majority), 0.05)
    c.at_least("salient task, no positions - majority", acc["salient", "nopos"] - majority, 0.4)
    return c.rows


# ---------------------------------------------------------------- chapter 5: score functions on triads
COMMIT_ACC, HEDGE_ACC = 17 / 24, 9 / 16  # chapter 5's closed forms (asserted there)


def ch05(seed: int, device) -> list[Claim]:
    from beforeqkv.models import scores
    cfg, c = SETTINGS["05_queries_keys"]["CONFIG"], Claims("05")
    test = tasks.triads(4000, generator=torch.Generator().manual_seed(1234))
    (t_items, _), _ = test
    succ_id = tasks.triad_successor(t_items)
    succ = (succ_id[:, :, None] == t_items[:, None, :]).float()  # (N, T, T)
    pred = succ.transpose(1, 2)

    def run(name):
        fit = _fit(lambda: models.TriadModel(name, d_model=32), lambda g: tasks.triads(cfg["batch"], generator=g),
                   cfg["steps"], cfg["lr"], seed, device, test=test)
        with torch.no_grad():
            _, (a,) = attention.with_weights(fit.model, *(x.to(device) for x in test[0]))
        a = a.cpu()
        return fit.model.cpu(), dict(acc=fit.accuracy, self=scores.self_weight(a),
                                     succ=(a * succ).sum(-1).mean().item(), pred=(a * pred).sum(-1).mean().item())

    variants = list(scores.SCORES)
    out = dict(zip(variants, train.map_runs(run, variants)))
    trained, res = {n: m for n, (m, _) in out.items()}, {n: r for n, (_, r) in out.items()}
    sym_max = max(res[n]["acc"] for n in variants if trained[n].score.symmetric)
    c.at_most("best symmetric score - commit accuracy", sym_max - COMMIT_ACC, -0.05)
    for n in ["full bilinear", "QK rank 4", "QK rank 2"]:
        c.at_least(f"{n}: accuracy", res[n]["acc"], 0.99)
    raw, shared = res["raw dot"], res["shared projection"]
    c.at_least("raw dot: weight on self", raw["self"], 0.9)
    c.at_most("raw dot: accuracy", raw["acc"], 0.2)
    c.at_least("shared projection: weight on self", shared["self"], 1 / 6 + 0.05)
    c.at_most("shared projection: self - raw dot's self", shared["self"] - raw["self"], -0.3)
    c.at_most("shared projection: accuracy - hedge", shared["acc"] - HEDGE_ACC, -0.05)
    c.at_most("symmetric bilinear: weight on self", res["symmetric bilinear"]["self"], 0.1)
    for n in ["symmetric bilinear", "cosine"]:
        c.at_most(f"{n}: |successor - predecessor weight|", abs(res[n]["succ"] - res[n]["pred"]), 0.05)
        c.at_most(f"{n}: |accuracy - hedge|", abs(res[n]["acc"] - HEDGE_ACC), 0.05)
    c.below("cosine: temperature", trained["cosine"].score.temperature.item(), 0)
    c.at_least("full bilinear: weight on the successor", res["full bilinear"]["succ"], 0.85)
    c.at_most("QK rank 1: accuracy", res["QK rank 1"]["acc"], 0.75)
    x = torch.randn(6, 32, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        s_shared = trained["shared projection"].score(x)
    a_shared = torch.softmax(s_shared, dim=-1)
    c.at_most("shared projection: max |S - S^T|", (s_shared - s_shared.T).abs().max().item(), 1e-5)
    c.at_least("shared projection: max |a - a^T|", (a_shared - a_shared.T).abs().max().item(), 0.05)
    rank_2 = torch.linalg.matrix_rank(trained["QK rank 2"].score.matrix().detach()).item()
    c.equal("QK rank 2: rank of the trained W_Q^T W_K", rank_2, 2)
    return c.rows


# ---------------------------------------------------------------- chapter 6: heads on the ring
def ch06(seed: int, device) -> list[Claim]:
    from beforeqkv.measure import probes
    s = SETTINGS["06_values_heads"]
    cfg, c = s["CONFIG"], Claims("06")
    held_out = tasks.ring_routing(4000, generator=torch.Generator().manual_seed(1))

    def run(job):
        n_heads, d_attn = job
        fit = _fit(lambda: models.RingHeads(n_heads=n_heads, d_attn=d_attn),
                   lambda g: tasks.ring_routing(cfg["batch"], generator=g), cfg["steps"], cfg["lr"], seed, device)
        model = fit.model
        return (probes.ring_accuracy(model, held_out), sum(p.numel() for p in model.parameters()),
                probes.routing_profile(model, held_out))

    jobs = [(h, cfg["d_attn"]) for h in s["HEADS"]] + [(1, 32), (16, cfg["d_attn"])]
    out = dict(zip(jobs, train.map_runs(run, jobs)))
    acc = {h: out[h, cfg["d_attn"]][0] for h in s["HEADS"] + [16]}
    n_params = {h: out[h, cfg["d_attn"]][1] for h in s["HEADS"]}
    acc_wide, n_wide, _ = out[1, 32]
    one = acc[1]
    won, lost = ("predecessor", "successor") if one["predecessor"] > one["successor"] else ("successor",
                                                                                             "predecessor")
    c.equal("same parameter count for H = 1, 2, 4", len(set(n_params.values())), 1)
    c.at_most("H = 1: both neighbours", one["both"], 0.5)
    c.at_least("H = 1: the neighbour it gets", one[won], 0.9)
    c.at_most("H = 1: the other neighbour", one[lost], 0.4)
    c.at_least("H = 2 and 4: both neighbours, min", min(acc[2]["both"], acc[4]["both"]), 0.99)
    c.above("wide head: more parameters than H = 1", n_wide - n_params[1], 0)
    c.at_most("wide head (d_head = 32): both neighbours", acc_wide["both"], 0.5)
    p1 = out[1, cfg["d_attn"]][2][0]
    w_won, w_lost = (p1[0], p1[1]) if won == "successor" else (p1[1], p1[0])
    c.at_least("H = 1: weight on both neighbours", (p1[0] + p1[1]).item(), 0.8)
    c.above("H = 1: weight on the neighbour it gets - the other", (w_won - w_lost).item(), 0)
    for h in (2, 4):
        prof = out[h, cfg["d_attn"]][2]
        c.at_least(f"H = {h}: min(best successor head, best predecessor head)",
                   min(prof[:, 0].max(), prof[:, 1].max()).item(), 0.7)
    prof2 = out[2, cfg["d_attn"]][2]
    c.equal("H = 2: one head per neighbour", int(prof2[:, 0].argmax() != prof2[:, 1].argmax()), 1)
    c.at_least("H = 16 - H = 1 (both neighbours)", acc[16]["both"] - acc[1]["both"], 0.2)
    c.at_least("H = 2 - H = 16 (both neighbours)", acc[2]["both"] - acc[16]["both"], 0.1)
    c.at_least("H = 16: both neighbours", acc[16]["both"], 0.3)
    c.at_most("H = 16: both neighbours", acc[16]["both"], 0.95)
    return c.rows


# ---------------------------------------------------------------- chapter 7: the 1/sqrt(d) scale
def ch07(seed: int, device) -> list[Claim]:
    s = SETTINGS["07_scaling"]
    cfg, c = s["CONFIG"], Claims("07")
    held_out = tasks.associative_recall(4000, cfg["n_pairs"], generator=torch.Generator().manual_seed(1234))

    def make_model(d_head, scaled):
        beforeqkv.seed_everything(seed)  # the chapter's make_model seeds with 0
        return models.RecallAttention(d_head=d_head, scaled=scaled, init_std=cfg["init_std"]).to(device)

    def batches(g):
        return tasks.associative_recall(cfg["batch"], cfg["n_pairs"], generator=g)

    (k, v, q), target = tasks.associative_recall(512, cfg["n_pairs"], generator=torch.Generator().manual_seed(5))
    sat, grad = {}, {}
    for scaled in (True, False):
        model = make_model(1024, scaled)
        logits, (w,) = attention.with_weights(model, k.to(device), v.to(device), q.to(device))
        train.cross_entropy(logits, target.to(device)).backward()
        sat[scaled] = (w.max(-1).values > 0.99).float().mean().item()
        grad[scaled] = model.W_Q.weight.grad.norm().item()
    c.at_most("at init, d_head = 1024 scaled: saturated rows", sat[True], 0.05)
    c.at_least("at init, d_head = 1024 unscaled: saturated rows", sat[False], 0.5)
    c.above("at init: gradient on W_Q, unscaled - scaled", grad[False] - grad[True], 0)

    def run(job):
        d_head, scaled = job
        return _fit(lambda: make_model(d_head, scaled), batches, cfg["steps"], cfg["lr"], seed, device,
                    optimizer=cfg["optimizer"], momentum=cfg["momentum"], grad_clip=cfg["grad_clip"],
                    test=held_out).accuracy

    jobs = [(d, sc) for d in s["D_HEADS"] for sc in (True, False)]
    acc = dict(zip(jobs, train.map_runs(run, jobs)))
    c.at_least("scaled, every d_head: min accuracy", min(acc[d, True] for d in s["D_HEADS"]), 0.95)
    c.at_most("unscaled d_head = 1024: |accuracy - chance|", abs(acc[1024, False] - 1 / 16), 0.03)
    c.at_least("unscaled: d_head 16 - d_head 256", acc[16, False] - acc[256, False], 0.3)
    c.at_least("unscaled: d_head 256 - d_head 1024", acc[256, False] - acc[1024, False], 0)
    model = make_model(256, False)
    train.train(model, batches, steps=cfg["steps"], optimizer="adam", lr=3e-3, seed=seed, progress=False)
    acc_adam = train.accuracy(model, held_out)
    c.at_least("d_head = 256 unscaled: Adam - SGD", acc_adam - acc[256, False], 0.2)
    c.at_least("d_head = 256: scaled SGD - unscaled Adam", acc[256, True] - acc_adam, 0.2)
    return c.rows


# ---------------------------------------------------------------- chapter 8: the Transformer
def ch08(seed: int, device) -> list[Claim]:
    s, c = SETTINGS["08_transformer"], Claims("08")
    held_out = tasks.random_tokens(2000, generator=torch.Generator().manual_seed(1))

    def token_model(causal):
        beforeqkv.seed_everything(seed)  # the chapter seeds with 0
        model = models.GPT(models.TransformerConfig(causal=causal, **s["MASK_CFG"])).to(device)
        train.train(model, lambda g: tasks.random_tokens(64, generator=g), seed=seed, progress=False,
                    **s["MASK_TRAIN"])
        return model

    @torch.inference_mode()
    def prefix_loss(model):
        tokens, target = (t.to(device) for t in held_out)
        return torch.stack([F.cross_entropy(model(tokens[:, :t + 1])[:, -1], target[:, t])
                            for t in range(tokens.shape[1])]).mean().item()

    peeker, masked = token_model(False), token_model(True)
    peek_parallel, peek_prefix = train.evaluate_loss(peeker, held_out), prefix_loss(peeker)
    mask_parallel, mask_prefix = train.evaluate_loss(masked, held_out), prefix_loss(masked)
    with torch.no_grad():
        _, weights = attention.with_weights(peeker, held_out[0][:500].to(device))
    on_next = weights[0].diagonal(offset=1, dim1=-2, dim2=-1).mean(dim=(0, 2))  # (H,)
    ln16 = math.log(16)
    c.at_least("unmasked: weight on position t+1, best head", on_next.max().item(), 0.5)
    c.at_most("masked: |parallel loss - ln 16|", abs(mask_parallel - ln16), 0.05)
    c.at_most("masked: |prefix loss - ln 16|", abs(mask_prefix - ln16), 0.05)
    c.at_most("masked: |parallel - prefix|", abs(mask_parallel - mask_prefix), 1e-4)
    c.at_most("unmasked: parallel loss", peek_parallel, 1.0)
    c.above("unmasked: prefix-only loss", peek_prefix, 3.0)
    x = held_out[0][:200].to(device)
    with torch.no_grad():
        cache = attention.KVCache()
        steps = torch.cat([peeker(x[:, t:t + 1], kv_cache=cache) for t in range(x.shape[1])], dim=1)
        gap_peek = (peeker(x) - steps).abs().max().item()
    c.above("unmasked: parallel vs cached logits", gap_peek, 0.1)
    with torch.inference_mode():
        tok, tgt = (t[:500].to(device) for t in held_out)
        probs = torch.stack([peeker(tok[:, :t + 1])[:, -1].softmax(-1) for t in range(tok.shape[1])], 1)
    c.at_least("unmasked on prefixes: mean confidence", probs.max(-1).values.mean().item(), 0.5)
    c.at_most("unmasked on prefixes: |p(true) - 1/16|",
              abs(probs.gather(-1, tgt.unsqueeze(-1)).mean().item() - 1 / 16), 0.03)

    recall_test = tasks.associative_recall(4000, 8, generator=torch.Generator().manual_seed(1))

    def stack(options):
        return _fit(lambda: models.RecallTransformer(**s["RES_CFG"], **options),
                    lambda g: tasks.associative_recall(64, 8, generator=g), seed=seed, device=device,
                    test=recall_test, **s["RES_TRAIN"]).accuracy

    acc_res, acc_nores, acc_nonorm = train.map_runs(
        stack, [dict(residual=True), dict(residual=False), dict(residual=True, norm="none")])
    c.at_least("6 blocks with residual: recall", acc_res, 0.95)
    c.at_most("6 blocks without residual: recall", acc_nores, 0.1)
    c.at_least("residual, no LayerNorm: recall", acc_nonorm, 0.8)
    c.at_most("residual: no LayerNorm - LayerNorm", acc_nonorm - acc_res, 0)
    c.rows += _ch08_language_model(seed, device, s)
    return c.rows


def _ch08_language_model(seed, device, s) -> list[Claim]:
    from beforeqkv import corpus
    c = Claims("08")
    text = corpus.load_text()
    vocab = corpus.CharVocab.from_text(text)
    train_ids, val_ids = corpus.train_val_split(vocab.encode(text), val_fraction=0.1)
    V = len(vocab)
    counts = torch.bincount(train_ids[:-1] * V + train_ids[1:], minlength=V * V).view(V, V).double()
    log_p = ((counts + 1) / (counts + 1).sum(dim=1, keepdim=True)).log()
    bigram_loss = -log_p[val_ids[:-1], val_ids[1:]].mean().item()
    cfg = models.TransformerConfig(d_vocab=V, n_ctx=64, d_model=64, n_heads=4, n_layers=2, init_std=0.05)
    beforeqkv.seed_everything(seed)
    lm = models.GPT(cfg).to(device)
    with beforeqkv.cpu_threads():
        train.train(lm, lambda g: corpus.char_lm_batch(train_ids, 32, cfg.n_ctx, generator=g), seed=seed,
                    progress=False, **s["LM_TRAIN"])
    val = corpus.char_lm_batch(val_ids, 500, cfg.n_ctx, generator=torch.Generator().manual_seed(1))
    val_loss = train.evaluate_loss(lm, val)
    c.at_least("char GPT: bigram - validation loss", bigram_loss - val_loss, 0.15)
    c.below("char GPT: validation loss", val_loss, 2.0)
    words = set(re.findall(r"[a-z]+", text.lower()))
    prompt = "Ham.\n"

    def sample(temperature, n):
        out = lm.generate(vocab.encode(prompt).to(device), n, temperature=temperature,
                          generator=torch.Generator().manual_seed(0))
        return vocab.decode(out.cpu())

    def found(t):
        w = re.findall(r"[a-z]+", t[len(prompt):].lower())
        return sum(x in words for x in w) / max(len(w), 1), len(set(w)) / max(len(w), 1)

    text_300 = sample(0.75, 300)
    lines = text_300.split("\n")
    c.at_least("sample at 0.75: real words", found(text_300)[0], 0.5)
    c.at_least("sample at 0.75: lines", len(lines), 4)
    c.at_most("sample at 0.75: longest line", max(len(line) for line in lines), 100)
    (real_lo, distinct_lo), (real_hi, distinct_hi) = found(sample(0.25, 160)), found(sample(1.5, 160))
    c.at_least("real words: temperature 0.25 - 1.5", real_lo - real_hi, 0.2)
    c.at_least("distinct words: temperature 1.5 - 0.25", distinct_hi - distinct_lo, 0.2)
    return c.rows


# ---------------------------------------------------------------- chapter 9: the MLP as a memory
def ch09(seed: int, device) -> list[Claim]:
    s = SETTINGS["09_mlp_memory"]
    cfg, c = s["CONFIG"], Claims("09")
    runs = ([("relu", 16, r, 32) for r in (2, 8, 16, 32, 64, 256)] + [("relu", 64, r, 32) for r in (16, 32)]
            + [("softmax", 16, r, 32) for r in (16, 32)] + [("relu", 16, r, 64) for r in (32, 64)])

    def store(job):
        normalise, m, ratio, d_model = job
        facts = tasks.random_facts(m * ratio, d_model=d_model,
                                   generator=torch.Generator().manual_seed(1000 * ratio + m))
        fit = _fit(lambda: models.MLPMemory(d_model=d_model, d_mlp=m, d_out=16, normalise=normalise),
                   lambda g: facts, cfg["steps"], cfg["lr"], seed, device, optimizer=cfg["optimizer"],
                   log_every=50, test=facts)
        return fit.model.cpu(), facts, fit.accuracy

    out = dict(zip(runs, train.map_runs(store, runs)))
    recall = {job: out[job][2] for job in runs}
    relu16 = {r: recall["relu", 16, r, 32] for r in (2, 8, 16, 32, 64, 256)}
    facts16 = tasks.random_facts(16 * s["M_HAND"], generator=torch.Generator().manual_seed(7))
    acc_hand16 = train.accuracy(models.handwritten_memory(*facts16, d_mlp=s["M_HAND"]), facts16)
    c.at_least("m = 16: recall at N/m = 2 and 8, min", min(relu16[2], relu16[8]), 0.99)
    c.at_least("m = 16: recall at N/m = 16", relu16[16], 0.98)
    c.at_most("m = 16: recall at N/m = 64", relu16[64], 0.5)
    c.at_most("m = 16: recall at N/m = 256", relu16[256], 0.25)
    c.above("m = 16: N/m 32 - N/m 64", relu16[32] - relu16[64], 0)
    c.above("m = 16: N/m 64 - N/m 256", relu16[64] - relu16[256], 0)
    for r in (16, 32):
        c.at_most(f"N/m = {r}: |m = 64 - m = 16|", abs(recall["relu", 64, r, 32] - relu16[r]), 0.1)
        c.at_most(f"N/m = {r}: softmax - relu", recall["softmax", 16, r, 32] - relu16[r], -0.05)
    c.above("N/m = 16: trained - by hand", relu16[16] - acc_hand16, 0.5)
    trained, (keys_2, _), _ = out["relu", 16, 2, 32]
    with torch.no_grad():
        w = trained.slot_weights(keys_2)  # (N, m)
    live = w.sum(0) > 0
    values_live = trained.W_out.weight.detach()[:, live]
    c.at_least("N/m = 2: slots active per fact", (w > 0).float().sum(-1).mean().item(), 4)
    c.at_least("N/m = 2: slots that never fire", int((w.sum(0) == 0).sum()), 1)
    c.at_least("N/m = 2: live slots, fewest positive values", int((values_live > 0).sum(0).min()), 2)
    c.at_least("N/m = 2: live slots, fewest negative values", int((values_live < 0).sum(0).min()), 2)
    c.at_least("N/m = 32: keys in R^64 - R^32", recall["relu", 16, 32, 64] - relu16[32], 0.05)
    c.at_least("N/m = 64: keys in R^64 - R^32", recall["relu", 16, 64, 64] - relu16[64], 0.15)
    return c.rows


RUNNERS = {"01": ch01, "02": ch02, "04": ch04, "05": ch05, "06": ch06, "07": ch07, "08": ch08, "09": ch09}
FIELDS = ["chapter", "claim", "seed", "device", "value", "threshold", "pass", "seconds"]


def run_claims(chapters, seeds, devices, out=None, log=print) -> list[dict]:
    """Every claim of ``chapters`` for every seed and device, as rows (written to ``out`` if given)."""
    rows = []
    for device in devices:
        for chapter in chapters:
            for seed in seeds:
                t0 = time.perf_counter()
                claims = RUNNERS[chapter](seed, torch.device(device))
                seconds = time.perf_counter() - t0
                for cl in claims:
                    rows.append(dict(chapter=cl.chapter, claim=cl.claim, seed=seed, device=device,
                                     value=f"{cl.value:.4g}", threshold=cl.threshold, passed=cl.passed,
                                     seconds=f"{seconds:.1f}"))
                failed = [cl for cl in claims if not cl.passed]
                log(f"chapter {chapter} seed {seed} {device}: {len(claims) - len(failed)}/{len(claims)} claims hold"
                    f" ({seconds:.0f} s)" + "".join(f"\n    FAILS {cl.claim}: {cl.value:.4g} (needs {cl.threshold})"
                                                    for cl in failed))
    if out is not None:
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", newline="") as f:
            writer = csv.DictWriter(f, FIELDS)
            writer.writeheader()
            for r in rows:
                writer.writerow({**{k: r[k] for k in FIELDS if k != "pass"}, "pass": r["passed"]})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chapters", nargs="+", default=list(RUNNERS), choices=list(RUNNERS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--devices", nargs="+", default=None,
                        help="default: cpu, and cuda when torch.cuda.is_available()")
    parser.add_argument("--out", default=None, help="write the rows as CSV here")
    args = parser.parse_args(argv)
    devices = args.devices or (["cpu"] + (["cuda"] if torch.cuda.is_available() else []))
    for d in devices:
        if d.startswith("cuda") and not torch.cuda.is_available():
            parser.error(f"device {d!r}: CUDA is not available here")
    beforeqkv.setup(plot_style=False, quiet=True)
    rows = run_claims(args.chapters, args.seeds, devices, args.out)
    failed = [r for r in rows if not r["passed"]]
    print(f"== {len(rows) - len(failed)}/{len(rows)} claims hold over seeds {args.seeds} on {', '.join(devices)}"
          + (f"; written to {args.out}" if args.out else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
