/*
 * rwload - sends the pre-encoded remote-write bodies of bench/fleetgen to
 * a receiver, and measures what ingesting them cost the receiver.
 *
 *   rwload [-c CONNECTIONS] [-p PID] [-r] [-a ACKLOG] [-d SECONDS] URL FILE
 *
 * The whole file is mapped before the clock starts. CONNECTIONS threads
 * each own one libcurl easy handle (one keep-alive connection) and the
 * shards s with s % CONNECTIONS == thread, sending that thread's bodies in
 * file order, so every series reaches the receiver in time order (a
 * Prometheus receiver rejects anything else).
 *
 * Benchmark mode (default): every answer must be 2xx; anything else is
 * counted as an error and the exit status is 1. With -p PID the
 * receiver's CPU time (utime + stime from /proc/PID/stat) is read before
 * the first request and after the last answer: samples per CPU second is
 * the ingest speed per core, fair across receivers with different thread
 * counts.
 *
 * Crash-test mode (-r): connection errors, 5xx and 429 are retried every
 * 20 ms (the receiver is being killed and restarted) until the deadline
 * (-d); other answers are errors. With -a, the index of every body that
 * was acknowledged (2xx) is appended to ACKLOG, one per line: the set of
 * samples the receiver promised to keep. -d also stops starting new
 * bodies after that many seconds.
 *
 * Prints one line of key=value pairs.
 */
#include "fleetgen.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct shared {
    const char *url;
    const struct gp_bodies *b;
    int threads, retry;
    double deadline; /* monotonic seconds; 0: none */
    FILE *acklog;
    pthread_mutex_t mu;
    /* totals, under mu */
    uint64_t sent_bodies, sent_samples, sent_bytes, errors, retries;
    char first_error[CURL_ERROR_SIZE + 64];
};

struct worker {
    struct shared *sh;
    int id;
    pthread_t th;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
    (void)p;
    (void)arg;
    return size * n;
}

static void note_error(struct shared *sh, const char *msg)
{
    pthread_mutex_lock(&sh->mu);
    sh->errors++;
    if (!sh->first_error[0])
        snprintf(sh->first_error, sizeof sh->first_error, "%s", msg);
    pthread_mutex_unlock(&sh->mu);
}

static void *run(void *arg)
{
    struct worker *w = arg;
    struct shared *sh = w->sh;
    CURL *c = curl_easy_init();
    if (!c) {
        note_error(sh, "curl_easy_init failed");
        return NULL;
    }
    struct curl_slist *hdr = NULL;
    hdr = curl_slist_append(hdr, "Content-Encoding: snappy");
    hdr = curl_slist_append(hdr, "Content-Type: application/x-protobuf");
    hdr = curl_slist_append(hdr, "X-Prometheus-Remote-Write-Version: 0.1.0");
    hdr = curl_slist_append(hdr, "User-Agent: gpulse-rwload");
    hdr = curl_slist_append(hdr, "Expect:");
    curl_easy_setopt(c, CURLOPT_URL, sh->url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    char ebuf[CURL_ERROR_SIZE];
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
    uint64_t bodies = 0, samples = 0, bytes = 0, retries = 0;
    for (uint64_t i = 0; i < sh->b->h.bodies; i++) {
        const struct gp_body *x = &sh->b->body[i];
        if (x->shard % (uint32_t)sh->threads != (uint32_t)w->id)
            continue;
        if (sh->deadline > 0 && now_s() >= sh->deadline)
            break;
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, (const char *)x->data);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->len);
        int acked = 0;
        for (;;) {
            ebuf[0] = 0;
            CURLcode rc = curl_easy_perform(c);
            long status = 0;
            if (rc == CURLE_OK)
                curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
            if (rc == CURLE_OK && status >= 200 && status < 300) {
                acked = 1;
                break;
            }
            int transient = rc != CURLE_OK || status >= 500 || status == 429;
            if (!sh->retry || !transient) {
                char msg[CURL_ERROR_SIZE + 64];
                if (rc != CURLE_OK)
                    snprintf(msg, sizeof msg, "body %llu: %s", (unsigned long long)i,
                             ebuf[0] ? ebuf : curl_easy_strerror(rc));
                else
                    snprintf(msg, sizeof msg, "body %llu: HTTP %ld", (unsigned long long)i, status);
                note_error(sh, msg);
                break;
            }
            if (sh->deadline > 0 && now_s() >= sh->deadline + 10)
                break; /* the receiver stayed down past the deadline */
            retries++;
            usleep(20000);
        }
        if (!acked)
            continue;
        bodies++;
        samples += x->samples;
        bytes += x->len;
        if (sh->acklog) {
            pthread_mutex_lock(&sh->mu);
            fprintf(sh->acklog, "%llu\n", (unsigned long long)i);
            pthread_mutex_unlock(&sh->mu);
        }
    }
    pthread_mutex_lock(&sh->mu);
    sh->sent_bodies += bodies;
    sh->sent_samples += samples;
    sh->sent_bytes += bytes;
    sh->retries += retries;
    pthread_mutex_unlock(&sh->mu);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(c);
    return NULL;
}

