/*
 * test_store_hcache.c - the open head chunk's samples kept decoded
 * between reads (src/store/hcache.c): every read answers what a fresh
 * decode of the chunk would, across appends between reads, cuts,
 * compaction, a chunk that stops decoding, the memory bound and readers
 * racing appends.
 */
#include "store/store_int.h"
#include "store_testlib.h"

#include <pthread.h>
#include <stdatomic.h>

/* Reads series k's [mint, maxt] and checks it holds exactly the samples
 * tfill wrote there: one a second from t0, n of them. */
static void check_range(struct gp_store *s, uint32_t k, int64_t t0, size_t n, int64_t mint,
                        int64_t maxt)
{
    struct gp_samples x = {0};
    CHECK_INT(gp_store_read(s, tid(s, k), mint, maxt, &x), GP_OK);
    int64_t lo = mint > t0 ? t0 + (mint - t0 + 999) / 1000 * 1000 : t0;
    int64_t hi = t0 + (int64_t)(n - 1) * 1000;
    if (maxt < hi)
        hi = t0 + (maxt - t0) / 1000 * 1000;
    size_t want = hi >= lo ? (size_t)((hi - lo) / 1000 + 1) : 0;
    CHECK_INT(x.n, want);
    for (size_t i = 0; i < x.n && i < want; i++) {
        CHECK_INT(x.t[i], lo + (int64_t)i * 1000);
        CHECK_DBL(x.v[i], tvalue(k, x.t[i]), 0);
    }
    gp_samples_free(&x);
}

/* Batches of 1..37 samples with reads of the whole range and of a window
 * between them: each read after an append must see the new samples (an
 * entry not extended would miss them), and across the head's cut at 480
 * samples the old entry must go (one kept would answer the old chunk). */
static void test_appends_between_reads(void)
{
    struct gp_store *s = topen_tmp();
    int64_t t0 = t0_one_window(1400 * 1000);
    size_t n = 0;
    for (size_t b = 1; n < 1400; b = b % 37 + 1) {
        tfill(s, 2, b, t0 + (int64_t)n * 1000, b);
        n += b;
        check_range(s, 1, t0, n, t0, INT64_MAX);
        int64_t mid = t0 + (int64_t)(n / 2) * 1000 + 500;
        check_range(s, 1, t0, n, mid, mid + 20500);
        check_range(s, 0, t0, n, mid - 3000, INT64_MAX);
        uint32_t id = tid(s, 1);
        /* kept while the head holds samples; n counts the kept ones */
        CHECK(s->ser[id].hc != NULL);
        CHECK_INT(s->ser[id].hc->n, s->ser[id].head.count);
    }
    CHECK(s->hc_bytes > 0);
    gp_store_close(s);
}

/* Compaction cuts the head chunks of the windows it closes: their
 * entries go with them, and reads after it (of blocks, chunk files and
 * what is left in the head) are exact. */
static void test_compaction_drops_entries(void)
{
    struct gp_store_options o = {.block_ms = 120000, .no_sync = 1, .no_background = 1};
    char dir[600];
    snprintf(dir, sizeof dir, "%s/data", gp_test_tmpdir());
    struct gp_store *s = topen(dir, &o);
    int64_t t0 = gp_st_floor(tnow_ms() - 1200 * 1000, 120000) + 7000;
    size_t n = (size_t)((tnow_ms() - 2000 - t0) / 1000);
    tfill(s, 4, n, t0, 100);
    for (uint32_t k = 0; k < 4; k++)
        check_range(s, k, t0, n, t0, INT64_MAX);
    CHECK(s->hc_bytes > 0);
    CHECK_INT(gp_store_maintain(s, 1), GP_OK);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK(st.compactions >= 8);
    for (uint32_t k = 0; k < 4; k++) {
        const struct gp_st_series *se = &s->ser[tid(s, k)];
        CHECK(se->hc == NULL || se->head.count > 0);
        check_range(s, k, t0, n, t0, INT64_MAX);
        check_range(s, k, t0, n, t0 + (int64_t)(n - 30) * 1000, INT64_MAX);
        CHECK(se->hc == NULL || se->hc->n == se->head.count);
    }
    gp_store_close(s);
}

