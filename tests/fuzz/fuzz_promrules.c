/* Fuzz target: Prometheus rule files (insight/promrules.h) and the alert
 * templates (insight/promtmpl.h): every rule file that loads has its
 * alerting rules' labels and annotations rendered with a sample's
 * labels, as an evaluation would. */
#include "insight/promrules.h"
#include "insight/promtmpl.h"
#include "store/labels.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gp_promrules rs = {0};
    char err[512];
    struct gp_label l[2] = {{{"Hostname", 8}, {"n1", 2}}, {{"gpu", 3}, {"0", 1}}};
    struct gp_buf lb, out;
    gp_buf_init(&lb, 0);
    gp_buf_init(&out, 1 << 20);
    gp_labels_encode(l, 2, &lb);
    struct gp_ptmpl_data d = {(const uint8_t *)lb.data, lb.len, 0.25};
    if (gp_promrules_parse((const char *)data, size, "fuzz.yml", &rs, err, sizeof err) == 0)
        for (size_t i = 0; i < rs.n; i++)
            for (size_t k = 0; k < rs.g[i].n; k++) {
                const struct gp_promrule *r = &rs.g[i].rules[k];
                for (size_t j = 0; r->alert && j < r->nann; j++) {
                    gp_buf_reset(&out);
                    gp_ptmpl_expand(r->ann_values[j], &d, &out, err, sizeof err);
                }
                for (size_t j = 0; r->alert && j < r->nlabels; j++) {
                    gp_buf_reset(&out);
                    gp_ptmpl_expand(r->label_values[j], &d, &out, err, sizeof err);
                }
            }
    /* the input as one template, too */
    char *t = malloc(size + 1);
    if (t) {
        memcpy(t, data, size);
        t[size] = '\0';
        gp_buf_reset(&out);
        gp_ptmpl_expand(t, &d, &out, err, sizeof err);
        gp_ptmpl_check(t, err, sizeof err);
        free(t);
    }
    gp_buf_free(&out);
    gp_buf_free(&lb);
    gp_promrules_free(&rs);
    return 0;
}
