#!/usr/bin/env bash
# The real-style development set: labels from two blind graders and an adjudicator, then the
# scorecard of bm25, dense and hybrid on the bare library.
#   benchdata/real/score.sh BARE_LIBRARY.sqlite [mambo score options, e.g. --no-latency]
# BARE_LIBRARY holds the folder `benchdata/real/build.py SNAPSHOT OUT` built, ingested bare
# (`./mambo --db BARE_LIBRARY add --no-sidecars OUT`: the folder has no sidecars); the import checks
# it against benchdata/real/manifest.sha256.
#
# The pool (seed 42: every system's top 10, gold items and exact targets, 3 hard negatives a query)
# is rebuilt here from the current code's rankings. The answers were made outside the tool by model
# annotators working alone, each reading only its shard of `benchdata/real/grading.py relevance`
# (what a person sees of a meme: the caption on the picture, read from the snapshot at run time,
# and the team's description of the template's picture) and the grading guide. The answer files are
# keyed by query id and content SHA-256, so they load into whatever pool this code draws; a
# candidate nobody answered yet stays unjudged (`bench show` counts it, a score counts it as 0).
# Their reasons are kept outside the repository: they quote the captions.
# Writes benchdata/real/judgements/dev-set1.jsonl (+ .agreement.json) and
# benchdata/real/results/dev/report.{md,json}.
set -euo pipefail
cd "$(dirname "$0")/../.."
db="$1"
shift
j=benchdata/real/judgements
out=benchdata/real/results/dev

graders=(
    "dev-grader-a.jsonl real-grader-a"
    "dev-grader-b.jsonl real-grader-b"
    # round 2: the 253 candidates the split words, slang, evidence divider and refitted "no match"
    # rules drew (grading.py relevance --unjudged; two new blind graders)
    "dev-r2-grader-c.jsonl real-grader-c-r2"
    "dev-r2-grader-d.jsonl real-grader-d-r2"
    # round 3: the 2 candidates reading a glued query as its words drew (a blind pair, in agreement)
    "dev-r3-grader-e.jsonl real-grader-e-r3"
    "dev-r3-grader-f.jsonl real-grader-f-r3"
    # round 4: the 288 top-10 candidates (274 views) of today's rankings no earlier pool drew; shard 1
    # graded by g and h, shard 2 by i and j (each pair blind, each grader alone)
    "dev-r4-grader-g.jsonl real-grader-g-r4"
    "dev-r4-grader-h.jsonl real-grader-h-r4"
    "dev-r4-grader-i.jsonl real-grader-i-r4"
    "dev-r4-grader-j.jsonl real-grader-j-r4"
    # round 5: the 207 candidates (198 views) the looks vector's rankings drew (at full weight);
    # shard 1 graded by k and l, shard 2 by m and n
    "dev-r5-grader-k.jsonl real-grader-k-r5"
    "dev-r5-grader-l.jsonl real-grader-l-r5"
    "dev-r5-grader-m.jsonl real-grader-m-r5"
    "dev-r5-grader-n.jsonl real-grader-n-r5"
    # round 6: the 20 candidates the chosen looks weight (0.8) drew beyond round 5's pool (a blind pair)
    "dev-r6-grader-p.jsonl real-grader-p-r6"
    "dev-r6-grader-q.jsonl real-grader-q-r6"
)
adjudicators=(
    "dev-adjudicator.jsonl real-adjudicator"
    "dev-r2-adjudicator.jsonl real-adjudicator-r2"
    "dev-r4-adjudicator.jsonl real-adjudicator-r4"
    "dev-r5-adjudicator.jsonl real-adjudicator-r5"
)

m() { ./mambo --db "$db" "$@"; }
m bench import benchdata/real/dev.jsonl --recipe benchdata/real/truth.jsonl
m bench pool dev --system bm25 --system dense --system hybrid --seed 42
for entry in "${graders[@]}"; do
    read -r file who <<<"$entry"
    m bench import-judgements 1 "$j/$file" --annotator "$who" --kind model
done
said=$(m bench adjudication dev --seed 42)
echo "$said"
if [[ $said == "adjudication batch "* ]]; then
    for entry in "${adjudicators[@]}"; do
        read -r file who <<<"$entry"
        m bench import-judgements "${said#adjudication batch }" "$j/$file" --annotator "$who" --kind model --adjudicator
    done
fi
m bench show dev
m bench labels dev -o "$j/dev-set1.jsonl"
m bench freeze dev
mkdir -p "$out"
./mambo --db "$db" score --out "$out" "$@"
