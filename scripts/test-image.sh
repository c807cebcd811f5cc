#!/usr/bin/env bash
# Builds the image deploy/ runs, `kratix-rs:0.1.0`, from this checkout's binary into the
# Docker Engine that DOCKER_HOST names (e.g. a test node's: `scripts/testworld env DIR`), without the
# Dockerfile's build stage (which needs a registry for rust:1-alpine). The image is the
# Dockerfile's final stage fed a prebuilt binary: `FROM scratch`, the binary at /kratix-rs, the
# libraries `ldd` names at their paths, CA certificates, and the final stage's own USER and
# ENTRYPOINT lines, read from ./Dockerfile so that the two cannot drift apart.
#
# The binary is the dev profile's by default: it behaves as the release one and costs a minute to
# build beside the tests' build, where a release build costs a quarter of an hour on 2 cores.
# `--release` builds and packs the release binary instead; `--binary PATH` packs a binary already
# built (scripts/test.sh builds it before its lanes start, so that this script needs no cargo,
# whose build lock another lane's cargo may hold).
#
#   DOCKER_HOST=unix:///… scripts/test-image.sh [--release | --binary PATH] [TAG]
#   (TAG defaults to kratix-rs:0.1.0)
set -euo pipefail
cd "$(dirname "$0")/.."

profile=debug binary=
if [[ ${1:-} == --release ]]; then profile=release; shift; fi
if [[ ${1:-} == --binary ]]; then binary=${2:?--binary needs a path}; shift 2; fi
tag=${1:-kratix-rs:0.1.0}
[[ -n ${DOCKER_HOST:-} ]] || { echo "test-image.sh: DOCKER_HOST is not set" >&2; exit 1; }
command -v docker >/dev/null || { echo "test-image.sh: the docker CLI is not installed" >&2; exit 1; }

if [[ -n $binary ]]; then
    [[ -x $binary ]] || { echo "test-image.sh: $binary is not an executable" >&2; exit 1; }
elif [[ $profile == release ]]; then
    cargo build --release --locked --bin kratix-rs
else
    cargo build --locked --bin kratix-rs
fi
binary=${binary:-${CARGO_TARGET_DIR:-target}/$profile/kratix-rs}

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
root=$context/root
mkdir -p "$root"
cp "$binary" "$root/kratix-rs"
strip "$root/kratix-rs" 2>/dev/null || true
# `ldd` lines: "libz.so.1 => /lib/…/libz.so.1 (0x…)", "/lib64/ld-linux-x86-64.so.2 (0x…)", and
# the vDSO, which has no file.
ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' |
    while read -r lib; do cp -L --parents "$lib" "$root"; done
cp -L --parents /etc/ssl/certs/ca-certificates.crt "$root"

# The final stage's USER and ENTRYPOINT, as the Dockerfile says them.
final_stage=$(awk '/^FROM /{ stage = "" } { stage = stage $0 "\n" } END { printf "%s", stage }' Dockerfile)
user=$(grep -E '^USER ' <<<"$final_stage")
entrypoint=$(grep -E '^ENTRYPOINT ' <<<"$final_stage")
[[ -n $user && -n $entrypoint ]] || { echo "test-image.sh: no USER/ENTRYPOINT in the Dockerfile's final stage" >&2; exit 1; }
cat >"$context/Dockerfile" <<EOF
FROM scratch
COPY root/ /
$user
$entrypoint
EOF
docker build --quiet --tag "$tag" "$context" >/dev/null
echo "built $tag into $DOCKER_HOST: $(docker image inspect --format '{{.Id}}' "$tag")"
