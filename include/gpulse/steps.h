/*
 * gpulse/steps.h - report training steps to gpulse from C or C++.
 *
 * Header only, no library to link, no allocation. A handle batches
 * records (docs/jobs.md "The step protocol") into a 4 KiB buffer and
 * sends it as one datagram at most every 20 ms or when full, so most
 * calls only format a line into memory. Sending never blocks: when the
 * agent's queue is full or no agent listens, the batch is dropped and
 * counted, and the next datagram that gets through says `lost=N` so the
 * agent knows.
 *
 *     struct gpulse_steps g;
 *     gpulse_steps_open(&g);
 *     gpulse_meta(&g, 50000, NULL, -1, -1);          // target steps
 *     gpulse_model(&g, GPULSE_UNSET, GPULSE_UNSET, 7e9, 1, "bf16"); // MFU: 6·N per token
 *     for (uint64_t i = 1; ...; i++) {
 *         ...
 *         gpulse_step(&g, i, dur_s, 32, 65536, loss, GPULSE_UNSET);
 *     }
 *     gpulse_phase(&g, "checkpoint", save_s);        // a checkpoint, an eval...
 *     gpulse_close(&g);                               // flushes
 *
 * Where it sends: every path in GPULSE_STEPS_SOCKET (several separated by
 * ':', each datagram goes to each: `gpulse run` uses this to reach both
 * itself and the node agent); else /run/gpulse/steps.sock if it exists,
 * else /tmp/gpulse-steps.sock if it exists, else both (whichever agent
 * appears later gets the records).
 *
 * A handle is NOT thread-safe: use one per thread, or lock around calls.
 * After fork() the child reports as itself (the agent learns pids from
 * the kernel): its first record drops what the parent had buffered (the
 * parent sends that itself). Fork is noticed through pthread_atfork, so
 * the per-call cost stays a memory load.
 *
 * Optional values are GPULSE_UNSET (NaN); negative counts are omitted.
 * The wait for data is measured unless given: the time from one
 * gpulse_step() to the next step's start (now - dur) counts as wait.
 */
#ifndef GPULSE_STEPS_H
#define GPULSE_STEPS_H

/* POSIX and Linux socket flags: with strict -std=c11 include this header
 * before any system header, or compile with -D_GNU_SOURCE. */
#if !defined(_GNU_SOURCE) && !defined(_DEFAULT_SOURCE)
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0
#endif

#define GPULSE_UNSET (__builtin_nan(""))
#define GPULSE_STEPS_DGRAM 4096
#define GPULSE_STEPS_MAX_DEST 4
#define GPULSE_STEPS_FLUSH_NS 20000000LL
/* Room kept for the "meta lost=N\n" line put in front of a datagram. */
#define GPULSE_STEPS_PREFIX 40

struct gpulse_steps {
    int fd;                   /* -1: closed or no socket */
    int ndest;
    struct sockaddr_un dest[GPULSE_STEPS_MAX_DEST];
    uint64_t unsent[GPULSE_STEPS_MAX_DEST]; /* records dropped per destination, not yet reported */
    uint64_t lost_total;      /* records dropped, summed over destinations (for the caller) */
    uint64_t sent_total;      /* datagrams sent, summed over destinations */
    uint64_t seq;             /* records produced */
    unsigned forks;           /* gpulse__forks when the buffer was last ours */
    int64_t last_flush_ns;
    int64_t prev_end_ns;      /* when the last step was reported; 0: none yet */
    unsigned nrec;            /* records in buf */
    size_t len;
    char buf[GPULSE_STEPS_DGRAM - GPULSE_STEPS_PREFIX];
};

/* Forks seen by this translation unit (pthread_atfork, child side). */
static unsigned gpulse__forks;
static inline void gpulse__on_fork(void) { gpulse__forks++; }

static inline int64_t gpulse__now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static inline void gpulse__add_dest(struct gpulse_steps *h, const char *p, size_t n)
{
    if (n == 0 || n >= sizeof h->dest[0].sun_path || h->ndest == GPULSE_STEPS_MAX_DEST)
        return;
    struct sockaddr_un *a = &h->dest[h->ndest++];
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    memcpy(a->sun_path, p, n);
}

/* Opens h (caller-owned memory). Returns 0, or -1 with errno when no
 * socket could be made; h is then inert (every call does nothing). */
