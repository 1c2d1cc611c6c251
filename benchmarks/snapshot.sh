#!/usr/bin/env bash
# Deterministic answers of every solver, to compare two versions of the code after a refactor:
#   bash benchmarks/snapshot.sh OUT_DIR        (from the repository root, after the set-up command)
#   .venv/bin/python benchmarks/snapshot_compare.py OLD_DIR NEW_DIR
# Exchange: greedy, CP-SAT (one worker, seed 0, 3 s of deterministic time) and LNS (one
# worker, seed 0, 4 neighbourhoods of 0.5 s deterministic time each: a wall-clock budget alone
# makes LNS end at a different step each run) on the bundled examples and three workload
# fixtures, the MILP on the small examples; placement:
# every solver on the bundled arena, MiniMalloc A and K from tests/data; layout: every method
# on the bundled layout problems (the two best plans of the exact ones).
set -euo pipefail
out=$1
mkdir -p "$out"
I=.venv/bin/ipuopt
for p in tiny small medium benchmarks/fixtures/mini-mlp-test64-gemm1-input.json \
         benchmarks/fixtures/mini-attention-test64-scores-redistribution.json \
         benchmarks/fixtures/mini-mlp-test64-gemm2-reduction.json; do
  n=$(basename "$p" .json)
  $I solve "$p" --quiet --out "$out/$n-greedy.json"
  $I solve "$p" --quiet --solver cpsat --workers 1 --seed 0 --time-limit 3 --out "$out/$n-cpsat.json"
  $I solve "$p" --quiet --solver lns --workers 1 --seed 0 --time-limit 60 --param steps=4 \
     --param sub_time_limit=0.5 --out "$out/$n-lns.json"
done
for p in tiny small; do $I solve $p --quiet --solver milp --time-limit 10 --out "$out/$p-milp.json"; done
for s in greedy baseline search cpsat milp auto; do
  $I place mini-mlp --solver $s --objective peak --workers 1 --seed 0 --out "$out/arena-$s.json" --quiet >/dev/null
done
for s in cpsat milp; do
  $I place mini-mlp --solver $s --objective conflicts --workers 1 --seed 0 --out "$out/arena-conf-$s.json" --quiet >/dev/null
done
for i in A K; do
  $I place --csv tests/data/minimalloc/$i.1048576.csv --capacity 1048576 --workers 1 --seed 0 --time-limit 30 \
     --out "$out/mm-$i.csv" --quiet >/dev/null
done
for p in toy beam-loses; do
  for s in milp cpsat; do
    $I layout models/layouts/$p.yaml --solver $s --k 2 --workers 1 --seed 0 --time-limit 20 --out "$out/layout-$p-$s.json" >/dev/null
  done
  $I layout models/layouts/$p.yaml --solver beam --out "$out/layout-$p-beam.json" >/dev/null
done
