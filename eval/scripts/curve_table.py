#!/usr/bin/env python3
"""Tables of learning curves (eval/scripts/learning_curve.sh) as Markdown.

Usage: eval/scripts/curve_table.py RUN_DIR...

Runs named NAME-sN are seeds of one model NAME. For each model: per point (tokens seen) the
held-out perplexity, the WSD F1 over all test sets (top layer, the four settings; the best layer
in the paper's setting) and the pseudo-word purity; mean and sample standard deviation where
several seeds reached a point. Then, per model, a line fitted to the paper's setting (all senses +
WordNet's first sense, top layer) against log10(tokens): where it crosses 30% and 45%, and what it
predicts at the paper's budget.
"""
import json
import math
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

SETTINGS = [("nearest-all-wn1", "all + WN1 (paper)"), ("nearest-all", "all"),
            ("nearest-lemma-wn1", "lemma's + WN1"), ("nearest-lemma", "lemma's")]
PAPER_TOKENS = 1_000_000 * 256 * 16  # the paper's ELMo: 1M steps of 256 x 16 tokens


def lines(path):
    if not path.exists():
        return []
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]


def point_values(run):
    """{step: {"tokens": .., "ppl": .., "f1": {(layer, setting): f1}, "purity": {pairs: (fwd, bwd)}}}"""
    points = defaultdict(lambda: {"f1": {}, "purity": {}})
    tokens_at = {}
    for j in lines(run / "metrics.jsonl"):
        if "tokens" in j:
            tokens_at[j["step"]] = j["tokens"]
        if "heldout_perplexity" in j:
            points[j["step"]]["ppl"] = j["heldout_perplexity"]
    for j in lines(run / "wsd.jsonl"):
        if j["test"] == "ALL":
            p = points[j["step"]]
            p["f1"][(j["layer"], j["setting"])] = 100 * j["f1"]
            p["tokens"] = j.get("tokens", tokens_at.get(j["step"]))
    for j in lines(run / "purity.jsonl"):
        points[j["step"]]["purity"][j["pairs"]] = (j["forward"]["purity"], j["backward"]["purity"])
    return {s: p for s, p in points.items() if p["f1"]}  # the evaluated points


def top_layer(points):
    return max({l for p in points.values() for (l, _) in p["f1"] if l.isdigit()}, key=int)


def stat(xs, digits=1):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    if len(xs) == 1:
        return f"{xs[0]:.{digits}f}"
    return f"{statistics.mean(xs):.{digits}f} ± {statistics.stdev(xs):.{digits}f}"


def tokens_label(t):
    return f"{t / 1e6:.2f}M"


def fit_log_line(xy):
    """Least squares y = a + b log10(x); returns (a, b, r2)."""
    xs = [math.log10(x) for x, _ in xy]
    ys = [y for _, y in xy]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    a = my - b * mx
    ss = sum((y - my) ** 2 for y in ys)
    r2 = 1 - sum((y - a - b * x) ** 2 for x, y in zip(xs, ys)) / ss if ss > 0 else 1.0
    return a, b, r2


