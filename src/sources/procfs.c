/*
 * procfs.c - the procfs source: host CPU, memory, pressure, load and one
 * record per process, read from cfg->proc_root ("/proc", or a fake tree
 * in tests).
 *
 * Cost is the point of this file: it runs every tick (100 ms to 60 s) on
 * nodes with hundreds of processes, and a whole agent tick should cost a
 * tenth of a node_exporter scrape. So:
 *   - The root directory stays open; every path is opened with openat()
 *     relative to it, and the directory is re-listed with getdents64()
 *     into a fixed buffer after rewinding it.
 *   - The host files (stat, meminfo, loadavg, pressure files) stay open across
 *     ticks and are re-read with pread() at offset 0 (Netdata's procfile):
 *     the kernel regenerates their text on every read from the start.
 *   - Everything is read into one reused buffer that grows (to a cap) only
 *     while a tick meets a larger file than before; no stdio, no
 *     allocation in steady state. Every file read here is produced whole
 *     by one kernel show() call, so a read shorter than the buffer is the
 *     whole file: one read() per file, no second read to see EOF.
 *   - Per-process files (stat, io) are opened, read and closed each
 *     tick: processes come and go.
 *   - /proc/PID/status is the dearest file the kernel makes (it walks the
 *     address space for the Vm* lines): measured, it was half of a tick.
 *     It is read only for the real uid, which almost never changes, so
 *     the uid is remembered per (pid, start time) and status re-read when
 *     a process is new, when its pid now names a different process, and
 *     at least every PROCFS_UID_REFRESH ticks (staggered by pid, so no
 *     tick pays for all of them): a setuid() after start shows late by at
 *     most that many ticks. The memory is two arrays sorted by pid (this
 *     tick's, last tick's), swapped each tick and grown only when the
 *     node runs more processes than ever before.
 *
 * Failure policy: a process that vanishes mid-read (ENOENT, ESRCH) or a
 * garbled per-process file skips that process; an unreadable or garbled
 * host file leaves that reading invalid; both count one error. Permission
 * denied on /proc/PID/io (other users' processes when unprivileged) and a
 * missing io file (kernels without task I/O accounting) only leave
 * io_valid false. A kernel without PSI (no /proc/pressure, or reads
 * answering EOPNOTSUPP when booted with psi=0) is said once at info level.
 */
#include "procfs_parse.h"
#include "source.h"

#include "lib/err.h"
#include "lib/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROCFS_BUF_START (16u * 1024)
#define PROCFS_BUF_MAX (4u * 1024 * 1024) /* /proc/stat on a huge box: ~1 MiB */
#define PROCFS_DENTS 32768
#define PROCFS_UID_REFRESH 16 /* ticks a remembered uid may be used */

static const char *const psi_files[GP_PSI__COUNT] = {"pressure/cpu", "pressure/memory",
                                                     "pressure/io"};

/* What status said about one process, remembered across ticks. */
struct procfs_seen {
    uint32_t pid, uid;
    uint64_t starttime;  /* clock ticks after boot: tells a reused pid apart */
    uint64_t read_tick;  /* tick of the last status read, staggered by pid */
};

struct procfs_seen_list {
    struct procfs_seen *v;
    size_t n, cap;
    bool sorted;         /* appended in ascending pid order */
};

struct procfs {
    int root;                  /* O_DIRECTORY fd of proc_root */
    int fd_stat, fd_meminfo, fd_loadavg;
    int fd_psi[GP_PSI__COUNT]; /* -1: no PSI on this kernel */
    char *buf;                 /* read buffer, reused */
    size_t cap;
    long ticks;                /* USER_HZ */
    uint64_t page;             /* bytes per page */
    uint64_t btime;            /* boot time, epoch seconds */
    bool psi_said;             /* "no PSI" logged */
    uint64_t tick;             /* sample() calls */
    struct procfs_seen_list seen[2]; /* [cur]: this tick; [!cur]: last */
    int cur;
    _Alignas(struct dirent64) char dents[PROCFS_DENTS]; /* getdents64 buffer */
};

