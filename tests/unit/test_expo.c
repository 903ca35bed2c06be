#include "agent/expo.h"
#include "lib/metrics.h"
#include "agent/snapshot.h"
#include "lib/buf.h"
#include "sources/steps_proto.h"
#include "test.h"

#include <stdlib.h>

static void fill(struct gp_frame *f)
{
    gp_frame_init(f);
    snprintf(f->hostname, sizeof f->hostname, "node-a");
    f->time_ms = 1700000000123;
    f->seq = 5;
    struct gp_gpu *g = gp_frame_add_gpu(f);
    g->index = 0;
    snprintf(g->uuid, sizeof g->uuid, "GPU-11111111-2222-3333-4444-555555555555");
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "00000000:18:00.0");
    snprintf(g->device, sizeof g->device, "nvidia0");
    snprintf(g->model, sizeof g->model, "NVIDIA H100 80GB HBM3");
    snprintf(g->driver, sizeof g->driver, "550.54.15");
    gp_gpu_set(g, GPF_GPU_UTIL, 87);
    gp_gpu_set(g, GPF_FB_USED, 40960);
    gp_gpu_set(g, GPF_PROF_SM_ACTIVE, 0.625);
    gp_gpu_set(g, GPF_TOTAL_ENERGY, 123456789);
    g->clock_events_valid = true;
    g->clock_events = 0x40 | 0x4;
    g->nxids = 1;
    g->xids[0].xid = 79;
    g->xids[0].count = 2;
    struct gp_gpu_proc *p = gp_gpu_add_proc(g);
    p->pid = 100;
    p->mem_valid = true;
    p->mem_bytes = 1 << 30;
    p->util_valid = true;
    p->sm_util = 50;
    p->mem_util = 20;

    g = gp_frame_add_gpu(f); /* lost */
    g->index = 1;
    snprintf(g->uuid, sizeof g->uuid, "GPU-lost");
    snprintf(g->model, sizeof g->model, "NVIDIA H100 80GB HBM3");
    g->lost = true;
    gp_gpu_set(g, GPF_GPU_UTIL, 99); /* must not be shown for a lost GPU */

    g = gp_frame_add_gpu(f); /* a MIG instance of GPU 0 */
    g->index = 0;
    g->mig_gi = 3;
    snprintf(g->mig_profile, sizeof g->mig_profile, "1g.10gb");
    snprintf(g->uuid, sizeof g->uuid, "MIG-aaaa");
    snprintf(g->model, sizeof g->model, "NVIDIA H100 80GB HBM3 MIG 1g.10gb");
    gp_gpu_set(g, GPF_FB_USED, 100);

    struct gp_proc *hp;
    const unsigned pids[][2] = {{1, 0}, {100, 1}, {101, 100}, {102, 101}, {200, 1}};
    const char *comms[] = {"init", "python \"train\"\\x", "pt_data_worker", "grandchild", "sshd"};
    for (int i = 0; i < 5; i++) {
        hp = gp_frame_add_proc(f);
        hp->pid = pids[i][0];
        hp->ppid = pids[i][1];
        snprintf(hp->comm, sizeof hp->comm, "%s", comms[i]);
        hp->state = 'S';
        hp->rss_bytes = 4096u * (unsigned)(i + 1);
        hp->utime_s = 1.5;
        hp->io_valid = i == 1;
        hp->io_read_bytes = 77;
        hp->followed = i >= 1 && i <= 3; /* procfs: the GPU process and its descendants */
        hp->jid.rank = hp->jid.local_rank = hp->jid.world_size = -1;
    }
    gp_frame_sort_procs(f);
    f->host.cpu_valid = true;
    f->host.ncpus = 2;
    f->host.cpu_seconds[GP_CPU_USER] = 12.5;
    f->host.mem_valid = 1u << GP_MEM_TOTAL;
    f->host.mem_bytes[GP_MEM_TOTAL] = 1ull << 34;
    f->host.psi_valid[GP_PSI_IO] = 3;
    f->host.psi_seconds[GP_PSI_IO][GP_PSI_FULL] = 0.25;
    f->src[GP_SRC_NVML].active = true;
    f->src[GP_SRC_NVML].errors_total = 3;
}

