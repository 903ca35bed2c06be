#!/usr/bin/env bash
# Installs the Debian packages gpulse needs, only those missing, so a
# second run costs a few dpkg queries. Usage: scripts/deps.sh build|test
set -euo pipefail

# libncurses-dev: gpulse top's terminal screen (ncursesw). No comment
# inside the list: test_deb_package.sh reads it against debian/control.
build_pkgs=(gcc make pkg-config libc6-dev libmicrohttpd-dev libjansson-dev libyaml-dev libsnappy-dev
            libsqlite3-dev libcurl4-openssl-dev libgnutls28-dev
            libncurses-dev)
# The dashboard's uPlot comes from npm at build time (web/package-lock.json):
# Debian's node and npm, unless a node and npm are already on PATH.
command -v node >/dev/null && command -v npm >/dev/null || build_pkgs+=(nodejs npm)
# Tests: the real Prometheus (scraper + promtool), curl to talk HTTP,
# python3 for the small protocol checks, node_exporter for the benchmark,
# VictoriaMetrics as a second real remote-write receiver and query peer,
# openssl to make a throwaway certificate for the TLS test, PyTorch (CPU)
# for real training loops under `gpulse run`, Alertmanager as the real
# receiver of the alertmanager notification channel, aiosmtpd as a real
# SMTP server (STARTTLS, AUTH) for the email channel, jsonschema and yaml
# to validate the server's answers against docs/openapi.yaml (Debian 12
# has no OpenAPI validator; jsonschema checks the schemas themselves).
# The package test: dpkg-dev, debhelper and fakeroot build the .deb,
# lintian checks it, debootstrap makes the clean root it is installed
# into; man-db and groff-base render the man pages to catch warnings.
test_pkgs=(prometheus curl python3 prometheus-node-exporter procps victoria-metrics openssl python3-torch
           prometheus-alertmanager python3-aiosmtpd python3-jsonschema python3-yaml
           dpkg-dev debhelper fakeroot lintian debootstrap man-db groff-base
           tmux   # a real terminal for gpulse top: send-keys, capture-pane, resize-window
           systemd    # systemd-analyze verify/security and systemd-sysusers check deploy/systemd
           chromium fonts-dejavu-core  # the dashboard in a real (headless) browser, legible screenshots
           librust-nvml-wrapper-sys-dev)  # bindgen output of NVIDIA's nvml.h: the reference test_nvml_abi checks nvml_abi.h against
# The dashboard's browser test drives chromium with playwright-core from npm
# (tests/e2e/package-lock.json): tests/integration/test_dashboard_e2e.sh
# runs `npm ci --prefix tests/e2e` itself (no browser download).

# Tests: deploy/kubernetes is validated offline against the Kubernetes API
# schemas (tests/k8s/package-lock.json: kubernetes-models, generated from
# Kubernetes' OpenAPI spec; the Prometheus Operator's models for
# ServiceMonitor; typescript for the unknown-field check). npm fetches them
# here, so the test itself needs no network.
npm_deps() {
    local d
    d=$(cd "$(dirname "$0")/../tests/k8s" && pwd)
    [ -f "$d/node_modules/.package-lock.json" ] && [ "$d/node_modules/.package-lock.json" -nt "$d/package-lock.json" ] &&
        return 0
    command -v npm >/dev/null || { echo "gpulse: npm is needed for tests/k8s (Debian's nodejs and npm)" >&2; return 1; }
    npm ci --prefix "$d" --silent --no-audit --no-fund --prefer-offline
}

want=("${build_pkgs[@]}")
[ "${1:-build}" = test ] && want+=("${test_pkgs[@]}")

missing=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    [ "${1:-build}" != test ] || npm_deps
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "gpulse: missing Debian packages: ${missing[*]} (run as root, or install them)" >&2
    exit 1
fi
echo "gpulse: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# The prometheus packages start services on install where an init system
# runs; the tests start their own on 127.0.0.1, so keep them from starting
# (without touching a policy the machine already has).
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
[ "${1:-build}" != test ] || npm_deps