def main(dirs):
    models = defaultdict(dict)  # name -> {seed: points}
    for d in map(Path, dirs):
        m = re.fullmatch(r"(.*)-s(\d+)", d.name)
        name, seed = (m[1], int(m[2])) if m else (d.name, 1)
        models[name][seed] = point_values(d)
    paper = {}
    for name, seeds in models.items():
        top = top_layer(next(iter(seeds.values())))
        steps = sorted({s for pts in seeds.values() for s in pts})
        pairs = sorted({k for pts in seeds.values() for p in pts.values() for k in p["purity"]})
        head = ["tokens", "seeds", "held-out ppl"] + [f"top: {t}" for _, t in SETTINGS] + ["best layer (paper setting)"]
        head += [f"purity {p.replace('.txt', '')} fwd / bwd" for p in pairs]
        print(f"\n**{name}** (WSD F1 %, Senseval-2 + SemEval-2007; top layer = {top})\n")
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for step in steps:
            here = [pts[step] for pts in seeds.values() if step in pts]
            row = [tokens_label(here[0]["tokens"]), str(len(here)), stat([p.get("ppl") for p in here], 0)]
            row += [stat([p["f1"].get((top, s)) for p in here]) for s, _ in SETTINGS]
            # The best layer by the seeds' mean in the paper's setting.
            layers = sorted({l for p in here for (l, s) in p["f1"] if s == "nearest-all-wn1"})
            best = max(layers, key=lambda l: statistics.mean([p["f1"][(l, "nearest-all-wn1")] for p in here]))
            row.append(f"layer {best}: {stat([p['f1'][(best, 'nearest-all-wn1')] for p in here])}")
            for k in pairs:
                fw = [p["purity"][k][0] for p in here if k in p["purity"]]
                bw = [p["purity"][k][1] for p in here if k in p["purity"]]
                row.append(f"{stat(fw, 3)} / {stat(bw, 3)}")
            print("| " + " | ".join(row) + " |")
        paper[name] = [(pts[s]["tokens"], pts[s]["f1"][(top, "nearest-all-wn1")]) for pts in seeds.values()
                       for s in sorted(pts)]
    # The sense model against the plain one at every point both reached (seed means).
    if "elmo" in models and "saelmo" in models:
        print("\n**SaELMo - ELMo** (top layer, seed means; F1 points, held-out perplexity as a ratio)\n")
        print("| tokens | seeds (ELMo / SaELMo) | all + WN1 (paper) | lemma's + WN1 | held-out ppl ratio |")
        print("|---|---|---|---|---|")
        def means(name, step, key):
            vals = [pts[step][key] if key == "ppl" else pts[step]["f1"].get((top_layer(pts), key))
                    for pts in models[name].values() if step in pts and (key != "ppl" or "ppl" in pts[step])]
            return statistics.mean(vals) if vals else None, len(vals)
        common = sorted(set.intersection(*[{s for pts in models[m].values() for s in pts} for m in ("elmo", "saelmo")]))
        for step in common:
            (e_paper, ne), (s_paper, ns) = means("elmo", step, "nearest-all-wn1"), means("saelmo", step, "nearest-all-wn1")
            (e_lem, _), (s_lem, _) = means("elmo", step, "nearest-lemma-wn1"), means("saelmo", step, "nearest-lemma-wn1")
            (e_ppl, _), (s_ppl, _) = means("elmo", step, "ppl"), means("saelmo", step, "ppl")
            tokens = next(pts[step]["tokens"] for pts in models["elmo"].values() if step in pts)
            ratio = f"{s_ppl / e_ppl:.2f}" if e_ppl and s_ppl else "-"
            print(f"| {tokens_label(tokens)} | {ne} / {ns} | {s_paper - e_paper:+.1f} | {s_lem - e_lem:+.1f} | {ratio} |")
    print("\n**The paper's setting against log10(tokens)** (top layer; every seed's points; a line fitted "
          "over a decade or two of small budgets, so a lead, not a forecast)\n")
    print("| model | points | F1 = a + b log10(tokens) | R² | 30% at | 45% at | at the paper's 4.1B tokens |")
    print("|---|---|---|---|---|---|---|")
    for name, xy in paper.items():
        if len({x for x, _ in xy}) < 3:
            print(f"| {name} | {len(xy)} | too few budgets to fit | | | | |")
            continue
        a, b, r2 = fit_log_line(xy)
        cross = lambda y: "never (falls)" if b <= 0 else tokens_label(10 ** ((y - a) / b))
        print(f"| {name} | {len(xy)} | {a:.1f} + {b:.2f} log10 | {r2:.2f} | {cross(30)} | {cross(45)} | "
              f"{a + b * math.log10(PAPER_TOKENS):.1f} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
