"""A safety set of real captions, beyond the real-style folder: development captions of the
snapshot graded blind under mambo-safety-v1, to measure the caption signals on real wording.

The folder's own safety labels hold 11 unsafe or critical memes, too few to say how the caption
rules do on real wording. This set draws development captions the folder does not hold (SHA-256 of
the post id starting 0-7; the folder's posts left out), in two strata: `screened`, captions a broad
word screen picks (groups of people, violence, sex, slurs, death: a screen of its own, wider than
any rule, so it says nothing of the rules' precision) and `random`, a plain sample (the rate of
harm in an ordinary folder, and the harmless captions for precision). Graders see the caption and
the team's description of the template's picture, as in the folder's grading.

    python benchdata/real/safety_captions.py shards SNAPSHOT --out DIR [--screened 320 --random 240]
    python benchdata/real/safety_captions.py labels DIR/map.json --a A.tsv --b B.tsv [--adjudicator C.tsv] \
        [--split-out SPLIT.txt] -o benchdata/real/judgements/safety-captions.jsonl
    python benchdata/real/safety_captions.py measure SNAPSHOT [--labels FILE]

A grader writes one line per caption: `C-ID<TAB>SAFETY<TAB>CLAUSE<TAB>REASON`. The label file holds
post ids, templates, strata and classes, no caption text (the captions are read from the snapshot
at run time). `measure` runs the current text rules and caption-meaning model on each caption and
prints, per signal and stratum, harmless withheld and marked, and unsafe + critical caught.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]

from snapshot import clean_boxes, dev_entries, open_snapshot  # noqa: E402

SAFETY = ("safe", "sensitive", "unsafe", "critical")
HIDDEN = ("unsafe", "critical")
LABELS = HERE / "judgements" / "safety-captions.jsonl"
DESCRIPTIONS = HERE / "template-descriptions.jsonl"
TRUTH = HERE / "truth.jsonl"
SEED = "safety-captions-1"
# Who made the labels: three model annotators, each alone, each seeing only the brief, the policy,
# the grading guide and its captions (the adjudicator only the captions the two split on).
ANNOTATORS = {
    "a": "safety-captions-grader-a",
    "b": "safety-captions-grader-b",
    "adjudicator": "safety-captions-adjudicator",
}
ANNOTATOR_KIND = "model"
# The screen: words near the policy's unsafe criteria, far wider than any rule (a caption holding
# one is screened, whatever the relation between its words).
SCREEN_RE = re.compile(
    r"\b(?:kill\w*|murder\w*|shoot\w*|shot|stab\w*|die|dead|death|bomb\w*|gas|hang\w*|burn\w*|blood\w*|rape\w*|"
    r"beat\w*|punch\w*|push\w*|drown\w*|gun\w*|knife|terror\w*|hitler|nazi\w*|jews?|jewish|muslims?|islam\w*|"
    r"christians?|black|white|asians?|mexicans?|arabs?|africans?|gays?|lesbians?|trans\w*|autis\w*|retard\w*|"
    r"disabled|immigrants?|refugees?|women|girls?|kids?|children|child|boys?|uncle|sex\w*|porn\w*|nude\w*|"
    r"naked|rats?|animals?|vermin|fag\w*|nigg\w*|slut\w*|whore\w*|address|phone|number|millennials?|boomers?)\b",
    re.IGNORECASE,
)


def load_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def dev_captions(snapshot: str | None) -> list[tuple[str, str, str]]:
    """(post id, template, caption) of every development caption the folder does not hold, each
    distinct caption once."""
    snap = open_snapshot(snapshot)
    folder = {t.get("post") for t in load_jsonl(TRUTH)} | {p for t in load_jsonl(TRUTH) for p in t.get("posts", [])}
    out, seen = [], set()
    for rel in snap.list("dataset/memes"):
        if not rel.endswith(".json"):
            continue
        template = Path(rel).stem
        for pid, boxes in dev_entries(snap.read(rel) or b"[]"):
            clean = clean_boxes(boxes)
            if pid in folder or clean is None:
                continue
            text = " / ".join(clean)
            if text.upper() not in seen:
                seen.add(text.upper())
                out.append((pid, template, text))
    return out


def order_key(pid: str) -> str:
    return hashlib.sha256(f"{SEED}:{pid}".encode()).hexdigest()


def shards(args: argparse.Namespace) -> None:
    captions = sorted(dev_captions(args.snapshot), key=lambda c: order_key(c[0]))
    desc = {d["template"]: d for d in load_jsonl(DESCRIPTIONS)}
    screened = [c for c in captions if SCREEN_RE.search(c[2])][: args.screened]
    taken = {c[0] for c in screened}
    plain = [c for c in captions if c[0] not in taken][: args.random]
    chosen = [(c, "screened") for c in screened] + [(c, "random") for c in plain]
    chosen.sort(key=lambda x: order_key("view:" + x[0][0]))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lines, mapping = [], {}
    for n, ((pid, template, text), stratum) in enumerate(chosen, 1):
        d = desc.get(template, {})
        view = f'caption: "{text}" | picture: {d.get("description", "(not described)")} | template: ' + d.get(
            "name", template.replace("-", " ")
        )
        vid = f"c{n:04d}"
        mapping[vid] = {"post": pid, "template": template, "stratum": stratum}
        lines.append(f"{vid}\t{view}")
    (out / "captions.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out / "map.json").write_text(json.dumps(mapping), encoding="utf-8")
    print(f"{len(captions)} development captions; {len(screened)} screened + {len(plain)} random -> {out}")


def read_answers(path: str, ids: set[str]) -> dict[str, tuple[str, str]]:
    got = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = [c.strip() for c in line.split("\t")]
        if cells[0] not in ids or len(cells) < 2 or cells[1] not in SAFETY:
            sys.exit(f"{path}:{n}: expected C-ID<TAB>SAFETY<TAB>CLAUSE<TAB>REASON with a known id and class")
        got[cells[0]] = (cells[1], cells[2] if len(cells) > 2 else "-")
    return got


def labels(args: argparse.Namespace) -> None:
    mapping = json.loads(Path(args.map).read_text(encoding="utf-8"))
    a, b = read_answers(args.a, set(mapping)), read_answers(args.b, set(mapping))
    c = read_answers(args.adjudicator, set(mapping)) if args.adjudicator else {}
    rows, split = [], []
    for vid, m in mapping.items():
        if vid not in a or vid not in b:
            continue
        if a[vid][0] == b[vid][0]:
            cls, clause, status = a[vid][0], a[vid][1], "agreed"
        elif vid in c:
            cls, clause, status = c[vid][0], c[vid][1], "adjudicated"
        else:
            split.append(vid)
            continue
        rows.append(
            m | {"safety": cls, "clause": clause, "status": status, "grader_a": a[vid][0], "grader_b": b[vid][0]}
        )
    rows.sort(key=lambda r: (r["template"], r["post"]))
    Path(args.o).write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), encoding="utf-8")
    if args.split_out:
        Path(args.split_out).write_text("".join(f"{v}\n" for v in split), encoding="utf-8")
    from mambomeme.lab.evaluation import cohen_kappa

    both = [v for v in mapping if v in a and v in b]
    agree = sum(a[v][0] == b[v][0] for v in both)
    kappa = cohen_kappa([a[v][0] for v in both], [b[v][0] for v in both])
    said = f"{agree} agreed, {len(rows) - agree} adjudicated; kappa {kappa:.3f}"
    print(f"{len(rows)} labels ({said}), {len(split)} split left")


def measure(args: argparse.Namespace) -> None:
    from mambomeme.lab.product import RULES_VERSION, detect_safety, get_embedder, meaning_model

    rows = load_jsonl(Path(args.labels))
    text = {pid: t for pid, _, t in dev_captions(args.snapshot)}
    captions = [text[r["post"]].replace(" / ", "\n") for r in rows]
    model = meaning_model()
    if args.vectors:  # the captions' vectors, as benchdata/experiments/safety_real_meaning.py keeps them
        import numpy as np

        vecs = np.load(args.vectors)["v"]
    else:
        vecs = get_embedder().encode([" ".join(c.split()) for c in captions])
    meanings = model.judge(vecs)
    signals = {
        "text rules": [(d.safety if (d := detect_safety(c)) else "safe") for c in captions],
        "caption meaning": [m.safety for m in meanings],
    }
    order = ("safe", "sensitive", "unsafe", "critical")
    signals["combined"] = [max(a, b, key=order.index) for a, b in zip(*signals.values(), strict=True)]
    print(
        f"rules {RULES_VERSION}, meaning {model.signal} (bars {model.unsafe_bar}/{model.sensitive_bar}), {args.labels}"
    )
    head = ("signal", "stratum", "captions", "unsafe+critical", "caught (withheld or marked)", "withheld")
    print("| " + " | ".join(head + ("harmless withheld", "harmless marked")) + " |")
    print("|---|---|---|---|---|---|---|---|")
    for name, got in signals.items():
        table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        for r, g in zip(rows, got, strict=True):
            for stratum in (r["stratum"], "all"):
                t = table[stratum]
                if r["safety"] in HIDDEN:
                    t["harmful"] += 1
                    t["caught"] += g != "safe"
                    t["withheld"] += g in HIDDEN
                else:
                    t["harmless"] += 1
                    t["harmless withheld"] += g in HIDDEN
                    t["harmless marked"] += g == "sensitive"
        for stratum in ("screened", "random", "all"):
            t = table[stratum]
            print(
                f"| {name} | {stratum} | {t['harmful'] + t['harmless']} | {t['harmful']} | {t['caught']} | "
                f"{t['withheld']} | {t['harmless withheld']} of {t['harmless']} | {t['harmless marked']} |"
            )
    if args.misses:
        for r, g in zip(rows, signals["combined"], strict=True):
            if (r["safety"] in HIDDEN) != (g in HIDDEN) or (r["safety"] in HIDDEN and g == "safe"):
                print(f"{r['safety']}\t{g}\t{r['clause']}\t{r['post']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("shards")
    s.add_argument("snapshot")
    s.add_argument("--out", required=True)
    s.add_argument("--screened", type=int, default=320)
    s.add_argument("--random", type=int, default=240)
    s = sub.add_parser("labels")
    s.add_argument("map")
    s.add_argument("--a", required=True)
    s.add_argument("--b", required=True)
    s.add_argument("--adjudicator")
    s.add_argument("--split-out")
    s.add_argument("-o", required=True)
    s = sub.add_parser("measure")
    s.add_argument("snapshot")
    s.add_argument("--labels", default=str(LABELS))
    s.add_argument("--misses", action="store_true", help="list post ids the signals withhold or miss")
    s.add_argument("--vectors", help="an .npz of the captions' vectors (key v, in label order) instead of encoding")
    args = ap.parse_args()
    {"shards": shards, "labels": labels, "measure": measure}[args.cmd](args)


if __name__ == "__main__":
    main()
