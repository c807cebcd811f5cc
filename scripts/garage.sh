#!/usr/bin/env bash
# Installs Garage (a real S3 server) for the bucket state-store tests, unless a `garage` binary is
# already on the PATH or in ~/.cargo/bin. Idempotent: when Garage is there it prints nothing and
# touches nothing. Building it takes a while (tens of minutes on two cores).
#
# The tests look for the binary in $GARAGE_BIN, then on the PATH, then in ~/.cargo/bin.
set -eu -o pipefail

cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"

if command -v garage >/dev/null 2>&1 || [ -x "$cargo_bin/garage" ]; then
    exit 0
fi

echo "garage.sh: installing garage with cargo (this takes a while)" >&2
# bundled-libs: no system libsodium/zstd needed; sqlite: the metadata engine the tests use.
cargo install garage --locked --no-default-features --features bundled-libs,sqlite
