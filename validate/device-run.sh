#!/usr/bin/env bash
# validate/device-run.sh: every measurement of a validate/results/DATE-NAME-calibrate/ directory in
# one go, on a machine with two GPUs: machine information, `ema-validate devices`, sanity decodes
# and a quick calibration (to fail fast), the full calibration (written to
# hwmodels/calibration/NAME.yaml and validate/results/DATE-NAME-calibrate/), and the decode
# matrix, appended to decode.csv in the results directory: all local at batch 1/16/64 x context
# 1000/4000 and 32 x 2000, batch 1 without CUDA graphs, remote fractions 0.1/0.25/0.5 direct and
# prefetch at 32 x 2000, prefetch depth 2, and two more model shapes. Copies what it produced
# into OUT_DIR.
#
# Usage (from anywhere): validate/device-run.sh EMA_VALIDATE OUT_DIR [NAME]
# With EMA_VALIDATE_FALLBACK set to another build, the decode runs use it if the sanity decodes
# of EMA_VALIDATE fail (the log says so).
# Model files are read from this checkout (EMA_HWMODEL_PATH, EMA_LLM_PATH), so a binary built
# elsewhere works. Each command has a time limit; a failing one is logged and the rest still run.
set -uo pipefail
name=${3:-h200x2}
# shellcheck source=validate/device-common.sh
source "$(dirname "$0")/device-common.sh"
results=validate/results/$(date -u +%F)-$name-calibrate
mkdir -p "$results"

run 60 "$bin" devices
run 60 "$bin" decode --model llama-3.1-8b --batch 1 --context 1000 --repeats 5
run 60 "$bin" decode --model llama-3.1-8b --batch 4 --context 500 --remote-fraction 0.5 --mode direct \
  --repeats 5
if [ "$status" -ne 0 ] && [ -n "${EMA_VALIDATE_FALLBACK:-}" ]; then
  echo "! the sanity decodes failed: the decode runs below use $EMA_VALIDATE_FALLBACK" | tee -a "$log"
  decode_bin=$(realpath "$EMA_VALIDATE_FALLBACK")
else
  decode_bin=$bin
fi
run 120 "$bin" calibrate --quick --name "$name" -o /tmp/ema-quick.yaml --results /tmp/ema-quick
run 300 "$bin" calibrate --name "$name" -o "hwmodels/calibration/$name.yaml" --results "$results"

csv=$results/decode.csv
rm -f "$csv"
for batch in 1 16 64; do
  for context in 1000 4000; do
    run 90 "$decode_bin" decode --model llama-3.1-8b --batch "$batch" --context "$context" \
      --csv "$csv"
  done
done
run 90 "$decode_bin" decode --model llama-3.1-8b --batch 32 --context 2000 --csv "$csv"
run 90 "$decode_bin" decode --model llama-3.1-8b --batch 1 --context 1000 --no-graph --csv "$csv"
for fraction in 0.1 0.25 0.5; do
  for mode in direct prefetch; do
    run 90 "$decode_bin" decode --model llama-3.1-8b --batch 32 --context 2000 \
      --remote-fraction "$fraction" --mode "$mode" --csv "$csv"
  done
done
run 90 "$decode_bin" decode --model llama-3.1-8b --batch 32 --context 2000 \
  --remote-fraction 0.25 --mode prefetch --prefetch-depth 2 --csv "$csv"
# other shapes: multi-head attention (group 1) and a group of 5 query heads per KV head
run 90 "$decode_bin" decode --model llama-2-7b --batch 8 --context 2000 --csv "$csv"
run 90 "$decode_bin" decode --model qwen2.5-14b --batch 8 --context 2000 --csv "$csv"

cp "hwmodels/calibration/$name.yaml" "$out/" 2>/dev/null
mkdir -p "$out/results"
cp "$results"/*.csv "$out/results/" 2>/dev/null
echo "device-run: exit $status" | tee -a "$log"
exit "$status"
