# torch_lib.sh - sourced by the torchrun drivers of hangs and mesh jobs in
# tests/gpu (hang_run.sh, mesh_run.sh) with the driver's name and OUTDIR:
#   . "$(dirname "$0")/torch_lib.sh" NAME.sh "${1:-}"
# Sets here (the repository) and out (OUTDIR, absolute); exits 77 when
# torch sees no CUDA GPU and 1 when the shim or analyzer is not built (lib,
# analyze); exports the settings for several ranks on one GPU over
# loopback, with PyTorch's own hang watchdog out of the way and the shim's
# reporting after 5 s.
# shellcheck shell=bash disable=SC2034  # the drivers use what is set here
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${2:?usage: $1 OUTDIR}
mkdir -p "$out"; out=$(cd "$out" && pwd)
python3 -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
    2>/dev/null || { echo "skip: no CUDA GPU visible to torch"; exit 77; }
lib=$here/build/libp3dtrace.so
analyze=$here/build/p3d-analyze
[ -f "$lib" ] && [ -x "$analyze" ] || { echo "build first (make)"; exit 1; }
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export NVSHMEM_DISABLE_NVLS=1 NCCL_SOCKET_IFNAME=lo
export TORCH_NCCL_ENABLE_MONITORING=0 TORCH_NCCL_DUMP_ON_TIMEOUT=0
export P3D_HANG_TIMEOUT=5
