#!/usr/bin/env bash
# Checks the dependency tree against deny.toml: licenses, banned crates and sources. Installs
# cargo-deny with cargo the first time only (it stays in cargo's bin folder afterwards). Needs no
# network once the crates are in cargo's cache: advisories, which need a database download, are
# not checked here.
set -eu -o pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

if ! command -v cargo-deny >/dev/null 2>&1; then
    echo "cargo-deny.sh: installing cargo-deny (once)" >&2
    cargo install --locked cargo-deny --version 0.20.2
fi
exec cargo deny --workspace --locked check licenses bans sources
