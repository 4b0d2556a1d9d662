#!/usr/bin/env bash
# Benchmark v1, development partition 2 (dev v2): labels from two blind graders and an adjudicator,
# then the scorecard of both conditions, annotated and bare.
#   benchdata/v1/score.sh LIBRARY.sqlite BARE_LIBRARY.sqlite [mambo score options, e.g. --no-latency]
# LIBRARY holds the rendered corpus (`benchdata/render.py ... --out DIR`, then `./mambo --db LIBRARY
# add DIR`); the import checks it against benchdata/v1/manifest.sha256. BARE_LIBRARY holds the same
# folder ingested without its sidecars (`./mambo --db BARE_LIBRARY add --no-sidecars DIR`).
#
# The pool (seed 42: every system's top 10 on both libraries, gold items and exact targets, hard
# negatives) is rebuilt here; its blinded batch 1 was graded outside the tool by two model
# annotators working alone (helper sessions reading only benchdata/grading.py's shards and the
# grading guide), and batch 2 (their disagreements) by a third. Their answers are committed in
# benchdata/v1/judgements/ and loaded by task id, so the same library rebuilds the same labels.
# Writes benchdata/v1/judgements/dev-v2-set1.jsonl (+ .agreement.json) and
# benchdata/v1/results/dev-v2/report.{md,json}.
set -euo pipefail
cd "$(dirname "$0")/../.."
db="$1"
bare="$2"
shift 2
j=benchdata/v1/judgements
out=benchdata/v1/results/dev-v2
m() { ./mambo --db "$db" "$@"; }
m bench import benchdata/v1/dev-v2.jsonl --recipe benchdata/v1/corpus.jsonl
m bench pool dev --system bm25 --system dense --system hybrid --seed 42 --bare "$bare"
m bench import-judgements 1 "$j/dev-v2-grader-a.jsonl" --annotator helper-session-grader-a-v1 --kind model
m bench import-judgements 1 "$j/dev-v2-grader-b.jsonl" --annotator helper-session-grader-b-v1 --kind model
m bench adjudication dev --seed 42
m bench import-judgements 2 "$j/dev-v2-adjudicator.jsonl" --annotator helper-session-adjudicator-v1 --kind model \
    --adjudicator
m bench labels dev -o "$j/dev-v2-set1.jsonl"
m bench freeze dev
mkdir -p "$out"
/usr/bin/time -v ./mambo --db "$db" score --bare "$bare" --out "$out" "$@" 2> >(tee "$out/score.log" >&2)
