#!/usr/bin/env bash
# Benchmark v1, development partition 2 (dev v2): labels from two blind graders and an adjudicator,
# then the scorecard of both conditions, annotated and bare.
#   benchdata/v1/score.sh LIBRARY.sqlite BARE_LIBRARY.sqlite [mambo score options, e.g. --no-latency]
# LIBRARY holds the rendered corpus (`benchdata/render.py ... --out DIR`, then `./mambo --db LIBRARY
# add DIR`); the import checks it against benchdata/v1/manifest.sha256. BARE_LIBRARY holds the same
# folder ingested without its sidecars (`./mambo --db BARE_LIBRARY add --no-sidecars DIR`).
#
# The pool (seed 42: every system's top 10 on both libraries, gold items and exact targets, hard
# negatives) is rebuilt here from the current code's rankings. The answers were made outside the tool
# by model annotators working alone (graders reading only benchdata/grading.py's shards and
# the grading guide) on blinded batches of earlier pools: in round 1 two graders each graded batch 1
# of the first pool, and a third annotator settled their disagreements (batch 2). The committed answer
# files are keyed by query id and the candidate's content SHA-256 (`mambo bench key-answers` turned
# the batches' task ids into keys), so they load into whatever pool this code draws: an answered pair
# the pool no longer holds joins it as an 'earlier-pool' candidate, and a candidate nobody answered
# yet stays unjudged (`bench show` counts it as needs-grades; a score counts it as grade 0). Grade it
# in a new round: `bench pool` again on the judged library gives a batch of exactly those, export it,
# grade it, key the answers on that library and list the files below.
# Writes benchdata/v1/judgements/dev-v2-set1.jsonl (+ .agreement.json) and
# benchdata/v1/results/dev-v2/report.{md,json}.
set -euo pipefail
cd "$(dirname "$0")/../.."
db="$1"
bare="$2"
shift 2
j=benchdata/v1/judgements
out=benchdata/v1/results/dev-v2

# Answer files (in $j) and their annotators, loaded in this order. A candidate's first two grader
# answers are its grades; an adjudicator's answer settles a pair the graders split on. Add a round
# by adding its files here, e.g. "dev-v2-r2-grader-a.jsonl model-grader-a-v2".
graders=(
    "dev-v2-grader-a.jsonl model-grader-a-v1"
    "dev-v2-grader-b.jsonl model-grader-b-v1"
    # round 2: the 956 candidates the next rankings added, two new blind graders
    "dev-v2-r2-grader-a.jsonl model-grader-a-r2"
    "dev-v2-r2-grader-b.jsonl model-grader-b-r2"
    # round 3: the 255 candidates a change of fusion added
    "dev-v2-r3-grader-a.jsonl model-grader-a-r3"
    "dev-v2-r3-grader-b.jsonl model-grader-b-r3"
    # round 4: the 34 candidates the "no match" models let into the pool (lists an earlier rule
    # emptied)
    "dev-v2-r4-grader-a.jsonl model-grader-a-r4"
    "dev-v2-r4-grader-b.jsonl model-grader-b-r4"
    # round 5: the 732 unjudged (query, meme) pairs of all-mpnet-base-v2's dense top 10
    # (benchdata/experiments/mpnet_semantic.py), two shards of 366, each graded by two graders
    # (a, b: shard 1; c, d: shard 2), so that the second-model experiment is scored on judged lists
    "dev-v2-r5-grader-a.jsonl model-grader-a-r5"
    "dev-v2-r5-grader-b.jsonl model-grader-b-r5"
    "dev-v2-r5-grader-c.jsonl model-grader-c-r5"
    "dev-v2-r5-grader-d.jsonl model-grader-d-r5"
    # round 6: the 199 candidates the tool's own lists added once all-mpnet-base-v2 became its
    # model and the "no match" models were fitted again
    "dev-v2-r6-grader-a.jsonl model-grader-a-r6"
    "dev-v2-r6-grader-b.jsonl model-grader-b-r6"
    # round 7: the 286 candidates still unjudged when the tool's libraries were made
    # afresh with all-mpnet-base-v2 (280 hard negatives its rankings drew, 6 pooled results)
    "dev-v2-r7-grader-a.jsonl model-grader-a-r7"
    "dev-v2-r7-grader-b.jsonl model-grader-b-r7"
    # round 8: the 36 candidates the typo, fusion and query-reading changes drew
    # (a blind pair given the grading guide and mambo-safety-v1; 33 exact agreements, 3 one grade apart)
    "dev-v2-r8-grader-a.jsonl model-grader-a-r8"
    "dev-v2-r8-grader-b.jsonl model-grader-b-r8"
    # round 9: the 108 candidates the feedback from each top meme's matching vector drew
    # (a blind pair given the grading guide and mambo-safety-v1; 104 exact agreements, 4 one grade apart)
    "dev-v2-r9-grader-a.jsonl model-grader-a-r9"
    "dev-v2-r9-grader-b.jsonl model-grader-b-r9"
    # round 11: the 9 candidates the caption-meaning safety signal drew (hard negatives and one
    # no-match query's results; a blind pair given the grading guide and mambo-safety-v1)
    "dev-v2-r11-grader-a.jsonl model-grader-a-r11"
    "dev-v2-r11-grader-b.jsonl model-grader-b-r11"
    # round 12: the 285 candidates split words, slang, the evidence divider and the bare "no match"
    # models fitted on real captions drew (`grading.py shards --unjudged`; a blind pair given the
    # grading guide and mambo-safety-v1; 276 exact agreements, 9 one grade apart, no safety split)
    "dev-v2-r12-grader-a.jsonl model-grader-a-r12"
    "dev-v2-r12-grader-b.jsonl model-grader-b-r12"
    # round 13: the 9 candidates reading a glued query as its words drew (a blind pair, in agreement)
    "dev-v2-r13-grader-e.jsonl model-grader-e-r13"
    "dev-v2-r13-grader-f.jsonl model-grader-f-r13"
)
adjudicators=(
    "dev-v2-adjudicator.jsonl model-adjudicator-v1"
    "dev-v2-r5-adjudicator.jsonl model-adjudicator-r5"
    "dev-v2-r6-adjudicator.jsonl model-adjudicator-r6"
    "dev-v2-r7-adjudicator.jsonl model-adjudicator-r7"
)

m() { ./mambo --db "$db" "$@"; }
m bench import benchdata/v1/dev-v2.jsonl --recipe benchdata/v1/corpus.jsonl
m bench pool dev --system bm25 --system dense --system hybrid --seed 42 --bare "$bare"
for entry in "${graders[@]}"; do
    read -r file who <<<"$entry"
    m bench import-judgements 1 "$j/$file" --annotator "$who" --kind model
done
said=$(m bench adjudication dev --seed 42)
echo "$said"
if [[ $said == "adjudication batch "* ]]; then
    for entry in "${adjudicators[@]}"; do
        read -r file who <<<"$entry"
        m bench import-judgements "${said#adjudication batch }" "$j/$file" --annotator "$who" --kind model \
            --adjudicator
    done
fi
m bench show dev
m bench labels dev -o "$j/dev-v2-set1.jsonl"
m bench freeze dev
mkdir -p "$out"
/usr/bin/time -v ./mambo --db "$db" score --bare "$bare" --out "$out" "$@" 2> >(tee "$out/score.log" >&2)
