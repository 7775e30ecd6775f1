#!/usr/bin/env bash
# Builds the root file system of the default node image into $1: the host's
# redis-server (Debian's package, the one `make setup` installs) and every
# shared library ldd lists for it and for the clock shim, at the paths the
# dynamic loader looks in. No registry is reachable on the project's
# machines, so the image is made FROM scratch out of what the host has.
set -euo pipefail
out=${1:?usage: rootfs.sh OUTDIR [SHIM]}
shim=${2:-bin/libclockshim.so}
case "$(basename -- "$out")" in
rootfs) ;;
*) echo "rootfs.sh: OUTDIR must be a directory named rootfs (it is emptied first), got $out" >&2; exit 2 ;;
esac
server=$(command -v redis-server) || { echo "redis-server not found: run 'make setup' first" >&2; exit 1; }
real=$(readlink -f "$server")

rm -rf "$out"
mkdir -p "$out/usr/bin" "$out/tmp" "$out/data"
chmod 1777 "$out/tmp"
cp "$real" "$out/usr/bin/redis-server"
# redis-server runs as a sentinel when its name says so, as Debian's does.
ln -s redis-server "$out/usr/bin/redis-sentinel"

# shellcheck source=docker/libs.sh
. "$(dirname -- "$0")/libs.sh"
files=("$real")
if [ -f "$shim" ]; then files+=("$shim"); fi
copy_libs "$out" "${files[@]}"
merge_lib_dirs "$out"
echo "rootfs: $(find "$out" -type f | wc -l) files, $(du -sh "$out" | cut -f1), redis-server $("$server" --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')"