static inline int gpulse_steps_open(struct gpulse_steps *h)
{
    memset(h, 0, sizeof *h);
    h->fd = -1;
    const char *env = getenv("GPULSE_STEPS_SOCKET");
    if (env && *env) {
        for (const char *p = env;;) {
            const char *c = strchr(p, ':');
            size_t n = c ? (size_t)(c - p) : strlen(p);
            gpulse__add_dest(h, p, n);
            if (!c)
                break;
            p = c + 1;
        }
    } else {
        static const char *const dflt[] = {"/run/gpulse/steps.sock", "/tmp/gpulse-steps.sock"};
        for (int i = 0; i < 2 && !h->ndest; i++)
            if (access(dflt[i], F_OK) == 0)
                gpulse__add_dest(h, dflt[i], strlen(dflt[i]));
        if (!h->ndest) {
            gpulse__add_dest(h, dflt[0], strlen(dflt[0]));
            gpulse__add_dest(h, dflt[1], strlen(dflt[1]));
        }
    }
    h->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    static int registered;
    if (!__atomic_exchange_n(&registered, 1, __ATOMIC_RELAXED))
        pthread_atfork(NULL, NULL, gpulse__on_fork);
    h->forks = gpulse__forks;
    return h->fd < 0 ? -1 : 0;
}

/* Sends what is buffered now (to every destination). Never blocks. */
static inline void gpulse_flush(struct gpulse_steps *h)
{
    h->last_flush_ns = gpulse__now_ns();
    if (!h->nrec)
        return;
    for (int d = 0; d < h->ndest; d++) {
        char pre[GPULSE_STEPS_PREFIX];
        struct iovec iov[2];
        int n = 0;
        if (h->unsent[d]) {
            int k = snprintf(pre, sizeof pre, "meta lost=%llu\n", (unsigned long long)h->unsent[d]);
            iov[n].iov_base = pre;
            iov[n++].iov_len = (size_t)k;
        }
        iov[n].iov_base = h->buf;
        iov[n++].iov_len = h->len;
        struct msghdr m;
        memset(&m, 0, sizeof m);
        m.msg_name = &h->dest[d];
        m.msg_namelen = sizeof h->dest[d];
        m.msg_iov = iov;
        m.msg_iovlen = (size_t)n;
        ssize_t r;
        do
            r = h->fd < 0 ? -1 : sendmsg(h->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
        while (r < 0 && errno == EINTR);
        if (r < 0) {
            h->unsent[d] += h->nrec;
            h->lost_total += h->nrec;
        } else {
            h->unsent[d] = 0;
            h->sent_total++;
        }
    }
    h->len = h->nrec = 0;
}

/* ---- formatting: a line into the buffer without printf's cost ---------- */

static inline char *gpulse__u64(char *p, unsigned long long v)
{
    char t[24];
    int n = 0;
    do
        t[n++] = (char)('0' + v % 10);
    while ((v /= 10));
    while (n)
        *p++ = t[--n];
    return p;
}

/* A finite double the agent's parser takes: integers as integers, other
 * values of sane magnitude with 9 decimals (trailing zeros cut), the rest
 * through snprintf("%.9g"). */
static inline char *gpulse__dbl(char *p, double v)
{
    if (v < 0) {
        *p++ = '-';
        v = -v;
    }
    if (v < 1e15 && v == (double)(unsigned long long)v)
        return gpulse__u64(p, (unsigned long long)v);
    if (v >= 1e-4 && v < 1e9) {
        unsigned long long ip = (unsigned long long)v;
        unsigned long long fr = (unsigned long long)((v - (double)ip) * 1e9 + 0.5);
        if (fr >= 1000000000ULL) {
            ip++;
            fr -= 1000000000ULL;
        }
        p = gpulse__u64(p, ip);
        if (fr) {
            char t[9];
            int n = 9;
            for (int i = 8; i >= 0; i--, fr /= 10)
                t[i] = (char)('0' + fr % 10);
            while (n > 0 && t[n - 1] == '0')
                n--;
            *p++ = '.';
            memcpy(p, t, (size_t)n);
            p += n;
        }
        return p;
    }
    return p + snprintf(p, 32, "%.9g", v);
}

static inline char *gpulse__key(char *p, const char *k)
{
    *p++ = ' ';
    while (*k)
        *p++ = *k++;
    *p++ = '=';
    return p;
}

/* Appends " t=" and the wall clock now, epoch seconds to the microsecond. */
static inline char *gpulse__t(char *p)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    p = gpulse__u64(gpulse__key(p, "t"), (unsigned long long)now.tv_sec);
    *p++ = '.';
    for (long us = now.tv_nsec / 1000, d = 100000; d; d /= 10)
        *p++ = (char)('0' + us / d % 10);
    return p;
}

