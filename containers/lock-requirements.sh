#!/usr/bin/env bash
# Regenerate the hash-locked requirements from the top-level pins, with uv (pip install uv):
#   containers/requirements-<image>.txt  ->  containers/requirements-<image>.lock  (cpu, gpu)
#   pyproject.toml (dependencies + workflow extra)  ->  envs/host-requirements.lock
# Every package, direct or not, is pinned to one version with the sha256 of each of its files
# on PyPI; the image build installs the lock with --require-hashes, so two machines that build
# the same lock get the same bytes. Locked for the images' platform: CPython 3.11, x86_64
# Linux (manylinux_2_28), whatever machine runs this script. Run it after editing a pin.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null || { echo "lock-requirements.sh: needs uv (pip install uv)" >&2; exit 2; }
lock() {
  uv pip compile "$@" --generate-hashes --python-version 3.11 \
    --python-platform x86_64-manylinux_2_28 --index-url https://pypi.org/simple --quiet
}
for image in cpu gpu; do
  lock "containers/requirements-$image.txt" -o "containers/requirements-$image.lock"
done
lock pyproject.toml --extra workflow -o envs/host-requirements.lock
