#!/usr/bin/env bash
# test_make_install.sh - `make install` and `make uninstall` with PREFIX
# and DESTDIR: the expected files with their modes, an installed binary
# that runs `gpulse up` from the installed configuration, a changed
# configuration kept across install and uninstall, and nothing else left.
. "$(dirname "$0")/lib.sh"

D=$TMP/dest
mk() { make -s -C "$ROOT" "$@" >>"$TMP/make.log" 2>&1 || { cat "$TMP/make.log"; fail "make $*"; }; }

mk install DESTDIR="$D" PREFIX=/usr
expect=("755 usr/bin/gpulse" "644 etc/gpulse/gpulse.yml" "644 usr/share/man/man1/gpulse.1"
        "644 usr/share/man/man1/gpulse-agent.1" "644 usr/share/man/man1/gpulse-server.1"
        "644 usr/share/man/man5/gpulse.yml.5" "644 usr/share/doc/gpulse/README.md"
        "644 usr/share/doc/gpulse/config.md" "644 usr/share/doc/gpulse/examples/gpulse.yml")
units=0
for u in "$ROOT"/deploy/systemd/*.service; do
    [ -e "$u" ] && expect+=("644 usr/lib/systemd/system/$(basename "$u")") && units=$((units + 1))
done
for u in "$ROOT"/deploy/systemd/*.sysusers; do
    [ -e "$u" ] && expect+=("644 usr/lib/sysusers.d/$(basename "$u" .sysusers).conf")
done
for e in "${expect[@]}"; do
    f=$D/${e#* }
    [ -f "$f" ] || fail "make install did not put /${e#* }"
    [ "$(stat -c %a "$f")" = "${e%% *}" ] || fail "/${e#* } has mode $(stat -c %a "$f"), not ${e%% *}"
done
for u in "$D"/usr/lib/systemd/system/*.service; do
    [ -e "$u" ] || continue
    grep -q '^ExecStart=/usr/bin/gpulse ' "$u" || fail "$u does not start /usr/bin/gpulse"
done
cmp -s "$D/usr/share/doc/gpulse/examples/gpulse.yml" "$ROOT/gpulse.example.yaml" || fail "example differs"
grep -qx '  data_dir: /var/lib/gpulse' "$D/etc/gpulse/gpulse.yml" || fail "installed config keeps its store elsewhere"
"$D/usr/bin/gpulse" version | grep -x "gpulse $(cat "$ROOT/VERSION")" >/dev/null || fail "installed binary's version"
note "installed ${#expect[@]} files ($units systemd units)"

# The installed binary runs from the installed configuration (its store
# and step socket moved into $TMP, all else as installed).
GPULSE=$D/usr/bin/gpulse SERVER_CMD=up start_server --config "$D/etc/gpulse/gpulse.yml" \
    --simulate 1x1xH100 --steps-socket "$TMP/steps.sock"
wait_until 15 sh -c "curl -sf $SERVER_URL/metrics | grep -q '^DCGM_FI_DEV_GPU_UTIL{'" ||
    { cat "$SERVER_LOG"; fail "installed gpulse up serves no GPU metrics"; }
stop_server

# A changed configuration survives a reinstall and an uninstall.
echo "# local change" >>"$D/etc/gpulse/gpulse.yml"
mk install DESTDIR="$D" PREFIX=/usr
tail -1 "$D/etc/gpulse/gpulse.yml" | grep -x '# local change' >/dev/null || fail "install replaced a changed config"
mk uninstall DESTDIR="$D" PREFIX=/usr
left=$(cd "$D" && find . -type f)
[ "$left" = ./etc/gpulse/gpulse.yml ] || fail "after uninstall, left: $left"

# Unchanged, uninstall removes it too; PREFIX=/usr/local puts the
# configuration under /usr/local/etc.
rm -rf "$D"
mk install DESTDIR="$D" PREFIX=/usr
mk uninstall DESTDIR="$D" PREFIX=/usr
left=$(cd "$D" && find . -type f)
[ -z "$left" ] || fail "after uninstall, left: $left"
mk install DESTDIR="$D/l"
[ -x "$D/l/usr/local/bin/gpulse" ] && [ -f "$D/l/usr/local/etc/gpulse/gpulse.yml" ] &&
    [ -f "$D/l/usr/local/share/man/man5/gpulse.yml.5" ] || fail "PREFIX=/usr/local layout"
grep -qx '  data_dir: /usr/local/var/lib/gpulse' "$D/l/usr/local/etc/gpulse/gpulse.yml" ||
    fail "PREFIX=/usr/local config's store"
mk uninstall DESTDIR="$D/l"
[ -z "$(cd "$D/l" && find . -type f)" ] || fail "PREFIX=/usr/local uninstall left files"
echo "ok: make install / uninstall"
