#!/usr/bin/env bash
# test_deploy_systemd.sh - the systemd units of deploy/systemd as `make
# install` writes them: `systemd-analyze verify` (unit syntax, every
# directive known, the ExecStart binary and the Documentation= man pages
# present), the hardening kept (`systemd-analyze security --offline`
# exposure under a ceiling, the agent's two capabilities and the server's
# none), and the sysusers.d file makes the gpulse user. The install goes
# to PREFIX=$TMP/p, so the units name a binary and man pages that exist
# (the Makefile rewrites /usr/bin/gpulse and /etc/gpulse/ to that prefix).
. "$(dirname "$0")/lib.sh"
command -v systemd-analyze >/dev/null || fail "systemd-analyze is not installed (package systemd)"

P=$TMP/p
make -s -C "$ROOT" install PREFIX="$P" >"$TMP/make.log" 2>&1 || { cat "$TMP/make.log"; fail "make install"; }
U=$P/lib/systemd/system
n=0
for src in "$ROOT"/deploy/systemd/*.service; do
    u=$U/$(basename "$src")
    [ -f "$u" ] || fail "make install did not install $(basename "$src")"
    grep -qx "ExecStart=$P/bin/gpulse [a-z]* --config $P/etc/gpulse/gpulse.yml" "$u" ||
        fail "$(basename "$u"): ExecStart is not the installed gpulse with the installed config"
    for k in User=gpulse Group=gpulse ProtectSystem=strict StateDirectory=gpulse NoNewPrivileges=yes; do
        grep -qx "$k" "$u" || fail "$(basename "$u") lacks $k"
    done
    n=$((n + 1))
done
[ $n -eq 2 ] || fail "expected 2 units, found $n"

# verify prints its findings on stderr and may still exit 0: any output fails.
( cd "$U" && MANPATH=$P/share/man systemd-analyze verify ./gpulse-agent.service ./gpulse-server.service ) \
    >"$TMP/verify.log" 2>&1 || { cat "$TMP/verify.log"; fail "systemd-analyze verify failed"; }
[ ! -s "$TMP/verify.log" ] || { cat "$TMP/verify.log"; fail "systemd-analyze verify has findings"; }
note "systemd-analyze verify: both units clean"

# The check is real: a unit whose binary is missing fails it.
sed "s|^ExecStart=$P/bin/gpulse|ExecStart=$P/bin/gpulse-missing|" "$U/gpulse-server.service" >"$TMP/broken.service"
if ( cd "$TMP" && MANPATH=$P/share/man systemd-analyze verify ./broken.service ) >/dev/null 2>&1; then
    fail "systemd-analyze verify passed a unit with a missing binary"
fi

# The installed binary starts from the installed configuration as the
# server unit would (its port and store moved into $TMP), and stops clean.
GPULSE=$P/bin/gpulse start_server --config "$P/etc/gpulse/gpulse.yml"
stop_server
note "the installed gpulse server runs from the installed configuration"

# Exposure scores (0 best, 10 worst) at this tree's hardening; a change
# that loosens a unit beyond them fails here.
score() { ( cd "$U" && systemd-analyze security --offline=yes "./$1" 2>&1 ) |
          sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p'; }
a=$(score gpulse-agent.service); s=$(score gpulse-server.service)
[ -n "$a" ] && [ -n "$s" ] || fail "systemd-analyze security gave no score"
awk -v a="$a" -v s="$s" 'BEGIN { exit !(a <= 3.0 && s <= 2.0) }' ||
    fail "exposure agent $a (ceiling 3.0), server $s (ceiling 2.0)"
note "exposure: agent $a, server $s"

caps() { sed -n "s/^$1=//p" "$U/$2"; }
[ "$(caps CapabilityBoundingSet gpulse-agent.service)" = "CAP_SYS_PTRACE CAP_DAC_READ_SEARCH" ] ||
    fail "the agent's bounding set is not exactly CAP_SYS_PTRACE CAP_DAC_READ_SEARCH"
[ "$(caps AmbientCapabilities gpulse-agent.service)" = "CAP_SYS_PTRACE CAP_DAC_READ_SEARCH" ] ||
    fail "the agent's ambient set is not exactly CAP_SYS_PTRACE CAP_DAC_READ_SEARCH"
[ -z "$(caps CapabilityBoundingSet gpulse-server.service)" ] || fail "the server keeps capabilities"

# sysusers.d: the gpulse system user in an empty root.
S=$P/lib/sysusers.d/gpulse.conf
[ -f "$S" ] || fail "no sysusers.d/gpulse.conf"
mkdir -p "$TMP/sysroot/etc"
systemd-sysusers --root="$TMP/sysroot" "$S" >"$TMP/sysusers.log" 2>&1 || { cat "$TMP/sysusers.log"; fail "systemd-sysusers"; }
grep -q '^gpulse:x:[0-9]*:[0-9]*:gpulse GPU and memory tracker:/var/lib/gpulse:/usr/sbin/nologin$' \
    "$TMP/sysroot/etc/passwd" || { cat "$TMP/sysroot/etc/passwd"; fail "sysusers made no gpulse system user"; }
uid=$(awk -F: '$1 == "gpulse" {print $3}' "$TMP/sysroot/etc/passwd")
[ "$uid" -lt 1000 ] || fail "gpulse got uid $uid, not a system uid"
grep -q '^gpulse:' "$TMP/sysroot/etc/group" || fail "sysusers made no gpulse group"
echo "ok: 2 units verified (exposure agent $a, server $s), sysusers made gpulse (uid $uid)"
