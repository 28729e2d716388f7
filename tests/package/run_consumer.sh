#!/usr/bin/env bash
# Installs the built tree into a scratch prefix, then configures, builds and runs a separate
# project that uses find_package(Poseidon).
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
mkdir "$scratch/store"
"$scratch/build/consumer" "$scratch/store"
