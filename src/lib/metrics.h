/*
 * metrics.h - the table of every gpulse_* metric family the agent and the
 * server expose, beside the GPU readings' own table (GP_GPU_FIELDS in
 * sources/frame.h).
 *
 * One row per family: its name, type, labels and help. The exposition
 * code writes HELP and TYPE from the row (gp_metric_head) and names its
 * samples with gp_metric_name, and `gpulse metrics-reference`
 * (agent/metrics_ref.c) writes docs/metrics.md's reference section from
 * the same rows, so the page and /metrics cannot disagree (a unit test
 * compares the committed page with the generated text).
 *
 * The labels column is for the reference only: a space-separated list of
 * label names, where "@gpu" stands for the GPU label set with its job
 * (the GPU's own series), "@gpubase" the GPU label set alone, "@job"
 * job and rank (when known) and "@host" the host label (Hostname).
 */
#ifndef GP_METRICS_H
#define GP_METRICS_H

#include "lib/buf.h"

/* Sections of the reference, in the order the page lists them. */
#define GP_METRIC_SECTIONS(X)                                                  \
    X(GPU, "GPU series beyond dcgm-exporter's")                                \
    X(NORM, "Normalized (the same on every card)")                             \
    X(GPU_PROC, "Processes on a GPU")                                          \
    X(HOST, "Host")                                                            \
    X(PROC, "Host processes")                                                  \
    X(JOB, "Jobs")                                                             \
    X(STEPS, "Step telemetry")                                                 \
    X(AGENT, "The agent itself")                                               \
    X(PUSH, "Pushing (only with push targets)")                                \
    X(SERVER, "The server")                                                    \
    X(STORAGE, "The server's remote storage (storage: remote)")                \
    X(EVAL, "The server's detectors and alerts")                               \
    X(NOTIFY, "The server's notifications")

enum gp_metric_section {
#define GP_MSEC_ENUM_(id, title) GP_MS_##id,
    GP_METRIC_SECTIONS(GP_MSEC_ENUM_)
#undef GP_MSEC_ENUM_
    GP_MS__COUNT
};