/* The longest line any record kind below can make. */
#define GPULSE_STEPS_LINE_MAX 400

/* Makes room for one more line: flushes when it might not fit. Returns
 * where the line goes; its kind and seq are written. */
static inline char *gpulse__begin(struct gpulse_steps *h, const char *kind)
{
    if (h->forks != gpulse__forks) { /* a forked child: the parent sends its own records */
        h->forks = gpulse__forks;
        h->len = h->nrec = 0;
        memset(h->unsent, 0, sizeof h->unsent);
    }
    if (h->len + GPULSE_STEPS_LINE_MAX > sizeof h->buf)
        gpulse_flush(h);
    char *p = h->buf + h->len;
    while (*kind)
        *p++ = *kind++;
    p = gpulse__key(p, "seq");
    return gpulse__u64(p, (unsigned long long)++h->seq);
}

static inline void gpulse__end(struct gpulse_steps *h, char *p)
{
    *p++ = '\n';
    h->len = (size_t)(p - h->buf);
    h->nrec++;
    if (gpulse__now_ns() - h->last_flush_ns >= GPULSE_STEPS_FLUSH_NS)
        gpulse_flush(h);
}

/* One step that ends now and ran dur seconds: its number n (yours), and
 * the optional samples, tokens, loss and data-wait seconds (GPULSE_UNSET).
 * With wait GPULSE_UNSET the wait is measured: the time from the previous
 * call (the previous step's end) to this step's start (now - dur) is the
 * wait for data, and the step reported spans it (docs/jobs.md wants dur
 * from the previous step's end). A dur that already spans from the
 * previous end measures a wait of 0: pass wait yourself then. */
static inline void gpulse_step(struct gpulse_steps *h, uint64_t n, double dur, double samples,
                               double tokens, double loss, double wait)
{
    int64_t now_ns = gpulse__now_ns();
    if (h->forks != gpulse__forks) /* a forked child's first step: no previous end of its own */
        h->prev_end_ns = 0;
    if (!(isfinite(dur) && dur > 0))
        dur = 0;
    if (!isfinite(wait) && h->prev_end_ns) {
        double gap = (double)(now_ns - h->prev_end_ns) / 1e9 - dur;
        wait = gap > 0 ? gap : 0;
        dur += wait;
    }
    h->prev_end_ns = now_ns;
    char *p = gpulse__begin(h, "step");
    p = gpulse__key(p, "n");
    p = gpulse__u64(p, (unsigned long long)n);
    p = gpulse__key(p, "dur");
    p = gpulse__dbl(p, dur);
    if (isfinite(samples) && samples >= 0)
        p = gpulse__dbl(gpulse__key(p, "samples"), samples);
    if (isfinite(tokens) && tokens >= 0)
        p = gpulse__dbl(gpulse__key(p, "tokens"), tokens);
    if (isfinite(loss))
        p = gpulse__dbl(gpulse__key(p, "loss"), loss);
    if (isfinite(wait) && wait >= 0)
        p = gpulse__dbl(gpulse__key(p, "wait"), wait);
    /* t: when the step ended, so batching does not blur the time line
     * that throughput is computed from */
    gpulse__end(h, gpulse__t(p));
}

/* A phase that ends now and ran dur seconds: a checkpoint save
 * ("checkpoint") or load ("checkpoint_load"), an evaluation ("eval"), or
 * any other name of [a-z0-9_] (a letter or '_' first, 32 at most; another
 * name is not sent). The next step's wait is measured from here, so a
 * phase between steps is not counted as waiting for data. */
static inline void gpulse_phase(struct gpulse_steps *h, const char *name, double dur)
{
    size_t n = 0;
    for (; name[n]; n++)
        if (n == 32 || !((name[n] >= 'a' && name[n] <= 'z') || name[n] == '_' ||
                         (n > 0 && name[n] >= '0' && name[n] <= '9')))
            return;
    if (!n || !(isfinite(dur) && dur >= 0))
        return;
    char *p = gpulse__begin(h, "phase");
    p = gpulse__key(p, "name");
    memcpy(p, name, n);
    p = gpulse__dbl(gpulse__key(p + n, "dur"), dur);
    gpulse__end(h, gpulse__t(p));
    if (h->prev_end_ns && h->forks == gpulse__forks)
        h->prev_end_ns = gpulse__now_ns();
}