/*
 * Reads the whole file at fd from offset 0 into st->buf; returns its
 * length, or -errno (-EFBIG past PROCFS_BUF_MAX). When the file fills the
 * buffer the buffer doubles and the read starts again at 0, so the text
 * parsed is always one coherent snapshot.
 */
static ssize_t read_whole(struct procfs *st, int fd)
{
    for (;;) {
        ssize_t r = pread(fd, st->buf, st->cap, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if ((size_t)r < st->cap)
            return r;
        if (st->cap >= PROCFS_BUF_MAX)
            return -EFBIG;
        char *nb = realloc(st->buf, st->cap * 2);
        if (!nb)
            return -ENOMEM;
        st->buf = nb;
        st->cap *= 2;
    }
}

/* Opens rel (relative to the root) for reading; -errno on failure. */
static int open_rel(const struct procfs *st, const char *rel)
{
    int fd = openat(st->root, rel, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    return fd >= 0 ? fd : -errno;
}

/* Opens and reads a per-process file; returns its length or -errno. */
static ssize_t read_rel(struct procfs *st, const char *rel)
{
    int fd = open_rel(st, rel);
    if (fd < 0)
        return fd;
    ssize_t n = read_whole(st, fd);
    close(fd);
    return n;
}

static void procfs_close(void *state)
{
    struct procfs *st = state;
    if (!st)
        return;
    int *fds[] = {&st->root, &st->fd_stat, &st->fd_meminfo, &st->fd_loadavg,
                  &st->fd_psi[0], &st->fd_psi[1], &st->fd_psi[2]};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (*fds[i] >= 0)
            close(*fds[i]);
    free(st->buf);
    free(st->seen[0].v);
    free(st->seen[1].v);
    free(st);
}

static void say_no_psi(struct procfs *st, int errnum)
{
    if (!st->psi_said)
        gp_log(GP_LOG_INFO, "procfs", "no pressure stall information on this kernel",
               "reason=\"%s\"", strerror(errnum));
    st->psi_said = true;
}

static int procfs_open(const struct gp_source_config *cfg, void **state, char *err,
                       size_t errlen)
{
    const char *root = cfg && cfg->proc_root && *cfg->proc_root ? cfg->proc_root : "/proc";
    struct procfs *st = calloc(1, sizeof *st);
    if (!st)
        return gp_seterr(err, errlen, GP_ENOMEM, "procfs: out of memory");
    st->fd_stat = st->fd_meminfo = st->fd_loadavg = -1;
    for (int r = 0; r < GP_PSI__COUNT; r++)
        st->fd_psi[r] = -1;
    st->root = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (st->root < 0) {
        int e = errno;
        procfs_close(st);
        return gp_seterr(err, errlen, GP_EIO, "cannot open proc root '%s': %s", root,
                         strerror(e));
    }
    st->ticks = sysconf(_SC_CLK_TCK);
    long page = sysconf(_SC_PAGESIZE);
    st->page = page > 0 ? (uint64_t)page : 4096;
    st->cap = PROCFS_BUF_START;
    st->buf = malloc(st->cap);
    if (st->ticks <= 0 || !st->buf) {
        procfs_close(st);
        return gp_seterr(err, errlen, GP_ENOMEM, "procfs: out of memory");
    }

    /* /proc/stat is the one file the source cannot do without: it holds
     * the boot time every process start time is relative to. */
    st->fd_stat = open_rel(st, "stat");
    ssize_t n = st->fd_stat >= 0 ? read_whole(st, st->fd_stat) : st->fd_stat;
    if (n < 0) {
        procfs_close(st);
        return gp_seterr(err, errlen, GP_EIO, "cannot read '%s/stat': %s", root,
                         strerror((int)-n));
    }
    struct gp_host h;
    if (gp_procfs_parse_stat(st->buf, (size_t)n, st->ticks, &h, &st->btime) != GP_OK) {
        procfs_close(st);
        return gp_seterr(err, errlen, GP_EPARSE, "malformed '%s/stat'", root);
    }

    st->fd_meminfo = open_rel(st, "meminfo");
    st->fd_loadavg = open_rel(st, "loadavg");
    if (st->fd_meminfo < 0 || st->fd_loadavg < 0)
        gp_log(GP_LOG_WARN, "procfs", "cannot open host file", "meminfo=\"%s\" loadavg=\"%s\"",
               st->fd_meminfo < 0 ? strerror(-st->fd_meminfo) : "ok",
               st->fd_loadavg < 0 ? strerror(-st->fd_loadavg) : "ok");
    for (int r = 0; r < GP_PSI__COUNT; r++) {
        st->fd_psi[r] = open_rel(st, psi_files[r]);
        if (st->fd_psi[r] < 0)
            say_no_psi(st, -st->fd_psi[r]);
    }
    *state = st;
    return GP_OK;
}

/* Reads the host files into f->host; counts failures in *errors. */
static void sample_host(struct procfs *st, struct gp_frame *f, unsigned *errors)
{
    struct gp_host *h = &f->host;
    ssize_t n = read_whole(st, st->fd_stat);
    uint64_t btime;
    if (n < 0 || gp_procfs_parse_stat(st->buf, (size_t)n, st->ticks, h, &btime) != GP_OK) {
        h->cpu_valid = false;
        (*errors)++;
    } else {
        st->btime = btime;
    }

    n = st->fd_meminfo >= 0 ? read_whole(st, st->fd_meminfo) : -EBADF;
    if (n < 0 || gp_procfs_parse_meminfo(st->buf, (size_t)n, h) != GP_OK) {
        h->mem_valid = 0;
        (*errors)++;
    }

    n = st->fd_loadavg >= 0 ? read_whole(st, st->fd_loadavg) : -EBADF;
    if (n < 0 || gp_procfs_parse_loadavg(st->buf, (size_t)n, h) != GP_OK) {
        h->load_valid = false;
        (*errors)++;
    }

    for (int r = 0; r < GP_PSI__COUNT; r++) {
        if (st->fd_psi[r] < 0)
            continue;
        n = read_whole(st, st->fd_psi[r]);
        if (n == -EOPNOTSUPP) { /* PSI compiled in but disabled at boot */
            say_no_psi(st, EOPNOTSUPP);
            close(st->fd_psi[r]);
            st->fd_psi[r] = -1;
            continue;
        }
        if (n < 0 || gp_procfs_parse_pressure(st->buf, (size_t)n, (enum gp_psi_resource)r, h) !=
                         GP_OK) {
            h->psi_valid[r] = 0;
            (*errors)++;
        }
    }
}

/* Last tick's record of pid, or NULL. */
static const struct procfs_seen *seen_find(const struct procfs_seen_list *l, uint32_t pid)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->v[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < l->n && l->v[lo].pid == pid ? &l->v[lo] : NULL;
}

/* Remembers a process for the next tick. Out of memory only means its
 * status is read again next tick, so failure is silent. */
static void seen_add(struct procfs_seen_list *l, const struct procfs_seen *s)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 256;
        struct procfs_seen *nv = realloc(l->v, nc * sizeof *nv);
        if (!nv)
            return;
        l->v = nv;
        l->cap = nc;
    }
    if (l->n > 0 && l->v[l->n - 1].pid >= s->pid)
        l->sorted = false;
    l->v[l->n++] = *s;
}