/* A head chunk that stops decoding (its count raised past its samples,
 * as a truncated stream reads): the read reports the damage as without
 * the entry, and once the chunk is whole again it answers in full. */
static void test_undecodable_chunk_restarts(void)
{
    struct gp_store *s = topen_tmp();
    int64_t t0 = t0_one_window(300 * 1000);
    tfill(s, 1, 200, t0, 50);
    check_range(s, 0, t0, 200, t0, INT64_MAX);
    tfill(s, 1, 50, t0 + 200 * 1000, 50);
    uint32_t id = tid(s, 0);
    struct gp_chunk *c = &s->ser[id].head;
    c->data[1] = (uint8_t)(c->data[1] + 5);
    struct gp_samples x = {0};
    CHECK_INT(gp_store_read(s, id, t0, INT64_MAX, &x), GP_EPARSE);
    CHECK_INT(s->ser[id].hc->n, 0);
    gp_samples_free(&x);
    c->data[1] = (uint8_t)(c->data[1] - 5);
    check_range(s, 0, t0, 250, t0, INT64_MAX);
    CHECK_INT(s->ser[id].hc->n, 250);
    gp_store_close(s);
}

/* Past GP_ST_HCACHE_MAX no entry is made and reads decode as before. */
static void test_memory_bound(void)
{
    struct gp_store *s = topen_tmp();
    int64_t t0 = t0_one_window(300 * 1000);
    tfill(s, 2, 100, t0, 100);
    check_range(s, 0, t0, 100, t0, INT64_MAX);
    size_t one = s->hc_bytes;
    CHECK(one > 7680 && one < 8192); /* 480 times and values, and the decoder */
    s->hc_bytes = GP_ST_HCACHE_MAX; /* as though full */
    check_range(s, 1, t0, 100, t0, INT64_MAX);
    CHECK(s->ser[tid(s, 1)].hc == NULL);
    CHECK_INT(s->hc_bytes, GP_ST_HCACHE_MAX);
    s->hc_bytes = one;
    gp_store_close(s);
}

struct race {
    struct gp_store *s;
    int64_t t0;
    atomic_int done;
    atomic_int bad;
};

static void *reader(void *p)
{
    struct race *r = p;
    struct gp_samples x = {0};
    uint32_t id = tid(r->s, 0);
    while (!atomic_load(&r->done)) {
        x.n = 0;
        if (gp_store_read(r->s, id, r->t0, INT64_MAX, &x) != GP_OK)
            atomic_fetch_add(&r->bad, 1);
        for (size_t i = 0; i < x.n; i++)
            if (x.t[i] != r->t0 + (int64_t)i * 1000 || x.v[i] != tvalue(0, x.t[i]))
                atomic_fetch_add(&r->bad, 1);
    }
    gp_samples_free(&x);
    return NULL;
}

/* Readers of one series, racing each other for its entry and the writer
 * for the lock, only ever see the samples from t0 on, in order. */
static void test_readers_race_appends(void)
{
    struct gp_store *s = topen_tmp();
    struct race r = {.s = s, .t0 = t0_one_window(1000 * 1000)};
    tfill(s, 1, 1, r.t0, 1);
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        CHECK(pthread_create(&th[i], NULL, reader, &r) == 0);
    tfill(s, 1, 999, r.t0 + 1000, 3);
    atomic_store(&r.done, 1);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    CHECK_INT(atomic_load(&r.bad), 0);
    check_range(s, 0, r.t0, 1000, r.t0, INT64_MAX);
    gp_store_close(s);
}

const struct gp_test gp_tests_store_hcache[] = {
    {"appends_between_reads", test_appends_between_reads},
    {"compaction_drops_entries", test_compaction_drops_entries},
    {"undecodable_chunk_restarts", test_undecodable_chunk_restarts},
    {"memory_bound", test_memory_bound},
    {"readers_race_appends", test_readers_race_appends},
    {0},
};
