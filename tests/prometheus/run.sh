#!/usr/bin/env bash
# The shipped Prometheus alert rules (deploy/prometheus/railyard-alerts.yml): promtool accepts
# them, and each fires on the series the controller writes, after its `for` and not before
# (railyard-alerts.test.yml). Skips (77) without promtool (Debian's prometheus package;
# deploy/install-deps.sh installs it).
set -u
SRC=${1:?usage: $0 SOURCE_DIR}
command -v promtool >/dev/null 2>&1 || { echo "SKIP promtool not installed"; exit 77; }
cd "$SRC/tests/prometheus" || exit 1
promtool check rules "$SRC/deploy/prometheus/railyard-alerts.yml" || exit 1
promtool test rules railyard-alerts.test.yml