static int seen_cmp(const void *a, const void *b)
{
    uint32_t x = ((const struct procfs_seen *)a)->pid, y = ((const struct procfs_seen *)b)->pid;
    return x < y ? -1 : x > y;
}

/*
 * Reads one process (pid, as the digits name[0..len)) into a new frame
 * record. Returns GP_OK, GP_ENOMEM (the frame could not grow) or another
 * code when the process was skipped (the caller counts it).
 */
static int sample_pid(struct procfs *st, struct gp_frame *f, const char *name, size_t len)
{
    char path[40];
    if (len > 20)
        return GP_EPARSE;
    memcpy(path, name, len);
    char *leaf = path + len;

    struct gp_procfs_pid_stat ps;
    memcpy(leaf, "/stat", sizeof "/stat");
    ssize_t n = read_rel(st, path);
    if (n < 0 || gp_procfs_parse_pid_stat(st->buf, (size_t)n, &ps) != GP_OK)
        return GP_EIO;

    const struct procfs_seen *old = seen_find(&st->seen[!st->cur], ps.pid);
    struct procfs_seen now;
    if (old && old->starttime == ps.starttime &&
        st->tick - old->read_tick < PROCFS_UID_REFRESH) {
        now = *old;
    } else {
        struct gp_procfs_pid_status status;
        memcpy(leaf, "/status", sizeof "/status");
        n = read_rel(st, path);
        if (n < 0 || gp_procfs_parse_pid_status(st->buf, (size_t)n, &status) != GP_OK)
            return GP_EIO;
        now.pid = ps.pid;
        now.uid = status.uid;
        now.starttime = ps.starttime;
        /* first sight: pretend an earlier read, so refreshes spread out */
        now.read_tick = old ? st->tick : st->tick - ps.pid % PROCFS_UID_REFRESH;
    }

    bool io_valid = false;
    uint64_t rd = 0, wr = 0;
    memcpy(leaf, "/io", sizeof "/io");
    n = read_rel(st, path);
    if (n >= 0) {
        if (gp_procfs_parse_pid_io(st->buf, (size_t)n, &rd, &wr) != GP_OK)
            return GP_EPARSE;
        io_valid = true;
    } else if (n != -EACCES && n != -EPERM && n != -ENOENT) {
        return GP_EIO; /* ESRCH: it exited between the reads */
    }

    if (ps.rss_pages > UINT64_MAX / st->page)
        return GP_ERANGE;
    struct gp_proc *p = gp_frame_add_proc(f);
    if (!p)
        return GP_ENOMEM;
    double tck = (double)st->ticks;
    p->pid = ps.pid;
    p->ppid = ps.ppid;
    p->uid = now.uid;
    memcpy(p->comm, ps.comm, sizeof p->comm);
    p->state = ps.state;
    p->threads = ps.num_threads;
    p->utime_s = (double)ps.utime / tck;
    p->stime_s = (double)ps.stime / tck;
    p->start_time_s = (double)st->btime + (double)ps.starttime / tck;
    p->rss_bytes = ps.rss_pages * st->page;
    p->vsize_bytes = ps.vsize;
    p->io_valid = io_valid;
    p->io_read_bytes = rd;
    p->io_write_bytes = wr;
    seen_add(&st->seen[st->cur], &now);
    return GP_OK;
}

