# docker/libs.sh: sourced by the scripts that build an image's root file
# system out of what the host has (no registry is reachable on the
# project's machines, so images are made FROM scratch).

# copy_libs OUT FILE...: copies every shared library ldd lists for each
# FILE under OUT, at the paths the dynamic loader looks in. A file that
# needs a library the host lacks is an error.
copy_libs() {
	local out=$1 f lib real
	shift
	for f in "$@"; do
		# Not grep -q: under pipefail, its early exit could fail ldd.
		if ldd "$f" 2>/dev/null | grep 'not found' >/dev/null; then
			echo "$f needs libraries the host lacks:" >&2
			ldd "$f" | grep 'not found' >&2
			return 1
		fi
		# A file that is not a dynamic executable (a script) loads none.
		{ ldd "$f" 2>/dev/null || true; } | awk '/=> \//{print $3} /^[ \t]*\/[^ ]+ \(/{print $1}'
	done | sort -u | while read -r lib; do
		# The library once, at its real path, and the path ldd printed
		# as a link to it, so the loader finds it either way.
		real=$(readlink -f "$lib")
		if [ ! -e "$out$real" ]; then
			mkdir -p "$out$(dirname "$real")"
			cp "$real" "$out$real"
		fi
		if [ "$lib" != "$real" ] && [ ! -e "$out$lib" ] && [ ! -L "$out$lib" ]; then
			mkdir -p "$out$(dirname "$lib")"
			ln -s "$real" "$out$lib"
		fi
	done
}

# merge_lib_dirs OUT: the loader's fixed path on x86_64 and aarch64 lives
# under /lib64 or /lib; Debian's /lib is a symlink to /usr/lib, so make
# both resolve.
merge_lib_dirs() {
	local out=$1 d
	for d in lib lib64; do
		if [ -d "$out/$d" ] && [ ! -L "$out/$d" ] && [ -d "$out/usr/$d" ]; then
			# What is there already is the real file; the link must not replace it.
			cp -an "$out/$d/." "$out/usr/$d/" && rm -rf "${out:?}/$d"
		fi
		if [ -d "$out/usr/$d" ] && [ ! -e "$out/$d" ]; then ln -s "usr/$d" "$out/$d"; fi
	done
}
