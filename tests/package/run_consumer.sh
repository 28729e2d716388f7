#!/usr/bin/env bash
# Installs the built tree into a scratch prefix, then configures, builds and runs a separate
# project that uses find_package(Poseidon): a transport exchange, a PS job, and the same job with
# one rank built differently, which must fail naming the difference.
#   run_consumer.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build_dir="$1"
source_dir="$2"
scratch="$(mktemp -d /tmp/poseidon-package-XXXXXX)"
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build_dir" --prefix "$scratch/prefix" >/dev/null
cmake -S "$source_dir/tests/package/consumer" -B "$scratch/build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/build" >/dev/null
mkdir "$scratch/store" "$scratch/ps" "$scratch/ps-mismatch"
# A PS job trains; then the same job with worker 1 built differently must fail, naming the item.
"$scratch/build/ps_job" "$scratch/ps"
if "$scratch/build/ps_job" "$scratch/ps-mismatch" --mismatch 2>"$scratch/mismatch.log"; then
  echo "ps_job --mismatch exited 0: a rank built with another model was not refused" >&2
  exit 1
fi
if ! grep -q "were not started alike: .*scale = 14 floats" "$scratch/mismatch.log"; then
  echo "ps_job --mismatch failed without naming the differing tensor:" >&2
  cat "$scratch/mismatch.log" >&2
  exit 1
fi
"$scratch/build/consumer" "$scratch/store"
