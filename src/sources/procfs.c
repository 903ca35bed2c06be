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
 *   - Only the processes that get series are read fully. By default
 *     (process_series: gpu) those are the followed processes: the ones
 *     on a GPU, the roots the sources before put in frame->roots (step
 *     reporters) and cfg->follow (gpulse run's child), and their
 *     descendants (dataloader workers); reading stat, status and io of
 *     all ~500 processes of a node cost ~12 ms a tick, more than a whole
 *     node_exporter scrape. The GPU sources sample before this one in
 *     the same tick (sources.c), so the frame already holds this tick's
 *     GPU pids; they are marked, then their descendants through the
 *     cached parents (repeated until nothing changes: pids wrap, so
 *     children may have smaller pids). cfg->all_processes (process_series
 *     all) reads every process fully and marks the followed trees in the
 *     frame afterwards, from this tick's parents.
 *   - A followed process's own job identity (docs/jobs.md: environment,
 *     else Kubernetes cgroup; jobattr.c parses) is read once per process,
 *     pid + start time: environ and cgroup are read when it is first
 *     followed and never again until the pid names another process. The
 *     cache entry holds only a 32-bit index into a side table of the
 *     identities that name something (most processes name nothing and
 *     take no slot); slots are freed when the pid leaves the cache or is
 *     reused, and the table grows only past the most ever held. The
 *     jobs source (jobs.c) then does inheritance and process groups.
 *   - The root is listed (getdents64) into a cache per pid (pid,
 *     parent, start time, uid) carried over from the last listing: two
 *     arrays sorted by pid, swapped at each listing, merged in one walk,
 *     grown only when the node runs more processes than ever before.
 *     Pids gone from the listing drop out. A new pid's stat is read once
 *     to learn its parent. Listing is dear: the kernel looks up a dentry
 *     per process, 1-2 ms of CPU for 570 processes when done once a
 *     second (caches cold), 0.25 ms in a tight loop. So with GPU trees
 *     only, new workers are found every PROCFS_LIST_MS (1 s) from the
 *     main-thread children files of the GPU processes
 *     (/proc/PID/task/PID/children, a read per GPU process), and
 *     the root is listed only every PROCFS_FULL_LIST_MS (30 s), for
 *     grandchildren, children forked by other threads, and adoptions. Where the kernel
 *     has no children files (CONFIG_PROC_CHILDREN off; a fake tree) the
 *     root is listed every PROCFS_LIST_MS instead. Between listings a
 *     GPU pid not in the cache is looked up directly. A process found
 *     gone between listings is skipped without error until the listing
 *     drops it. Parents also change without a new pid (a parent exits
 *     and its children are reparented, or a subreaper adopts them), so
 *     a slice of the cache is re-read round-robin each tick, sized so
 *     that each process is re-read about every PROCFS_REFRESH_MS (60 s)
 *     of wall time, at least one a tick; followed processes are read
 *     fully every tick, so their parents are always current. A pid
 *     reused between two listings by an unrelated process keeps the old
 *     parent until its refresh. A GPU pid with no /proc entry (another
 *     pid namespace, a simulated pid) is simply not found.
 *   - On a real procfs, stat and io of up to PROCFS_KEEP_MAX processes
 *     read every tick stay open and are re-read with pread() like the
 *     host files: openat() and close() were half of the syscall time of
 *     a tick. A kept file of a process that exited answers ESRCH (the
 *     kernel ties it to the task, not the pid), so a reused pid is never
 *     read through an old file. Files not read in a tick are closed at
 *     its end. On a fake tree (tests) a kept file would keep reading a
 *     deleted file, so every read opens and closes there; status (read
 *     rarely) always does.
 *   - /proc/PID/status is the dearest file the kernel makes (it walks the
 *     address space for the Vm* lines): measured, it was half of a tick.
 *     It is read only for the real uid, which almost never changes, so
 *     the uid is kept in the cache with the start time it was read for,
 *     and status re-read when a process is new, when its pid now names a
 *     different process (another start time), and when the uid is
 *     PROCFS_UID_REFRESH ticks old (staggered by pid, so no tick pays for
 *     all of them): a setuid() after start shows late by at most that
 *     many ticks.
 *
 * Failure policy: a process that vanishes while it is read (ENOENT or
 * ESRCH on any of its files: it exited between the listing and a read,
 * or between two reads) is skipped and is never an error: processes
 * exit all the time, and an error counter that moves with them would
 * read as a faulty node (leptonai/gpud #1238). A process with a garbled
 * file is skipped and counts one error; a stat read only to learn the
 * parent counts when garbled. An unreadable or garbled
 * host file leaves that reading invalid and counts one. Permission
 * denied on /proc/PID/io (other users' processes when unprivileged) and a
 * missing io file (kernels without task I/O accounting) only leave
 * io_valid false. An unreadable environ or cgroup (another user's when
 * unprivileged, a process gone) leaves the identity empty without
 * error; a garbled one counts one. A kernel without PSI (no /proc/pressure, or reads
 * answering EOPNOTSUPP when booted with psi=0) is said once at info level.
 */
#include "jobattr.h"
#include "procfs_parse.h"
#include "source.h"

#include "lib/err.h"
#include "lib/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#define PROCFS_BUF_START (16u * 1024)
#define PROCFS_BUF_MAX (4u * 1024 * 1024) /* /proc/stat on a huge box: ~1 MiB */
#define PROCFS_DENTS 32768
#define PROCFS_UID_REFRESH 16 /* ticks a remembered uid may be used */
#define PROCFS_REFRESH_MS 60000u /* every cached parent re-read this often */
#define PROCFS_MARK_PASSES 64 /* bound on the descendant-marking passes */
#define PROCFS_LIST_MS 1000u /* GPU trees: the root is listed this often */
#define PROCFS_FULL_LIST_MS 30000u /* GPU trees with children files: full listing this often */
#define PROCFS_CHILDREN_MAX 4096u /* new-worker pids gathered per look */
#define PROCFS_KEEP_MAX 192u /* processes whose stat and io stay open (2 fds each) */
#define PROC_SUPER_MAGIC 0x9fa0

static const char *const psi_files[GP_PSI__COUNT] = {"pressure/cpu", "pressure/memory",
                                                     "pressure/io"};

/*
 * What the source remembers of one process across ticks. The arrays
 * of these are sorted by pid.
 */
struct procfs_pid {
    uint32_t pid, ppid;
    uint32_t uid;        /* real uid, from status; valid when uid_valid */
    uint32_t ident;      /* job identity: IDENT_UNREAD, IDENT_EMPTY, else slot + IDENT_SLOT0 */
    uint64_t starttime;  /* clock ticks after boot: tells a reused pid apart */
    uint64_t stat_tick;  /* tick of the last stat read; 0: never read */
    uint64_t uid_tick;   /* tick of the last status read, staggered by pid */
    bool uid_valid;      /* uid read for this starttime */
    bool gone;           /* exited since the last listing: skipped until the next */
    bool marked;         /* this tick: on a GPU, or a descendant of one */
    bool root;           /* this tick: on a GPU (its children are looked for) */
};

/* The identity side table: the few processes whose environment or cgroup
 * named something. Free slots are chained through next_free. */
#define IDENT_UNREAD 0u /* environ and cgroup not read for this start time */
#define IDENT_EMPTY 1u  /* read: no job, no rank */
#define IDENT_SLOT0 2u
struct procfs_ident {
    struct gp_job_id id;
    uint32_t next_free;  /* slot + 1 of the next free slot; 0: end */
};

struct procfs_cache {
    struct procfs_pid *v;
    size_t n, cap;
};

/* Per-process files kept open between ticks (see the design comment). */
struct procfs_kept {
    uint32_t pid;
    int fd_stat, fd_io;  /* -1: not open */
    uint64_t used_tick;
};

struct procfs {
    int root;                  /* O_DIRECTORY fd of proc_root */
    bool keep;                 /* proc_root is a real procfs: keep files open */
    unsigned nkept;
    struct procfs_kept kept[PROCFS_KEEP_MAX];
    int fd_stat, fd_meminfo, fd_loadavg;
    int fd_psi[GP_PSI__COUNT]; /* -1: no PSI on this kernel */
    char *buf;                 /* read buffer, reused */
    size_t cap;
    long ticks;                /* USER_HZ */
    uint64_t page;             /* bytes per page */
    uint64_t btime;            /* boot time, epoch seconds */
    bool psi_said;             /* "no PSI" logged */
    uint64_t tick;             /* sample() calls */
    bool all;                  /* cfg->all_processes */
    uint64_t interval_ms;      /* sampling interval, sizes the refresh slice */
    uint32_t refresh_next;     /* the refresh slice starts at this pid */
    uint64_t list_every;       /* ticks between listings (or looks for new children) */
    uint64_t full_list_every;  /* ticks between listings when children files are read */
    bool children;             /* /proc/PID/task/PID/children exists (CONFIG_PROC_CHILDREN) */
    uint64_t looked_tick;      /* tick of the last look at the followed processes' children */
    uint32_t kids[PROCFS_CHILDREN_MAX];
    uint64_t listed_tick;      /* tick of the last listing; 0: none yet */
    struct procfs_cache cache[2]; /* [cur]: last tick's, [!cur]: built now */
    int cur;
    struct procfs_ident *idv;  /* identity slots, grown past the most ever held */
    uint32_t nid, capid;       /* slots handed out at least once, allocated */
    uint32_t free_id;          /* slot + 1 of the first free slot; 0: none */
    const uint32_t *follow;    /* cfg->follow: pids followed besides the GPU ones */
    size_t nfollow;
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

/* Writes "<pid><leaf>" into path (room for 10 digits and the leaf). */
static void pid_path(char path[static 32], uint32_t pid, const char *leaf)
{
    char digits[10];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + pid % 10);
        pid /= 10;
    } while (pid);
    for (size_t i = 0; i < n; i++)
        path[i] = digits[n - 1 - i];
    size_t ll = strlen(leaf);
    if (ll > 31 - n)
        ll = 31 - n;
    memcpy(path + n, leaf, ll);
    path[n + ll] = '\0';
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

static void kept_close(struct procfs_kept *k)
{
    if (k->fd_stat >= 0)
        close(k->fd_stat);
    if (k->fd_io >= 0)
        close(k->fd_io);
    k->fd_stat = k->fd_io = -1;
}

/* The kept-files slot of pid, taking a free one; NULL when not keeping
 * files (fake tree) or all slots are taken (then files open and close). */
static struct procfs_kept *kept_slot(struct procfs *st, uint32_t pid)
{
    if (!st->keep)
        return NULL;
    for (unsigned i = 0; i < st->nkept; i++)
        if (st->kept[i].pid == pid)
            return &st->kept[i];
    if (st->nkept == PROCFS_KEEP_MAX)
        return NULL;
    struct procfs_kept *k = &st->kept[st->nkept++];
    *k = (struct procfs_kept){.pid = pid, .fd_stat = -1, .fd_io = -1};
    return k;
}

/* Closes the files of processes not read this tick. */
static void kept_sweep(struct procfs *st)
{
    for (unsigned i = 0; i < st->nkept;) {
        if (st->kept[i].used_tick == st->tick) {
            i++;
            continue;
        }
        kept_close(&st->kept[i]);
        st->kept[i] = st->kept[--st->nkept];
    }
}

/*
 * Reads <pid><leaf> through the kept descriptor *fd (opened on first
 * use), or opens and closes it when fd is NULL. A failed read closes
 * the kept descriptor. Returns the length or -errno.
 */
static ssize_t read_pid_file(struct procfs *st, uint32_t pid, const char *leaf, int *fd)
{
    char path[32];
    pid_path(path, pid, leaf);
    if (!fd)
        return read_rel(st, path);
    if (*fd < 0 && (*fd = open_rel(st, path)) < 0) {
        int e = *fd;
        *fd = -1;
        return e;
    }
    ssize_t n = read_whole(st, *fd);
    if (n <= 0) {
        close(*fd);
        *fd = -1;
    }
    return n;
}

static void procfs_close(void *state)
{
    struct procfs *st = state;
    if (!st)
        return;
    for (unsigned i = 0; i < st->nkept; i++)
        kept_close(&st->kept[i]);
    int *fds[] = {&st->root, &st->fd_stat, &st->fd_meminfo, &st->fd_loadavg,
                  &st->fd_psi[0], &st->fd_psi[1], &st->fd_psi[2]};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (*fds[i] >= 0)
            close(*fds[i]);
    free(st->buf);
    free(st->cache[0].v);
    free(st->cache[1].v);
    free(st->idv);
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
    struct statfs sfs;
    st->keep = fstatfs(st->root, &sfs) == 0 && sfs.f_type == PROC_SUPER_MAGIC;
    st->all = cfg && cfg->all_processes;
    st->follow = cfg && cfg->nfollow ? cfg->follow : NULL;
    st->nfollow = st->follow ? cfg->nfollow : 0;
    st->interval_ms = cfg && cfg->interval_ms > 0 ? (uint64_t)cfg->interval_ms : 0;
    st->list_every = 1;
    if (!st->all && st->interval_ms && st->interval_ms < PROCFS_LIST_MS)
        st->list_every = (PROCFS_LIST_MS + st->interval_ms - 1) / st->interval_ms;
    st->full_list_every = st->list_every;
    if (!st->all && st->interval_ms && st->interval_ms < PROCFS_FULL_LIST_MS)
        st->full_list_every = (PROCFS_FULL_LIST_MS + st->interval_ms - 1) / st->interval_ms;
    int kf = openat(st->root, "thread-self/children", O_RDONLY | O_CLOEXEC);
    st->children = kf >= 0;
    if (kf >= 0)
        close(kf);
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

/* Gives e's identity slot back (a new process behind the pid, or the pid
 * dropped from the cache); e must be read again. */
static void ident_release(struct procfs *st, struct procfs_pid *e)
{
    if (e->ident >= IDENT_SLOT0) {
        uint32_t slot = e->ident - IDENT_SLOT0;
        st->idv[slot].next_free = st->free_id;
        st->free_id = slot + 1;
    }
    e->ident = IDENT_UNREAD;
}

/* Index of the first entry of c with a pid >= pid (c->n if none). */
static size_t cache_lower(const struct procfs_cache *c, uint32_t pid)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->v[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The entry of pid in c, or NULL. */
static struct procfs_pid *cache_find(const struct procfs_cache *c, uint32_t pid)
{
    size_t i = cache_lower(c, pid);
    return i < c->n && c->v[i].pid == pid ? &c->v[i] : NULL;
}

/* Appends pid to c, growing it only past the most processes seen yet. */
static int cache_push(struct procfs_cache *c, uint32_t pid)
{
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 512;
        struct procfs_pid *nv = realloc(c->v, nc * sizeof *nv);
        if (!nv)
            return GP_ENOMEM;
        c->v = nv;
        c->cap = nc;
    }
    c->v[c->n++] = (struct procfs_pid){.pid = pid};
    return GP_OK;
}

/* Inserts e (a pid not in c) in pid order; NULL when out of memory. */
static struct procfs_pid *cache_insert(struct procfs_cache *c, const struct procfs_pid *e)
{
    if (cache_push(c, e->pid) != GP_OK)
        return NULL;
    size_t at = cache_lower(c, e->pid); /* the pushed copy sorts after any equal */
    memmove(&c->v[at + 1], &c->v[at], (c->n - 1 - at) * sizeof *c->v);
    c->v[at] = *e;
    return &c->v[at];
}

static int cache_cmp(const void *a, const void *b)
{
    uint32_t x = ((const struct procfs_pid *)a)->pid, y = ((const struct procfs_pid *)b)->pid;
    return x < y ? -1 : x > y;
}

/*
 * Lists the root's process directories into the cache being built
 * (st->cache[!st->cur]), sorted by pid, each entry carrying what last
 * tick's cache knew of that pid; pids gone from the listing are dropped.
 * Returns GP_OK, GP_EIO (the listing failed) or GP_ENOMEM.
 */
static int list_pids(struct procfs *st)
{
    struct procfs_cache *old = &st->cache[st->cur];
    struct procfs_cache *now = &st->cache[!st->cur];
    bool sorted = true;
    now->n = 0;
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
            uint64_t pid = 0;
            size_t len = 0;
            while (d->d_name[len] >= '0' && d->d_name[len] <= '9' && pid <= UINT32_MAX)
                pid = pid * 10 + (uint64_t)(d->d_name[len++] - '0');
            if (d->d_name[len] != '\0' || pid > UINT32_MAX)
                continue; /* "1abc" or out of range: not a process */
            if (now->n > 0 && now->v[now->n - 1].pid >= pid)
                sorted = false;
            if (cache_push(now, (uint32_t)pid) != GP_OK)
                return GP_ENOMEM;
        }
    }
    if (!sorted) /* the kernel lists pids ascending; a fake tree may not */
        qsort(now->v, now->n, sizeof *now->v, cache_cmp);
    /* merge: both arrays ascend, so one walk carries the old entries over;
     * the identity slots of the entries dropped go back to the table */
    size_t j = 0;
    for (size_t i = 0; i < now->n; i++) {
        uint32_t pid = now->v[i].pid;
        while (j < old->n && old->v[j].pid < pid)
            ident_release(st, &old->v[j++]);
        if (j < old->n && old->v[j].pid == pid) {
            now->v[i] = old->v[j++];
            if (now->v[i].gone) { /* listed again: the pid was reused */
                ident_release(st, &now->v[i]);
                now->v[i] = (struct procfs_pid){.pid = pid};
            }
        }
    }
    while (j < old->n)
        ident_release(st, &old->v[j++]);
    st->cur = !st->cur;
    st->listed_tick = st->tick;
    return GP_OK;
}


/*
 * Reads /proc/PID/stat of e into *ps and brings e's parent and start
 * time up to date (a new start time means a new process behind the
 * pid: its uid must be read again). fd: a kept descriptor, or NULL to
 * open and close. Returns GP_OK, GP_ENOTFOUND (the
 * process is gone), GP_EIO (unreadable) or GP_EPARSE (garbled).
 */
static int read_stat(struct procfs *st, struct procfs_pid *e, struct gp_procfs_pid_stat *ps, int *fd)
{
    ssize_t n = read_pid_file(st, e->pid, "/stat", fd);
    if (n == -ENOENT || n == -ESRCH)
        return GP_ENOTFOUND;
    if (n < 0)
        return GP_EIO;
    if (gp_procfs_parse_pid_stat(st->buf, (size_t)n, ps) != GP_OK)
        return GP_EPARSE;
    if (e->stat_tick && e->starttime != ps->starttime) {
        e->uid_valid = false;
        ident_release(st, e);
    }
    e->ppid = ps->ppid;
    e->starttime = ps->starttime;
    e->stat_tick = st->tick;
    return GP_OK;
}

/*
 * Stores id as e's identity: IDENT_EMPTY when it names nothing, else a
 * slot of the side table (taken from the free chain, or grown). Out of
 * memory leaves e unread, to be tried again next tick.
 */
static void ident_store(struct procfs *st, struct procfs_pid *e, const struct gp_job_id *id)
{
    if (id->scheme == GP_JOB_NONE && id->rank < 0 && id->local_rank < 0 && id->world_size < 0) {
        e->ident = IDENT_EMPTY;
        return;
    }
    uint32_t slot;
    if (st->free_id) {
        slot = st->free_id - 1;
        st->free_id = st->idv[slot].next_free;
    } else {
        if (st->nid == st->capid) {
            uint32_t nc = st->capid ? st->capid * 2 : 64;
            struct procfs_ident *nv = realloc(st->idv, nc * sizeof *nv);
            if (!nv)
                return;
            st->idv = nv;
            st->capid = nc;
        }
        slot = st->nid++;
    }
    st->idv[slot].id = *id;
    st->idv[slot].next_free = 0;
    e->ident = slot + IDENT_SLOT0;
}

/*
 * Reads e's job identity once per process (pid + start time): its
 * environment, and its cgroup when the environment names no job. An
 * unreadable file (another user's environ when unprivileged, a process
 * gone) names nothing and is no error; a garbled one counts one.
 */
static void ident_read(struct procfs *st, struct procfs_pid *e, unsigned *errors)
{
    struct gp_job_id id;
    char path[32];
    pid_path(path, e->pid, "/environ");
    ssize_t n = read_rel(st, path);
    gp_jobattr_clear(&id);
    if (n >= 0 && gp_jobattr_parse_environ(st->buf, (size_t)n, &id) != GP_OK)
        (*errors)++;
    if (id.scheme == GP_JOB_NONE) {
        pid_path(path, e->pid, "/cgroup");
        n = read_rel(st, path);
        if (n >= 0 && gp_jobattr_parse_cgroup(st->buf, (size_t)n, &id) == GP_EPARSE)
            (*errors)++;
    }
    ident_store(st, e, &id);
}

/* True for a pid of cfg->follow (gpulse run's command). */
static bool is_follow_pid(const struct procfs *st, uint32_t pid)
{
    for (size_t i = 0; i < st->nfollow; i++)
        if (st->follow[i] == pid)
            return true;
    return false;
}

/*
 * Marks p followed and gives it e's own identity, read if not yet. A
 * cfg->follow pid is read again each tick until its identity is gpulse
 * run's (GPULSE_RUN_ID): gpulse run forks its command before the exec
 * that gives it that variable (the start time, the cache's key, does not
 * change across exec), and until then the child holds gpulse run's own
 * environment, which may name a rank or a Slurm job (`srun gpulse run`,
 * RANK set by a launcher) that must not stick.
 */
static void follow_proc(struct procfs *st, struct procfs_pid *e, struct gp_proc *p,
                        unsigned *errors)
{
    p->followed = true;
    if (e->ident != IDENT_UNREAD && st->nfollow && is_follow_pid(st, e->pid) &&
        !(e->ident >= IDENT_SLOT0 && st->idv[e->ident - IDENT_SLOT0].id.scheme == GP_JOB_RUN))
        ident_release(st, e);
    if (e->ident == IDENT_UNREAD)
        ident_read(st, e, errors);
    if (e->ident >= IDENT_SLOT0)
        p->jid = st->idv[e->ident - IDENT_SLOT0].id;
    else
        gp_jobattr_clear(&p->jid);
}

/*
 * Reads one process fully into a new frame record, refreshing its cache
 * entry; *out (may be NULL) is set to the record. Returns GP_OK, GP_ENOMEM (the frame could not grow) or another
 * code when the process was skipped (the caller counts it).
 */
static int sample_pid(struct procfs *st, struct gp_frame *f, struct procfs_pid *e,
                      struct gp_proc **out)
{
    struct gp_procfs_pid_stat ps;
    struct procfs_kept *k = kept_slot(st, e->pid);
    if (k)
        k->used_tick = st->tick;
    int rc = read_stat(st, e, &ps, k ? &k->fd_stat : NULL);
    if (rc != GP_OK)
        return rc;

    char path[32];
    ssize_t n;
    if (!e->uid_valid || st->tick - e->uid_tick >= PROCFS_UID_REFRESH) {
        struct gp_procfs_pid_status status;
        pid_path(path, e->pid, "/status");
        n = read_rel(st, path);
        if (n == -ENOENT || n == -ESRCH)
            return GP_ENOTFOUND; /* exited since its stat was read */
        if (n < 0)
            return GP_EIO;
        if (gp_procfs_parse_pid_status(st->buf, (size_t)n, &status) != GP_OK)
            return GP_EPARSE;
        /* first read for this process: pretend an earlier one, so the
         * refreshes of many processes spread over the ticks */
        e->uid_tick = e->uid_valid ? st->tick : st->tick - e->pid % PROCFS_UID_REFRESH;
        e->uid = status.uid;
        e->uid_valid = true;
    }

    bool io_valid = false;
    uint64_t rd = 0, wr = 0;
    n = read_pid_file(st, e->pid, "/io", k ? &k->fd_io : NULL);
    if (n >= 0) {
        if (gp_procfs_parse_pid_io(st->buf, (size_t)n, &rd, &wr) != GP_OK)
            return GP_EPARSE;
        io_valid = true;
    } else if (n == -ESRCH) {
        return GP_ENOTFOUND; /* it exited between the reads */
    } else if (n != -EACCES && n != -EPERM && n != -ENOENT) {
        return GP_EIO;
    }

    if (ps.rss_pages > UINT64_MAX / st->page)
        return GP_ERANGE;
    struct gp_proc *p = gp_frame_add_proc(f);
    if (!p)
        return GP_ENOMEM;
    double tck = (double)st->ticks;
    p->pid = ps.pid;
    p->ppid = ps.ppid;
    p->pgid = ps.pgrp;
    gp_jobattr_clear(&p->jid);
    p->uid = e->uid;
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
    if (out)
        *out = p;
    return GP_OK;
}

/*
 * Keeps the parents in the cache fresh enough to follow the GPU process
 * trees: reads the stat of every pid new this tick, and of a slice of
 * the others, round-robin from st->refresh_next, sized so that each is
 * re-read about every PROCFS_REFRESH_MS. A process gone between listing
 * and read is no error (it is not followed); a garbled stat counts one.
 */
static void refresh_parents(struct procfs *st, unsigned *errors)
{
    struct procfs_cache *c = &st->cache[st->cur];
    struct gp_procfs_pid_stat ps;
    int rc;
    for (size_t i = 0; i < c->n; i++) {
        if (c->v[i].stat_tick || c->v[i].gone)
            continue;
        rc = read_stat(st, &c->v[i], &ps, NULL);
        if (rc == GP_EPARSE)
            (*errors)++;
        else if (rc == GP_ENOTFOUND)
            c->v[i].gone = true;
    }
    if (!c->n)
        return;
    uint64_t slice = (c->n * st->interval_ms + PROCFS_REFRESH_MS - 1) / PROCFS_REFRESH_MS;
    if (slice < 1)
        slice = 1;
    if (slice > c->n)
        slice = c->n;
    size_t i = cache_lower(c, st->refresh_next);
    for (uint64_t k = 0; k < slice; k++, i++) {
        if (i >= c->n)
            i = 0;
        struct procfs_pid *e = &c->v[i];
        /* stat_tick 0: tried just above; this tick: new, read above */
        if (e->gone || !e->stat_tick || e->stat_tick == st->tick)
            continue;
        rc = read_stat(st, e, &ps, NULL);
        if (rc == GP_EPARSE)
            (*errors)++;
        else if (rc == GP_ENOTFOUND)
            e->gone = true;
        st->refresh_next = e->pid + 1; /* past UINT32_MAX: 0, the start */
    }
}

/*
 * The cache entry of a GPU pid, or NULL when there is no such process
 * here (another pid namespace, a simulated pid). A pid started since the
 * last listing is looked up directly and added; one not found is added
 * as gone, so it is not looked up again before the next listing.
 */
static struct procfs_pid *find_gpu_pid(struct procfs *st, uint32_t pid)
{
    struct procfs_cache *c = &st->cache[st->cur];
    struct procfs_pid *e = cache_find(c, pid);
    if (e || st->listed_tick == st->tick || !pid)
        return e && !e->gone ? e : NULL;
    struct procfs_pid fresh = {.pid = pid};
    struct gp_procfs_pid_stat ps;
    fresh.gone = read_stat(st, &fresh, &ps, NULL) != GP_OK;
    e = cache_insert(c, &fresh);
    return e && !e->gone ? e : NULL;
}

/* Marks the cache entry of a pid to follow as a root; counts it in *roots. */
static void mark_root(struct procfs *st, uint32_t pid, size_t *roots)
{
    struct procfs_pid *e = find_gpu_pid(st, pid);
    if (e && !e->marked) {
        e->marked = e->root = true;
        (*roots)++;
    }
}

/*
 * Marks the cached processes to follow: those this tick's GPU sources
 * found on a GPU, the roots the sources before put into the frame, and
 * cfg->follow; then their descendants through the cached parents.
 * Returns how many roots were found here.
 */
static size_t mark_gpu_trees(struct procfs *st, const struct gp_frame *f)
{
    struct procfs_cache *c = &st->cache[st->cur];
    for (size_t i = 0; i < c->n; i++)
        c->v[i].marked = c->v[i].root = false;
    size_t roots = 0;
    for (unsigned g = 0; g < f->ngpus; g++)
        for (unsigned j = 0; j < f->gpus[g].nprocs; j++)
            mark_root(st, f->gpus[g].procs[j].pid, &roots);
    for (unsigned r = 0; r < f->nroots; r++)
        mark_root(st, f->roots[r], &roots);
    for (size_t r = 0; r < st->nfollow; r++)
        mark_root(st, st->follow[r], &roots);
    /* Children after parents: repeat until no process is newly marked
     * (pids wrap, so one pass in pid order is not enough). */
    bool changed = roots > 0;
    for (int pass = 0; changed && pass < PROCFS_MARK_PASSES; pass++) {
        changed = false;
        for (size_t i = 0; i < c->n; i++) {
            struct procfs_pid *e = &c->v[i];
            if (e->marked || e->gone || !e->ppid || !e->stat_tick)
                continue;
            const struct procfs_pid *parent = cache_find(c, e->ppid);
            if (parent && parent->marked) {
                e->marked = true;
                changed = true;
            }
        }
    }
    return roots;
}

/*
 * Finds the processes the GPU processes forked since the last look
 * (dataloader workers), from their main threads' children files, and
 * adds them to the cache; deeper descendants wait for the full listing.
 * Far cheaper than listing the root (a read per followed process, not
 * a dentry per process on the node); the full listing still runs every
 * PROCFS_FULL_LIST_MS for children of other threads and adoptions.
 * Returns how many processes were added.
 */
static size_t look_for_children(struct procfs *st, unsigned *errors)
{
    struct procfs_cache *c = &st->cache[st->cur];
    size_t nk = 0;
    st->looked_tick = st->tick;
    for (size_t i = 0; i < c->n && nk < PROCFS_CHILDREN_MAX; i++) {
        if (!c->v[i].root || c->v[i].gone)
            continue;
        char path[64];
        snprintf(path, sizeof path, "%u/task/%u/children", c->v[i].pid, c->v[i].pid);
        ssize_t n = read_rel(st, path);
        if (n < 0)
            continue; /* exited: the next listing drops it */
        size_t got = 0;
        int rc = gp_procfs_parse_children(st->buf, (size_t)n, st->kids + nk,
                                          PROCFS_CHILDREN_MAX - nk, &got);
        if (rc == GP_EPARSE)
            (*errors)++;
        nk += got;
    }
    size_t added = 0;
    for (size_t k = 0; k < nk; k++) {
        if (cache_find(c, st->kids[k]))
            continue;
        struct procfs_pid fresh = {.pid = st->kids[k]};
        struct gp_procfs_pid_stat ps;
        if (read_stat(st, &fresh, &ps, NULL) == GP_OK && cache_insert(c, &fresh))
            added++;
    }
    return added;
}

/* Marks p followed in all-processes mode; true when it was not yet. */
static bool follow_in_frame(struct gp_frame *f, uint32_t pid)
{
    struct gp_proc *p = (struct gp_proc *)gp_frame_find_proc(f, pid);
    if (!p || p->followed)
        return false;
    p->followed = true;
    return true;
}

/*
 * With every process read (process_series all): marks the followed trees
 * in the frame itself, whose parents are this tick's, and gives the
 * followed processes their identities. f's processes are sorted.
 */
static void follow_all(struct procfs *st, struct gp_frame *f, unsigned *errors)
{
    bool any = false;
    for (unsigned g = 0; g < f->ngpus; g++)
        for (unsigned j = 0; j < f->gpus[g].nprocs; j++)
            any |= follow_in_frame(f, f->gpus[g].procs[j].pid);
    for (unsigned r = 0; r < f->nroots; r++)
        any |= follow_in_frame(f, f->roots[r]);
    for (size_t r = 0; r < st->nfollow; r++)
        any |= follow_in_frame(f, st->follow[r]);
    bool changed = any;
    for (int pass = 0; changed && pass < PROCFS_MARK_PASSES; pass++) {
        changed = false;
        for (unsigned i = 0; i < f->nprocs; i++) {
            struct gp_proc *p = &f->procs[i];
            if (p->followed || !p->ppid)
                continue;
            const struct gp_proc *parent = gp_frame_find_proc(f, p->ppid);
            if (parent && parent->followed)
                changed = p->followed = true;
        }
    }
    struct procfs_cache *c = &st->cache[st->cur];
    for (unsigned i = 0; any && i < f->nprocs; i++) {
        struct procfs_pid *e = f->procs[i].followed ? cache_find(c, f->procs[i].pid) : NULL;
        if (e)
            follow_proc(st, e, &f->procs[i], errors);
    }
}

static int procfs_sample(void *state, struct gp_frame *f, unsigned *errors)
{
    struct procfs *st = state;
    st->tick++;
    sample_host(st, f, errors);

    /* Listing the root costs more than reading the GPU trees (the
     * kernel looks up a dentry per process): with GPU trees only, list
     * every PROCFS_LIST_MS and look up new GPU pids directly between. */
    int rc = GP_OK;
    uint64_t every = st->children && !st->all ? st->full_list_every : st->list_every;
    if (!st->listed_tick || st->tick - st->listed_tick >= every)
        rc = list_pids(st);
    if (rc != GP_OK)
        return rc;
    if (!st->all) {
        refresh_parents(st, errors);
        if (!mark_gpu_trees(st, f)) {
            kept_sweep(st); /* nothing to follow: nothing stays open */
            return GP_OK;
        }
        if (st->children && st->listed_tick != st->tick &&
            st->tick - st->looked_tick >= st->list_every && look_for_children(st, errors))
            mark_gpu_trees(st, f);
    }
    struct procfs_cache *c = &st->cache[st->cur];
    for (size_t i = 0; i < c->n; i++) {
        if (!st->all && !c->v[i].marked)
            continue;
        struct gp_proc *p = NULL;
        rc = sample_pid(st, f, &c->v[i], &p);
        if (rc == GP_OK && !st->all)
            follow_proc(st, &c->v[i], p, errors);
        if (rc == GP_ENOMEM)
            return rc;
        if (rc == GP_ENOTFOUND)
            c->v[i].gone = true; /* exited since the listing or mid-read: no error */
        else if (rc != GP_OK)
            (*errors)++;
    }
    kept_sweep(st);
    gp_frame_sort_procs(f);
    if (st->all)
        follow_all(st, f, errors);
    return GP_OK;
}

const struct gp_source_ops gp_source_procfs = {
    .name = "procfs",
    .id = GP_SRC_PROCFS,
    .open = procfs_open,
    .sample = procfs_sample,
    .close = procfs_close,
};
