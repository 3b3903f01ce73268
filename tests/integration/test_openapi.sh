#!/usr/bin/env bash
# Integration: docs/openapi.yaml against the REST API's one route table (`railyard-controller api
# routes --json`), both ways: every (method, path) of the table is in the document and every one
# of the document is in the table, with the same permission (x-railyard-permission) and cluster
# scope (x-railyard-scoped); public routes and only they need no token (security: []); the route
# table of docs/rest.md lists the same rows, and its role x permission matrix is the one of
# controller/api/authz.c. Then the document is linted with @redocly/cli from npm
# (docs/redocly.yaml), installed once into BUILD/npm. No controller runs. Exit 77 (skipped) when
# the npm registry cannot be reached and the checks that ran passed.
. "$(dirname "$0")/lib.sh"

DOC=$SRC/docs/openapi.yaml
REST=$SRC/docs/rest.md
# Routes the controller serves and the documents describe before the route table has them. Each
# entry is "METHOD PATH"; remove it once the route is in controller/api/api_routes.c's table.
DOCUMENTED_AHEAD_OF_TABLE=()
# The @redocly/cli release the lint runs with: pinned so that every run applies the same rules
# (1.34.21, the newest 1.x, did not install: its @redocly/respect-core@1.34.21 was not there).
REDOCLY_VERSION=1.34.20
NPM_DIR=$BUILD/npm

# ---- the document and docs/rest.md against the route table ------------------------------------
PY=
for p in python3 /usr/bin/python3; do
	if "$p" -c 'import yaml' 2>/dev/null; then PY=$p && break; fi
done
[ -n "$PY" ] || die "python3 with PyYAML is needed (Debian: python3-yaml; deploy/install-deps.sh installs it)"
"$CTL" api routes --json >"$T/routes.json" || die "railyard-controller api routes --json"

compare() { # the differences on stdout; the status says whether there were any
	"$PY" - "$T/routes.json" "$DOC" "$REST" "$SRC/controller/api/authz.c" \
		"${DOCUMENTED_AHEAD_OF_TABLE[@]}" <<'EOF'
import json, re, sys, yaml

routes_file, doc_file, rest_file, authz_file, *ahead = sys.argv[1:]
ahead = set(ahead)
bad = 0

def problem(msg):
    global bad
    bad += 1
    print("  " + msg)

table = {}
for r in json.load(open(routes_file)):
    table[(r["method"], r["path"])] = (r["perm"], bool(r["scoped"]))

doc = yaml.safe_load(open(doc_file))
METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
PERMS = ("public", "read", "operate", "configure", "admin")
documented = {}
for path, item in (doc.get("paths") or {}).items():
    for m, op in item.items():
        if m not in METHODS:
            continue
        key = (m.upper(), path)
        perm, scoped = op.get("x-railyard-permission"), op.get("x-railyard-scoped")
        if perm not in PERMS:
            problem("openapi.yaml: %s %s: x-railyard-permission %r is not one of %s"
                    % (key + (perm, "|".join(PERMS))))
        if not isinstance(scoped, bool):
            problem("openapi.yaml: %s %s: x-railyard-scoped %r is not true or false"
                    % (key + (scoped,)))
        if (op.get("security") == []) != (perm == "public"):
            problem("openapi.yaml: %s %s: security: [] is for public routes and only them" % key)
        documented[key] = (perm, scoped)

def both_ways(what, rows):
    for key in sorted(table.keys() - rows.keys()):
        problem("%s: %s %s is routed (%s%s) but not described"
                % ((what,) + key + (table[key][0], ", cluster-scoped" if table[key][1] else "")))
    for key in sorted(rows.keys() - table.keys()):
        if " ".join(key) not in ahead:
            problem("%s: %s %s is described but not routed" % ((what,) + key))
    for key in sorted(rows.keys() & table.keys()):
        if rows[key] != table[key]:
            fmt = lambda pair: "%s, %s" % (pair[0], "cluster-scoped" if pair[1] else "not scoped")
            problem("%s: %s %s: %s here; the table says %s"
                    % ((what,) + key + (fmt(rows[key]), fmt(table[key]))))
    for a in sorted(ahead):
        if tuple(a.split(" ", 1)) in table:
            print("  note: %s is in the route table now: drop it from DOCUMENTED_AHEAD_OF_TABLE" % a)

both_ways("openapi.yaml", documented)

# docs/rest.md: the rows "| METHOD | `PATH` | PERM | yes/no |" of its route table.
row = re.compile(r"^\|\s*(GET|PUT|POST|DELETE|PATCH)\s*\|\s*`?(/[^`|\s]*)`?\s*\|\s*(\w+)\s*\|\s*(yes|no)\s*\|")
rest = {}
for line in open(rest_file):
    mo = row.match(line)
    if mo:
        rest[(mo.group(1), mo.group(2))] = (mo.group(3), mo.group(4) == "yes")
both_ways("rest.md", rest)

# docs/rest.md's role x permission matrix against controller/api/authz.c's table (columns read,
# operate, configure, admin, as there).
c_row = re.compile(r'"(\w+)",\s*\{\s*(true|false),\s*(true|false),\s*(true|false),\s*(true|false)\s*\}')
md_row = re.compile(r"^\|\s*(\w+)\s*\|\s*(yes|no)\s*\|\s*(yes|no)\s*\|\s*(yes|no)\s*\|\s*(yes|no)\s*\|\s*$")
authz = {m.group(1): [v == "true" for v in m.groups()[1:]] for m in c_row.finditer(open(authz_file).read())}
matrix = {}
for line in open(rest_file):
    mo = md_row.match(line)
    if mo:
        matrix[mo.group(1)] = [v == "yes" for v in mo.groups()[1:]]
if not authz:
    problem("authz.c: no role rows found")
if matrix != authz:
    problem("rest.md: the role x permission matrix %s differs from authz.c's %s" % (matrix, authz))
print("  %d routes in the table, %d operations in openapi.yaml, %d rows in rest.md"
      % (len(table), len(documented), len(rest)))
sys.exit(1 if bad else 0)
EOF
}
compare >"$T/compare.txt" 2>&1
rc=$?
cat "$T/compare.txt"
check "openapi.yaml and rest.md describe every route of the table, and nothing else, with its permission and scope; rest.md's role matrix is authz.c's" test "$rc" -eq 0

