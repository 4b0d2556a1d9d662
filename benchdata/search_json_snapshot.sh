#!/bin/bash
# Every fixture query's `mambo search --json` under bm25, dense and hybrid, from TREE's code on a
# fresh copy of the fixture, to compare two trees (the library folder in "path" differs per run):
#   benchdata/search_json_snapshot.sh OLD_TREE old.txt; benchdata/search_json_snapshot.sh . new.txt
#   diff <(sed -E 's#/tmp/tmp\.[A-Za-z0-9]+/#/LIB/#g' old.txt) <(sed -E 's#/tmp/tmp\.[A-Za-z0-9]+/#/LIB/#g' new.txt)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
tree="$(cd "$1" && pwd)"; out="$(realpath -m "$2")"; lib="$(mktemp -d)"
cp -r "$here/benchdata/fixture/images" "$lib/images"
cd "$lib"  # not the caller's folder: python puts the working folder first on sys.path
export MAMBO_NO_HELPER=1 PYTHONPATH="$tree" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
"$here/.venv/bin/python" "$tree/mambo.py" --db "$lib/lib.sqlite" add -q "$lib/images" 2>/dev/null
"$here/.venv/bin/python" - "$lib/lib.sqlite" "$here/benchdata/fixture/queries.jsonl" > "$out" <<'PY'
import json
import sys

from click.testing import CliRunner

import mambo

lib, queries = sys.argv[1], sys.argv[2]
qs = [json.loads(line)["query"] for line in open(queries) if line.strip()]
for system in ("bm25", "dense", "hybrid"):
    for q in qs:
        r = CliRunner().invoke(mambo.cli, ["--db", lib, "search", "--json", "-s", system, q])
        print(f"## {system} {q}\n{r.stdout}", end="")
PY
