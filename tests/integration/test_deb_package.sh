#!/usr/bin/env bash
# test_deb_package.sh - the Debian package end to end: built from a copy
# of this tree with dpkg-buildpackage, checked by lintian (no errors, no
# warnings but overridden ones, each override with its reason), installed
# with apt into a clean Debian 12 root made by debootstrap from this
# machine's Debian mirror, started there as the gpulse user with the
# packaged configuration, its /metrics scraped from outside the chroot
# (which shares the network), then purged. The minbase root is cached
# under build/debroot/, so only the first run pays for debootstrap; each
# run installs into a fresh copy of it.
# gp-timeout: 1200
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || fail "needs root (debootstrap, chroot, mount)"
for c in dpkg-buildpackage dh lintian debootstrap; do
    command -v "$c" >/dev/null || fail "$c is not installed (scripts/deps.sh test)"
done

ROOTFS=$TMP/root
GP_PID=""
# Stop the chrooted gpulse and unmount the root's /proc before lib.sh's
# cleanup removes $TMP (rm -rf would otherwise walk into the mount).
teardown() {
    [ -n "$GP_PID" ] && { kill "$GP_PID" 2>/dev/null; wait "$GP_PID" 2>/dev/null; }
    if mountpoint -q "$ROOTFS/proc" 2>/dev/null; then
        umount "$ROOTFS/proc" 2>/dev/null || umount -l "$ROOTFS/proc"
    fi
    cleanup
}
trap teardown EXIT
trap 'exit 143' TERM INT # run.sh's timeout: still tear down

