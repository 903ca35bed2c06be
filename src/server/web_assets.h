/*
 * web_assets.h - the dashboard's files, compiled into the binary.
 *
 * The table is generated at build time (tools/embed.c over web/ and the
 * pinned uPlot from web/node_modules, into build/gen/web_assets.c): each
 * file's bytes, the same gzip'ed, its content type and an ETag (a hash of
 * the bytes, quoted). web.c serves them.
 */
#ifndef GP_SERVER_WEB_ASSETS_H
#define GP_SERVER_WEB_ASSETS_H

#include <stddef.h>

struct gp_web_asset {
    const char *name;          /* "index.html", "uPlot.iife.min.js" */
    const char *content_type;
    const unsigned char *data;
    size_t len;
    const unsigned char *gz;   /* gzip of data */
    size_t gzlen;
    const char *etag;          /* "\"<16 hex>\"" */
};

extern const struct gp_web_asset gp_web_assets[];
extern const size_t gp_web_nassets;

#endif