/* X(id, section, name, type, labels, help) -- type GAUGE, COUNTER or HISTOGRAM. */
#define GP_METRICS(X)                                                                                  \
    X(GPU_CLOCK_EVENT_REASONS, GPU, "gpulse_gpu_clock_event_reasons", GAUGE, "@gpu reason",            \
      "1 while the clocks are held down for this reason (NVML clock-event reasons).")                  \
    X(GPU_XID_ERRORS, GPU, "gpulse_gpu_xid_errors_total", COUNTER, "@gpu xid",                          \
      "XID error events seen since the agent started, by XID code.")                                   \
    X(GPU_LOST, GPU, "gpulse_gpu_lost", GAUGE, "@gpu",                                                 \
      "1 when the GPU has fallen off the bus (NVML GPU_IS_LOST).")                                     \
    X(NORM_COMPUTE, NORM, "gpulse_gpu_compute_ratio", GAUGE, "@gpu source",                            \
      "Share of the GPU's compute in use: SM activity (source=\"sm_active\", GPM) or "                 \
      "coarse utilization / 100 (source=\"gpu_util\").")                                               \
    X(NORM_MEMORY, NORM, "gpulse_gpu_memory_used_ratio", GAUGE, "@gpu",                                \
      "GPU memory used as a share of the GPU's total.")                                                \
    X(NORM_BANDWIDTH, NORM, "gpulse_gpu_bandwidth_ratio", GAUGE, "@gpu source",                        \
      "Share of time the memory interface is busy: DRAM activity (source=\"dram_active\") or "         \
      "memory copy utilization / 100 (source=\"mem_copy_util\").")                                     \
    X(NORM_POWER, NORM, "gpulse_gpu_power_ratio", GAUGE, "@gpu",                                       \
      "Power draw as a share of the enforced power limit.")                                            \
    X(NORM_CLOCK, NORM, "gpulse_gpu_clock_ratio", GAUGE, "@gpu",                                       \
      "SM clock as a share of the maximum SM clock.")                                                  \
    X(NORM_EFFECTIVE, NORM, "gpulse_gpu_effective_tflops", GAUGE, "@gpu basis",                        \
      "Estimated delivered TFLOP/s: pipe activity x peak (basis=\"pipes\") or compute ratio "          \
      "x peak dense tensor (basis=\"compute_ratio\").")                                                \
    X(NORM_PEAK, NORM, "gpulse_gpu_peak_tflops", GAUGE, "@gpu precision",                              \
      "Peak dense TFLOP/s of the model by precision (bf16 tensor, fp32).")                             \
    X(NORM_H100, NORM, "gpulse_gpu_h100_equivalents", GAUGE, "@gpu",                                   \
      "Peak dense bf16 TFLOP/s of the model over the H100 SXM's (989.4).")                             \
    X(NORM_KNOWN, NORM, "gpulse_gpu_model_known", GAUGE, "@gpu",                                       \
      "1 when the model table knows the GPU's model; 0: figures from the driver only, no "             \
      "peak FLOP/s.")                                                                                  \
    X(GPU_PROC_MEMORY, GPU_PROC, "gpulse_gpu_process_memory_bytes", GAUGE, "@gpubase pid comm @job",   \
      "GPU memory used by the process.")                                                               \
    X(GPU_PROC_SM, GPU_PROC, "gpulse_gpu_process_sm_ratio", GAUGE, "@gpubase pid comm @job",           \
      "Share of the GPU's SM time the process used over the last sample period.")                      \
    X(GPU_PROC_MEMUTIL, GPU_PROC, "gpulse_gpu_process_memory_util_ratio", GAUGE,                       \
      "@gpubase pid comm @job",                                                                        \
      "Share of time the process read or wrote GPU memory over the last sample period.")               \
    X(HOST_CPU, HOST, "gpulse_host_cpu_seconds_total", COUNTER, "mode",                                \
      "Host CPU time spent in each mode, summed over CPUs.")                                           \
    X(HOST_CPUS, HOST, "gpulse_host_cpus", GAUGE, "", "Number of online CPUs.")                        \
    X(HOST_MEMORY, HOST, "gpulse_host_memory_bytes", GAUGE, "kind",                                    \
      "Host memory by kind, from /proc/meminfo.")                                                      \
    X(HOST_HUGEPAGES, HOST, "gpulse_host_hugepages", GAUGE, "", "Number of huge pages in the pool.")   \
    X(HOST_PRESSURE, HOST, "gpulse_host_pressure_stall_seconds_total", COUNTER, "resource kind",       \
      "Time tasks stalled waiting for a resource (Linux PSI).")                                        \
    X(HOST_LOAD, HOST, "gpulse_host_load_average", GAUGE, "window", "Host load average over a window.") \
    X(PROC_INFO, PROC, "gpulse_process_info", GAUGE, "pid comm @job ppid uid state",                   \
      "Process identity: parent pid, user id and state; value 1.")                                     \
    X(PROC_CPU, PROC, "gpulse_process_cpu_seconds_total", COUNTER, "pid comm @job mode",               \
      "CPU time of the process by mode.")                                                              \
    X(PROC_RSS, PROC, "gpulse_process_resident_memory_bytes", GAUGE, "pid comm @job",                  \
      "Resident set size of the process.")                                                             \
    X(PROC_VSIZE, PROC, "gpulse_process_virtual_memory_bytes", GAUGE, "pid comm @job",                 \
      "Virtual memory size of the process.")                                                           \
    X(PROC_THREADS, PROC, "gpulse_process_threads", GAUGE, "pid comm @job",                            \
      "Number of threads of the process.")                                                             \
    X(PROC_START, PROC, "gpulse_process_start_time_seconds", GAUGE, "pid comm @job",                   \
      "Start time of the process since the epoch.")                                                    \
    X(PROC_IO_READ, PROC, "gpulse_process_io_read_bytes_total", COUNTER, "pid comm @job",              \
      "Bytes the process read from storage.")                                                          \
    X(PROC_IO_WRITE, PROC, "gpulse_process_io_write_bytes_total", COUNTER, "pid comm @job",            \
      "Bytes the process wrote to storage.")                                                           \
    X(JOB_INFO, JOB, "gpulse_job_info", GAUGE, "@job @host scheme local_rank world_size command",      \
      "A job (and rank) with processes on this node; value 1. command: gpulse run's own job only.")     \
    X(JOB_START, JOB, "gpulse_job_start_time_seconds", GAUGE, "@job @host",                            \
      "Earliest start of the job's processes, since the epoch.")                                       \
    X(JOB_PROCESSES, JOB, "gpulse_job_processes", GAUGE, "@job @host",                                 \
      "Live processes in the job's tree.")                                                             \
    X(JOB_CPU, JOB, "gpulse_job_cpu_seconds_total", COUNTER, "@job @host",                             \
      "User and system CPU time of the job's tree, exited processes included.")                        \
    X(JOB_RSS, JOB, "gpulse_job_resident_memory_bytes", GAUGE, "@job @host",                           \
      "Resident memory of the job's tree.")                                                            \
    X(JOB_GPUS, JOB, "gpulse_job_gpus", GAUGE, "@job @host", "GPUs the job holds memory on or runs on.") \
    X(JOB_GPU_MEMORY, JOB, "gpulse_job_gpu_memory_bytes", GAUGE, "@job @host",                         \
      "GPU memory of the job's processes.")                                                            \
    X(JOB_GPU_SM, JOB, "gpulse_job_gpu_sm_ratio", GAUGE, "@job @host",                                 \
      "SM share of the job's processes, summed over GPUs.")                                            \
    X(STEP_STEPS, STEPS, "gpulse_job_steps_total", COUNTER, "@job @host pid",                          \
      "Training steps the process reported.")                                                          \
    X(STEP_STEP, STEPS, "gpulse_job_step", GAUGE, "@job @host pid",                                    \
      "The process's own number of its last step.")                                                    \
    X(STEP_SECONDS, STEPS, "gpulse_job_step_seconds_total", COUNTER, "@job @host pid",                 \
      "Sum of the reported step durations.")                                                           \
    X(STEP_DURATION, STEPS, "gpulse_job_step_duration_seconds", GAUGE, "@job @host pid",               \
      "Duration of the last reported step.")                                                           \
    X(STEP_WAIT, STEPS, "gpulse_job_data_wait_seconds_total", COUNTER, "@job @host pid",               \
      "Time the steps waited for input data.")                                                         \
    X(STEP_SAMPLES, STEPS, "gpulse_job_samples_total", COUNTER, "@job @host pid",                      \
      "Samples processed by the reported steps.")                                                      \
    X(STEP_TOKENS, STEPS, "gpulse_job_tokens_total", COUNTER, "@job @host pid",                        \
      "Tokens processed by the reported steps.")                                                       \
    X(STEP_LOSS, STEPS, "gpulse_job_loss", GAUGE, "@job @host pid", "The last loss the process reported.") \
    X(STEP_TARGET, STEPS, "gpulse_job_target_steps", GAUGE, "@job @host pid",                          \
      "Steps the job means to run.")                                                                   \
    X(STEP_LOST, STEPS, "gpulse_job_step_records_lost_total", COUNTER, "@job @host pid",               \
      "Step records lost between the process and the agent (unsent or missing by sequence).")          \
    X(STEP_EXIT, STEPS, "gpulse_job_exit_status", GAUGE, "@job @host pid",                             \
      "Exit status the process reported when it ended (128 + signal for a signal death).")             \
    X(STEP_END, STEPS, "gpulse_job_end_time_seconds", GAUGE, "@job @host pid",                         \
      "When the process reported it ended, since the epoch.")                                          \
    X(STEP_FR_MISSING, STEPS, "gpulse_job_collective_missing_seq", GAUGE, "@job @host pid",           \
      "Sequence number of the collective this rank never entered while others of its process "       \
      "group wait in it (PyTorch Flight Recorder dumps).")                                             \
    X(STEP_FR_WAITING, STEPS, "gpulse_job_collective_waiting_seq", GAUGE, "@job @host pid",           \
      "Sequence number of the collective this rank entered and waits in (PyTorch Flight Recorder "   \
      "dumps).")                                                                                       \
    X(STEP_PHASE, STEPS, "gpulse_job_phase_seconds_total", COUNTER, "@job @host pid phase",            \
      "Time the process spent in phases between steps, by phase (checkpoint, evaluation, other).")     \
    X(STEP_ALLOCATOR, STEPS, "gpulse_job_allocator_bytes", GAUGE, "@job @host pid device kind",        \
      "Framework allocator memory the process reported, by device and kind.")                          \
    X(STEP_MODEL_FLOPS, STEPS, "gpulse_job_model_flops", GAUGE, "@job @host pid per precision",       \
      "Model FLOPs per token or per sample the process declared (6 x parameters per token when "       \
      "training), and the precision it computes in.")                                                  \
    X(STEPS_DATAGRAMS, STEPS, "gpulse_steps_datagrams_total", COUNTER, "",                             \
      "Datagrams received on the step socket.")                                                        \
    X(STEPS_RECORDS, STEPS, "gpulse_steps_records_total", COUNTER, "",                                 \
      "Step records received and accepted.")                                                           \
    X(STEPS_MALFORMED, STEPS, "gpulse_steps_malformed_total", COUNTER, "",                             \
      "Step records dropped as malformed (and oversized datagrams).")                                  \
    X(STEPS_REFUSED, STEPS, "gpulse_steps_refused_total", COUNTER, "reason",                           \
      "Step records refused because the sender may not report for the job (docs/steps.md).")           \
    X(SOURCE_UP, AGENT, "gpulse_source_up", GAUGE, "source",                                           \
      "1 when the source found something to sample and is sampling it.")                              \
    X(SOURCE_ERRORS, AGENT, "gpulse_source_errors_total", COUNTER, "source",                           \
      "Readings a source had to skip: garbled files, driver errors (a process that exits while "       \
      "it is read is none).")                                                                          \
    X(SOURCE_DURATION, AGENT, "gpulse_source_sample_duration_seconds", GAUGE, "source",                \
      "Time the source's last sample took.")                                                           \
    X(SCRAPE_DURATION, AGENT, "gpulse_scrape_duration_seconds", GAUGE, "",                             \
      "Time the last sampling tick took, all sources.")                                                \
    X(AGENT_TICKS, AGENT, "gpulse_agent_ticks_total", COUNTER, "",                                     \
      "Sampling ticks since the agent started.")                                                       \
    X(AGENT_OVERRUNS, AGENT, "gpulse_agent_tick_overruns_total", COUNTER, "",                          \
      "Ticks skipped because sampling took longer than the interval.")                                 \
    X(AGENT_LAST_SAMPLE, AGENT, "gpulse_agent_last_sample_timestamp_seconds", GAUGE, "",               \
      "When the latest frame was sampled.")                                                            \
    X(AGENT_START, AGENT, "gpulse_agent_start_time_seconds", GAUGE, "",                                \
      "When the agent started, since the epoch.")                                                      \
    X(BUILD_INFO, AGENT, "gpulse_build_info", GAUGE, "version role",                                   \
      "gpulse version; value 1.")                                                                      \
    X(PUSH_SENT, PUSH, "gpulse_push_samples_sent_total", COUNTER, "target",                            \
      "Samples the target acknowledged.")                                                              \
    X(PUSH_DROPPED, PUSH, "gpulse_push_samples_dropped_total", COUNTER, "target reason",               \
      "Samples given up on: rejected by the target (4xx), oldest dropped from a full buffer, "         \
      "corrupt in the buffer, not written to it (io_error), or not encoded.")                          \
    X(PUSH_RETRIED, PUSH, "gpulse_push_batches_retried_total", COUNTER, "target",                      \
      "Requests that failed with 5xx, 429 or a connection error and are retried.")                     \
    X(PUSH_QUEUE, PUSH, "gpulse_push_queue_bytes", GAUGE, "target",                                    \
      "Bytes of samples waiting for the target.")                                                      \
    X(PUSH_BUFFER, PUSH, "gpulse_push_buffer_bytes", GAUGE, "target",                                  \
      "Bytes of the target's on-disk buffer files (0 without --buffer-dir).")                          \
    X(PUSH_LAST_SUCCESS, PUSH, "gpulse_push_last_success_timestamp_seconds", GAUGE, "target",          \
      "When the target last acknowledged a request (0: never).")                                       \
    X(PUSH_ENCODE, PUSH, "gpulse_push_encode_duration_seconds", GAUGE, "",                             \
      "Time the last tick took to encode as remote write (labels added, protobuf, snappy).")           \
    X(SRV_INGESTED, SERVER, "gpulse_server_samples_ingested_total", COUNTER, "",                       \
      "Samples stored from remote write.")                                                             \
    X(SRV_DUPLICATE, SERVER, "gpulse_server_samples_duplicate_total", COUNTER, "",                     \
      "Samples dropped as exact duplicates of stored ones (a sender's retry).")                        \
    X(SRV_SERIES_CREATED, SERVER, "gpulse_server_series_created_total", COUNTER, "",                   \
      "Series created by remote write.")                                                               \
    X(SRV_REJECTED, SERVER, "gpulse_server_samples_rejected_total", COUNTER, "reason",                 \
      "Samples not stored, by reason (the request was answered 400).")                                 \
    X(SRV_REFUSED, SERVER, "gpulse_server_write_requests_refused_total", COUNTER, "reason",            \
      "Remote-write requests refused whole, by reason.")                                               \
    X(SRV_INFLIGHT, SERVER, "gpulse_server_inflight_bytes", GAUGE, "",                                 \
      "Bytes held by write requests being received or decoded.")                                       \
    X(SRV_INFLIGHT_LIMIT, SERVER, "gpulse_server_inflight_limit_bytes", GAUGE, "",                     \
      "max_inflight_bytes: 429 above it.")                                                             \
    X(SRV_HTTP_REQUESTS, SERVER, "gpulse_server_http_requests_total", COUNTER, "handler code",         \
      "HTTP requests by handler and status code (code 0: cut off without an answer).")                 \
    X(SRV_HTTP_FRAMING, SERVER, "gpulse_server_http_framing_refused_total", COUNTER, "reason",      \
      "HTTP requests refused for framing that two parsers could read differently, by reason; "        \
      "the connection was closed.")                                                                    \
    X(SRV_HTTP_CONN_REFUSED, SERVER, "gpulse_server_http_connections_refused_total", COUNTER,         \
      "reason", "Connections closed at once: max_connections or max_connections_per_address "          \
      "reached, or the reserve kept for addresses without a connection.")                              \
    X(SRV_HTTP_LINGER, SERVER, "gpulse_server_http_lingering_closes_total", COUNTER, "outcome",       \
      "Connections answered before their body was read: drained so the answer arrives, or closed "     \
      "at once when too many lingered.")                                                               \
    X(SRV_WRITE_DURATION, SERVER, "gpulse_server_write_duration_seconds", HISTOGRAM, "le",             \
      "Time to decode, store and sync one remote-write request.")                                      \
    X(SRV_QUERY_DURATION, SERVER, "gpulse_server_query_duration_seconds", HISTOGRAM, "handler le",     \
      "Time to answer one query API request, by handler.")                                             \
    X(SRV_STORE_READY, SERVER, "gpulse_server_store_ready", GAUGE, "",                                 \
      "1 when the store takes writes; 0 while it starts or while its writes are paused.")              \
    X(SRV_SERIES, SERVER, "gpulse_server_series", GAUGE, "", "Series held by the store.")              \
    X(SRV_HEAD_CHUNKS, SERVER, "gpulse_server_head_chunks", GAUGE, "", "Open in-memory (head) chunks.") \
    X(SRV_HEAD_BYTES, SERVER, "gpulse_server_head_bytes", GAUGE, "", "Bytes of the head chunks.")      \
    X(SRV_WAL_BYTES, SERVER, "gpulse_server_wal_bytes", GAUGE, "", "Bytes in the write-ahead log.")    \
    X(SRV_WAL_SYNCS, SERVER, "gpulse_server_wal_syncs_total", COUNTER, "",                             \
      "WAL syncs (fdatasync) since start.")                                                            \
    X(SRV_DISK_BYTES, SERVER, "gpulse_server_disk_bytes", GAUGE, "",                                   \
      "Bytes the store holds on disk (chunks, blocks, rollups, snapshot, metadata).")                  \
    X(SRV_BLOCKS, SERVER, "gpulse_server_blocks", GAUGE, "", "Compacted blocks on disk.")              \
    X(SRV_CHECKPOINTS, SERVER, "gpulse_server_checkpoints_total", COUNTER, "",                         \
      "Head checkpoints since start.")                                                                 \
    X(SRV_COMPACTIONS, SERVER, "gpulse_server_compactions_total", COUNTER, "", "Compactions since start.") \
    X(SRV_WRITES_PAUSED, SERVER, "gpulse_server_store_writes_paused", GAUGE, "",                       \
      "1 while the store refuses writes (503, Retry-After) after a write error such as a full disk.")   \
    X(SRV_WRITE_ERRORS, SERVER, "gpulse_server_store_write_errors_total", COUNTER, "",                 \
      "Write errors that paused the store's writes, one per episode.")                                 \
    X(SRV_WRITE_RESUMES, SERVER, "gpulse_server_store_write_resumes_total", COUNTER, "",               \
      "Times the store resumed writes by itself once its disk had room again.")                        \
    X(SRV_OLDEST, SERVER, "gpulse_server_oldest_sample_timestamp_seconds", GAUGE, "",                  \
      "Time of the oldest sample held.")                                                               \
    X(SRV_NEWEST, SERVER, "gpulse_server_newest_sample_timestamp_seconds", GAUGE, "",                  \
      "Time of the newest sample held.")                                                               \
    X(SRV_RECOVERY, SERVER, "gpulse_server_recovery_duration_seconds", GAUGE, "",                      \
      "Time the last start spent recovering the store.")                                               \
    X(SRV_RECOVERED, SERVER, "gpulse_server_recovered_samples", GAUGE, "",                             \
      "Samples replayed from the WAL at the last start.")                                              \
    X(SRV_STORE_DAMAGE, SERVER, "gpulse_server_store_damage", GAUGE, "what",                          \
      "1 for each damage the last start found and worked around (docs/storage.md).")                   \
    X(SRV_SERIES_LOST, SERVER, "gpulse_server_store_series_lost", GAUGE, "",                           \
      "Series with data whose labels were lost (meta.db and series.log both damaged).")                \
    X(SRV_WAL_CORRUPT, SERVER, "gpulse_server_wal_corrupt_records", GAUGE, "",                         \
      "Damaged WAL records skipped at the last start (torn tails not counted).")                       \
    X(SRV_WAL_RECOVERED, SERVER, "gpulse_server_wal_records_recovered", GAUGE, "",                     \
      "Valid WAL records replayed after a damaged one at the last start.")                             \
    X(SRV_DAMAGED_READS, SERVER, "gpulse_server_damaged_chunks_read_total", COUNTER, "",               \
      "Damaged chunks that reads skipped (the answer carried a warning).")                             \
    X(SRV_START, SERVER, "gpulse_server_start_time_seconds", GAUGE, "",                                \
      "When the server started (Unix time).")                                                          \
    X(SRV_STATE_DAMAGED, SERVER, "gpulse_server_state_damaged", GAUGE, "",                             \
      "1 when state.db was found damaged at start: jobs, alerts and notifications run on an empty "   \
      "in-memory state until `gpulse repair` (docs/storage.md).")                                      \
    X(SRV_METADATA_FAMILIES, SERVER, "gpulse_server_metadata_families", GAUGE, "",                     \
      "Metric families whose remote-written TYPE, HELP and unit are kept (/api/v1/metadata).")         \
    X(SRV_METADATA_DROPPED, SERVER, "gpulse_server_metadata_dropped_total", COUNTER, "",               \
      "Remote-written metadata entries of new families not kept: the limits were reached "             \
      "(docs/api.md).")                                                                                \
    X(SRV_SELF_SCRAPES, SERVER, "gpulse_server_self_scrapes_total", COUNTER, "",                       \
      "Self-scrapes: the server's own families stored in its store (self_scrape_interval).")          \
    X(SRV_SELF_SCRAPE_FAILURES, SERVER, "gpulse_server_self_scrape_failures_total", COUNTER, "",       \
      "Self-scrapes that stored nothing or not every sample (logged with the reason).")               \
    X(STORAGE_REMOTE_QUERIES, STORAGE, "gpulse_storage_remote_queries_total", COUNTER, "",            \
      "Requests made to the cluster's query API.")                                                     \
    X(STORAGE_REMOTE_QUERY_ERRORS, STORAGE, "gpulse_storage_remote_query_errors_total", COUNTER, "",   \
      "Query API requests that failed (no answer, an HTTP error, an answer that does not parse).")     \
    X(STORAGE_REMOTE_QUERY_SECONDS, STORAGE, "gpulse_storage_remote_query_seconds_total", COUNTER, "", \
      "Time spent waiting for the cluster's query API.")                                               \
    X(STORAGE_REMOTE_SAMPLES_READ, STORAGE, "gpulse_storage_remote_samples_read_total", COUNTER, "",   \
      "Raw samples read back from the cluster.")                                                       \
    X(STORAGE_REMOTE_CACHE_HITS, STORAGE, "gpulse_storage_remote_cache_hits_total", COUNTER, "",       \
      "Reads answered from the samples a selection had already fetched.")                              \
    X(STORAGE_REMOTE_FORWARDED, STORAGE, "gpulse_storage_remote_samples_forwarded_total", COUNTER, "", \
      "Samples received and queued for the cluster's remote write (delivery: gpulse_push_*).")        \
    X(STORAGE_REMOTE_ANSWER_BYTES, STORAGE, "gpulse_storage_remote_answer_bytes_total", COUNTER, "", \
      "Bytes of JSON the cluster's query API answered (after gzip is undone).")                   \
    X(STORAGE_REMOTE_PUSHDOWNS, STORAGE, "gpulse_storage_remote_pushdowns_total", COUNTER, "",       \
      "Range reads the cluster aggregated per step (*_over_time) instead of moving raw samples.")     \
    X(STORAGE_REMOTE_WINDOW_READS, STORAGE, "gpulse_storage_remote_window_reads_total", COUNTER, "", \
      "Selections and label lookups answered from the local window, without the cluster.")            \
    X(STORAGE_REMOTE_WINDOW_REFILLED, STORAGE, "gpulse_storage_remote_window_refilled_samples", GAUGE, "", \
      "Samples the local window was refilled with from the cluster at start.")                        \
    X(STORAGE_REMOTE_WINDOW_HELD, STORAGE, "gpulse_storage_remote_window_held_seconds", GAUGE, "",    \
      "How far back the local window is complete now (remote_window once refilled or filled).")       \
    X(EVAL_TICKS, EVAL, "gpulse_server_eval_ticks_total", COUNTER, "",                                 \
      "Evaluation ticks (view, detectors, rules, alerts).")                                            \
    X(EVAL_ERRORS, EVAL, "gpulse_server_eval_errors_total", COUNTER, "part",                           \
      "Evaluation failures, by what failed.")                                                          \
    X(EVAL_LAST, EVAL, "gpulse_server_eval_last_seconds", GAUGE, "part",                               \
      "Time the last evaluation tick took, by part.")                                                  \
    X(EVAL_VIEW_GPUS, EVAL, "gpulse_server_eval_view_gpus", GAUGE, "", "GPUs in the detectors' view.") \
    X(RULE_RELOADS, EVAL, "gpulse_server_rule_reloads_total", COUNTER, "result",                       \
      "Reloads of rule_files on SIGHUP, by result (success, failure: the old rules stay).")            \
    X(RULE_RELOAD_OK, EVAL, "gpulse_server_rules_last_reload_successful", GAUGE, "",                   \
      "1 when the last reload of rule_files (or the start) succeeded, as Prometheus's "                 \
      "prometheus_config_last_reload_successful.")                                                     \
    X(RULE_GROUP_RULES, EVAL, "gpulse_rule_group_rules", GAUGE, "rule_group",                          \
      "Rules in a rule_files group (rule_group is \"FILE;GROUP\", as Prometheus's).")                  \
    X(RULE_GROUP_INTERVAL, EVAL, "gpulse_rule_group_interval_seconds", GAUGE, "rule_group",            \
      "A rule group's evaluation interval.")                                                           \
    X(RULE_GROUP_LAST_EVAL, EVAL, "gpulse_rule_group_last_evaluation_timestamp_seconds", GAUGE,        \
      "rule_group", "When a rule group last ran (0: not yet).")                                        \
    X(RULE_GROUP_LAST_DURATION, EVAL, "gpulse_rule_group_last_duration_seconds", GAUGE, "rule_group",  \
      "How long a rule group's last round took.")                                                      \
    X(RULE_EVALS, EVAL, "gpulse_rule_evaluations_total", COUNTER, "rule_group",                        \
      "Rule evaluations of a group (one per rule per round).")                                         \
    X(RULE_EVAL_FAILURES, EVAL, "gpulse_rule_evaluation_failures_total", COUNTER, "rule_group",        \
      "Rule evaluations that failed (the rule's lastError in /api/v1/rules says why).")                \
    X(ALERTS, EVAL, "gpulse_server_alerts", GAUGE, "state", "Alerts now, by state.")                   \
    X(JOB_GOODPUT, EVAL, "gpulse_job_goodput_ratio", GAUGE, "job",                                     \
      "Goodput of a job in the detectors' view: productive step time / its ranks' wall time "        \
      "(low_goodput's input, refreshed every minute).")                                                \
    X(ALERT_TRANSITIONS, EVAL, "gpulse_server_alert_transitions_total", COUNTER, "",                   \
      "Alert state changes.")                                                                          \
    X(REMEDIATION_REFUSED, EVAL, "gpulse_server_remediation_refused_total", COUNTER, "reason",         \
      "Remediation actions refused: a placeholder's value failed its check (reason: the placeholder, " \
      "or too_long), or a path left remediation_path_root (path).")                                    \
    X(REMEDIATION_BREAKER_NODES, EVAL, "gpulse_server_remediation_breaker_nodes", GAUGE, "",          \
      "Distinct nodes remediation acted on in the last hour (dry runs included), which the circuit "  \
      "breaker counts.")                                                                               \
    X(REMEDIATION_BREAKER_LIMIT, EVAL, "gpulse_server_remediation_breaker_limit", GAUGE, "",          \
      "Nodes the circuit breaker lets remediation act on in an hour now (the smaller of "             \
      "remediation_breaker_max_nodes and remediation_breaker_max_percent of the fleet).")            \
    X(REMEDIATION_BREAKER_REFUSED, EVAL, "gpulse_server_remediation_breaker_refused_total", COUNTER,  \
      "", "Remediation actions the open circuit breaker refused (audited breaker_open).")             \
    X(HEALTH_NODES, EVAL, "gpulse_health_nodes", GAUGE, "state",                                        \
      "Nodes by health state (healthy, degraded, unhealthy: docs/health.md).")                         \
    X(HEALTH_GPUS, EVAL, "gpulse_health_gpus", GAUGE, "state", "GPUs by health state.")              \
    X(HEALTH_PREFLIGHT_FAILED, EVAL, "gpulse_health_preflight_failed_nodes", GAUGE, "",              \
      "Nodes whose last preflight (gpulse check --push) failed, degraded until a passing one.")      \
    X(NOTIFICATIONS, NOTIFY, "gpulse_server_notifications_total", COUNTER, "receiver result",          \
      "Notification sends, by receiver and result (done, retry, dead).")                               \
    X(NOTIFICATIONS_QUEUED, NOTIFY, "gpulse_server_notifications_queued", GAUGE, "",                   \
      "Notifications waiting to be sent.")                                                             \
    X(NOTIFICATIONS_DEAD, NOTIFY, "gpulse_server_notifications_dead", GAUGE, "",                       \
      "Notifications given up on.")                                                                    \
    X(NOTIFY_EVENTS, NOTIFY, "gpulse_server_notify_events_total", COUNTER, "",                         \
      "Alert transitions the notification router took in.")                                            \
    X(NOTIFY_DROPPED, NOTIFY, "gpulse_server_notify_events_dropped_total", COUNTER, "",                \
      "Alert transitions dropped because the router's queue was full.")                                \
    X(NOTIFY_NOTICES, NOTIFY, "gpulse_server_notify_notices_total", COUNTER, "",                       \
      "Notifications the router wrote to the outbox.")                                                 \
    X(NOTIFY_DB_ERRORS, NOTIFY, "gpulse_server_notify_db_errors_total", COUNTER, "",                   \
      "Router writes to state.db that failed.")                                                        \
    X(NOTIFY_GROUPS, NOTIFY, "gpulse_server_notify_groups", GAUGE, "",                                 \
      "Notification groups the router keeps now.")                                                     \
    X(NOTIFY_GROUP_ALERTS, NOTIFY, "gpulse_server_notify_group_alerts", GAUGE, "",                     \
      "Alerts held in the router's groups now.")                                                       \
    X(SRV_STREAMS_OPEN, SERVER, "gpulse_server_streams_open", GAUGE, "",                               \
      "Server-Sent Event streams open now.")                                                           \
    X(SRV_STREAMS_OPENED, SERVER, "gpulse_server_streams_opened_total", COUNTER, "",                   \
      "Server-Sent Event streams opened.")                                                             \
    X(SRV_STREAM_EVENTS, SERVER, "gpulse_server_stream_events_total", COUNTER, "",                     \
      "Events sent on the streams.")                                                                   \
    X(SRV_STREAM_DROPPED, SERVER, "gpulse_server_stream_events_dropped_total", COUNTER, "",            \
      "Alert events a stream lost: its queue was full (a slow client).")

enum gp_metric {
#define GP_METRIC_ENUM_(id, sec, name, type, labels, help) GP_M_##id,
    GP_METRICS(GP_METRIC_ENUM_)
#undef GP_METRIC_ENUM_
    GP_M__COUNT
};

enum gp_metric_kind { GP_MK_GAUGE, GP_MK_COUNTER, GP_MK_HISTOGRAM };

struct gp_metric_info {
    const char *name;
    enum gp_metric_kind kind;
    enum gp_metric_section section;
    const char *labels; /* for the reference; see the header comment */
    const char *help;
};

extern const struct gp_metric_info gp_metrics[GP_M__COUNT];
extern const char *const gp_metric_section_titles[GP_MS__COUNT];

/* "gauge", "counter" or "histogram". */
const char *gp_metric_kind_name(enum gp_metric_kind k);

/* The family's name (a static string). */
static inline const char *gp_metric_name(enum gp_metric m) { return gp_metrics[m].name; }

/* Appends "# HELP name help\n# TYPE name type\n" for m to b. */
void gp_metric_head(struct gp_buf *b, enum gp_metric m);

/* Appends s escaped as a label value of the text format (\\, \", \n). */
void gp_metric_escape(struct gp_buf *out, const char *s);

#endif
