#!/usr/bin/env bash
# test_man_pages.sh - the man pages (build/man, `make man`) render without
# a warning from man or groff, and say what the code says: every command
# of `gpulse help` has its entry in gpulse(1), every flag that a command's
# --help prints is in its page, every YAML key is in gpulse.yml(5), and
# each page carries VERSION.
. "$(dirname "$0")/lib.sh"

MAN=$ROOT/build/man
pages=(gpulse.1 gpulse-agent.1 gpulse-server.1 gpulse.yml.5)
version=$(cat "$ROOT/VERSION")
for p in "${pages[@]}"; do
    [ -s "$MAN/$p" ] || fail "no $MAN/$p (make man)"
    w=$(LC_ALL=C.UTF-8 man --warnings -l "$MAN/$p" 2>&1 >/dev/null) || fail "man cannot render $p"
    [ -z "$w" ] || { echo "$w"; fail "man warns about $p"; }
    w=$(groff -man -ww -z "$MAN/$p" 2>&1) || fail "groff cannot read $p"
    [ -z "$w" ] || { echo "$w"; fail "groff warns about $p"; }
    head -5 "$MAN/$p" | grep -q "^\.TH .*\"gpulse $version\"" || fail "$p does not say version $version"
    # The roff source with \- as plain hyphens, for finding flags.
    sed 's/\\-/-/g' "$MAN/$p" >"$TMP/$p.txt"
done

# in_pages FLAG PAGE...: FLAG is written in one of the pages.
in_pages() {
    local f=$1; shift
    for p in "$@"; do grep -qE -- "(^|[^a-z0-9-])$f([^a-z0-9-]|$)" "$TMP/$p.txt" && return 0; done
    return 1
}

cmds=$("$GPULSE" help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }')
[ "$(echo "$cmds" | wc -w)" -ge 7 ] || fail "could not read the commands from 'gpulse help'"
checked=0
for c in $cmds; do
    grep -qE "^\.B(I)? \"?$c( |\"|$)" "$TMP/gpulse.1.txt" || fail "gpulse(1) has no entry for '$c'"
    [ "$c" = help ] || [ "$c" = version ] && continue
    case $c in
        agent) where=(gpulse-agent.1) ;;
        server) where=(gpulse-server.1) ;;
        up) where=(gpulse.1 gpulse-agent.1 gpulse-server.1) ;;
        *) where=(gpulse.1) ;;
    esac
    help=$("$GPULSE" "$c" --help 2>&1) || true
    flags=$(echo "$help" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
    [ -n "$flags" ] || fail "'gpulse $c --help' names no flag"
    for f in $flags; do
        in_pages "$f" "${where[@]}" || fail "'gpulse $c --help' has $f but ${where[*]} do not"
        checked=$((checked + 1))
    done
    # Every YAML key that --help names is a key of gpulse.yml(5).
    for k in $(echo "$help" | grep -oE '\(yaml: [a-z]+\.[a-z0-9_]+' | sed 's/.*\.//' | sort -u); do
        grep -qF "\\fB$k\\fR" "$MAN/gpulse.yml.5" || fail "gpulse.yml(5) lacks the key $k (gpulse $c)"
    done
done
note "$checked flags of $(echo "$cmds" | wc -w) commands found in their pages"

# The table generator refuses what it does not know.
rc=0; "$GPULSE" help-man flags nosuch >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "help-man with an unknown section exited $rc, not 2"
echo "ok: man pages render cleanly and match --help"