static int procfs_sample(void *state, struct gp_frame *f, unsigned *errors)
{
    struct procfs *st = state;
    st->tick++;
    struct procfs_seen_list *cur = &st->seen[st->cur];
    cur->n = 0;
    cur->sorted = true;
    sample_host(st, f, errors);

    if (lseek(st->root, 0, SEEK_SET) < 0)
        return GP_EIO;
    for (;;) {
        ssize_t n = getdents64(st->root, st->dents, sizeof st->dents);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return GP_EIO;
        }
        if (n == 0)
            break;
        for (ssize_t off = 0; off < n;) {
            const struct dirent64 *d = (const struct dirent64 *)(st->dents + off);
            off += d->d_reclen;
            if (d->d_name[0] < '1' || d->d_name[0] > '9' ||
                (d->d_type != DT_DIR && d->d_type != DT_UNKNOWN))
                continue;
            size_t len = 1;
            while (d->d_name[len] >= '0' && d->d_name[len] <= '9')
                len++;
            if (d->d_name[len] != '\0')
                continue; /* "1abc": not a process */
            int rc = sample_pid(st, f, d->d_name, len);
            if (rc == GP_ENOMEM)
                return rc;
            if (rc != GP_OK)
                (*errors)++;
        }
    }
    if (!cur->sorted) /* the kernel lists pids ascending; a fake tree may not */
        qsort(cur->v, cur->n, sizeof *cur->v, seen_cmp);
    st->cur = !st->cur;
    gp_frame_sort_procs(f);
    return GP_OK;
}

const struct gp_source_ops gp_source_procfs = {
    .name = "procfs",
    .id = GP_SRC_PROCFS,
    .open = procfs_open,
    .sample = procfs_sample,
    .close = procfs_close,
};
