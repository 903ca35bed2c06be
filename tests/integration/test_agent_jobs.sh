#!/usr/bin/env bash
# Attribution end to end: the agent binary reads a fake /proc tree
# (--proc-root) whose processes carry Slurm, Kubernetes (cgroup v2,
# systemd driver) and no job variables, while the stand-in NVML puts
# those pids on two GPUs (tests/data/nvml/jobs.scn). /metrics must label
# the GPU series with the job holding the most memory, the per-process
# GPU and host series with each process's job and rank, and serve the
# gpulse_job_* families with the right values, lint-clean; the CPU of a
# worker that exits stays in its job's counter.
source "$(dirname "$0")/lib.sh"

PROC=$TMP/proc
python3 - "$PROC" <<'PY'
import os, sys
root = sys.argv[1]
def w(rel, data, mode="w"):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as f:
        f.write(data)
w("stat", "cpu  1000 200 300 40000 50 6 70 8 0 0\ncpu0 500 100 150 20000 25 3 35 4 0 0\n"
          "intr 1\nctxt 5\nbtime 1700000000\n")
w("meminfo", "MemTotal: 8000000 kB\nMemFree: 1000000 kB\nMemAvailable: 4000000 kB\n")
w("loadavg", "0.50 1.25 2.00 3/400 4242\n")
SLURM = "SLURM_JOB_ID=555\0SLURM_LOCALID=%d\0SLURM_PROCID=%d\0SLURM_NTASKS=2\0"
POD = ("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
       "0c2b5ad8_1d2e_4f3a_9b8c_7d6e5f4a3b2c.slice/cri-containerd-ab12.scope\n")
# pid, ppid, pgid, comm, cpu ticks (utime = stime), start ticks, environ, cgroup
procs = [
    (1, 0, 1, "systemd", 5, 1, None, None),
    (1000, 1, 1000, "python", 300, 500, SLURM % (0, 0), None),
    (1001, 1000, 1000, "pt_data_worker", 100, 600, None, None),   # environ unreadable
    (1100, 1, 1100, "python", 200, 500, SLURM % (1, 1), None),
    (3000, 1, 2990, "plain", 10, 700, "PATH=/bin\0", None),
    (4000, 1, 4000, "podproc", 20, 800, "HOME=/\0", POD),
]
for pid, ppid, pgid, comm, cpu, start, env, cg in procs:
    w("%d/stat" % pid, "%d (%s) S %d %d %d 0 -1 4194560 100 0 0 0 %d %d 0 0 20 0 1 0 %d "
      "4096000 256 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
      % (pid, comm, ppid, pgid, pgid, cpu, cpu, start))
    w("%d/status" % pid, "Name:\t%s\nUid:\t1000\t1000\t1000\t1000\nThreads:\t1\n" % comm)
    w("%d/io" % pid, "read_bytes: 1\nwrite_bytes: 2\n")
    if env is not None:
        w("%d/environ" % pid, env)
    if cg is not None:
        w("%d/cgroup" % pid, cg)
PY

export GPULSE_FAKENVML_SCENARIO=$SCEN/jobs.scn
GPULSE_NVML_LIBRARY=$FAKE_FULL start_agent --interval 100ms --proc-root "$PROC" --hostname testnode
wait_until 10 sh -c "curl -sf http://127.0.0.1:$AGENT_PORT/metrics | grep -q '^gpulse_job_info{'" ||
    fail "no gpulse_job_info"
sleep 0.3
metrics >"$TMP/m"
check_exposition "$TMP/m"

# want NAME-PREFIX VALUE: a line starting with the prefix has the value.
want() {
    local line
    line=$(grep -F -- "$1" "$TMP/m" | head -1)
    [ -n "$line" ] || fail "no series $1"
    [ "${line##* }" = "$2" ] || fail "$1: want $2, got '${line##* }'"
}
pod=pod-0c2b5ad8-1d2e-4f3a-9b8c-7d6e5f4a3b2c
# GPU series: the job with the most memory on the GPU
grep -E '^DCGM_FI_DEV_FB_USED\{gpu="0",.*,job="555",rank="0"\}' "$TMP/m" >/dev/null || fail "GPU 0 not job 555 rank 0"
grep -E '^DCGM_FI_DEV_GPU_UTIL\{gpu="1",.*,job="555",rank="1"\} 70$' "$TMP/m" >/dev/null || fail "GPU 1 not job 555 rank 1"
[ "$(grep -c '^DCGM_FI_DEV_GPU_UTIL{.*job=' "$TMP/m")" -eq 2 ] || fail "want a job on both GPUs"
# per-process GPU series: each process's own job
grep -E '^gpulse_gpu_process_memory_bytes\{gpu="0",.*pid="3000",comm="plain",job="pg-2990@testnode"\} 1073741824$' \
    "$TMP/m" >/dev/null || fail "process group job on the GPU process series"
