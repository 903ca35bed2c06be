/*
 * amdgpu_parse.h - pure parsers for what the amdgpu kernel driver prints.
 *
 * The amdgpu source (amdgpu.c) reads sysfs attributes and DRM fdinfo
 * documents; the text it gets is parsed here, without touching the
 * filesystem, so unit tests and the fuzz target (tests/fuzz/fuzz_amdgpu.c)
 * call the same code the agent runs. Every parser takes a buffer and its
 * length (not NUL-terminated; a NUL byte inside is malformed input) and
 * returns GP_OK or GP_EPARSE, leaving *out unspecified on failure.
 */
#ifndef GP_AMDGPU_PARSE_H
#define GP_AMDGPU_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * One sysfs integer attribute ("42\n", "-5"): optional blanks, an
 * optional '-', decimal digits, optional trailing blanks/newline and
 * nothing else. Out of int64 range, empty, or any other byte: GP_EPARSE.
 */
int gp_amdgpu_parse_int(const char *buf, size_t len, int64_t *out);

/* A PCI id attribute ("0x1002\n", "0x74a1"): up to 4 hex digits, "0x" optional. */
int gp_amdgpu_parse_hex_id(const char *buf, size_t len, unsigned *out);

/* What a hwmon temp*_label names on amdgpu. */
enum gp_amdgpu_temp_kind {
    GP_AMDGPU_TEMP_OTHER,    /* a printable label we do not use */
    GP_AMDGPU_TEMP_EDGE,     /* "edge" */
    GP_AMDGPU_TEMP_JUNCTION, /* "junction" (hotspot) */
    GP_AMDGPU_TEMP_MEM,      /* "mem" (HBM/GDDR) */
};

/* A hwmon label line ("junction\n"). Empty, longer than 63 bytes or
 * holding control bytes: GP_EPARSE. */
int gp_amdgpu_parse_hwmon_label(const char *buf, size_t len, enum gp_amdgpu_temp_kind *out);

/*
 * A PCI address as sysfs and fdinfo write it: "0000:03:00.0" (domain may
 * be omitted: "03:00.0"). Hex digits of either case; fields range-checked.
 */
struct gp_amdgpu_pci {
    unsigned domain, bus, dev, fn;
};
int gp_amdgpu_parse_pci(const char *buf, size_t len, struct gp_amdgpu_pci *out);

/* The fields of one DRM fdinfo document that gpulse uses. */
struct gp_amdgpu_fdinfo {
    bool amdgpu;         /* drm-driver is amdgpu, or the pre-5.19 amdgpu layout */
    bool has_pdev;
    struct gp_amdgpu_pci pdev;
    bool has_client_id;  /* drm-client-id, or the old pasid */
    uint64_t client_id;
    bool has_vram;
    uint64_t vram_bytes; /* drm-resident-vram, drm-memory-vram or "vram mem" */
    bool has_gfx, has_compute;
    uint64_t gfx_ns, compute_ns; /* drm-engine-gfx / drm-engine-compute */
};

/*
 * A whole /proc/PID/fdinfo/N document: "key:\tvalue" lines. Unknown keys
 * and lines are ignored (the format grows); a key we use with a malformed
 * value, or a NUL byte anywhere, is GP_EPARSE. Sizes accept a bare byte
 * count or the suffixes KiB/kB, MiB, GiB; engine times a bare count or
 * "ns". A document of another driver parses fine with amdgpu false.
 */
int gp_amdgpu_parse_fdinfo(const char *buf, size_t len, struct gp_amdgpu_fdinfo *out);

#endif
