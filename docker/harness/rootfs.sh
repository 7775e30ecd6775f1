#!/usr/bin/env bash
# Builds the root file system of the harness's own image into $1 (a
# directory named rootfs, emptied first) out of what the host has, as the
# node image is built (no registry is reachable on the project's
# machines): the harness and the clock shim under /lockharness; Debian's
# redis-server (redis-sentinel is the same binary by another name);
# PostgreSQL's server and initdb with their share files, and the time
# zones they read; python3 with its standard library, redis-py and
# psycopg2, for the reference worker; /bin/sh, which runs a worker command
# and which initdb runs the server through; and every library they load.
# Usage: docker/harness/rootfs.sh OUTDIR [HARNESS [SHIM]]
set -euo pipefail
out=${1:?usage: rootfs.sh OUTDIR [HARNESS [SHIM]]}
harness=${2:-bin/harness}
shim=${3:-bin/libclockshim.so}
case "$(basename -- "$out")" in
rootfs) ;;
*) echo "rootfs.sh: OUTDIR must be a directory named rootfs (it is emptied first), got $out" >&2; exit 2 ;;
esac
for f in "$harness" "$shim"; do
	[ -f "$f" ] || { echo "rootfs.sh: no $f: run 'make build' first" >&2; exit 1; }
done
server=$(command -v redis-server) || { echo "redis-server not found: run 'make setup' first" >&2; exit 1; }
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
[ -n "$pgbin" ] || { echo "PostgreSQL not found under /usr/lib/postgresql: run 'make setup' first" >&2; exit 1; }
pgversion=$(basename "$(dirname "$pgbin")")
python=$(readlink -f /usr/bin/python3)
stdlib=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
# The packages the reference worker imports, and what they import.
# Their metadata too: redis-py reads its version from it.
packages=$(/usr/bin/python3 - <<'PY'
import glob, importlib, os
for name in ["redis", "psycopg2", "packaging", "async_timeout", "deprecated", "wrapt"]:
    try:
        m = importlib.import_module(name)
    except ImportError:
        continue
    path = m.__file__
    path = os.path.dirname(path) if path.endswith("__init__.py") else path
    print(path)
    for info in glob.glob(os.path.join(os.path.dirname(path), "*.*-info")):
        if os.path.basename(info).split("-")[0].lower() == name.lower():
            print(info)
PY
)

# shellcheck source=docker/libs.sh
. "$(dirname -- "$0")/../libs.sh"
rm -rf "$out"
mkdir -p "$out/lockharness/bin" "$out/usr/bin" "$out/bin" "$out/tmp" "$out/data" "$out/etc"
chmod 1777 "$out/tmp"

cp "$harness" "$out/lockharness/bin/harness"
cp "$shim" "$out/lockharness/bin/libclockshim.so"
cp -L "$server" "$out/usr/bin/redis-server"
ln -s redis-server "$out/usr/bin/redis-sentinel"
cp -L /bin/sh "$out/bin/sh"

mkdir -p "$out$pgbin" "$out/usr/share/postgresql"
for b in postgres initdb pg_ctl; do cp -L "$pgbin/$b" "$out$pgbin/$b"; done
# The server's modules, without LLVM's JIT (and its bitcode) and the
# build files for extensions.
mkdir -p "$out$(dirname "$pgbin")/lib"
find "$(dirname "$pgbin")/lib" -maxdepth 1 -name '*.so' ! -name 'llvmjit*' ! -name sepgsql.so -exec cp -L {} "$out$(dirname "$pgbin")/lib/" \;
cp -a "/usr/share/postgresql/$pgversion" "$out/usr/share/postgresql/"
mkdir -p "$out/usr/share"
cp -a /usr/share/zoneinfo "$out/usr/share/zoneinfo"

cp "$python" "$out/usr/bin/$(basename "$python")"
ln -s "$(basename "$python")" "$out/usr/bin/python3"
mkdir -p "$out$stdlib"
# The standard library without what no worker runs: its own tests, IDLE,
# Tk, pip's bootstrap, 2to3, the build configuration.
(cd "$stdlib" && tar cf - --exclude=./test --exclude=./idlelib --exclude=./tkinter --exclude=./turtledemo \
	--exclude=./ensurepip --exclude=./lib2to3 --exclude='./config-*' --exclude=./site-packages .) | (cd "$out$stdlib" && tar xf -)
while read -r p; do
	[ -n "$p" ] || continue
	mkdir -p "$out$(dirname "$p")"
	cp -a "$p" "$out$p"
done <<<"$packages"

# initdb refuses root and the harness then runs the server as postgres.
pguid=$(id -u postgres 2>/dev/null || echo 101)
pggid=$(id -g postgres 2>/dev/null || echo 104)
cat >"$out/etc/passwd" <<PASSWD
root:x:0:0:root:/root:/bin/sh
postgres:x:$pguid:$pggid:PostgreSQL administrator:/var/lib/postgresql:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/sh
PASSWD
cat >"$out/etc/group" <<GROUP
root:x:0:
postgres:x:$pggid:
nogroup:x:65534:
GROUP
mkdir -p "$out/root" "$out/var/lib/postgresql"

# Every binary and extension module the image runs, and their libraries.
mapfile -t elves < <(find "$out/lockharness" "$out/usr/bin" "$out/bin" "$out$pgbin" "$out$(dirname "$pgbin")/lib" "$out$stdlib/lib-dynload" \
	"$out/usr/lib/python3" -type f \( -perm -u+x -o -name '*.so' -o -name '*.so.*' \) 2>/dev/null | sed "s|^$out||")
hostpaths=()
for e in "${elves[@]}"; do
	if [ -f "$e" ]; then hostpaths+=("$e"); fi
done
# The harness's copies are not at the host's paths; ldd reads the host's.
hostpaths+=("$(readlink -f "$harness")" "$(readlink -f "$shim")")
copy_libs "$out" "${hostpaths[@]}"
merge_lib_dirs "$out"
echo "rootfs: $(find "$out" -type f | wc -l) files, $(du -sh "$out" | cut -f1): harness $("$harness" version 2>/dev/null | head -1 | awk '{print $2}'), redis-server $("$server" --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'), postgres $pgversion, $(basename "$python")"
