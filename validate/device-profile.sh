#!/usr/bin/env bash
# validate/device-profile.sh: the GPU side of the operator profiles and captured steps, on a
# machine with one GPU (and PyTorch): machine information (driver, CUDA, torch, the libcupti
# found), then the stages named (default: smoke):
#   smoke    a quick profile and quick steps under capture; a program killed by SIGSEGV mid-run
#            (its trace must still read back); PyTorch's expandable segments (CUDA VMM calls);
#            a decode loop of Llama-3.1-8B under `ema-validate capture` (trace.json kept)
#   profile  `ema-validate profile` of the five models into OUT_DIR/profile/
#   steps    the whole-model steps of the five models under capture, converted into
#            OUT_DIR/steps/steps.csv, with each step's kernels in OUT_DIR/steps/step-kernels.csv
#   gemm     the GEMM tables alone into OUT_DIR/gemm/, each model's shapes at the
#            tensor-parallel degrees of GEMM_TP (default 1,2,4,8: one GPU's share of each)
# In the environment, MODELS (comma-separated) replaces the workloads' models in steps and
# gemm (a GPU of less memory than an H200 holds fewer of them whole), STEPS_PREFILL
# (CHUNK:PRIOR,...) steps.py's prefill points, and GEMM_SHAPES (K:N,...), GEMM_DTYPES (bf16,
# fp16, fp8) and GEMM_M (m values) the gemm stage's shapes in place of the models'.
# Each stage ends with OUT_DIR/STAGE.tgz (the lent machines bring back few files).
#
# Usage: validate/device-profile.sh BIN_DIR OUT_DIR [STAGE...]
# BIN_DIR holds ema-validate, libemacapture.so, lib/ (shared libraries ema-validate needs that
# the machine may lack) and workloads/ (validate/workloads). The workload runs under the
# machine's python3 with LD_LIBRARY_PATH cleared but for the libcupti directory found here.
set -uo pipefail
bin=$(realpath "$1")
out=$(realpath -m "$2")
shift 2
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(smoke)
mkdir -p "$out"
log=$out/log.txt
export EMA_LLM_PATH=$PWD/hwmodels/llms
ev() { LD_LIBRARY_PATH=$bin/lib "$bin/ema-validate" "$@"; }
cupti=$(python3 - <<'PY'
import glob, os, site
c = sorted(glob.glob("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13*")
           + glob.glob("/usr/local/cuda/lib64/libcupti.so.13*")
           + [p for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/**/libcupti.so.13*", recursive=True)])
print(os.path.dirname(c[0]) if c else "")
PY
)
py=$out/py.sh
printf '#!/bin/sh\nexec env -u LD_LIBRARY_PATH LD_LIBRARY_PATH=%s PYTHONUNBUFFERED=1 python3 "$@"\n' "$cupti" >"$py"
chmod +x "$py"
{
  date -u
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  nvcc --version 2>/dev/null | tail -2
  echo "libcupti dir: $cupti"
  ls -la "$cupti" | grep -i cupti
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
  ldd "$bin/libemacapture.so"
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt"
w=$bin/workloads
status=0
step() { echo "+ $*" | tee -a "$log"; "$@" 2>&1 | tee -a "$log"; local rc=${PIPESTATUS[0]}; [ "$rc" -eq 0 ] || { echo "! exit $rc" | tee -a "$log"; status=1; }; return "$rc"; }
for stage in "${stages[@]}"; do
  case $stage in
  smoke)
    d=$out/smoke
    step ev profile -o "$d/profile" --quick --models llama-3.1-8b,mixtral-8x7b --python "$py" --workload "$w/opprofile.py"
    step ev capture -o "$d/decode-loop" -- "$py" "$w/steps.py" --meta "$d/decode-loop/workload.yaml" --models llama-3.1-8b --phases decode --quick
    step ev profile --from-capture "$d/decode-loop" -o "$d/decode-loop-steps"
    cat >"$d/crash.py" <<'PY'
import os, signal, torch
x = torch.randn(4096, 4096, device="cuda")
for i in range(50):
    torch.cuda.nvtx.range_push(f"before-crash {i}")
    y = x @ x
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
torch.cuda.nvtx.range_push("dies inside")
y = x @ x
torch.cuda.synchronize()
os.kill(os.getpid(), signal.SIGSEGV)
PY
    ev capture -o "$d/crash" -- "$py" "$d/crash.py" 2>&1 | tee -a "$log"; echo "crash capture exit ${PIPESTATUS[0]} (139 = SIGSEGV expected)" | tee -a "$log"
    cat "$d/crash/capture.txt" | tee -a "$log"
    cat >"$d/vmm.py" <<'PY'
import torch
xs = [torch.empty(n << 20, dtype=torch.uint8, device="cuda") for n in (3, 40, 300)]
torch.cuda.synchronize(); del xs; torch.cuda.empty_cache()
z = torch.zeros(1 << 20, device="cuda"); z.fill_(1); c = z.cpu(); z.copy_(c.cuda())
PY
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True step ev capture -o "$d/vmm" -- "$py" "$d/vmm.py"
    head -5 "$d/vmm/vmm.csv" "$d/vmm/memory.csv" "$d/vmm/memcpy.csv" "$d/vmm/memset.csv" | tee -a "$log"
    ;;
  profile)
    step ev profile -o "$out/profile" --python "$py" --workload "$w/opprofile.py"
    ;;
  steps)
    steps_args=()
    [ -n "${MODELS:-}" ] && steps_args+=(--models "$MODELS")
    [ -n "${STEPS_PREFILL:-}" ] && steps_args+=(--prefill "$STEPS_PREFILL")
    step ev capture -o "$out/steps-capture" -- "$py" "$w/steps.py" --meta "$out/steps-capture/workload.yaml" "${steps_args[@]}"
    step ev profile --from-capture "$out/steps-capture" -o "$out/steps"
    step python3 "$w/stepkernels.py" "$out/steps-capture" -o "$out/steps/step-kernels.csv"
    rm -f "$out/steps-capture/trace.json"  # large; the CSVs hold the same records
    ;;
  gemm)
    gemm_args=(--only gemm --tp "${GEMM_TP:-1,2,4,8}")
    [ -n "${MODELS:-}" ] && gemm_args+=(--models "$MODELS")
    [ -n "${GEMM_SHAPES:-}" ] && gemm_args+=(--gemm-shapes "$GEMM_SHAPES" --gemm-dtypes "${GEMM_DTYPES:-bf16}")
    [ -n "${GEMM_M:-}" ] && gemm_args+=(--gemm-m "$GEMM_M")
    step ev capture -o "$out/gemm-capture" -- "$py" "$w/opprofile.py" --meta "$out/gemm-capture/workload.yaml" "${gemm_args[@]}"
    step ev profile --from-capture "$out/gemm-capture" -o "$out/gemm"
    rm -f "$out/gemm-capture/trace.json"
    ;;
  esac
  dirs=("$stage")
  # the steps' kernels.csv (a million rows) does not come back: its summaries do
  [ "$stage" = steps ] && dirs+=(steps-capture/workload.yaml steps-capture/capture.txt
    steps-capture/ranges.csv steps-capture/kernel-names.csv)
  [ "$stage" = gemm ] && dirs+=(gemm-capture/workload.yaml gemm-capture/capture.txt)
  tar -C "$out" -czf "$out/$stage.tgz" "${dirs[@]}" machine.txt log.txt
done
ls -la "$out"
echo "device-profile: exit $status"
exit "$status"