static char *render(const struct gp_frame *f, enum gp_proc_series mode)
{
    struct gp_expo x = {0};
    struct gp_buf b;
    gp_buf_init(&b, 0);
    struct gp_expo_options o = {.hostname_label = "Hostname", .process_series = mode};
    struct gp_agent_stats st = {10, 1, 1700000000.5, 0.001};
    CHECK_INT(gp_expo_render(&x, &b, f, &o, &st), 0);
    gp_expo_free(&x);
    return gp_buf_steal(&b, NULL);
}

static void test_gpu_series(void)
{
    struct gp_frame f;
    fill(&f);
    char *t = render(&f, GP_PROC_SERIES_GPU);
    const char *labels = "gpu=\"0\",UUID=\"GPU-11111111-2222-3333-4444-555555555555\","
                         "pci_bus_id=\"00000000:18:00.0\",device=\"nvidia0\","
                         "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-a\","
                         "DCGM_FI_DRIVER_VERSION=\"550.54.15\",vendor=\"nvidia\"";
    char want[1024];
    snprintf(want, sizeof want, "\nDCGM_FI_DEV_GPU_UTIL{%s} 87\n", labels);
    CHECK_CONTAINS(t, want);
    snprintf(want, sizeof want, "\nDCGM_FI_PROF_SM_ACTIVE{%s} 0.625\n", labels);
    CHECK_CONTAINS(t, want);
    snprintf(want, sizeof want, "\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{%s} 123456789\n", labels);
    CHECK_CONTAINS(t, want);
    CHECK_CONTAINS(t, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n");
    CHECK_CONTAINS(t, "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n");
    CHECK_CONTAINS(t, "reason=\"hw_thermal_slowdown\"} 1\n");
    CHECK_CONTAINS(t, "reason=\"sw_power_cap\"} 1\n");
    CHECK_CONTAINS(t, "reason=\"gpu_idle\"} 0\n");
    CHECK_CONTAINS(t, "vendor=\"nvidia\",xid=\"79\"} 2\n");
    /* the lost GPU: only its lost flag */
    CHECK_CONTAINS(t, "UUID=\"GPU-lost\"");
    CHECK(!strstr(t, "} 99\n"));
    CHECK_CONTAINS(t, "gpulse_gpu_lost{gpu=\"1\",UUID=\"GPU-lost\"");
    /* the MIG instance */
    CHECK_CONTAINS(t, "GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"3\"");
    /* process on GPU, with an escaped name */
    CHECK_CONTAINS(t, "pid=\"100\",comm=\"python \\\"train\\\"\\\\x\"} 1073741824\n");
    CHECK_CONTAINS(t, "gpulse_gpu_process_sm_ratio{");
    CHECK_CONTAINS(t, "} 0.5\n");
    free(t);
    gp_frame_free(&f);
}

static void test_host_and_processes(void)
{
    struct gp_frame f;
    fill(&f);
    char *t = render(&f, GP_PROC_SERIES_GPU);
    CHECK_CONTAINS(t, "gpulse_host_cpu_seconds_total{mode=\"user\"} 12.5\n");
    CHECK_CONTAINS(t, "gpulse_host_memory_bytes{kind=\"total\"} 17179869184\n");
    CHECK_CONTAINS(t, "gpulse_host_pressure_stall_seconds_total{resource=\"io\",kind=\"full\"} 0.25\n");
    CHECK(!strstr(t, "resource=\"cpu\""));
    /* GPU process, its child and grandchild; not init or sshd */
    CHECK_CONTAINS(t, "gpulse_process_resident_memory_bytes{pid=\"101\",comm=\"pt_data_worker\"} 12288\n");
    CHECK_CONTAINS(t, "gpulse_process_resident_memory_bytes{pid=\"102\"");
    CHECK(!strstr(t, "comm=\"sshd\""));
    CHECK(!strstr(t, "comm=\"init\""));
    CHECK_CONTAINS(t, "gpulse_process_io_read_bytes_total{pid=\"100\"");
    CHECK(!strstr(t, "gpulse_process_io_read_bytes_total{pid=\"101\""));
    CHECK_CONTAINS(t, "gpulse_process_info{pid=\"101\",comm=\"pt_data_worker\",ppid=\"100\",uid=\"0\",state=\"S\"} 1\n");
    CHECK_CONTAINS(t, "gpulse_source_errors_total{source=\"nvml\"} 3\n");
    CHECK_CONTAINS(t, "gpulse_agent_tick_overruns_total 1\n");
    free(t);
    t = render(&f, GP_PROC_SERIES_ALL);
    CHECK_CONTAINS(t, "comm=\"sshd\"");
    free(t);
    t = render(&f, GP_PROC_SERIES_NONE);
    CHECK(!strstr(t, "gpulse_process_"));
    free(t);
    gp_frame_free(&f);
}

/* The jobs source's results on fill()'s frame: the GPU process 100 and
 * its child 101 in job "bert" rank 0, the grandchild 102 in no job. */
static void add_jobs(struct gp_frame *f)
{
    struct gp_job_id id = {.rank = 0, .local_rank = 0, .world_size = 8, .scheme = GP_JOB_SLURM};
    snprintf(id.job, sizeof id.job, "bert \"x\"");
    for (uint32_t pid = 100; pid <= 101; pid++)
        ((struct gp_proc *)gp_frame_find_proc(f, pid))->jid = id;
    struct gp_job *j = gp_frame_add_job(f);
    CHECK(j);
    j->id = id;
    j->id.world_size = -1;
    j->start_time_s = 1700000000.25;
    j->nprocs = 2;
    j->cpu_seconds = 3;
    j->rss_bytes = 8192;
    j->ngpus = 1;
    j->gpu_mem_valid = true;
    j->gpu_memory_bytes = 1 << 30;
    struct gp_job_id other = {.rank = -1, .local_rank = -1, .world_size = -1, .scheme = GP_JOB_PGID};
    snprintf(other.job, sizeof other.job, "pg-7@node-a");
    j = gp_frame_add_job(f);
    CHECK(j);
    j->id = other;
    j->nprocs = 1;
    j->sm_valid = true;
    j->sm_ratio = 1.5;
    f->gpus[0].job_idx = 0;
    f->gpus[2].job_idx = 1;
}

/* job and rank on GPU, GPU-process and process series; the job families. */
static void test_job_labels(void)
{
    struct gp_frame f;
    fill(&f);
    add_jobs(&f);
    char *t = render(&f, GP_PROC_SERIES_GPU);
    CHECK_CONTAINS(t, "vendor=\"nvidia\",job=\"bert \\\"x\\\"\",rank=\"0\"} 87\n");
    CHECK_CONTAINS(t, "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"MIG-aaaa\"");
    CHECK_CONTAINS(t, "vendor=\"nvidia\",job=\"pg-7@node-a\"} 100\n");
    /* the per-process GPU series: the process's job, not the GPU's twice */
    CHECK_CONTAINS(t, "vendor=\"nvidia\",pid=\"100\",comm=\"python \\\"train\\\"\\\\x\",job=\"bert "
                      "\\\"x\\\"\",rank=\"0\"} 1073741824\n");
    CHECK_CONTAINS(t, "gpulse_process_resident_memory_bytes{pid=\"101\",comm=\"pt_data_worker\","
                      "job=\"bert \\\"x\\\"\",rank=\"0\"} 12288\n");
    CHECK_CONTAINS(t, "gpulse_process_cpu_seconds_total{pid=\"101\",comm=\"pt_data_worker\",job=\"bert "
                      "\\\"x\\\"\",rank=\"0\",mode=\"system\"} 0\n");
    CHECK_CONTAINS(t, "gpulse_process_resident_memory_bytes{pid=\"102\",comm=\"grandchild\"} 16384\n");
    /* the job families */
    CHECK_CONTAINS(t, "# TYPE gpulse_job_info gauge\n");
    CHECK_CONTAINS(t, "gpulse_job_info{job=\"bert \\\"x\\\"\",rank=\"0\",Hostname=\"node-a\",scheme=\"slurm\","
                      "local_rank=\"0\"} 1\n");
    CHECK_CONTAINS(t, "gpulse_job_info{job=\"pg-7@node-a\",Hostname=\"node-a\",scheme=\"process_group\"} 1\n");
    CHECK_CONTAINS(t, "gpulse_job_start_time_seconds{job=\"bert \\\"x\\\"\",rank=\"0\",Hostname=\"node-a\"} "
                      "1700000000.25\n");
    CHECK_CONTAINS(t, "# TYPE gpulse_job_cpu_seconds_total counter\n");
    CHECK_CONTAINS(t, "gpulse_job_cpu_seconds_total{job=\"bert \\\"x\\\"\",rank=\"0\",Hostname=\"node-a\"} 3\n");
    CHECK_CONTAINS(t, "gpulse_job_processes{job=\"pg-7@node-a\",Hostname=\"node-a\"} 1\n");
    CHECK_CONTAINS(t, "gpulse_job_resident_memory_bytes{job=\"bert \\\"x\\\"\",rank=\"0\",Hostname=\"node-a\"} 8192\n");
    CHECK_CONTAINS(t, "gpulse_job_gpus{job=\"bert \\\"x\\\"\",rank=\"0\",Hostname=\"node-a\"} 1\n");
    CHECK_CONTAINS(t, "gpulse_job_gpu_memory_bytes{job=\"bert \\\"x\\\"\",rank=\"0\",Hostname=\"node-a\"} 1073741824\n");
    CHECK(!strstr(t, "gpulse_job_gpu_memory_bytes{job=\"pg-7"));
    CHECK_CONTAINS(t, "gpulse_job_gpu_sm_ratio{job=\"pg-7@node-a\",Hostname=\"node-a\"} 1.5\n");
    CHECK(!strstr(t, "gpulse_job_gpu_sm_ratio{job=\"bert"));
    free(t);

    struct gp_buf b;
    gp_buf_init(&b, 0);
    struct gp_expo_options o = {.hostname_label = "Hostname", .process_series = GP_PROC_SERIES_GPU};
    struct gp_agent_stats st = {10, 1, 1700000000.5, 0.001};
    CHECK_INT(gp_snapshot_render(&b, &f, &o, &st), 0);
    CHECK_CONTAINS(b.data, "\"pid\":101,");
    CHECK_CONTAINS(b.data, "\"job\":\"bert \\\"x\\\"\",\"rank\":0");
    CHECK_CONTAINS(b.data, "\"jobs\":[{\"job\":\"bert \\\"x\\\"\",\"rank\":0,\"scheme\":\"slurm\","
                           "\"local_rank\":0,\"world_size\":null,");
    CHECK_CONTAINS(b.data, "{\"job\":\"pg-7@node-a\",\"rank\":null,\"scheme\":\"process_group\"");
    CHECK_CONTAINS(b.data, "\"gpu_memory_bytes\":null,\"gpu_sm_ratio\":1.5}");
    gp_buf_free(&b);
    gp_frame_free(&f);
}

/* Each family once, HELP and TYPE before its samples, each series once. */
static void test_families_well_formed(void)
{
    struct gp_frame f;
    fill(&f);
    add_jobs(&f);
    char *t = render(&f, GP_PROC_SERIES_ALL);
    char *save = NULL, *copy = strdup(t);
    char seen[256][96];
    int nseen = 0;
    char lines[512][512];
    int nlines = 0;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, "# TYPE ", 7)) {
            char name[96];
            sscanf(line + 7, "%95s", name);
            for (int i = 0; i < nseen; i++)
                if (!strcmp(seen[i], name))
                    gp_test_fail(__FILE__, __LINE__, "family %s twice", name);
            snprintf(seen[nseen++], sizeof seen[0], "%s", name);
            continue;
        }
        if (line[0] == '#')
            continue;
        for (int i = 0; i < nlines; i++) {
            char *sp = strrchr(lines[i], ' ');
            size_t k = (size_t)(sp - lines[i]);
            if (!strncmp(lines[i], line, k) && line[k] == ' ')
                gp_test_fail(__FILE__, __LINE__, "duplicate series %s", line);
        }
        CHECK(nlines < 512);
        snprintf(lines[nlines++], sizeof lines[0], "%s", line);
    }
    CHECK(nseen > 20);
    CHECK(t[strlen(t) - 1] == '\n');
    free(copy);
    free(t);
    gp_frame_free(&f);
}

