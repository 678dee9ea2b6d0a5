#!/usr/bin/env bash
# validate/device-pool.sh: every run of a validate/results/DATE-NAME-realpool/ directory in one
# go, on a machine with two GPUs: machine information, `ema-validate devices`, a short `pool` run
# first (if it fails, nothing else runs), then `pool` with the `ema` composition, with
# `remote-direct`, with a map that migrates what direct reads left remote, with the example plugin
# of policies/examples (when PLUGIN_DIR is given) and with `static` (no sharing: the lender's
# decode alone, for its step time). Each run writes its own directory under OUT_DIR; the log of
# everything is OUT_DIR/log.txt.
#
# Usage (from anywhere): validate/device-pool.sh EMA_VALIDATE OUT_DIR [PLUGIN_DIR]
# Model files are read from this checkout (EMA_HWMODEL_PATH, EMA_LLM_PATH), so a binary built
# elsewhere works. Each command has a time limit; a failing one is logged and the rest still run.
set -uo pipefail
plugins=${3:+$(realpath "$3")}
# shellcheck source=validate/device-common.sh
source "$(dirname "$0")/device-common.sh"

run 60 "$bin" devices
run 120 "$bin" pool --seconds 6 -o "$out/quick-ema" || {
  echo "device-pool: the short run failed; nothing else runs" | tee -a "$log"
  exit 1
}
run 150 "$bin" pool --policy ema --seconds 16 -o "$out/ema"
run 120 "$bin" pool --policy remote-direct --seconds 10 -o "$out/remote-direct"
run 120 "$bin" pool --policy '{borrow: on-demand, prefetch: direct, reclaim: migrate}' \
  --seconds 10 -o "$out/migrate-direct"
if [ -n "$plugins" ]; then
  run 120 "$bin" pool --plugin-dir "$plugins" \
    --policy '{borrow: neighbour, prefetch: layer-ahead, reclaim: migrate}' --seconds 8 \
    -o "$out/neighbour-plugin"
fi
run 90 "$bin" pool --policy static --seconds 4 -o "$out/static"
nvidia-smi --query-gpu=index,memory.used --format=csv >>"$out/machine.txt" 2>&1
echo "device-pool: exit $status" | tee -a "$log"
exit "$status"
