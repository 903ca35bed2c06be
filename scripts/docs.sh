#!/bin/sh
# docs.sh - rewrites the generated parts of the docs from the code: the
# metric reference of docs/metrics.md (between its markers) from
# `gpulse metrics-reference`. Run after changing a metric family; the unit
# test metrics_ref.docs_match_code fails until the page is rewritten.
# GPULSE=path/to/gpulse picks the binary (default: build/rel/gpulse, built).
set -eu
cd "$(dirname "$0")/.."
GPULSE=${GPULSE:-build/rel/gpulse}
[ "$GPULSE" != build/rel/gpulse ] || make -s build/rel/gpulse
page=docs/metrics.md
ref=$(mktemp)
trap 'rm -f "$ref" "$ref.page"' EXIT
"$GPULSE" metrics-reference >"$ref"
awk -v ref="$ref" '
    /^<!-- BEGIN metrics-reference / { print; while ((getline l < ref) > 0) print l; skip = 1; found = 1; next }
    /^<!-- END metrics-reference -->/ { skip = 0 }
    !skip { print }
    END { if (!found) { print "docs.sh: no metrics-reference markers" > "/dev/stderr"; exit 1 } }
' "$page" >"$ref.page"
cat "$ref.page" >"$page"
echo "docs.sh: $page rewritten"