static void test_escape(void)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_metric_escape(&b, "a\\b\"c\nd");
    CHECK_STR(b.data, "a\\\\b\\\"c\\nd");
    gp_buf_free(&b);
}

static void test_snapshot_json(void)
{
    struct gp_frame f;
    fill(&f);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    struct gp_expo_options o = {.hostname_label = "Hostname", .process_series = GP_PROC_SERIES_GPU};
    struct gp_agent_stats st = {10, 1, 1700000000.5, 0.001};
    CHECK_INT(gp_snapshot_render(&b, &f, &o, &st), 0);
    CHECK_CONTAINS(b.data, "\"DCGM_FI_DEV_GPU_UTIL\":87");
    CHECK_CONTAINS(b.data, "\"clock_event_reasons\":[\"sw_power_cap\",\"hw_thermal_slowdown\"]");
    CHECK_CONTAINS(b.data, "\"xid_errors\":{\"79\":2}");
    CHECK_CONTAINS(b.data, "\"lost\":true");
    CHECK_CONTAINS(b.data, "\"comm\":\"python \\\"train\\\"\\\\x\"");
    CHECK(!strstr(b.data, "sshd"));
    gp_buf_reset(&b);
    o.process_series = GP_PROC_SERIES_ALL;
    CHECK_INT(gp_snapshot_render(&b, &f, &o, &st), 0);
    CHECK_CONTAINS(b.data, "sshd");
    gp_buf_free(&b);
    gp_frame_free(&f);
}

