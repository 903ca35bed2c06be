#!/usr/bin/env bash
# gp-timeout: 240
# The refill of a remote-mode server's window at a fleet larger than the
# cluster lets one query touch (docs/storage.md "The local window"):
# VictoriaMetrics with -search.maxUniqueTimeseries=10 refuses the name
# lookup over the window (422), as the default 300,000 does at about
# 3,000 GPUs. The refill asks for the names from the name index instead
# and fetches each name's series (split further where the cluster
# refuses one: tests/unit/test_storage.c remote_window_split, as this
# VictoriaMetrics answers a query of one metric name whatever its
# series count); the restarted server holds every series it held and
# answers as before. test_storage_remote_window.sh does the checks.
VM_ARGS=-search.maxUniqueTimeseries=10 SIM=4x4xH100 GPUS=16 \
    source "$(dirname "$0")/test_storage_remote_window.sh"
grep -q 'remote window refill asks the names without match' "$SERVER_LOG" ||
    fail "the name lookup was not refused: the limit did not bite"
grep -q 'remote window refill progress.* series=' "$SERVER_LOG" || fail "the refill logged no progress"
note "the refill went around the limit: $(grep -o 'series=[0-9]* queries=[0-9]* splits=[0-9]*' "$SERVER_LOG" | tail -1)"