/* Framework allocator bytes on device dev (allocated, reserved, peak). */
static inline void gpulse_memory(struct gpulse_steps *h, int dev, uint64_t alloc, uint64_t reserved,
                                 uint64_t peak)
{
    char *p = gpulse__begin(h, "mem");
    p = gpulse__u64(gpulse__key(p, "dev"), (unsigned long long)(dev < 0 ? 0 : dev));
    p = gpulse__u64(gpulse__key(p, "alloc"), (unsigned long long)alloc);
    p = gpulse__u64(gpulse__key(p, "reserved"), (unsigned long long)reserved);
    p = gpulse__u64(gpulse__key(p, "peak"), (unsigned long long)peak);
    gpulse__end(h, p);
}

/* Writes job (blanks and controls become '_', at most 127 bytes). */
static inline char *gpulse__job(char *p, const char *job)
{
    p = gpulse__key(p, "job");
    for (int i = 0; job[i] && i < 127; i++)
        *p++ = (unsigned char)job[i] > 0x20 && (unsigned char)job[i] < 0x7f ? job[i] : '_';
    return p;
}

/* What the job is: target steps (0: unsaid), and a job name, rank and
 * world size (NULL / -1: unsaid) used only when the process has no job of
 * its own (Slurm, torchrun, GPULSE_JOB... name it otherwise). */
static inline void gpulse_meta(struct gpulse_steps *h, uint64_t target_steps, const char *job,
                               int rank, int world)
{
    char *p = gpulse__begin(h, "meta");
    if (target_steps)
        p = gpulse__u64(gpulse__key(p, "target"), (unsigned long long)target_steps);
    if (job && *job)
        p = gpulse__job(p, job);
    if (rank >= 0)
        p = gpulse__u64(gpulse__key(p, "rank"), (unsigned long long)rank);
    if (world >= 1)
        p = gpulse__u64(gpulse__key(p, "world"), (unsigned long long)world);
    gpulse__end(h, p);
}

/* What the model computes, once per job, for MFU (docs/jobs.md): FLOPs
 * per token and per sample, or the parameter count N (then 6·N FLOPs per
 * token when training, 2·N for inference, the attention term left out);
 * GPULSE_UNSET where unsaid. precision: "bf16", "fp16", "fp8", "tf32" or
 * "fp32". Returns 0, or -1 with errno EINVAL when precision is none of
 * those or no positive figure is given (nothing is sent then). */
static inline int gpulse_model(struct gpulse_steps *h, double flops_token, double flops_sample,
                               double params, int training, const char *precision)
{
    static const char *const precs[] = {"bf16", "fp16", "fp8", "tf32", "fp32"};
    int ok = 0;
    for (int i = 0; i < 5 && precision; i++)
        ok |= !strcmp(precision, precs[i]);
    const double v[3] = {flops_token, flops_sample, params};
    const char *const keys[3] = {"flops_token", "flops_sample", "params"};
    int any = 0;
    for (int i = 0; i < 3; i++)
        any |= isfinite(v[i]) && v[i] > 0;
    if (!ok || !any) {
        errno = EINVAL;
        return -1;
    }
    char *p = gpulse__begin(h, "model");
    for (int i = 0; i < 3; i++)
        if (isfinite(v[i]) && v[i] > 0)
            p = gpulse__dbl(gpulse__key(p, keys[i]), v[i]);
    p = gpulse__key(p, "mode");
    for (const char *m = training ? "train" : "infer"; *m;)
        *p++ = *m++;
    p = gpulse__key(p, "precision");
    while (*precision)
        *p++ = *precision++;
    gpulse__end(h, p);
    return 0;
}

/* The process is done training, with this exit status (>= 0); flushes. */
static inline void gpulse_end(struct gpulse_steps *h, int status)
{
    char *p = gpulse__begin(h, "end");
    if (status >= 0)
        p = gpulse__u64(gpulse__key(p, "status"), (unsigned long long)status);
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    p = gpulse__dbl(gpulse__key(p, "t"), (double)t.tv_sec + (double)(t.tv_nsec / 1000) / 1e6);
    gpulse__end(h, p);
    gpulse_flush(h);
}

/* Flushes and closes; h may be opened again. */
static inline void gpulse_close(struct gpulse_steps *h)
{
    gpulse_flush(h);
    if (h->fd >= 0)
        close(h->fd);
    h->fd = -1;
}

#endif
