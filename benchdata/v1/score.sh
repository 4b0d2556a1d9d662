#!/usr/bin/env bash
# Benchmark v1, development partition: labels through the judging flow, then the scorecard.
#   benchdata/v1/score.sh LIBRARY.sqlite [BARE_LIBRARY.sqlite]
# LIBRARY holds the rendered corpus (`benchdata/render.py ... --out DIR`, then `./mambo --db LIBRARY
# add DIR`); the import checks it against benchdata/v1/manifest.sha256. BARE_LIBRARY (optional) holds
# the same folder ingested without its sidecars (`./mambo --db BARE_LIBRARY add --no-sidecars DIR`):
# the report then shows the bare-library numbers beside the annotated score (`mambo score --bare`).
# Writes benchdata/v1/judgements/dev-set1.jsonl (+ .agreement.json) and
# benchdata/v1/results/report.{md,json}.
set -euo pipefail
cd "$(dirname "$0")/../.."
db="$1"
bare=()
if [ -n "${2:-}" ]; then bare=(--bare "$2"); fi
m() { ./mambo --db "$db" "$@"; }
m bench import benchdata/v1/dev.jsonl --recipe benchdata/v1/corpus.jsonl
m bench pool dev --system bm25 --system dense --system hybrid --seed 42
m judge --annotator recipe-truth-v1 --model --recipe benchdata/v1/corpus.jsonl
m judge --annotator minilm-cosine-v1 --model
m judge --annotator mambo-bench-helper-v1 --model --adjudicate --recipe benchdata/v1/corpus.jsonl
m bench labels dev -o benchdata/v1/judgements/dev-set1.jsonl
m bench freeze dev
/usr/bin/time -v ./mambo --db "$db" score "${bare[@]}" --out benchdata/v1/results/ 2> >(tee benchdata/v1/results/score.log >&2)
