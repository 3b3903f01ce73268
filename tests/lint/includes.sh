#!/bin/sh
# The include rule of docs/architecture.md ("Who may call whom"), checked: each line of RULES
# names a file or folder (relative to the source root), an extended regular expression that no
# #include line of a C file under it may match, and why. A violation fails naming the file, the
# line and the rule. Adding a front end to the rule is adding a line.
#
# Usage: includes.sh [SOURCE_DIR]   (default: $RAILYARD_SOURCE_DIR, else this script's ../..)
set -u

src=${1:-${RAILYARD_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}}

RULES='
controller/api        "controller/store/      front ends call services, not the store
controller/portal     "controller/store/      front ends call services, not the store
client                "controller/store/      front ends call services, not the store
controller/cli        "controller/store/      front ends call services, not the store
controller/engine     "controller/server_int\.h"  the engine sees the server through controller/session.h
controller/rollout    "controller/server_int\.h"  passes see the server through controller/session.h
controller/campaign   "controller/server_int\.h"  passes see the server through controller/session.h
controller/bench      "controller/server_int\.h"  passes see the server through controller/session.h
controller/signoff    "controller/server_int\.h"  passes see the server through controller/session.h
controller/events.c   "controller/api/        the event stream is below the API (scope: controller/scope.h)
controller/events.h   "controller/api/        the event stream is below the API (scope: controller/scope.h)
controller/scope.c    "controller/(api|store)/  the scope check is below the API and the store
'

tab=$(printf '\t')
echo "$RULES" | while read -r where pattern why; do
	[ -n "$where" ] || continue
	if [ ! -e "$src/$where" ]; then
		echo "includes.sh: rule for $where: no such file or folder" >&2
		exit 1
	fi
	files=$(find "$src/$where" -type f \( -name '*.c' -o -name '*.h' \) | sort)
	for f in $files; do
		hits=$(grep -nE "^[[:space:]]*#[[:space:]]*include[[:space:]]*$pattern" "$f")
		if [ -n "$hits" ]; then
			echo "$hits" | while IFS= read -r h; do
				echo "${f#"$src"/}:${h%%:*}: ${h#*:}${tab}-- $why" >&2
			done
			echo x
		fi
	done
done >"${TMPDIR:-/tmp}/includes.$$" || { rm -f "${TMPDIR:-/tmp}/includes.$$"; exit 1; }
bad=$(wc -l <"${TMPDIR:-/tmp}/includes.$$")
rm -f "${TMPDIR:-/tmp}/includes.$$"
if [ "$bad" -ne 0 ]; then
	echo "includes.sh: $bad file(s) break the include rule (docs/architecture.md)" >&2
	exit 1
fi
echo "includes.sh: every rule holds"
exit 0
