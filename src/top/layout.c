/*
 * layout.c - see layout.h.
 *
 * Parts: the view (CPU % from two frames, process rows, sorting, keys),
 * number formatting and bars, and the renderer, which writes rows into
 * the cell grid through a small line builder: a piece that does not fit
 * the rest of a line is left out whole (never wrapped), so a narrow
 * terminal loses the least important facts of each line first.
 */
#include "layout.h"

#include "lib/duration.h"
#include "lib/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct col_info {
    const char *title, *name;
    unsigned width, drop;
    char key;
};

static const struct col_info cols[GP_TC__COUNT] = {
#define GP_TOP_COL_ROW_(id, name, title, width, drop, key) {title, name, width, drop, key},
    GP_TOP_COLS(GP_TOP_COL_ROW_)
#undef GP_TOP_COL_ROW_
};

const char *gp_top_col_title(enum gp_top_col c) { return cols[c].title; }

const char *gp_top_col_name(enum gp_top_col c) { return cols[c].name; }

int gp_top_col_parse(const char *name)
{
    for (int c = 0; c < GP_TC__COUNT; c++)
        if (!strcmp(name, cols[c].name))
            return c;
    return -1;
}

/* ---- the view ----------------------------------------------------------- */

void gp_top_view_init(struct gp_top_view *v)
{
    memset(v, 0, sizeof *v);
    v->sort = GP_TC_GPUMEM;
    v->interval_ms = 1000;
}

void gp_top_view_free(struct gp_top_view *v)
{
    if (!v)
        return;
    free(v->procs);
    free(v->prev);
    v->procs = NULL;
    v->prev = NULL;
    v->nprocs = v->cap_procs = v->nprev = v->cap_prev = 0;
}

static int grow(void **p, unsigned *cap, unsigned want, size_t size)
{
    if (want <= *cap)
        return GP_OK;
    unsigned n = *cap ? *cap : 16;
    while (n < want)
        n *= 2;
    void *q = realloc(*p, (size_t)n * size);
    if (!q)
        return GP_ENOMEM;
    *p = q;
    *cap = n;
    return GP_OK;
}

