#!/usr/bin/env python3
"""generate.py - writes the Grafana dashboards of this directory
(gpulse-fleet.json, gpulse-gpu.json, gpulse-job.json) from the panel
lists below, so the three share one layout, one datasource variable and
one way of selecting nodes, GPUs and jobs.

  python3 deploy/grafana/generate.py          rewrite the JSON files
  python3 deploy/grafana/generate.py --check  exit 1 if they differ

The queries use gpulse's metric names (docs/metrics.md): dcgm-exporter's
DCGM_FI_* for the GPU readings and gpulse_* for the rest, plus the
recording rules of deploy/prometheus/gpulse-rules.yml (gpulse:*). The
agents must be scraped with honor_labels: true so that `job` is the
training job (docs/jobs.md). tests/integration/test_deploy_grafana.sh
runs every query against a real Prometheus scraping a simulated fleet.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DS = {"type": "prometheus", "uid": "${datasource}"}
NODE = 'Hostname=~"$Hostname"'
GPU = 'Hostname=~"$Hostname",gpu=~"$gpu"'
JOB = 'job=~"$job"'
ACT = "max without (source) (gpulse_gpu_compute_ratio{%s})"   # activity, whatever its source
THROTTLE = "sw_power_cap|hw_slowdown|sw_thermal_slowdown|hw_thermal_slowdown|hw_power_brake_slowdown"


def v_datasource():
    return {"name": "datasource", "label": "Data source", "type": "datasource",
            "query": "prometheus", "current": {}, "hide": 0, "refresh": 1, "regex": "",
            "options": []}


def v_query(name, label, query, multi=True):
    return {"name": name, "label": label, "type": "query", "datasource": DS,
            "definition": query, "query": {"query": query, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
            "refresh": 2, "sort": 3 if name == "gpu" else 1, "multi": multi, "includeAll": multi,
            "allValue": ".*" if multi else None, "current": {}, "hide": 0, "options": [], "regex": ""}


def panel(kind, title, targets, unit=None, w=12, h=8, desc=None, **opts):
    p = {"type": kind, "title": title, "datasource": DS,
         "targets": [{"datasource": DS, "expr": e, "legendFormat": l, "refId": chr(65 + i),
                      **({"instant": True, "format": "table"} if kind == "table" else {})}
                     for i, (e, l) in enumerate(targets)],
         "fieldConfig": {"defaults": {}, "overrides": []}, "options": {}, "_w": w, "_h": h}
    if unit:
        p["fieldConfig"]["defaults"]["unit"] = unit
    if desc:
        p["description"] = desc
    if kind == "stat":
        p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                        "colorMode": "value", "graphMode": "area", "textMode": "auto"}
    if kind == "timeseries":
        p["fieldConfig"]["defaults"]["custom"] = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10,
                                                  "showPoints": "never", "spanNulls": True}
        p["options"] = {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                        "tooltip": {"mode": "multi", "sort": "desc"}}
    p["fieldConfig"]["defaults"].update(opts.pop("defaults", {}))
    p["options"].update(opts)
    return p


def row(title):
    return {"type": "row", "title": title, "collapsed": False, "panels": [], "_w": 24, "_h": 1}


def layout(items):
    """Grid positions left to right, wrapping at 24 columns."""
    out, x, y, rowh, pid = [], 0, 0, 0, 1
    for it in items:
        w, h = it.pop("_w"), it.pop("_h")
        if x + w > 24:
            x, y, rowh = 0, y + rowh, 0
        it["gridPos"] = {"x": x, "y": y, "w": w, "h": h}
        it["id"] = pid
        pid += 1
        x += w
        rowh = max(rowh, h)
        if it["type"] == "row":
            x, y, rowh = 0, y + h, 0
        out.append(it)
    return out


def dashboard(uid, title, desc, variables, items, tags):
    return {"uid": uid, "title": title, "description": desc, "tags": ["gpulse"] + tags,
            "editable": True, "graphTooltip": 1, "schemaVersion": 39, "version": 1,
            "time": {"from": "now-1h", "to": "now"}, "refresh": "30s", "timezone": "",
            "timepicker": {}, "fiscalYearStartMonth": 0, "liveNow": False,
            "__inputs": [], "__requires": [
                {"type": "grafana", "id": "grafana", "name": "Grafana", "version": "10.0.0"},
                {"type": "datasource", "id": "prometheus", "name": "Prometheus", "version": "1.0.0"}],
            "annotations": {"list": [{"builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
                                      "enable": True, "hide": True, "name": "Annotations & Alerts",
                                      "type": "dashboard"}]},
            "links": [{"title": "gpulse", "type": "dashboards", "tags": ["gpulse"], "asDropdown": True}],
            "templating": {"list": variables}, "panels": layout(items)}


def fleet():
    A = ACT % NODE
    items = [
        row("Fleet now"),
        panel("stat", "GPUs", [(f"count(DCGM_FI_DEV_GPU_UTIL{{{NODE}}})", "")], w=4, h=4),
        panel("stat", "Compute in use", [(f"avg({A})", "")], "percentunit", w=4, h=4,
              desc="Mean activity over the GPUs: SM active (GPM) or utilization / 100."),
        panel("stat", "GPU memory in use", [(f"sum(gpulse_gpu_memory_used_bytes{{{NODE}}}) / sum(gpulse_gpu_memory_total_bytes{{{NODE}}})", "")],
              "percentunit", w=4, h=4),
        panel("stat", "Delivered TFLOP/s", [(f"sum(gpulse_gpu_effective_tflops{{{NODE}}})", "")], w=4, h=4),
        panel("stat", "H100-equivalents", [(f"sum(gpulse_gpu_h100_equivalents{{{NODE}}})", "")], w=4, h=4,
              desc="Peak dense bf16 TFLOP/s of the fleet over the H100 SXM's."),
        panel("stat", "Jobs running", [(f"count(count by (job) (gpulse_job_info{{{NODE}}}))", "")], w=4, h=4),
        panel("stat", "Idle GPUs held by a job", [(
            f"count(({A} < 0.05) and on (Hostname, UUID) (sum by (Hostname, UUID) (gpulse_gpu_process_memory_bytes{{{NODE}}}) >= 1073741824)) or vector(0)", "")],
            w=4, h=4, desc="Activity under 5 % with at least 1 GiB held by processes (the idle_gpu_allocated detector, without its window)."),
        panel("stat", "Throttled GPUs", [(
            f'count(max by (Hostname, UUID) (gpulse_gpu_clock_event_reasons{{{NODE},reason=~"{THROTTLE}"}}) == 1) or vector(0)', "")], w=4, h=4),
        panel("stat", "GPUs with uncorrectable errors", [(
            f"count(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{NODE}}} > 0 or DCGM_FI_DEV_ROW_REMAP_FAILURE{{{NODE}}} > 0 or gpulse_gpu_lost{{{NODE}}} == 1) or vector(0)", "")],
            w=4, h=4),
        panel("stat", "Firing gpulse alerts", [('count(ALERTS{alertstate="firing",alertname=~"Gpulse.*"}) or vector(0)', "")], w=4, h=4,
              desc="From deploy/prometheus/gpulse-rules.yml, when Prometheus loads it."),
        panel("stat", "Power draw", [(f"sum(DCGM_FI_DEV_POWER_USAGE{{{NODE}}})", "")], "watt", w=4, h=4),
        panel("stat", "Newest sample age (oldest agent)", [(f"max(time() - gpulse_agent_last_sample_timestamp_seconds)", "")], "s", w=4, h=4),
        row("By node"),
        panel("timeseries", "Compute in use by node", [(f"avg by (Hostname) ({A})", "{{Hostname}}")], "percentunit"),
        panel("timeseries", "GPU memory used by node", [(f"sum by (Hostname) (gpulse_gpu_memory_used_bytes{{{NODE}}})", "{{Hostname}}")], "bytes"),
        panel("timeseries", "Power by node", [(f"sum by (Hostname) (DCGM_FI_DEV_POWER_USAGE{{{NODE}}})", "{{Hostname}}")], "watt"),
        panel("timeseries", "Delivered TFLOP/s by node", [(f"sum by (Hostname) (gpulse_gpu_effective_tflops{{{NODE}}})", "{{Hostname}}")]),
        row("GPUs"),
        panel("table", "Hottest GPUs", [(f"topk(10, DCGM_FI_DEV_GPU_TEMP{{{NODE}}})", "")], "celsius"),
        panel("table", "Least busy GPUs held by jobs", [(f"bottomk(10, {A} and on (Hostname, UUID) (sum by (Hostname, UUID) (gpulse_gpu_process_memory_bytes{{{NODE}}}) > 0))", "")],
              "percentunit"),
        panel("timeseries", "GPU activity (each GPU)", [(A, "{{Hostname}}/{{gpu}} {{job}}")], "percentunit", w=24),
        row("gpulse itself"),
        # a scraped agent is its instance, a pushing one its Hostname (remote write adds no instance)
        panel("timeseries", "Sample age by agent", [("time() - gpulse_agent_last_sample_timestamp_seconds", "{{instance}}{{Hostname}}")], "s"),
        panel("timeseries", "Samples pushed / s", [("sum by (instance, Hostname, target) (rate(gpulse_push_samples_sent_total[$__rate_interval]))", "{{instance}}{{Hostname}} → {{target}}")]),
        panel("timeseries", "Server: samples ingested / s", [("sum by (instance) (rate(gpulse_server_samples_ingested_total[$__rate_interval]))", "{{instance}}")]),
        panel("timeseries", "Server: series and WAL", [("sum by (instance) (gpulse_server_series)", "series {{instance}}"),
                                                     ("sum by (instance) (gpulse_server_wal_bytes)", "WAL bytes {{instance}}")]),
    ]
    return dashboard("gpulse-fleet", "gpulse / Fleet",
                     "Every GPU the gpulse agents watch: how much of the fleet works, what is idle, hot, throttled or broken.",
                     [v_datasource(), v_query("Hostname", "Node", "label_values(DCGM_FI_DEV_GPU_UTIL, Hostname)")],
                     items, ["fleet"])


def gpu():
    A = ACT % GPU
    L = "{{Hostname}}/{{gpu}}"
    items = [
        row("Activity"),
        panel("timeseries", "Utilization (coarse)", [(f"DCGM_FI_DEV_GPU_UTIL{{{GPU}}}", L)], "percent",
              desc="NVML's utilization: 100 % with any kernel running. SM active (right) is the real share."),
        panel("timeseries", "SM active, occupancy, tensor, DRAM (GPM)", [
            (f"DCGM_FI_PROF_SM_ACTIVE{{{GPU}}}", "SM active " + L),
            (f"DCGM_FI_PROF_SM_OCCUPANCY{{{GPU}}}", "occupancy " + L),
            (f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{GPU}}}", "tensor " + L),
            (f"DCGM_FI_PROF_DRAM_ACTIVE{{{GPU}}}", "DRAM " + L)], "percentunit"),
        panel("timeseries", "Delivered TFLOP/s", [(f"gpulse_gpu_effective_tflops{{{GPU}}}", L + " {{basis}}")]),
        panel("timeseries", "Compute in use (normalized)", [(A, L)], "percentunit"),
        row("Memory"),
        panel("timeseries", "Memory used and its 10-minute trend", [
            (f"DCGM_FI_DEV_FB_USED{{{GPU}}} * 1048576", "used " + L),
            (f"(DCGM_FI_DEV_FB_USED{{{GPU}}} + DCGM_FI_DEV_FB_FREE{{{GPU}}}) * 1048576", "total " + L),
            (f"predict_linear(gpulse_gpu_memory_used_bytes{{{GPU}}}[10m], 600)", "in 10 min at this trend " + L)], "bytes",
            desc="The oom_predicted detector's view: the line over the last 10 minutes, 600 s ahead."),
        panel("timeseries", "Memory used share", [(f"gpulse_gpu_memory_used_ratio{{{GPU}}}", L)], "percentunit",
              defaults={"max": 1}),
        panel("timeseries", "Processes: GPU memory", [(f"gpulse_gpu_process_memory_bytes{{{GPU}}}", "{{pid}} {{comm}} {{job}}/{{rank}}")], "bytes"),
        panel("timeseries", "Processes: SM share", [(f"gpulse_gpu_process_sm_ratio{{{GPU}}}", "{{pid}} {{comm}} {{job}}/{{rank}}")], "percentunit"),
        row("Power, heat, clocks"),
        panel("timeseries", "Power and limit", [(f"DCGM_FI_DEV_POWER_USAGE{{{GPU}}}", "draw " + L),
                                                (f"gpulse_gpu_power_limit_watts{{{GPU}}}", "limit " + L)], "watt"),
        panel("timeseries", "Temperature", [(f"DCGM_FI_DEV_GPU_TEMP{{{GPU}}}", "GPU " + L),
                                            (f"DCGM_FI_DEV_MEMORY_TEMP{{{GPU}}}", "memory " + L)], "celsius"),
        panel("timeseries", "SM clock share of max", [(f"gpulse_gpu_clock_ratio{{{GPU}}}", L)], "percentunit"),
        panel("timeseries", "Clock-event reasons", [(f"gpulse_gpu_clock_event_reasons{{{GPU}}}", L + " {{reason}}")],
              desc="1 while the clocks are held down for the reason; thermal and power reasons are throttling."),
        panel("timeseries", "Throttled share of time (violation counters)", [
            (f"rate(DCGM_FI_DEV_POWER_VIOLATION{{{GPU}}}[$__rate_interval]) / 1e6", "power " + L),
            (f"rate(DCGM_FI_DEV_THERMAL_VIOLATION{{{GPU}}}[$__rate_interval]) / 1e6", "thermal " + L)], "percentunit"),
        panel("timeseries", "Energy (from the counter)", [(f"rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{GPU}}}[$__rate_interval]) / 1000", L)], "watt"),
        row("Interconnect and health"),
        panel("timeseries", "PCIe and NVLink", [
            (f"DCGM_FI_PROF_PCIE_TX_BYTES{{{GPU}}}", "PCIe tx " + L), (f"DCGM_FI_PROF_PCIE_RX_BYTES{{{GPU}}}", "PCIe rx " + L),
            (f"DCGM_FI_PROF_NVLINK_TX_BYTES{{{GPU}}}", "NVLink tx " + L), (f"DCGM_FI_PROF_NVLINK_RX_BYTES{{{GPU}}}", "NVLink rx " + L)], "Bps"),
        panel("table", "ECC, retired pages, remapped rows, XID", [
            (f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{GPU}}}", ""), (f"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{{{GPU}}}", ""),
            (f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{GPU}}}", ""), (f"DCGM_FI_DEV_ROW_REMAP_FAILURE{{{GPU}}}", ""),
            (f"DCGM_FI_DEV_XID_ERRORS{{{GPU}}}", ""), (f"gpulse_gpu_lost{{{GPU}}}", "")]),
    ]
    return dashboard("gpulse-gpu", "gpulse / GPU",
                     "One GPU (or a few) in full: activity, memory and its trend, processes, power, heat, clocks, links, errors.",
                     [v_datasource(), v_query("Hostname", "Node", "label_values(DCGM_FI_DEV_GPU_UTIL, Hostname)"),
                      v_query("gpu", "GPU", 'label_values(DCGM_FI_DEV_GPU_UTIL{Hostname=~"$Hostname"}, gpu)')],
                     items, ["gpu"])


def job():
    R = "{{Hostname}} rank {{rank}}"
    items = [
        row("The job"),
        panel("stat", "Ranks", [(f"count(gpulse_job_info{{{JOB}}})", "")], w=4, h=4),
        panel("stat", "GPUs", [(f"sum(gpulse_job_gpus{{{JOB}}})", "")], w=4, h=4),
        panel("stat", "Steps / s", [(f"sum(rate(gpulse_job_steps_total{{{JOB}}}[$__rate_interval])) / count(gpulse_job_steps_total{{{JOB}}})", "")], w=4, h=4,
              desc="Per rank: all ranks' steps over the number of reporting processes."),
        panel("stat", "Samples / s", [(f"sum(rate(gpulse_job_samples_total{{{JOB}}}[$__rate_interval]))", "")], w=4, h=4),
        panel("stat", "Progress", [(f"max(gpulse_job_step{{{JOB}}}) / max(gpulse_job_target_steps{{{JOB}}})", "")], "percentunit", w=4, h=4),
        panel("stat", "Time left at this rate", [(
            f"(max(gpulse_job_target_steps{{{JOB}}}) - max(gpulse_job_step{{{JOB}}})) / (sum(rate(gpulse_job_steps_total{{{JOB}}}[$__rate_interval])) / count(gpulse_job_steps_total{{{JOB}}}))", "")],
            "s", w=4, h=4),
        row("Steps"),
        panel("timeseries", "Step time by rank", [(
            f"sum by (Hostname, rank) (rate(gpulse_job_step_seconds_total{{{JOB}}}[$__rate_interval])) / sum by (Hostname, rank) (rate(gpulse_job_steps_total{{{JOB}}}[$__rate_interval]))", R)], "s"),
        panel("timeseries", "Straggler score (robust z of the 5-minute step time)", [(f"gpulse:job_rank_step_seconds:robust_z5m{{{JOB}}}", R)],
              desc="0.6745 (x - median) / MAD (floored at 2 % of the median); the straggler alert fires above 3.5 with 3 ranks or more.",
              defaults={"thresholds": {"mode": "absolute", "steps": [{"color": "green", "value": None}, {"color": "red", "value": 3.5}]}}),
        panel("timeseries", "Data wait share of step time", [(
            f"sum by (Hostname, rank) (rate(gpulse_job_data_wait_seconds_total{{{JOB}}}[$__rate_interval])) / sum by (Hostname, rank) (rate(gpulse_job_step_seconds_total{{{JOB}}}[$__rate_interval]))", R)],
            "percentunit", desc="dataloader_starvation fires above 0.5."),
        panel("timeseries", "Loss", [(f"gpulse_job_loss{{{JOB}}}", R)]),
        panel("timeseries", "Tokens / s", [(f"sum by (job) (rate(gpulse_job_tokens_total{{{JOB}}}[$__rate_interval]))", "{{job}}")]),
        panel("timeseries", "Step records lost", [(f"sum by (Hostname, rank) (increase(gpulse_job_step_records_lost_total{{{JOB}}}[$__rate_interval])) or sum by (Hostname, rank) (gpulse_job_steps_total{{{JOB}}}) * 0", R)]),
        row("GPUs of the job"),
        panel("timeseries", "GPU activity by rank", [(ACT % JOB, R + " gpu {{gpu}}")], "percentunit"),
        panel("timeseries", "GPU memory by rank", [(f"gpulse_gpu_memory_used_bytes{{{JOB}}}", R + " gpu {{gpu}}")], "bytes"),
        panel("timeseries", "Allocator: allocated, reserved, peak", [(f"gpulse_job_allocator_bytes{{{JOB}}}", R + " {{kind}}")], "bytes",
              desc="allocator_fragmentation fires when (reserved - allocated) / allocated is above 0.5 with 1 GiB unused."),
        panel("timeseries", "GPU power by rank", [(f"DCGM_FI_DEV_POWER_USAGE{{{JOB}}}", R + " gpu {{gpu}}")], "watt"),
        row("Host side"),
        panel("timeseries", "CPU cores used", [(f"sum by (Hostname, rank) (rate(gpulse_job_cpu_seconds_total{{{JOB}}}[$__rate_interval]))", R)]),
        panel("timeseries", "Resident memory", [(f"sum by (Hostname, rank) (gpulse_job_resident_memory_bytes{{{JOB}}})", R)], "bytes"),
    ]
    return dashboard("gpulse-job", "gpulse / Job",
                     "One training job across its ranks: throughput, step time and stragglers, data wait, GPUs, allocator, host.",
                     [v_datasource(), v_query("job", "Job", "label_values(gpulse_job_info, job)", multi=False)],
                     items, ["job"])


def main():
    check = "--check" in sys.argv[1:]
    bad = 0
    for name, d in (("gpulse-fleet.json", fleet()), ("gpulse-gpu.json", gpu()), ("gpulse-job.json", job())):
        text = json.dumps(d, indent=2, ensure_ascii=False) + "\n"
        path = os.path.join(HERE, name)
        if check:
            if not os.path.exists(path) or open(path, encoding="utf-8").read() != text:
                print(f"{name} differs from generate.py's output: run python3 deploy/grafana/generate.py")
                bad = 1
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    sys.exit(bad)


if __name__ == "__main__":
    main()
