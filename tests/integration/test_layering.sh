#!/usr/bin/env bash
# test_layering.sh - the arrows point down: no file under src/ includes a
# header of a module in a higher layer (docs/design.md, "Layers").
#
# The layer table below is the one place that says which module sits on
# which floor. The check also fails when a directory under src/ has no
# floor (a new module must be placed), when docs/design.md names the
# modules in another order than the table, and when a file other than
# net/httpc.c includes libcurl (the one HTTP client). Modules of one
# floor may include each other; "then" in the design (insight, then
# notify) is a floor of its own here. Includes without a directory
# ("top_http.h") are the module's own headers.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# module:floor, bottom up, in the order docs/design.md lists them.
LAYERS="lib:1 net:2 state:2 sources:3 ingest:3 store:3 storage:4 query:5 insight:6
        notify:7 agent:8 server:8 run:8 top:8 report:8 check:8"

# Up-pointing includes still being moved, "file header" each, with the
# reason. Each is reported; one that no longer occurs is reported too, to
# be deleted here. Keep this empty.
ALLOW=(
)

declare -A floor
order=()
for e in $LAYERS; do
    floor[${e%%:*}]=${e##*:}
    order+=("${e%%:*}")
done

bad=0
declare -A used
for d in "$ROOT"/src/*/; do
    m=$(basename "$d")
    [ -n "${floor[$m]:-}" ] || { echo "src/$m has no layer in tests/integration/test_layering.sh"; bad=1; }
done

# Every '#include "dir/name.h"' of every source, as "file dir/name.h".
while read -r file hdr; do
    rel=${file#"$ROOT"/}
    if [ "$rel" = src/main.c ]; then
        continue # main.c sits on top of everything
    fi
    own=${rel#src/}
    own=${own%%/*}
    dep=${hdr%%/*}
    [ "$dep" = "$hdr" ] && continue # own header, same directory
    [ "$dep" = "$own" ] && continue
    if [ -z "${floor[$dep]:-}" ]; then
        echo "$rel includes \"$hdr\": $dep is not a module with a layer"
        bad=1
    elif [ "${floor[$dep]}" -gt "${floor[$own]}" ]; then
        msg="$rel includes \"$hdr\": $dep (layer ${floor[$dep]}) is above $own (layer ${floor[$own]})"
        if printf '%s\n' "${ALLOW[@]}" | grep -qxF "$rel $hdr"; then
            echo "allowed for now: $msg"
            used["$rel $hdr"]=1
        else
            echo "$msg"
            bad=1
        fi
    fi
done < <(grep -rHoE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[^"]+"' --include='*.c' --include='*.h' \
             "$ROOT/src" | sed -E 's/^([^:]+):.*"([^"]+)"$/\1 \2/')

# One HTTP client: only net/httpc.c talks to libcurl.
while read -r f; do
    echo "${f#"$ROOT"/} includes <curl/curl.h>: requests go through net/httpc.h"
    bad=1
done < <(grep -rlE '^[[:space:]]*#[[:space:]]*include[[:space:]]+<curl/' --include='*.c' --include='*.h' "$ROOT/src" |
             grep -vx "$ROOT/src/net/httpc.c")

for a in "${ALLOW[@]}"; do
    [ -n "${used[$a]:-}" ] || echo "note: '$a' no longer points up: delete it from ALLOW"
done

# docs/design.md names the modules bottom up; they must come in the
# table's order.
doc=$(sed -n '/^## Layers/,/^## /p' "$ROOT/docs/design.md" | grep -oE '`[a-z]+`' | tr -d '`' | tr '\n' ' ')
want=$(printf '%s ' "${order[@]}")
if [ "$doc" != "$want" ]; then
    echo "docs/design.md lists the layers as '$doc'; this check's table says '$want'"
    bad=1
fi

if [ $bad -ne 0 ]; then
    echo "FAIL: an include points up a layer (or the table and docs/design.md disagree)" >&2
    exit 1
fi
echo "ok: every include points down or sideways"