# The Debian mirror this machine's apt uses for bookworm (deb822 .sources
# or one-line sources.list); GP_DEBIAN_MIRROR overrides.
debian_mirror() {
    [ -n "${GP_DEBIAN_MIRROR:-}" ] && { echo "$GP_DEBIAN_MIRROR"; return; }
    local m=""
    if compgen -G '/etc/apt/sources.list.d/*.sources' >/dev/null; then
        m=$(awk 'FNR == 1 || /^[[:space:]]*$/ { if (s && u) { print u; exit } u = ""; s = 0 }
                 /^URIs:/ { u = $2 }
                 /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") s = 1 }
                 END { if (s && u) print u }' /etc/apt/sources.list.d/*.sources | head -1)
    fi
    if [ -z "$m" ] && [ -f /etc/apt/sources.list ]; then
        m=$(sed -E 's/\[[^]]*\] *//' /etc/apt/sources.list |
            awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }')
    fi
    echo "${m:-http://deb.debian.org/debian}"
}

version=$(cat "$ROOT/VERSION")
[ "$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -S Version)" = "$version" ] ||
    fail "debian/changelog's version is not VERSION ($version)"

# Build-Depends names scripts/deps.sh's build list, less build-essential's.
want=$(sed -n '/^build_pkgs=(/,/)/p' "$ROOT/scripts/deps.sh" | tr -d '()' | sed 's/build_pkgs=//' |
       tr ' ' '\n' | grep -vxE 'gcc|make|libc6-dev|' | sort)
have=$(awk '/^Build-Depends:/ { on = 1; sub(/^Build-Depends:/, ""); print; next }
            on && /^[ \t]/ { print; next } { on = 0 }' "$ROOT/debian/control" |
       tr ',' '\n' | sed 's/(.*//; s/[[:space:]]//g' | grep -vxE 'debhelper-compat|' | sort)
[ "$want" = "$have" ] || { diff <(echo "$want") <(echo "$have"); fail "debian/control's Build-Depends differ from scripts/deps.sh's build list"; }

note "building the package from a copy of the tree"
src=$TMP/src/gpulse-$version
mkdir -p "$src"
# The tree as git sees it (untracked files too, ignored ones not); outside
# a git checkout, everything but build/.
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$ROOT" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$src"
else
    (cd "$ROOT" && tar --exclude=./build -cf - .) | tar -xf - -C "$src"
fi
(cd "$src" && dpkg-buildpackage -us -uc -b -j2) >"$TMP/build.log" 2>&1 ||
    { tail -40 "$TMP/build.log"; fail "dpkg-buildpackage failed"; }
deb=$TMP/src/gpulse_${version}_$(dpkg-architecture -qDEB_HOST_ARCH).deb
[ -f "$deb" ] || fail "no $deb"

dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's|^\./|/|' >"$TMP/contents"
expect=(/usr/bin/gpulse /etc/gpulse/gpulse.yml /usr/share/man/man1/gpulse.1.gz
        /usr/share/man/man1/gpulse-agent.1.gz /usr/share/man/man1/gpulse-server.1.gz
        /usr/share/man/man5/gpulse.yml.5.gz /usr/share/doc/gpulse/examples/gpulse.yml
        /usr/share/doc/gpulse/copyright)
for u in "$ROOT"/deploy/systemd/*.service; do
    [ -e "$u" ] && expect+=("/lib/systemd/system/$(basename "$u")")
done
for u in "$ROOT"/deploy/systemd/*.sysusers; do
    [ -e "$u" ] && expect+=("/usr/lib/sysusers.d/$(basename "$u" .sysusers).conf")
done
for f in "${expect[@]}"; do
    grep -qxF "$f" "$TMP/contents" || fail "the package lacks $f"
done
# A packaged unit must start from a configuration the package installs.
for u in "$ROOT"/deploy/systemd/*.service; do
    [ -e "$u" ] || continue
    for c in $(sed -n 's/^ExecStart=.*--config[ =]\([^ ]*\).*/\1/p' "$u"); do
        grep -qxF "$c" "$TMP/contents" ||
            fail "$(basename "$u") starts with --config $c, which the package does not install"
    done
done
note "package holds ${#expect[@]} expected files ($(wc -l <"$TMP/contents") entries)"

note "lintian"
for o in "$ROOT"/debian/*lintian-overrides "$ROOT"/debian/source/lintian-overrides; do
    [ -e "$o" ] || continue
    awk '/^#/ { why = 1; next } /^[[:space:]]*$/ { next } { if (!why) bad = 1; why = 0 }
         END { exit bad }' "$o" || fail "$o: every override needs a comment above it saying why"
done
lintian --fail-on error,warning "${deb%.deb}.changes" >"$TMP/lintian.log" 2>&1 ||
    { cat "$TMP/lintian.log"; fail "lintian found errors or warnings"; }
grep -v 'running with root privileges' "$TMP/lintian.log" || true

note "the packaged man pages render"
mkdir -p "$TMP/x" && dpkg-deb -x "$deb" "$TMP/x"
for p in "$TMP"/x/usr/share/man/man*/*.gz; do
    w=$(LC_ALL=C.UTF-8 man --warnings -l "$p" 2>&1 >/dev/null) || fail "man cannot render $p"
    [ -z "$w" ] || { echo "$w"; fail "man warns about $(basename "$p")"; }
done

cache=$ROOT/build/debroot/bookworm-minbase
if [ ! -x "$cache/usr/bin/apt-get" ]; then
    mirror=$(debian_mirror)
    note "debootstrap bookworm minbase from $mirror (cached in $cache)"
    rm -rf "$cache.tmp" && mkdir -p "$(dirname "$cache")"
    debootstrap --variant=minbase bookworm "$cache.tmp" "$mirror" >"$TMP/debootstrap.log" 2>&1 ||
        { tail -20 "$TMP/debootstrap.log"; rm -rf "$cache.tmp"; fail "debootstrap failed"; }
    mv "$cache.tmp" "$cache"
fi
cp -a "$cache" "$ROOTFS"
cp /etc/resolv.conf "$ROOTFS/etc/resolv.conf"
mount -t proc proc "$ROOTFS/proc"
# No service may start inside the chroot on its own.
printf '#!/bin/sh\nexit 101\n' >"$ROOTFS/usr/sbin/policy-rc.d" && chmod +x "$ROOTFS/usr/sbin/policy-rc.d"
in_root() { chroot "$ROOTFS" env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"; }

note "apt-get install into the clean root (its dependencies from the mirror)"
cp "$deb" "$ROOTFS/tmp/"
in_root apt-get update -qq >"$TMP/apt.log" 2>&1 || { cat "$TMP/apt.log"; fail "apt-get update failed"; }
in_root apt-get install -y -qq --no-install-recommends "/tmp/$(basename "$deb")" >>"$TMP/apt.log" 2>&1 ||
    { tail -30 "$TMP/apt.log"; fail "apt-get install of the package failed"; }
[ "$(in_root dpkg-query -W -f='${Status}' gpulse)" = "install ok installed" ] || fail "gpulse not installed"
in_root dpkg-query -W -f='${Conffiles}\n' gpulse | grep '^ /etc/gpulse/gpulse.yml ' >/dev/null ||
    fail "/etc/gpulse/gpulse.yml is not a conffile"
[ "$(in_root gpulse version)" = "gpulse $version" ] || fail "installed gpulse is not version $version"
in_root getent passwd gpulse | grep ':/usr/sbin/nologin$' >/dev/null || fail "no gpulse system user with nologin"
[ "$(in_root stat -c %U:%G:%a /var/lib/gpulse)" = gpulse:gpulse:750 ] ||
    fail "/var/lib/gpulse is $(in_root stat -c %U:%G:%a /var/lib/gpulse), not gpulse:gpulse:750"

note "gpulse up in the root, as the gpulse user, with the packaged config"
port=$(free_port)
chroot --userspec=gpulse:gpulse "$ROOTFS" /usr/bin/gpulse up --config /etc/gpulse/gpulse.yml \
    --simulate 1x2xH100 --listen "127.0.0.1:$port" >"$TMP/up.log" 2>&1 &
GP_PID=$!
has_gpus() {
    curl -sf "http://127.0.0.1:$port/metrics" >"$TMP/metrics" &&
        [ "$(grep -c '^DCGM_FI_DEV_GPU_UTIL{.*simulated="true"' "$TMP/metrics")" -eq 2 ]
}
wait_until 30 has_gpus || { cat "$TMP/up.log"; fail "no /metrics with 2 simulated GPUs from the chroot"; }
grep -q 'data=/var/lib/gpulse' "$TMP/up.log" || { cat "$TMP/up.log"; fail "the store is not in /var/lib/gpulse"; }
in_root test -s /var/lib/gpulse/meta.db || fail "nothing stored in /var/lib/gpulse"
note "scraped $(grep -vc '^#' "$TMP/metrics") series from the chrooted gpulse up"
kill -TERM "$GP_PID"
rc=0; wait "$GP_PID" || rc=$?
GP_PID=""
[ $rc -eq 0 ] || { cat "$TMP/up.log"; fail "gpulse up exited with $rc"; }

note "apt-get purge"
in_root apt-get purge -y -qq gpulse >>"$TMP/apt.log" 2>&1 || { tail -20 "$TMP/apt.log"; fail "purge failed"; }
for f in /usr/bin/gpulse /etc/gpulse /var/lib/gpulse /usr/share/man/man1/gpulse.1.gz; do
    [ ! -e "$ROOTFS$f" ] || fail "$f is left after purge"
done
echo "ok: package built, lintian clean, installed, served /metrics, purged"
