#!/usr/bin/env bash
# Submit a sharded pytest-gaia2 run to SLURM: an array of N tasks (one shard each, on its node's
# own Docker engine) and a merge job that starts once every task has ended, however it ended.
#
#   examples/slurm/submit.sh --shards N --shared DIR [--scenarios DIR] [--cpus C] [--resume] [-- PYTEST ARGS...]
#
#   --shards N       number of shards, one array task each
#   --shared DIR     a folder every node sees at the same path: shard-<k>/ run folders, merged-<job>/, logs
#   --scenarios DIR  passed to pytest as --gaia2-scenarios (made absolute)
#   --cpus C         CPUs per array task (default 1); give one per container the task runs at once (-n)
#   --resume         continue each shard's newest run folder (--gaia2-resume): only what has no verdict runs
#
# sbatch's input variables (SBATCH_PARTITION, SBATCH_TIMELIMIT, SBATCH_ACCOUNT, ...) apply to both jobs.
# The last line printed is "gaia2-slurm: array <id> merge <id> merged <folder>".
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage() { sed -n '5,11p' "${BASH_SOURCE[0]}" >&2; exit 2; }

shards='' shared='' cpus=1 resume=0 pytest_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --shards) shards=${2:-}; shift 2 || usage ;;
    --shared) shared=${2:-}; shift 2 || usage ;;
    --scenarios) pytest_args+=(--gaia2-scenarios "$(realpath "${2:?}")"); shift 2 ;;
    --cpus) cpus=${2:-}; shift 2 || usage ;;
    --resume) resume=1; shift ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
if ! [[ $shards =~ ^[1-9][0-9]*$ && $cpus =~ ^[1-9][0-9]*$ ]] || [ -z "$shared" ]; then usage; fi
mkdir -p "$shared"
shared=$(realpath "$shared")
environment="ALL,GAIA2_SHARDS=$shards,GAIA2_SHARED=$shared,GAIA2_RESUME=$resume"

array=$(sbatch --parsable --array="0-$((shards - 1))" --cpus-per-task="$cpus" --export="$environment" \
  --output="$shared/slurm-%A_%a.out" "$here/gaia2-array.sbatch" "${pytest_args[@]}" "$@")
array=${array%%;*}
merge=$(sbatch --parsable --dependency="afterany:$array" --export="$environment" \
  --output="$shared/slurm-%j-merge.out" "$here/gaia2-merge.sbatch")
merge=${merge%%;*}
echo "gaia2-slurm: array $array merge $merge merged $shared/merged-$merge"
