/*
 * Fuzz target: the agent's push buffer directory as a crash or a bad disk
 * may leave it. The input is split into a checkpoint file (`acked`) and
 * two segment files; the queue must open them without crashing, hold only
 * batches whose records are whole, read each back (or report it corrupt),
 * take a new batch, acknowledge, and reopen to the same queue. Syncs go
 * through segment.h's syscall table and are skipped here (speed); files
 * live in a private directory under $TMPDIR or /dev/shm.
 */
#include "ingest/push_queue.h"
#include "store/segment.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[256];

static int no_sync(int fd)
{
    (void)fd;
    return 0;
}

static void write_file(const char *dir, const char *name, const uint8_t *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (n && fwrite(p, 1, n, f) != n)
        abort();
    fclose(f);
}

static void clear_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
}

static void remove_root(void)
{
    clear_dir(root);
    rmdir(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!root[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(root, sizeof root, "%s/gpulse-fuzz-pushq-XXXXXX",
                 t ? t : access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
        if (!mkdtemp(root))
            abort();
        atexit(remove_root);
        gp_seg_sys.fdatasync = no_sync;
    }
    clear_dir(root);
    /* [u8 checkpoint length][checkpoint][u16 LE first segment length][segment 1][segment 2] */
    size_t ck = size ? data[0] : 0, at = size ? 1 : 0;
    if (ck > size - at)
        ck = size - at;
    write_file(root, "acked", data + at, ck);
    at += ck;
    size_t s1 = size - at >= 2 ? (size_t)(data[at] | data[at + 1] << 8) : 0;
    at += size - at >= 2 ? 2 : size - at;
    if (s1 > size - at)
        s1 = size - at;
    write_file(root, "00000000000000000001.seg", data + at, s1);
    at += s1;
    if (at < size)
        write_file(root, "00000000000000000100.seg", data + at, size - at);

    struct gp_pushq *q;
    struct gp_pushq_recovery rec;
    char err[256];
    if (gp_pushq_open(&q, root, 1 << 20, 4096, &rec, err, sizeof err) != 0)
        return 0;
    size_t n = gp_pushq_count(q);
    if (rec.batches != n && rec.dropped_samples == 0)
        abort();
    struct gp_buf b;
    gp_buf_init(&b, 0);
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        struct gp_pushq_info in = gp_pushq_info(q, i);
        if (in.id <= prev)
            abort(); /* ids strictly increase */
        prev = in.id;
        gp_buf_reset(&b);
        int rc = gp_pushq_read(q, i, &b);
        if (rc == 0 && b.len != in.body_len)
            abort();
    }
    static const char body[] = "a new batch";
    if (gp_pushq_append(q, body, sizeof body, 1, 1, 1, NULL) == 0) {
        n++;
        if (gp_pushq_info(q, n - 1).id <= prev)
            abort();
    }
    if (n > 1)
        gp_pushq_ack(q, gp_pushq_info(q, n / 2).id, NULL);
    size_t left = gp_pushq_count(q);
    gp_pushq_close(q);
    if (gp_pushq_open(&q, root, 1 << 20, 4096, &rec, err, sizeof err) == 0) {
        if (gp_pushq_count(q) > left)
            abort(); /* acknowledged batches never come back */
        gp_pushq_close(q);
    }
    gp_buf_free(&b);
    return 0;
}
