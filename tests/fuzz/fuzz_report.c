/*
 * Fuzz target: the job report. Bytes -> json_loadb -> advise -> text,
 * JSON and HTML. A document may hold anything (wrong types, huge or
 * negative numbers, hostile strings): rendering must never crash, and
 * the outputs keep their promises (no control bytes in the text, no
 * markup from the document in the HTML).
 */
#include "lib/buf.h"
#include "report/report.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *doc = json_loadb((const char *)data, size, 0, &je);
    if (!doc)
        return 0;
    struct gp_buf b;
    gp_buf_init(&b, 0);
    struct gp_report_opts o = {false};
    int advised = gp_report_advise(doc);
    if (gp_report_text(&b, doc, &o) == 0) {
        for (size_t i = 0; i < b.len; i++)
            if ((unsigned char)b.data[i] < 0x20 && b.data[i] != '\n')
                abort(); /* a document string reached the terminal raw */
    }
    gp_buf_reset(&b);
    gp_report_json(&b, doc);
    gp_buf_reset(&b);
    if (gp_report_html(&b, doc) == 0 && (strstr(b.data, "<script") || strstr(b.data, "<img")))
        abort(); /* markup from the document */
    if (advised == 0 && !json_is_array(json_object_get(doc, "advice")))
        abort();
    gp_buf_free(&b);
    json_decref(doc);
    return 0;
}