# ---- lint with @redocly/cli ---------------------------------------------------------------------
REDOCLY=$NPM_DIR/node_modules/.bin/redocly
SKIPPED=
have_redocly() { [ -x "$REDOCLY" ] && [ "$("$REDOCLY" --version 2>/dev/null)" = "$REDOCLY_VERSION" ]; }
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true NO_UPDATE_NOTIFIER=1
if ! have_redocly; then
	command -v npm >/dev/null || die "npm is needed to lint openapi.yaml (deploy/install-deps.sh installs it)"
	if ! timeout 60 npm ping --fetch-retries=0 --fetch-timeout=20000 >"$T/npm-ping.log" 2>&1; then
		why=$(grep -m1 -o 'reason: .*' "$T/npm-ping.log" || sed -n 's/^npm error code //p' "$T/npm-ping.log" | head -1)
		SKIPPED="the npm registry $(npm config get registry 2>/dev/null) cannot be reached (${why:-no answer in 60 s})"
	else
		mkdir -p "$NPM_DIR"
		timeout 220 npm install --prefix "$NPM_DIR" --no-audit --no-fund \
			"@redocly/cli@$REDOCLY_VERSION" >"$T/npm-install.log" 2>&1
		if ! have_redocly; then
			if ! timeout 60 npm ping --fetch-retries=0 --fetch-timeout=20000 >/dev/null 2>&1; then
				SKIPPED="the npm registry went away while installing @redocly/cli"
			else
				tail -20 "$T/npm-install.log"
				fail "npm install @redocly/cli@$REDOCLY_VERSION into $NPM_DIR"
			fi
		fi
	fi
fi
if have_redocly; then
	# The binary itself rather than npx: npx would fetch a package named "redocly" from the
	# registry if the local one were missing.
	"$REDOCLY" lint --config "$SRC/docs/redocly.yaml" "$DOC" >"$T/lint.log" 2>&1
	rc=$?
	cat "$T/lint.log"
	check "redocly lint (@redocly/cli $REDOCLY_VERSION, recommended-strict) accepts openapi.yaml" test "$rc" -eq 0
fi

if [ -n "$SKIPPED" ] && [ "$FAILS" -eq 0 ]; then
	echo "$PASSES passed, lint not run"
	echo "SKIP: redocly lint: $SKIPPED"
	exit 77
fi
[ -z "$SKIPPED" ] || echo "SKIP: redocly lint: $SKIPPED"
finish