/* utime + stime of pid in clock ticks, or -1. */
static long long cpu_ticks(int pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    if (!p)
        return -1;
    unsigned long long ut, st;
    /* after ")": state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime(14) stime(15) */
    if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (long long)(ut + st);
}

static void usage(void)
{
    fprintf(stderr, "usage: rwload [-c CONNECTIONS] [-p PID] [-r] [-a ACKLOG] [-d SECONDS] URL FILE\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int threads = 4, pid = 0, retry = 0;
    double duration = 0;
    const char *ackpath = NULL;
    int c;
    while ((c = getopt(argc, argv, "c:p:ra:d:")) != -1) {
        switch (c) {
        case 'c': threads = atoi(optarg); break;
        case 'p': pid = atoi(optarg); break;
        case 'r': retry = 1; break;
        case 'a': ackpath = optarg; break;
        case 'd': duration = atof(optarg); break;
        default: usage();
        }
    }
    if (argc - optind != 2 || threads < 1 || threads > 256 || duration < 0)
        usage();
    struct shared sh = {.url = argv[optind], .threads = threads, .retry = retry};
    pthread_mutex_init(&sh.mu, NULL);
    struct gp_bodies b;
    char err[512];
    if (gp_bodies_open(&b, argv[optind + 1], err, sizeof err) != 0) {
        fprintf(stderr, "rwload: %s\n", err);
        return 1;
    }
    sh.b = &b;
    if (ackpath && (!(sh.acklog = fopen(ackpath, "w")) || setvbuf(sh.acklog, NULL, _IOLBF, 0) != 0)) {
        fprintf(stderr, "rwload: %s: %s\n", ackpath, strerror(errno));
        return 1;
    }
    /* fault the mapping in before the clock starts */
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < b.map_len; i += 4096)
        sink ^= ((const uint8_t *)b.map)[i];
    (void)sink;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (b.h.shards == 0 || b.h.bodies == 0) {
        fprintf(stderr, "rwload: %s holds no bodies\n", argv[optind + 1]);
        return 1;
    }
    if (threads > (int)b.h.shards)
        threads = sh.threads = (int)b.h.shards;
    struct worker *w = calloc((size_t)threads, sizeof *w);
    if (!w)
        return 1;
    long long cpu0 = pid ? cpu_ticks(pid) : 0;
    double t0 = now_s();
    if (duration > 0)
        sh.deadline = t0 + duration;
    for (int i = 0; i < threads; i++) {
        w[i] = (struct worker){&sh, i, 0};
        if (pthread_create(&w[i].th, NULL, run, &w[i]) != 0) {
            fprintf(stderr, "rwload: pthread_create failed\n");
            return 1;
        }
    }
    for (int i = 0; i < threads; i++)
        pthread_join(w[i].th, NULL);
    double wall = now_s() - t0;
    long long cpu1 = pid ? cpu_ticks(pid) : 0;
    double cpu = pid && cpu0 >= 0 && cpu1 >= 0 ? (double)(cpu1 - cpu0) / (double)sysconf(_SC_CLK_TCK) : 0;
    printf("bodies=%llu samples=%llu bytes=%llu wall_s=%.3f samples_per_s=%.0f connections=%d retries=%llu "
           "errors=%llu",
           (unsigned long long)sh.sent_bodies, (unsigned long long)sh.sent_samples,
           (unsigned long long)sh.sent_bytes, wall, (double)sh.sent_samples / wall, threads,
           (unsigned long long)sh.retries, (unsigned long long)sh.errors);
    if (pid)
        printf(" target_cpu_s=%.2f samples_per_cpu_s=%.0f", cpu, cpu > 0 ? (double)sh.sent_samples / cpu : 0);
    printf("\n");
    if (sh.errors)
        fprintf(stderr, "rwload: %llu errors, first: %s\n", (unsigned long long)sh.errors, sh.first_error);
    if (sh.acklog && fclose(sh.acklog) != 0) {
        fprintf(stderr, "rwload: writing %s failed\n", ackpath);
        return 1;
    }
    free(w);
    gp_bodies_close(&b);
    curl_global_cleanup();
    return sh.errors ? 1 : 0;
}
