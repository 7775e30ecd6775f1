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

libs() {
	if ldd "$1" | grep -q 'not found'; then
		echo "rootfs.sh: $1 needs libraries the host lacks:" >&2
		ldd "$1" | grep 'not found' >&2
		exit 1
	fi
	ldd "$1" | awk '/=> \//{print $3} /^[ \t]*\/[^ ]+ \(/{print $1}'
}
list=$(
	libs "$real"
	if [ -f "$shim" ]; then libs "$shim"; fi
)
sort -u <<<"$list" | while read -r lib; do
	# Copy the file under both the path ldd printed and the one the
	# symlink points to, so the loader finds it either way.
	for p in "$lib" "$(readlink -f "$lib")"; do
		mkdir -p "$out$(dirname "$p")"
		cp -L "$lib" "$out$p"
	done
done
# The loader's fixed path on x86_64 and aarch64 lives under /lib64 or /lib;
# Debian's /lib is a symlink to /usr/lib, so make both resolve.
for d in lib lib64; do
	if [ -d "$out/$d" ] && [ -d "$out/usr/$d" ]; then cp -a "$out/$d/." "$out/usr/$d/" && rm -rf "${out:?}/$d"; fi
	[ -d "$out/usr/$d" ] && [ ! -e "$out/$d" ] && ln -s "usr/$d" "$out/$d"
done
echo "rootfs: $(find "$out" -type f | wc -l) files, $(du -sh "$out" | cut -f1), redis-server $("$server" --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')"
