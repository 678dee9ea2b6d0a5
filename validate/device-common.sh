# shellcheck shell=bash disable=SC2034 # status is read by the scripts that source this one
# validate/device-common.sh: what the device scripts (device-run.sh, device-compare.sh,
# device-pool.sh) share, sourced by each with its arguments, EMA_VALIDATE OUT_DIR first (an
# argument that is a path relative to the caller's directory must be made absolute before).
# It sets bin (EMA_VALIDATE, absolute), out (OUT_DIR, absolute, made), root (this checkout, the
# working directory from here on), log (OUT_DIR/log.txt, emptied) and status (0, then 1 once a
# command fails); exports EMA_HWMODEL_PATH and EMA_LLM_PATH of this checkout, so that a binary
# built elsewhere reads this checkout's model files; defines run; and writes the machine
# information (date, kernel, GPUs, topology, driver, nvcc, the binary's libraries) to
# OUT_DIR/machine.txt.
set -uo pipefail
bin=$(realpath "$1")
out=$(realpath -m "$2")
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1
export EMA_HWMODEL_PATH=$root/hwmodels/servers EMA_LLM_PATH=$root/hwmodels/llms
mkdir -p "$out"
log=$out/log.txt
: >"$log"
status=0

# run LIMIT_S COMMAND...: COMMAND with a time limit, its output logged; a failure is logged and
# sets status, and the rest still runs. Returns COMMAND's exit status.
run() {
  local limit=$1
  shift
  echo "+ $*" | tee -a "$log"
  timeout "$limit" "$@" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || { echo "! exit $rc" | tee -a "$log"; status=1; }
  return "$rc"
}

{
  date -u
  uname -a
  nvidia-smi
  nvidia-smi topo -m
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total,memory.used,clocks.max.sm,clocks.max.mem --format=csv
  nvcc --version 2>/dev/null || true
  ldd "$bin"
} >"$out/machine.txt" 2>&1
