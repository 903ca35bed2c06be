/*
 * perf_file.h - what the standalone decoder harnesses (bchunk_perf.c,
 * hchunk_perf.c) share: a monotonic clock in seconds and a read-only
 * mapping of the whole file they measure.
 */
#ifndef GP_PERF_FILE_H
#define GP_PERF_FILE_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* path mapped read-only, its size in *len; NULL (reason on stderr). */
static inline const uint8_t *map_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(path);
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        perror(path);
        return NULL;
    }
    *len = (size_t)st.st_size;
    return map;
}

#endif
