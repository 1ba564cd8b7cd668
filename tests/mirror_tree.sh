#!/usr/bin/env bash
# Makes DIR/tree a mirror of the sources (links) with its own build/ and bin/, and DIR/shared a link
# to ../shared, so a build with other flags (sanitizers, the GPU bundle) runs its tools as
# ./bin/NAME, as the tests expect, without touching the main build. Run from the repository root.
# Usage: tests/mirror_tree.sh DIR
set -euo pipefail
dir=${1:?usage: tests/mirror_tree.sh DIR}
root=$PWD
mkdir -p "$dir/tree"
for entry in Makefile engine layers sense train data eval tests configs docs README.md; do
  ln -sfn "$root/$entry" "$dir/tree/$entry"
done
ln -sfn "$(realpath -m "$root/../shared")" "$dir/shared"
