#!/usr/bin/env bash
# validate/device-compare.sh: the simulator against the GPUs on the scenario files of
# experiments/validate/, in one go, on a machine with two GPUs: machine information,
# `ema-validate devices`, then `ema-validate compare` (measures on the GPUs, simulates the same
# file, writes the comparison) for each of h200x2-ops.yaml and h200x2-decode.yaml, each into
# OUT_DIR/NAME/ (summary.json, resolved.yaml, provenance.txt, measurements.csv, samples.csv,
# derived.csv, decode.csv, compare.csv, compare.md, sim/). Ends with OUT_DIR/results.tgz of it
# all (the lent machines bring back few files).
#
# Usage (from anywhere): validate/device-compare.sh EMA_VALIDATE OUT_DIR [FILE...]
# (default FILEs: experiments/validate/h200x2-ops.yaml experiments/validate/h200x2-decode.yaml)
# Model files are read from this checkout (EMA_HWMODEL_PATH, EMA_LLM_PATH), so a binary built
# elsewhere works. Each command has a time limit; a failing one is logged and the rest still run.
set -uo pipefail
# shellcheck source=validate/device-common.sh
source "$(dirname "$0")/device-common.sh"
shift 2
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(experiments/validate/h200x2-ops.yaml experiments/validate/h200x2-decode.yaml)

run 60 "$bin" devices
for file in "${files[@]}"; do
  name=$(basename "$file" .yaml)
  run 280 "$bin" compare "$file" -o "$out/$name"
done
tar -C "$out" -czf "$out/results.tgz" --exclude results.tgz .
echo "device-compare: exit $status" | tee -a "$log"
exit "$status"
