#!/usr/bin/env bash
# gpulse's own NVML declarations (src/sources/nvml_abi.h, bound to symbol
# names in src/sources/nvml.c) against the bindings that Debian's
# librust-nvml-wrapper-sys-dev generated from NVIDIA's nvml.h: struct sizes
# and offsets, constants, version words, function parameters
# (tests/integration/nvml_abi_check.py). Then the check is shown to catch
# each kind of slip by planting one in a copy: a wrong offset, a wrong
# field id, a wrong version word, a wrong parameter type, a missing
# parameter, and a function type bound to no symbol.
source "$(dirname "$0")/lib.sh"
CHECK=$ROOT/tests/integration/nvml_abi_check.py
HDR=$ROOT/src/sources/nvml_abi.h
RES=$ROOT/src/sources/nvml.c
ls /usr/share/cargo/registry/nvml-wrapper-sys-*/src/bindings.rs >/dev/null 2>&1 ||
    fail "librust-nvml-wrapper-sys-dev is not installed (scripts/deps.sh test)"

# 1. The real declarations agree with the reference.
python3 "$CHECK" >"$TMP/ok.txt" 2>&1 || { cat "$TMP/ok.txt"; fail "gpulse's NVML declarations differ from nvml.h's"; }
summary=$(tail -1 "$TMP/ok.txt")
note "$summary"
# It really compared something (a parser that read nothing would pass).
python3 - "$summary" <<'EOF' || fail "the check compared too little: $summary"
import re, sys
n = dict((k, int(v)) for v, k in re.findall(r"(\d+) (structs|fields|constants|version words|functions)", sys.argv[1]))
sys.exit(not (n["structs"] >= 14 and n["fields"] >= 60 and n["constants"] >= 60
              and n["version words"] >= 1 and n["functions"] >= 40))
EOF
grep -q "^not in the reference: const NVML_FI_DEV_PCIE_COUNT_TX_BYTES = 197$" "$TMP/ok.txt" ||
    fail "a field id newer than the reference is not listed as not in the reference"

# plant NAME SED-EXPR WANT [FILE]: the check must fail on a copy of the
# header (or nvml.c) changed by SED-EXPR, with a line matching WANT.
plant() {
    local name=$1 expr=$2 want=$3 which=${4:-header} h=$HDR r=$RES rc=0
    local dir=$TMP/$name
    mkdir -p "$dir"
    cp "$HDR" "$dir/nvml_abi.h"
    cp "$RES" "$dir/nvml.c"
    if [ "$which" = header ]; then sed -i -E "$expr" "$dir/nvml_abi.h"; else sed -i -E "$expr" "$dir/nvml.c"; fi
    if [ "$which" = header ]; then cmp -s "$HDR" "$dir/nvml_abi.h" && fail "$name: the plant changed nothing"; fi
    if [ "$which" != header ]; then cmp -s "$RES" "$dir/nvml.c" && fail "$name: the plant changed nothing"; fi
    python3 "$CHECK" --header "$dir/nvml_abi.h" --resolver "$dir/nvml.c" >"$dir/out.txt" 2>&1 || rc=$?
    [ $rc -eq 1 ] || { cat "$dir/out.txt"; fail "$name: the check exited $rc, want 1"; }
    grep -qE "$want" "$dir/out.txt" || { cat "$dir/out.txt"; fail "$name: no line matching '$want'"; }
    [ "$(grep -c '^DIFFERS' "$dir/out.txt")" -ge 1 ] || fail "$name: no DIFFERS line"
    note "$name: $(grep -E "$want" "$dir/out.txt" | head -1)"
}

# reserved and free swapped in nvmlMemory_v2_t: same size, wrong offsets
plant swapped-fields '/^    unsigned long long reserved;$/{N;s/(.*reserved;)\n(.*free;)/\2\n\1/}' \
    '^DIFFERS: nvmlMemory_v2_t\.reserved: offset 24, reference 16$'
# a 4-byte field where NVML has 8 (every later offset moves)
plant narrow-field 's/^    long long latencyUsec;$/    int latencyUsec;/' \
    '^DIFFERS: nvmlFieldValue_t\.valueType: offset 20, reference 24$'
plant field-id 's/NVML_FI_DEV_REMAPPED_UNC = 143/NVML_FI_DEV_REMAPPED_UNC = 144/' \
    '^DIFFERS: NVML_FI_DEV_REMAPPED_UNC: 144, reference 143$'
plant return-code 's/NVML_ERROR_GPU_IS_LOST = 15/NVML_ERROR_GPU_IS_LOST = 14/' \
    '^DIFFERS: NVML_ERROR_GPU_IS_LOST: 14, reference 15$'
plant version-word 's/NVML_STRUCT_VERSION\(sizeof\(nvmlMemory_v2_t\), 2\)/NVML_STRUCT_VERSION(sizeof(nvmlMemory_v2_t), 1)/' \
    '^DIFFERS: nvmlMemory_v2: version word 0x1000028, reference 0x2000028'
plant param-type 's/\(\*nvml_dev_mem2_fn\)\(nvmlDevice_t, nvmlMemory_v2_t \*\)/(*nvml_dev_mem2_fn)(nvmlDevice_t, nvmlMemory_t *)/' \
    '^DIFFERS: nvmlDeviceGetMemoryInfo_v2 \(nvml_dev_mem2_fn\): parameter 2 is ptr\(struct:nvmlMemory_st\), reference ptr\(struct:nvmlMemory_v2_st\)$'
plant param-width 's/\(\*nvml_dev_ull_fn\)\(nvmlDevice_t, unsigned long long \*\)/(*nvml_dev_ull_fn)(nvmlDevice_t, unsigned int *)/' \
    '^DIFFERS: nvmlDeviceGetTotalEnergyConsumption \(nvml_dev_ull_fn\): parameter 2 is ptr\(i32\), reference ptr\(i64\)$'
plant param-count 's/unsigned int \*, unsigned long long\);/unsigned int *);/' \
    '^DIFFERS: nvmlDeviceGetProcessUtilization \(nvml_dev_putil_fn\): 3 parameters, reference 4$'
# a symbol bound to a type whose shape is wrong for it, in nvml.c
plant wrong-binding 's/SYM\(power, nvml_dev_uint_fn,/SYM(power, nvml_dev_ull_fn,/' \
    '^DIFFERS: nvmlDeviceGetPowerUsage \(nvml_dev_ull_fn\): parameter 2 is ptr\(i64\), reference ptr\(i32\)$' resolver
# a new function type that nothing binds is not silently unchecked
plant unbound-type 's/^(typedef nvmlReturn_t \(\*nvml_gpm_metrics_fn\).*)$/\1\ntypedef nvmlReturn_t (*nvml_new_fn)(nvmlDevice_t, unsigned int *);/' \
    '^DIFFERS: nvml_new_fn: no NVML symbol in nvml.c is resolved with this type'

# 3. A known difference that no longer differs must be removed from the list.
sed 's/^const NVML_GPM_METRIC_MAX .*$/const NVML_GPM_METRIC_MAX # stale/; $a const NVML_FI_DEV_ECC_CURRENT # planted stale entry' \
    "$ROOT/tests/data/nvml-abi-known.txt" >"$TMP/known.txt"
rc=0; python3 "$CHECK" --known "$TMP/known.txt" >"$TMP/stale.txt" 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "'const NVML_FI_DEV_ECC_CURRENT' is listed in known.txt but no longer differs" "$TMP/stale.txt" ||
    { cat "$TMP/stale.txt"; fail "a stale known difference was not reported"; }
note "all planted slips caught"
