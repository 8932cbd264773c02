#!/bin/bash
# SPDX-License-Identifier: MIT
# The neutral modem model's seam (docs/ARCHITECTURE.md "Modems and sessions"): libqmi is seen
# only in src/daemon/qmi/, libmbim only in src/daemon/mbim/. Everything else under src/ and
# include/ reads the modem through modem-model.h and modem-control.h. A control plane's
# private headers are the headers in its folder and any header that includes its library;
# including one of them from outside the folder breaks the seam as much as the library does.
# tests/ (and the simulator in tests/sim) speak QMI and MBIM themselves: not checked.
source "$(dirname "$0")/../support/lib.sh" || exit 1
cd "$SOURCE_DIR"

mapfile -t files < <(find src include -name '*.[ch]' | sort)
[ ${#files[@]} -gt 20 ] || fail "only ${#files[@]} C files under src/ and include/"

# The headers private to a control plane: name of the library, its folder.
private_headers() {
	local lib=$1 dir=$2
	{
		find "$dir" -name '*.h' -printf '%f\n'
		grep -lE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]$lib(\.h|/)" \
			--include='*.h' -r src include | xargs -r -n1 basename
	} | sort -u
}

bad=0
check() {
	local lib=$1 dir=$2 name
	local -a private
	mapfile -t private < <(private_headers "$lib" "$dir")
	[ ${#private[@]} -gt 0 ] || fail "no private headers found for $lib in $dir"
	local pattern="[<\"]($lib(\.h|/)"
	for name in "${private[@]}"; do
		pattern+="|${name//./\\.}\"" # private headers are included with quotes
	done
	pattern="^[[:space:]]*#[[:space:]]*include[[:space:]]*$pattern)"
	for f in "${files[@]}"; do
		[[ $f == "$dir"/* ]] && continue
		while IFS= read -r hit; do
			echo "layering: $f:$hit: $lib (or a header private to $dir) outside $dir" >&2
			bad=$((bad + 1))
		done < <(grep -nE "$pattern" "$f" | cut -d: -f1)
	done
	echo "layering: $lib: private to $dir (${private[*]})"
}

check libqmi-glib src/daemon/qmi
check libmbim-glib src/daemon/mbim
[ $bad -eq 0 ] || fail "$bad include(s) cross the control planes' seam"
echo "layering: ${#files[@]} files: libqmi only in src/daemon/qmi/, libmbim only in src/daemon/mbim/"
