/* test_faults.c - the fault catalog (insight/faults.h): its rows agree
 * with NVIDIA's buckets, fit an alert's runbook, and docs/health.md
 * lists each with its severity and action. */
#include "insight/alerts.h"
#include "insight/faults.h"
#include "test.h"

#include <stdio.h>
#include <string.h>

/* NVIDIA's immediate-action bucket -> the action gpulse asks for; a
 * stronger action only where NVIDIA's guidance says the card is at
 * fault (XID 64: a failed remap means replacement). */
static void test_buckets(void)
{
    unsigned n;
    const struct gp_fault *t = gp_fault_table(&n);
    CHECK(n >= 20 + GP_FC__COUNT);
    for (unsigned i = 0; i < n; i++) {
        const struct gp_fault *f = &t[i];
        CHECK(f->name[0] && f->title[0] && f->explanation[0]);
        for (unsigned j = 0; j < i; j++)
            if (!strcmp(t[j].name, f->name))
                gp_test_fail(__FILE__, __LINE__, "%s twice in the catalog", f->name);
        char rb[GP_ALERT_RUNBOOK_LEN + 64];
        gp_fault_runbook(f, rb, sizeof rb);
        if (strlen(rb) >= GP_ALERT_RUNBOOK_LEN)
            gp_test_fail(__FILE__, __LINE__, "%s: its runbook (%zu bytes) is cut in an alert", f->name,
                         strlen(rb));
        if (!f->xid)
            continue;
        enum gp_fault_action want = !strcmp(f->bucket, "RESTART_APP") ? GP_FA_RESTART_APP
                                    : !strcmp(f->bucket, "RESET_GPU")  ? GP_FA_RESET_GPU
                                    : !strcmp(f->bucket, "RESTART_BM") ? GP_FA_REBOOT
                                    : !strcmp(f->bucket, "IGNORE")     ? GP_FA_NONE
                                                                       : GP_FA__COUNT;
        if (f->xid == 64)
            want = GP_FA_DRAIN_INSPECT;
        if (f->action != want)
            gp_test_fail(__FILE__, __LINE__, "XID %u: bucket %s but action %s", f->xid, f->bucket,
                         gp_fault_action_names[f->action]);
        /* an application's XID never asks for more than its restart */
        if (!f->hardware && f->action > GP_FA_RESTART_APP)
            gp_test_fail(__FILE__, __LINE__, "XID %u: an application XID asks to %s", f->xid,
                         gp_fault_action_words[f->action]);
    }
}

static void test_lookup(void)
{
    const struct gp_fault *f = gp_fault_xid(79);
    CHECK_STR(f->name, "xid_79");
    CHECK_INT(f->action, GP_FA_REBOOT);
    CHECK_INT(f->severity, GP_SEV_CRITICAL);
    CHECK(gp_fault_xid_known(48) && !gp_fault_xid_known(4242));
    f = gp_fault_xid(4242);
    CHECK_STR(f->name, "xid_other");
    CHECK_INT(f->action, GP_FA_NONE);
    CHECK(gp_xid_is_hardware(48) && gp_xid_is_hardware(79) && gp_xid_is_hardware(94));
    CHECK(!gp_xid_is_hardware(13) && !gp_xid_is_hardware(31) && !gp_xid_is_hardware(4242));
    CHECK(!gp_xid_is_hardware(48.5) && !gp_xid_is_hardware(-48) && !gp_xid_is_hardware(1e12));
    CHECK_INT(gp_fault_cond(GP_FC_REMAP_PENDING)->action, GP_FA_RESET_GPU);
    CHECK_INT(gp_fault_cond(GP_FC_REMAP_FAILURE)->action, GP_FA_DRAIN_INSPECT);
    CHECK_INT(gp_fault_cond(GP_FC_LOST)->action, GP_FA_REBOOT);
    /* the stronger: action first, then severity */
    CHECK(gp_fault_stronger(gp_fault_xid(13), gp_fault_xid(48)) == gp_fault_xid(48));
    CHECK(gp_fault_stronger(gp_fault_xid(79), gp_fault_xid(48)) == gp_fault_xid(79));
    CHECK(gp_fault_stronger(NULL, gp_fault_xid(13)) == gp_fault_xid(13));
    CHECK(gp_fault_stronger(gp_fault_cond(GP_FC_REMAP_PENDING), gp_fault_xid(48)) == gp_fault_xid(48));
    char rb[64];
    gp_fault_runbook(gp_fault_xid(48), rb, sizeof rb);
    CHECK_STR(rb, "Reset the GPU (XID 48, double-bit ECC error). An uncorrectable ");
}

/* docs/health.md's catalog table: "| `name` | severity | action |". */
static void test_docs_table(void)
{
    const char *doc = strstr(gp_test_repo_text("docs/health.md"), "## The fault catalog");
    CHECK(doc);
    unsigned n;
    const struct gp_fault *t = gp_fault_table(&n);
    for (unsigned i = 0; i < n; i++) {
        char row[160];
        snprintf(row, sizeof row, "| `%s` | %s | %s |", t[i].name, gp_severity_names[t[i].severity],
                 gp_fault_action_names[t[i].action]);
        if (!strstr(doc, row))
            gp_test_fail(__FILE__, __LINE__, "docs/health.md has no row \"%s\"", row);
    }
}

const struct gp_test gp_tests_faults[] = {
    {"buckets", test_buckets},
    {"lookup", test_lookup},
    {"docs_table", test_docs_table},
    {0},
};