grep -E '^gpulse_gpu_process_memory_bytes\{gpu="1",.*pid="4000",comm="podproc",job="'$pod'"\} 1073741824$' \
    "$TMP/m" >/dev/null || fail "pod job on the GPU process series"
grep -E '^gpulse_gpu_process_memory_bytes\{gpu="1",.*pid="1100",comm="python",job="555",rank="1"\}' \
    "$TMP/m" >/dev/null || fail "slurm rank on the GPU process series"
# host process series: the dataloader inherits job and rank
want 'gpulse_process_info{pid="1001",comm="pt_data_worker",job="555",rank="0",ppid="1000"' 1
want 'gpulse_process_cpu_seconds_total{pid="1000",comm="python",job="555",rank="0",mode="user"}' 3
grep -q '^gpulse_process_info{pid="1",' "$TMP/m" && fail "init is not followed"
# the job families
want 'gpulse_job_info{job="555",rank="0",Hostname="testnode",scheme="slurm",local_rank="0",world_size="2"}' 1
want 'gpulse_job_info{job="555",rank="1",Hostname="testnode",scheme="slurm",local_rank="1",world_size="2"}' 1
want 'gpulse_job_info{job="'$pod'",Hostname="testnode",scheme="kubernetes"}' 1
want 'gpulse_job_info{job="pg-2990@testnode",Hostname="testnode",scheme="process_group"}' 1
want 'gpulse_job_processes{job="555",rank="0",Hostname="testnode"}' 2
want 'gpulse_job_processes{job="555",rank="1",Hostname="testnode"}' 1
want 'gpulse_job_cpu_seconds_total{job="555",rank="0",Hostname="testnode"}' 8
want 'gpulse_job_start_time_seconds{job="555",rank="0",Hostname="testnode"}' 1700000005
want 'gpulse_job_gpus{job="555",rank="0",Hostname="testnode"}' 1
want 'gpulse_job_gpu_memory_bytes{job="555",rank="0",Hostname="testnode"}' 6442450944
want 'gpulse_job_gpu_memory_bytes{job="555",rank="1",Hostname="testnode"}' 10737418240
want 'gpulse_job_gpu_sm_ratio{job="555",rank="1",Hostname="testnode"}' 0.6
page=$(getconf PAGESIZE)
want 'gpulse_job_resident_memory_bytes{job="555",rank="0",Hostname="testnode"}' $((2 * 256 * page))
[ "$(grep -c '^gpulse_job_info{' "$TMP/m")" -eq 4 ] || fail "want 4 jobs"

curl -sf "http://127.0.0.1:$AGENT_PORT/api/v1/snapshot" >"$TMP/snap.json"
python3 - "$TMP/snap.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
jobs = {(j["job"], j["rank"]): j for j in d["jobs"]}
assert len(jobs) == 4, jobs
assert jobs[("555", 0)]["processes"] == 2 and jobs[("555", 0)]["scheme"] == "slurm", jobs
procs = {p["pid"]: p for p in d["processes"]}
assert procs[1001]["job"] == "555" and procs[1001]["rank"] == 0, procs[1001]
assert d["gpus"][1]["job"] == "555" and d["gpus"][1]["rank"] == 1, d["gpus"][1]
PY

# The dataloader exits: its CPU stays in the job's counter.
rm -rf "$PROC/1001"
wait_until 10 sh -c "curl -sf http://127.0.0.1:$AGENT_PORT/metrics | grep -q '^gpulse_job_processes{job=\"555\",rank=\"0\",Hostname=\"testnode\"} 1$'" ||
    fail "the exited worker is still counted"
metrics >"$TMP/m"
want 'gpulse_job_cpu_seconds_total{job="555",rank="0",Hostname="testnode"}' 8
check_exposition "$TMP/m"
stop_agent
note "jobs attributed: slurm ranks, dataloader inheritance, kubernetes pod, process group"
