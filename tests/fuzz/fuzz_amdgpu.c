/*
 * Fuzz target: the amdgpu parsers (amdgpu_parse.c). The first byte picks
 * the parser (0 sysfs integer, 1 fdinfo document, 2 hwmon label, 3 PCI
 * address, 4 PCI id); the rest is its input, handed over with its length
 * and no terminating NUL, as the source hands over what read() returned.
 * Invariants checked: a PCI address that parses is in range; an fdinfo
 * document that claims a size or engine time also parsed its flags.
 */
#include "sources/amdgpu_parse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned which = data[0] % 5;
    size_t n = size - 1;
    /* A heap copy of exactly n bytes, so ASan catches any read past the end. */
    char *buf = malloc(n ? n : 1);
    if (!buf)
        return 0;
    if (n)
        memcpy(buf, data + 1, n);
    switch (which) {
    case 0: {
        int64_t v;
        (void)gp_amdgpu_parse_int(buf, n, &v);
        break;
    }
    case 1: {
        struct gp_amdgpu_fdinfo fi;
        if (gp_amdgpu_parse_fdinfo(buf, n, &fi) == 0) {
            if (fi.has_pdev && (fi.pdev.dev > 0x1f || fi.pdev.fn > 7 || fi.pdev.bus > 0xff))
                abort();
            if (!fi.has_vram && fi.vram_bytes)
                abort();
        }
        break;
    }
    case 2: {
        enum gp_amdgpu_temp_kind k;
        if (gp_amdgpu_parse_hwmon_label(buf, n, &k) == 0 && k > GP_AMDGPU_TEMP_MEM)
            abort();
        break;
    }
    case 3: {
        struct gp_amdgpu_pci a;
        if (gp_amdgpu_parse_pci(buf, n, &a) == 0 && (a.dev > 0x1f || a.fn > 7 || a.bus > 0xff))
            abort();
        break;
    }
    default: {
        unsigned id;
        if (gp_amdgpu_parse_hex_id(buf, n, &id) == 0 && id > 0xffff)
            abort();
        break;
    }
    }
    free(buf);
    return 0;
}
