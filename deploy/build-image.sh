#!/bin/sh
# Builds Herald's container image from the Dockerfile at the repository's
# root, with no base image pulled: it prepares a build context holding the
# static binary, the machine's CA bundle and the passwd and group files,
# then runs the engine's build.
#
#   deploy/build-image.sh [tag]        (default tag: herald:latest)
#
# HERALD_IMAGE_ENGINE picks the engine: podman (the default) or docker.
# HERALD_CA_BUNDLE names the CA bundle (default: Debian's).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
tag=${1:-herald:latest}
engine=${HERALD_IMAGE_ENGINE:-podman}
ca=${HERALD_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
if [ ! -r "$ca" ]; then
  echo "build-image: no CA bundle at $ca (apt-get install ca-certificates)" >&2
  exit 1
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$ctx/herald" ./cmd/herald)
cp "$ca" "$ctx/ca-certificates.crt"
cp "$root/deploy/image/passwd" "$root/deploy/image/group" "$ctx/"
mkdir "$ctx/data"
cp "$root/Dockerfile" "$ctx/Dockerfile"

case "$engine" in
*podman) # The docker format keeps HEALTHCHECK; the OCI format drops it.
  podman build --format docker -t "$tag" "$ctx" ;;
*)
  "$engine" build -t "$tag" "$ctx" ;;
esac