/* docs/metrics.md names every GPU reading of the table. */
static void test_docs_name_every_metric(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/../../docs/metrics.md", GP_TEST_DATA_DIR);
    FILE *fp = fopen(path, "r");
    CHECK(fp != NULL);
    static char text[1 << 17];
    size_t n = fread(text, 1, sizeof text - 1, fp);
    text[n] = '\0';
    fclose(fp);
    for (int i = 0; i < GPF__COUNT; i++) {
        char needle[128];
        snprintf(needle, sizeof needle, "`%s`", gp_gpu_fields[i].name);
        if (!strstr(text, needle))
            gp_test_fail(__FILE__, __LINE__, "docs/metrics.md does not name %s", needle);
    }
}

/* Phase seconds, one series per phase of a process that sent a phase
 * (zeros included); none for a process that never did. */
static void test_phase_series(void)
{
    struct gp_frame f;
    fill(&f);
    struct gp_step_stats *s = gp_frame_add_steps(&f), *quiet = gp_frame_add_steps(&f);
    CHECK(s && quiet);
    s->pid = 100;
    s->jid.rank = quiet->jid.rank = -1;
    snprintf(s->jid.job, sizeof s->jid.job, "bert");
    s->phase_valid = true;
    s->phase_seconds_total[GP_STEPS_PHASE_CHECKPOINT] = 12.5;
    s->phase_seconds_total[GP_STEPS_PHASE_EVALUATION] = 3;
    quiet->pid = 101;
    char *t = render(&f, GP_PROC_SERIES_GPU);
    CHECK_CONTAINS(t, "# TYPE gpulse_job_phase_seconds_total counter\n");
    CHECK_CONTAINS(t, "gpulse_job_phase_seconds_total{job=\"bert\",Hostname=\"node-a\",pid=\"100\","
                      "phase=\"checkpoint\"} 12.5\n");
    CHECK_CONTAINS(t, "phase=\"evaluation\"} 3\n");
    CHECK_CONTAINS(t, "pid=\"100\",phase=\"other\"} 0\n");
    CHECK(!strstr(t, "pid=\"101\",phase="));
    free(t);
    gp_frame_free(&f);
}

const struct gp_test gp_tests_expo[] = {
    {"phase_series", test_phase_series},
    {"docs_name_every_metric", test_docs_name_every_metric},
    {"gpu_series", test_gpu_series},
    {"host_and_processes", test_host_and_processes},
    {"families_well_formed", test_families_well_formed},
    {"job_labels", test_job_labels},
    {"escape", test_escape},
    {"snapshot_json", test_snapshot_json},
    {0},
};
