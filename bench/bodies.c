/*
 * bodies.c - reads the bodies file of bench/fleetgen (layout in
 * fleetgen.h): maps it read-only and indexes its records, checking every
 * length against the file size so a truncated file is an error, not a
 * read past the mapping.
 */
#include "fleetgen.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

int gp_bodies_open(struct gp_bodies *b, const char *path, char *err, size_t errlen)
{
    memset(b, 0, sizeof *b);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "open %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < GP_BODIES_HEADER_LEN) {
        snprintf(err, errlen, "%s: not a bodies file (too short)", path);
        close(fd);
        return -1;
    }
    b->map_len = (size_t)st.st_size;
    b->map = mmap(NULL, b->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (b->map == MAP_FAILED) {
        b->map = NULL;
        snprintf(err, errlen, "mmap %s: %s", path, strerror(errno));
        return -1;
    }
    const uint8_t *p = b->map, *end = p + b->map_len;
    if (memcmp(p, GP_BODIES_MAGIC, 8) != 0 || rd32(p + 8) != GP_BODIES_VERSION) {
        snprintf(err, errlen, "%s: not a version %u bodies file", path, GP_BODIES_VERSION);
        gp_bodies_close(b);
        return -1;
    }
    b->h.shards = rd32(p + 12);
    b->h.bodies = rd64(p + 16);
    b->h.samples = rd64(p + 24);
    b->h.first_ms = (int64_t)rd64(p + 32);
    b->h.last_ms = (int64_t)rd64(p + 40);
    b->h.series = rd32(p + 48);
    if (b->h.bodies > b->map_len / GP_BODIES_RECORD_LEN) {
        snprintf(err, errlen, "%s: header claims %llu bodies", path, (unsigned long long)b->h.bodies);
        gp_bodies_close(b);
        return -1;
    }
    b->body = calloc(b->h.bodies ? b->h.bodies : 1, sizeof *b->body);
    if (!b->body) {
        snprintf(err, errlen, "out of memory");
        gp_bodies_close(b);
        return -1;
    }
    p += GP_BODIES_HEADER_LEN;
    for (uint64_t i = 0; i < b->h.bodies; i++) {
        if ((size_t)(end - p) < GP_BODIES_RECORD_LEN || (size_t)(end - p) - GP_BODIES_RECORD_LEN < rd32(p + 4)) {
            snprintf(err, errlen, "%s: truncated at body %llu", path, (unsigned long long)i);
            gp_bodies_close(b);
            return -1;
        }
        struct gp_body *x = &b->body[i];
        x->shard = rd32(p);
        x->len = rd32(p + 4);
        x->samples = rd64(p + 8);
        x->data = p + GP_BODIES_RECORD_LEN;
        if (x->shard >= b->h.shards) {
            snprintf(err, errlen, "%s: body %llu in shard %u of %u", path, (unsigned long long)i, x->shard,
                     b->h.shards);
            gp_bodies_close(b);
            return -1;
        }
        p += GP_BODIES_RECORD_LEN + x->len;
    }
    return 0;
}

void gp_bodies_close(struct gp_bodies *b)
{
    if (b->map)
        munmap(b->map, b->map_len);
    free(b->body);
    memset(b, 0, sizeof *b);
}