static double prev_cpu(const struct gp_top_view *v, uint32_t pid, bool *found)
{
    unsigned lo = 0, hi = v->nprev;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (v->prev[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < v->nprev && v->prev[lo].pid == pid;
    return *found ? v->prev[lo].cpu_s : 0;
}

static void host_cpu(struct gp_top_view *v, const struct gp_frame *f)
{
    const struct gp_host *h = &f->host;
    v->cpu_valid = false;
    if (!h->cpu_valid) {
        v->prev_host_valid = false;
        return;
    }
    double total = 0, idle = h->cpu_seconds[GP_CPU_IDLE] + h->cpu_seconds[GP_CPU_IOWAIT];
    for (int m = 0; m < GP_CPU__COUNT; m++)
        total += h->cpu_seconds[m];
    double busy = total - idle;
    if (v->prev_host_valid && total > v->prev_total_s) {
        double pct = 100.0 * (busy - v->prev_busy_s) / (total - v->prev_total_s);
        v->cpu_pct = pct < 0 ? 0 : pct > 100 ? 100 : pct;
        v->cpu_valid = true;
    }
    v->prev_host_valid = true;
    v->prev_busy_s = busy;
    v->prev_total_s = total;
}

int gp_top_view_update(struct gp_top_view *v, const struct gp_frame *f)
{
    host_cpu(v, f);
    double dt = v->prev_ms && f->time_ms > v->prev_ms ? (double)(f->time_ms - v->prev_ms) / 1000.0 : 0;
    unsigned n = 0;
    for (unsigned i = 0; i < f->ngpus; i++)
        n += f->gpus[i].lost ? 0 : f->gpus[i].nprocs;
    if (grow((void **)&v->procs, &v->cap_procs, n, sizeof *v->procs) ||
        grow((void **)&v->prev, &v->cap_prev, f->nprocs, sizeof *v->prev))
        return GP_ENOMEM;
    v->nprocs = 0;
    for (unsigned i = 0; i < f->ngpus; i++) {
        const struct gp_gpu *g = &f->gpus[i];
        for (unsigned k = 0; k < g->nprocs && !g->lost; k++) {
            const struct gp_gpu_proc *gp = &g->procs[k];
            const struct gp_proc *hp = gp_frame_find_proc(f, gp->pid);
            struct gp_top_proc *r = &v->procs[v->nprocs++];
            memset(r, 0, sizeof *r);
            r->pid = gp->pid;
            r->gpu = g->index;
            r->rank = -1;
            r->mem_valid = gp->mem_valid;
            r->gpu_mem_bytes = gp->mem_bytes;
            r->sm_valid = gp->util_valid;
            r->sm_pct = gp->sm_util;
            const struct gp_job_id *jid = NULL;
            if (hp) {
                r->host = true;
                r->uid = hp->uid;
                const char *u = v->user_name ? v->user_name(hp->uid, v->user_ctx) : NULL;
                if (u)
                    snprintf(r->user, sizeof r->user, "%s", u);
                else
                    snprintf(r->user, sizeof r->user, "%u", hp->uid);
                r->rss_bytes = hp->rss_bytes;
                snprintf(r->comm, sizeof r->comm, "%s", hp->comm);
                bool found;
                double before = prev_cpu(v, hp->pid, &found);
                double now = hp->utime_s + hp->stime_s;
                if (found && dt > 0 && now >= before) {
                    r->cpu_valid = true;
                    r->cpu_pct = 100.0 * (now - before) / dt;
                }
                if (hp->jid.job[0])
                    jid = &hp->jid;
            }
            /* A simulated process has no /proc entry: its GPU's job is its own. */
            if (!jid && g->simulated && g->job_idx >= 0 && (unsigned)g->job_idx < f->njobs)
                jid = &f->jobs[g->job_idx].id;
            if (jid) {
                snprintf(r->job, sizeof r->job, "%s", jid->job);
                r->rank = jid->rank;
            }
        }
    }
    /* procs are sorted by pid (gp_frame_sort_procs), so prev stays sorted */
    for (unsigned i = 0; i < f->nprocs; i++)
        v->prev[i] = (struct gp_top_prev_cpu){f->procs[i].pid, f->procs[i].utime_s + f->procs[i].stime_s};
    v->nprev = f->nprocs;
    v->prev_ms = f->time_ms;
    gp_top_sort(v->procs, v->nprocs, v->sort, v->reverse);
    return GP_OK;
}

struct sort_by {
    enum gp_top_col col;
    bool reverse;
};

static int cmp_num(bool va, double a, bool vb, double b)
{
    if (va != vb)
        return va ? -1 : 1; /* unknown values last */
    return a > b ? -1 : a < b ? 1 : 0; /* largest first */
}

static int cmp_rows(const void *pa, const void *pb, void *arg)
{
    const struct gp_top_proc *a = pa, *b = pb;
    const struct sort_by *by = arg;
    int c = 0;
    switch (by->col) {
    case GP_TC_PID: c = 0; break;
    case GP_TC_USER: c = strcmp(a->user, b->user); break;
    case GP_TC_JOB:
        c = (!a->job[0]) - (!b->job[0]); /* no job last */
        if (!c)
            c = strcmp(a->job, b->job);
        break;
    case GP_TC_RANK: c = (a->rank < 0) - (b->rank < 0); if (!c) c = (a->rank > b->rank) - (a->rank < b->rank); break;
    case GP_TC_GPU: c = (a->gpu > b->gpu) - (a->gpu < b->gpu); break;
    case GP_TC_GPUMEM: c = cmp_num(a->mem_valid, (double)a->gpu_mem_bytes, b->mem_valid, (double)b->gpu_mem_bytes); break;
    case GP_TC_SM: c = cmp_num(a->sm_valid, a->sm_pct, b->sm_valid, b->sm_pct); break;
    case GP_TC_CPU: c = cmp_num(a->cpu_valid, a->cpu_pct, b->cpu_valid, b->cpu_pct); break;
    case GP_TC_RSS: c = cmp_num(a->host, (double)a->rss_bytes, b->host, (double)b->rss_bytes); break;
    case GP_TC_COMMAND: c = strcmp(a->comm, b->comm); break;
    case GP_TC__COUNT: break;
    }
    if (!c)
        c = (a->pid > b->pid) - (a->pid < b->pid);
    if (!c)
        c = (a->gpu > b->gpu) - (a->gpu < b->gpu);
    return by->reverse ? -c : c;
}

void gp_top_sort(struct gp_top_proc *rows, unsigned n, enum gp_top_col c, bool reverse)
{
    struct sort_by by = {c, reverse};
    if (n > 1)
        qsort_r(rows, n, sizeof *rows, cmp_rows, &by);
}

int64_t gp_top_interval_step(int64_t ms, int dir)
{
    static const int64_t ladder[] = {100, 250, 500, 1000, 2000, 5000, 10000, 30000, 60000};
    const unsigned n = sizeof ladder / sizeof ladder[0];
    if (dir > 0) {
        for (unsigned i = 0; i < n; i++)
            if (ladder[i] > ms)
                return ladder[i];
        return ladder[n - 1];
    }
    for (unsigned i = n; i-- > 0;)
        if (ladder[i] < ms)
            return ladder[i];
    return ladder[0];
}

enum gp_top_action gp_top_view_key(struct gp_top_view *v, int key, unsigned page)
{
    unsigned last = v->nprocs > page ? v->nprocs - page : 0;
    if (page == 0)
        page = 1;
    switch (key) {
    case 'q': case 'Q':
        return GP_TOP_QUIT;
    case 'h': case '?':
        v->help = !v->help;
        return GP_TOP_REDRAW;
    case GP_TOP_KEY_ESC:
        if (!v->help)
            return GP_TOP_NONE;
        v->help = false;
        return GP_TOP_REDRAW;
    case '>': case '.':
        v->sort = (enum gp_top_col)((v->sort + 1) % GP_TC__COUNT);
        break;
    case '<': case ',':
        v->sort = (enum gp_top_col)((v->sort + GP_TC__COUNT - 1) % GP_TC__COUNT);
        break;
    case 'r': case 'R':
        v->reverse = !v->reverse;
        break;
    case '+': case '=':
        v->interval_ms = gp_top_interval_step(v->interval_ms, 1);
        return GP_TOP_REDRAW;
    case '-': case '_':
        v->interval_ms = gp_top_interval_step(v->interval_ms, -1);
        return GP_TOP_REDRAW;
    case GP_TOP_KEY_UP: case 'k':
        v->scroll = v->scroll ? v->scroll - 1 : 0;
        return GP_TOP_REDRAW;
    case GP_TOP_KEY_DOWN: case 'j':
        v->scroll = v->scroll < last ? v->scroll + 1 : last;
        return GP_TOP_REDRAW;
    case GP_TOP_KEY_PGUP:
        v->scroll = v->scroll > page ? v->scroll - page : 0;
        return GP_TOP_REDRAW;
    case GP_TOP_KEY_PGDN:
        v->scroll = v->scroll + page < last ? v->scroll + page : last;
        return GP_TOP_REDRAW;
    case GP_TOP_KEY_HOME:
        v->scroll = 0;
        return GP_TOP_REDRAW;
    case GP_TOP_KEY_END:
        v->scroll = last;
        return GP_TOP_REDRAW;
    default: {
        int c = -1;
        for (int i = 0; i < GP_TC__COUNT && c < 0; i++)
            if (cols[i].key && cols[i].key == key)
                c = i;
        if (c < 0)
            return GP_TOP_NONE;
        if (v->sort == (enum gp_top_col)c)
            v->reverse = !v->reverse; /* choosing the sorted column again flips it, as htop does */
        else
            v->reverse = false;
        v->sort = (enum gp_top_col)c;
    }
    }
    gp_top_sort(v->procs, v->nprocs, v->sort, v->reverse);
    return GP_TOP_REDRAW;
}

/* ---- numbers and bars --------------------------------------------------- */

void gp_top_fmt_bytes(char *out, size_t n, uint64_t bytes)
{
    static const char units[] = "KMGTPE";
    if (bytes < 1024) {
        snprintf(out, n, "%uB", (unsigned)bytes);
        return;
    }
    double v = (double)bytes / 1024.0;
    unsigned u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units - 1) {
        v /= 1024.0;
        u++;
    }
    /* one decimal below 10 (1.5G), whole numbers above; 9.96 would print as 10.0 */
    if (v < 9.95)
        snprintf(out, n, "%.1f%c", v, units[u]);
    else
        snprintf(out, n, "%.0f%c", v, units[u]);
}

void gp_top_bar(char *out, unsigned width, double frac, const char *label, unsigned *fill)
{
    if (width < 2) {
        if (width)
            out[0] = '[';
        out[width] = '\0';
        if (fill)
            *fill = 0;
        return;
    }
    unsigned inner = width - 2;
    if (!(frac >= 0)) /* NaN too */
        frac = 0;
    if (frac > 1)
        frac = 1;
    unsigned bars = (unsigned)(frac * inner + 0.5);
    out[0] = '[';
    for (unsigned i = 0; i < inner; i++)
        out[1 + i] = i < bars ? '|' : ' ';
    out[width - 1] = ']';
    out[width] = '\0';
    size_t ll = label ? strlen(label) : 0;
    if (ll > inner)
        ll = inner;
    /* the label overwrites the right end of the inside */
    memcpy(out + 1 + inner - ll, label ? label : "", ll);
    if (fill)
        *fill = bars < inner - ll ? bars : (unsigned)(inner - ll);
}

static enum gp_top_attr level(double frac)
{
    return frac >= 0.85 ? GP_TA_CRIT : frac >= 0.6 ? GP_TA_WARN : GP_TA_OK;
}

/* ---- the grid ------------------------------------------------------------- */

void gp_top_screen_free(struct gp_top_screen *s)
{
    if (!s)
        return;
    free(s->text);
    free(s->attr);
    memset(s, 0, sizeof *s);
}

const char *gp_top_screen_row(const struct gp_top_screen *s, unsigned row)
{
    return s->text + (size_t)row * s->w;
}

/* Appends a blank row; its index, or -1 (s->err set) when out of memory. */
static int add_row(struct gp_top_screen *s)
{
    if (s->err)
        return -1;
    if (s->nrows == s->cap_rows) {
        unsigned n = s->cap_rows ? s->cap_rows * 2 : 64;
        char *t = realloc(s->text, (size_t)n * s->w);
        if (!t) {
            s->err = GP_ENOMEM;
            return -1;
        }
        s->text = t;
        unsigned char *a = realloc(s->attr, (size_t)n * s->w);
        if (!a) {
            s->err = GP_ENOMEM;
            return -1;
        }
        s->attr = a;
        s->cap_rows = n;
    }
    memset(s->text + (size_t)s->nrows * s->w, ' ', s->w);
    memset(s->attr + (size_t)s->nrows * s->w, GP_TA_NORMAL, s->w);
    return (int)s->nrows++;
}

/* A line being written left to right. */
struct line {
    struct gp_top_screen *s;
    int row;
    unsigned col;
};

static struct line new_line(struct gp_top_screen *s)
{
    return (struct line){s, add_row(s), 0};
}

static unsigned room(const struct line *l) { return l->col < l->s->w ? l->s->w - l->col : 0; }

/* Writes text at the cursor with attr, cut at the right edge. Unprintable
 * bytes (from a process name, a server's answer) become '?'. */
static void put(struct line *l, enum gp_top_attr a, const char *text)
{
    if (l->row < 0)
        return;
    char *t = l->s->text + (size_t)l->row * l->s->w;
    unsigned char *at = l->s->attr + (size_t)l->row * l->s->w;
    for (; *text && l->col < l->s->w; text++, l->col++) {
        unsigned char c = (unsigned char)*text;
        t[l->col] = c < 0x20 || c >= 0x7f ? '?' : (char)c;
        at[l->col] = (unsigned char)a;
    }
}

/* Writes sep + text only when both fit whole in what is left of the line. */
static bool put_opt(struct line *l, enum gp_top_attr a, const char *sep, const char *text)
{
    if (strlen(sep) + strlen(text) > room(l))
        return false;
    put(l, GP_TA_NORMAL, sep);
    put(l, a, text);
    return true;
}

/* Paints the whole line with attr (the header and status bars). */
static void fill_attr(struct line *l, enum gp_top_attr a)
{
    if (l->row >= 0)
        memset(l->s->attr + (size_t)l->row * l->s->w, a, l->s->w);
}

/* A bar of width bw: brackets and label plain, the fill in its level's colour. */
static void put_bar(struct line *l, unsigned bw, bool valid, double frac, const char *label)
{
    char b[256];
    if (bw >= sizeof b)
        bw = sizeof b - 1;
    unsigned fill;
    gp_top_bar(b, bw, valid ? frac : 0, valid ? label : "n/a", &fill);
    unsigned start = l->col;
    put(l, valid ? GP_TA_NORMAL : GP_TA_DIM, b);
    if (l->row < 0)
        return;
    unsigned char *at = l->s->attr + (size_t)l->row * l->s->w;
    for (unsigned i = 1; i <= fill && start + i < l->s->w; i++)
        at[start + i] = (unsigned char)level(frac);
}

/* ---- the sections --------------------------------------------------------- */

static void header(const struct gp_top_view *v, const struct gp_frame *f, struct gp_top_screen *s)
{
    struct line l = new_line(s);
    put(&l, GP_TA_TITLE, "gpulse top");
    put_opt(&l, GP_TA_NORMAL, "  ", f->hostname);
    char t[64] = "";
    time_t secs = (time_t)(f->time_ms / 1000);
    struct tm tm;
    if (localtime_r(&secs, &tm))
        strftime(t, sizeof t, "%Y-%m-%d %H:%M:%S", &tm);
    put_opt(&l, GP_TA_NORMAL, "  ", t);
    char iv[32], tmp[48];
    gp_format_duration(v->interval_ms, iv, sizeof iv);
    snprintf(tmp, sizeof tmp, "every %s", iv);
    put_opt(&l, GP_TA_DIM, "  ", tmp);
    if (v->alerts_on && v->alerts_valid) {
        snprintf(tmp, sizeof tmp, "%u alert%s", v->alerts.total, v->alerts.total == 1 ? "" : "s");
        put_opt(&l, v->alerts.firing ? GP_TA_CRIT : v->alerts.total ? GP_TA_WARN : GP_TA_OK, "  ", tmp);
    }

    /* CPU and memory bars share the second line; the load goes first when narrow. */
    const struct gp_host *h = &f->host;
    l = new_line(s);
    unsigned bw = s->w > 60 ? (s->w - 44) / 2 : 12;
    if (bw > 40)
        bw = 40;
    char lab[48];
    snprintf(lab, sizeof lab, "%.1f%%", v->cpu_pct);
    put(&l, GP_TA_TITLE, "CPU ");
    if (room(&l) >= bw)
        put_bar(&l, bw, v->cpu_valid, v->cpu_pct / 100.0, lab);
    if (h->cpu_valid) {
        snprintf(tmp, sizeof tmp, "%u cpu%s", h->ncpus, h->ncpus == 1 ? "" : "s");
        put_opt(&l, GP_TA_DIM, " ", tmp);
    }
    bool mv = (h->mem_valid & (1u << GP_MEM_TOTAL)) && (h->mem_valid & (1u << GP_MEM_AVAILABLE));
    uint64_t total = h->mem_bytes[GP_MEM_TOTAL];
    uint64_t used = mv && total > h->mem_bytes[GP_MEM_AVAILABLE] ? total - h->mem_bytes[GP_MEM_AVAILABLE] : 0;
    char ub[16], tb[16];
    gp_top_fmt_bytes(ub, sizeof ub, used);
    gp_top_fmt_bytes(tb, sizeof tb, total);
    snprintf(lab, sizeof lab, "%s/%s", ub, tb);
    if (room(&l) >= bw + 6) {
        put(&l, GP_TA_TITLE, "  MEM ");
        put_bar(&l, bw, mv && total, total ? (double)used / (double)total : 0, lab);
    }
    if (h->load_valid) {
        snprintf(tmp, sizeof tmp, "load %.2f %.2f %.2f", h->load[0], h->load[1], h->load[2]);
        put_opt(&l, GP_TA_NORMAL, "  ", tmp);
    }
}

static double gval(const struct gp_gpu *g, enum gp_gpu_field fi, bool *ok)
{
    *ok = gp_gpu_has(g, fi);
    return *ok ? g->val[fi] : 0;
}

static void gpu_lines(const struct gp_frame *f, const struct gp_gpu *g, struct gp_top_screen *s)
{
    struct line l = new_line(s);
    char tmp[256];
    snprintf(tmp, sizeof tmp, "GPU %u", g->index);
    put(&l, GP_TA_TITLE, tmp);
    if (g->node[0] && strcmp(g->node, f->hostname))
        put_opt(&l, GP_TA_DIM, "@", g->node);
    /* the model is cut rather than dropped: it says which card this is */
    if (room(&l) > 2) {
        put(&l, GP_TA_NORMAL, " ");
        char m[64];
        unsigned mw = room(&l) < sizeof m ? room(&l) : sizeof m - 1;
        snprintf(m, sizeof m, "%.*s", (int)(mw < 28 ? mw : 28), g->model);
        put(&l, GP_TA_NORMAL, m);
    }
    if (g->lost) {
        put_opt(&l, GP_TA_CRIT, "  ", "LOST (fell off the bus)");
        return;
    }
    bool ok, ok2;
    double v = gval(g, GPF_GPU_TEMP, &ok);
    if (ok) {
        snprintf(tmp, sizeof tmp, "%.0fC", v);
        put_opt(&l, v >= 85 ? GP_TA_CRIT : v >= 75 ? GP_TA_WARN : GP_TA_NORMAL, "  ", tmp);
    }
    v = gval(g, GPF_POWER_USAGE, &ok);
    double lim = gval(g, GPF_POWER_LIMIT, &ok2);
    if (ok) {
        if (ok2)
            snprintf(tmp, sizeof tmp, "%.0f/%.0fW", v, lim);
        else
            snprintf(tmp, sizeof tmp, "%.0fW", v);
        /* at the cap the driver holds the clocks down: worth a colour */
        put_opt(&l, ok2 && lim > 0 && v >= 0.95 * lim ? GP_TA_WARN : GP_TA_NORMAL, "  ", tmp);
    }
    /* throttle reasons other than idle are worth a flag */
    if (g->clock_events_valid && (g->clock_events & ~(uint64_t)0x1)) {
        size_t n = (size_t)snprintf(tmp, sizeof tmp, "THROTTLE");
        const char *sep = " ";
        for (unsigned i = 0; i < gp_clock_event_count && n < sizeof tmp; i++)
            if ((g->clock_events & gp_clock_event_names[i].bit) && gp_clock_event_names[i].bit != 0x1) {
                n += (size_t)snprintf(tmp + n, sizeof tmp - n, "%s%s", sep, gp_clock_event_names[i].name);
                sep = ",";
            }
        put_opt(&l, GP_TA_WARN, "  ", tmp);
    }
    double sbe = gval(g, GPF_ECC_SBE_VOL, &ok), dbe = gval(g, GPF_ECC_DBE_VOL, &ok2);
    if ((ok && sbe > 0) || (ok2 && dbe > 0)) {
        snprintf(tmp, sizeof tmp, "ECC sbe %.0f dbe %.0f", sbe, dbe);
        put_opt(&l, dbe > 0 ? GP_TA_CRIT : GP_TA_WARN, "  ", tmp);
    }
    if (g->nxids) {
        size_t n = (size_t)snprintf(tmp, sizeof tmp, "XID");
        for (unsigned i = 0; i < g->nxids && i < GP_MAX_XIDS && n < sizeof tmp; i++)
            n += (size_t)snprintf(tmp + n, sizeof tmp - n, " %u(x%llu)", g->xids[i].xid,
                                  (unsigned long long)g->xids[i].count);
        put_opt(&l, GP_TA_CRIT, "  ", tmp);
    }
    if (g->job_idx >= 0 && (unsigned)g->job_idx < f->njobs) {
        const struct gp_job_id *j = &f->jobs[g->job_idx].id;
        if (j->rank >= 0)
            snprintf(tmp, sizeof tmp, "job %.64s rank %d", j->job, j->rank);
        else
            snprintf(tmp, sizeof tmp, "job %.64s", j->job);
        put_opt(&l, GP_TA_NORMAL, "  ", tmp);
    }
    v = gval(g, GPF_SM_CLOCK, &ok);
    double mx = gval(g, GPF_SM_CLOCK_MAX, &ok2);
    if (ok) {
        if (ok2 && mx > 0)
            snprintf(tmp, sizeof tmp, "SM %.0f/%.0fMHz", v, mx / 1e6);
        else
            snprintf(tmp, sizeof tmp, "SM %.0fMHz", v);
        put_opt(&l, GP_TA_NORMAL, "  ", tmp);
    }
    v = gval(g, GPF_MEM_CLOCK, &ok);
    if (ok) {
        snprintf(tmp, sizeof tmp, "MEM %.0fMHz", v);
        put_opt(&l, GP_TA_NORMAL, "  ", tmp);
    }

    /* The bars: utilization, SM activity, memory; fewer and narrower on a narrow screen. */
    l = new_line(s);
    double util = gval(g, GPF_GPU_UTIL, &ok);
    double sm = gval(g, GPF_PROF_SM_ACTIVE, &ok2);
    bool mok = gp_gpu_has(g, GPF_MEMORY_USED) && gp_gpu_has(g, GPF_MEMORY_TOTAL);
    double mused = mok ? g->val[GPF_MEMORY_USED] : 0, mtot = mok ? g->val[GPF_MEMORY_TOTAL] : 0;
    if (!mok && gp_gpu_has(g, GPF_FB_USED) && gp_gpu_has(g, GPF_FB_FREE)) {
        mok = true;
        mused = g->val[GPF_FB_USED] * 1048576.0;
        mtot = mused + g->val[GPF_FB_FREE] * 1048576.0 +
               (gp_gpu_has(g, GPF_FB_RESERVED) ? g->val[GPF_FB_RESERVED] * 1048576.0 : 0);
    }
    unsigned avail = s->w > 2 ? s->w - 2 : 0;
    unsigned nbars = avail >= 3 * (6 + 16) ? 3 : avail >= 2 * (6 + 16) ? 2 : 1;
    unsigned bw = avail / nbars > 6 ? avail / nbars - 6 : 0;
    if (bw > 48)
        bw = 48;
    char lab[48];
    put(&l, GP_TA_NORMAL, "  ");
    if (nbars >= 2) {
        snprintf(lab, sizeof lab, "%.0f%%", util);
        put(&l, GP_TA_DIM, "UTIL ");
        put_bar(&l, bw, ok, util / 100.0, lab);
    }
    if (nbars == 3) {
        snprintf(lab, sizeof lab, "%.0f%%", sm * 100.0);
        put(&l, GP_TA_DIM, "  SM ");
        put_bar(&l, bw, ok2, sm, lab);
    }
    snprintf(lab, sizeof lab, "%.1f/%.1fG", mused / 1073741824.0, mtot / 1073741824.0);
    put(&l, GP_TA_DIM, nbars >= 2 ? "  MEM " : "MEM ");
    put_bar(&l, bw, mok && mtot > 0, mtot > 0 ? mused / mtot : 0, lab);
    if (nbars == 1 && ok) {
        snprintf(lab, sizeof lab, "%.0f%%", util);
        put_opt(&l, GP_TA_NORMAL, " UTIL ", lab);
    }
}

unsigned gp_top_columns(unsigned w, bool on[GP_TC__COUNT])
{
    unsigned need = 0;
    for (int c = 0; c < GP_TC__COUNT; c++) {
        on[c] = true;
        need += cols[c].width + (c + 1 < GP_TC__COUNT); /* a blank between columns */
    }
    /* drop the highest drop rank until the table fits */
    while (need > w) {
        int worst = -1;
        for (int c = 0; c < GP_TC__COUNT; c++)
            if (on[c] && cols[c].drop && (worst < 0 || cols[c].drop > cols[worst].drop))
                worst = c;
        if (worst < 0)
            break;
        on[worst] = false;
        need -= cols[worst].width + 1;
    }
    unsigned cmd = cols[GP_TC_COMMAND].width;
    return need < w ? cmd + (w - need) : cmd;
}

static void cell(char *out, size_t n, const struct gp_top_proc *r, enum gp_top_col c)
{
    switch (c) {
    case GP_TC_PID: snprintf(out, n, "%u", r->pid); break;
    case GP_TC_USER: snprintf(out, n, "%s", r->host ? r->user : "-"); break;
    case GP_TC_JOB: snprintf(out, n, "%s", r->job[0] ? r->job : "-"); break;
    case GP_TC_RANK:
        if (r->rank >= 0)
            snprintf(out, n, "%d", r->rank);
        else
            snprintf(out, n, "-");
        break;
    case GP_TC_GPU: snprintf(out, n, "%u", r->gpu); break;
    case GP_TC_GPUMEM:
        /* whole MiB: what nvidia-smi prints, and exact against NVML's bytes */
        if (r->mem_valid)
            snprintf(out, n, "%lluMiB", (unsigned long long)(r->gpu_mem_bytes >> 20));
        else
            snprintf(out, n, "n/a");
        break;
    case GP_TC_SM:
        if (r->sm_valid)
            snprintf(out, n, "%.0f", r->sm_pct);
        else
            snprintf(out, n, "-");
        break;
    case GP_TC_CPU:
        if (r->cpu_valid)
            snprintf(out, n, "%.1f", r->cpu_pct);
        else
            snprintf(out, n, "-");
        break;
    case GP_TC_RSS:
        if (r->host)
            gp_top_fmt_bytes(out, n, r->rss_bytes);
        else
            snprintf(out, n, "-");
        break;
    case GP_TC_COMMAND: snprintf(out, n, "%s", r->host ? r->comm : "?"); break;
    case GP_TC__COUNT: out[0] = '\0'; break;
    }
}

static bool right_aligned(enum gp_top_col c)
{
    return c == GP_TC_PID || c == GP_TC_RANK || c == GP_TC_GPU || c == GP_TC_GPUMEM || c == GP_TC_SM ||
           c == GP_TC_CPU || c == GP_TC_RSS;
}

/* One table row: each shown column padded (or cut) to its width. */
static void table_row(struct line *l, const bool on[GP_TC__COUNT], unsigned cmdw,
                      const char text[GP_TC__COUNT][160], enum gp_top_attr a)
{
    for (int c = 0; c < GP_TC__COUNT; c++) {
        if (!on[c])
            continue;
        unsigned w = c == GP_TC_COMMAND ? cmdw : cols[c].width;
        char f[200];
        int tl = (int)strlen(text[c]);
        if (tl > (int)w)
            tl = (int)w; /* a long job name is cut, never wrapped */
        if (right_aligned((enum gp_top_col)c))
            snprintf(f, sizeof f, "%*.*s", (int)w, tl, text[c]);
        else
            snprintf(f, sizeof f, "%-*.*s", (int)w, tl, text[c]);
        put(l, a, f);
        if (c + 1 < GP_TC__COUNT)
            put(l, a, " ");
    }
}

static unsigned table_header(const struct gp_top_view *v, struct gp_top_screen *s, bool on[GP_TC__COUNT])
{
    unsigned cmdw = gp_top_columns(s->w, on);
    char text[GP_TC__COUNT][160];
    for (int c = 0; c < GP_TC__COUNT; c++)
        snprintf(text[c], sizeof text[c], "%s%s", cols[c].title,
                 (enum gp_top_col)c == v->sort ? (v->reverse ? "^" : "v") : "");
    struct line l = new_line(s);
    fill_attr(&l, GP_TA_HEADER);
    table_row(&l, on, cmdw, text, GP_TA_HEADER);
    return cmdw;
}

static void proc_line(const struct gp_top_proc *r, struct gp_top_screen *s, const bool on[GP_TC__COUNT],
                      unsigned cmdw)
{
    char text[GP_TC__COUNT][160];
    for (int c = 0; c < GP_TC__COUNT; c++)
        cell(text[c], sizeof text[c], r, (enum gp_top_col)c);
    struct line l = new_line(s);
    table_row(&l, on, cmdw, text, GP_TA_NORMAL);
}

static unsigned alert_rows(const struct gp_top_view *v)
{
    if (!v->alerts_on)
        return 0;
    unsigned n = v->alerts.n < 5 ? v->alerts.n : 5;
    return 1 + (v->alerts_valid ? n : 0);
}

static void alerts(const struct gp_top_view *v, struct gp_top_screen *s, unsigned max)
{
    if (!v->alerts_on || !max)
        return;
    struct line l = new_line(s);
    char tmp[96];
    put(&l, GP_TA_TITLE, "ALERTS");
    if (!v->alerts_valid) {
        put_opt(&l, GP_TA_DIM, "  ", v->alerts_err[0] ? "(none fetched yet)" : "(fetching)");
    } else {
        snprintf(tmp, sizeof tmp, "%u active, %u firing", v->alerts.total, v->alerts.firing);
        put_opt(&l, v->alerts.firing ? GP_TA_CRIT : GP_TA_NORMAL, "  ", tmp);
    }
    if (v->alerts_err[0]) {
        put(&l, GP_TA_NORMAL, room(&l) > 2 ? "  " : "");
        put(&l, GP_TA_CRIT, v->alerts_err); /* cut at the edge; whole in the status line */
    }
    for (unsigned i = 0; v->alerts_valid && i < v->alerts.n && i + 1 < max; i++) {
        const struct gp_top_alert *a = &v->alerts.a[i];
        l = new_line(s);
        enum gp_top_attr at = !strcmp(a->severity, "critical") ? GP_TA_CRIT : GP_TA_WARN;
        snprintf(tmp, sizeof tmp, "%-8.8s", a->severity);
        put(&l, at, "  ");
        put(&l, at, tmp);
        snprintf(tmp, sizeof tmp, " %-7.7s ", a->state);
        put(&l, GP_TA_NORMAL, tmp);
        put(&l, GP_TA_TITLE, a->kind);
        put_opt(&l, GP_TA_DIM, " ", a->where);
        put(&l, GP_TA_NORMAL, room(&l) > 2 ? "  " : "");
        put(&l, GP_TA_NORMAL, a->summary); /* cut at the edge */
    }
}

static const char *const help_text[] = {
    "Keys",
    "  h ?          this help (h, ? or Esc closes it)",
    "  q            quit",
    "  < >          sort by the previous / next column",
    "  P M C S G J U  sort by PID, GPU MEM, CPU%, SM%, GPU, JOB, USER (again: reverse)",
    "  r            reverse the sort",
    "  Up Down j k  scroll the processes; PgUp PgDn Home End",
    "  + -          sample more or less often (100ms ... 60s)",
    "",
    "GPU lines: temperature, power/limit, throttle reasons (THROTTLE), ECC and XID",
    "errors when there are any, the job holding the most memory, SM and memory clocks;",
    "bars: UTIL (coarse utilization), SM (SM activity, Hopper+ GPM), MEM (used/total GiB).",
    "Processes: one row per process and GPU; CPU% is over the last interval.",
    "NO_COLOR set: no colours.",
};

static void help(struct gp_top_screen *s, unsigned max)
{
    for (unsigned i = 0; i < sizeof help_text / sizeof help_text[0] && i < max; i++) {
        struct line l = new_line(s);
        put(&l, i == 0 ? GP_TA_TITLE : GP_TA_NORMAL, help_text[i]);
    }
}

static void status(const struct gp_top_view *v, struct gp_top_screen *s)
{
    struct line l = new_line(s);
    fill_attr(&l, GP_TA_HEADER);
    char tmp[300];
    snprintf(tmp, sizeof tmp, " h help  q quit  </> sort: %s%s  r reverse  +/- interval",
             gp_top_col_title(v->sort), v->reverse ? " (reversed)" : "");
    put(&l, GP_TA_HEADER, tmp);
    const char *msg = v->alerts_err[0] ? v->alerts_err : v->status;
    if (msg[0]) {
        snprintf(tmp, sizeof tmp, " | %s", msg);
        if (!put_opt(&l, GP_TA_HEADER, "", tmp)) {
            /* the message matters more than the key reminder: start over with it */
            l.col = 0;
            memset(s->text + (size_t)l.row * s->w, ' ', s->w);
            put(&l, GP_TA_HEADER, tmp + 3);
        }
    }
}

/* Rows above the process table: header (2), GPUs (2 each, 1 when lost, or
 * the "no GPUs" line), alerts and a blank, a blank: as gp_top_render lays them out. */
static unsigned top_rows(const struct gp_top_view *v, const struct gp_frame *f)
{
    unsigned n = 2 + 1 + !f->ngpus;
    for (unsigned i = 0; i < f->ngpus; i++)
        n += f->gpus[i].lost ? 1 : 2;
    unsigned a = alert_rows(v);
    return n + (a ? a + 1 : 0);
}

unsigned gp_top_page_rows(const struct gp_top_view *v, const struct gp_frame *f, unsigned h)
{
    unsigned used = top_rows(v, f) + 2; /* table header, status line */
    return h > used ? h - used : 0;
}

int gp_top_render(const struct gp_top_view *v, const struct gp_frame *f, struct gp_top_screen *s,
                  unsigned w, unsigned h)
{
    s->nrows = 0;
    s->err = GP_OK;
    if (w != s->w) {
        free(s->text);
        free(s->attr);
        s->text = NULL;
        s->attr = NULL;
        s->cap_rows = 0;
        s->w = w;
    }
    if (w == 0)
        return GP_OK;
    header(v, f, s);
    if (!f->ngpus) {
        struct line l = new_line(s);
        put(&l, GP_TA_DIM, "no GPUs found (neither NVML nor an amdgpu card)");
    }
    for (unsigned i = 0; i < f->ngpus; i++)
        gpu_lines(f, &f->gpus[i], s);
    unsigned ar = alert_rows(v);
    if (ar) {
        new_line(s);
        alerts(v, s, h ? ar : ~0u);
    }
    new_line(s);
    /* In a short terminal the table may start below the bottom: the
     * header keeps what fits and the status line stays last. */
    if (h && s->nrows > h - (h > 1)) {
        s->nrows = h - (h > 1);
    } else if (v->help) {
        help(s, h ? h - 1 - s->nrows : ~0u);
    } else {
        bool on[GP_TC__COUNT];
        unsigned cmdw = table_header(v, s, on);
        unsigned first = h ? v->scroll : 0;
        unsigned page = h ? (h - 1 > s->nrows ? h - 1 - s->nrows : 0) : v->nprocs;
        if (first > v->nprocs)
            first = v->nprocs;
        for (unsigned i = first; i < v->nprocs && i - first < page; i++)
            proc_line(&v->procs[i], s, on, cmdw);
        if (!v->nprocs && (!h || s->nrows + 1 < h)) {
            struct line l = new_line(s);
            put(&l, GP_TA_DIM, "no processes on the GPUs");
        }
    }
    if (h) {
        while (s->nrows + 1 < h && !s->err)
            new_line(s);
        if (h > 1 || s->nrows == 0)
            status(v, s);
    }
    return s->err;
}

void gp_top_screen_text(const struct gp_top_screen *s, struct gp_buf *out)
{
    for (unsigned r = 0; r < s->nrows; r++) {
        const char *t = gp_top_screen_row(s, r);
        unsigned n = s->w;
        while (n && t[n - 1] == ' ')
            n--;
        gp_buf_append(out, t, n);
        gp_buf_putc(out, '\n');
    }
}
