/*
 * top.c - `gpulse top`: the terminal side of the live view.
 *
 * Sampling: a sampler opened without its thread (agent/sampler.h) over
 * the agent's own source lists, ticked here at the view's interval, so
 * `+`/`-` change the rate at once and nothing else runs between ticks.
 * Alerts come from a poller thread (top_alerts.h) and never block.
 *
 * Drawing: layout.c lays the frame out into a grid of cells for the
 * terminal's size; this file only paints the grid with ncurses, mapping
 * each attribute to a colour pair, or, without colour (NO_COLOR, --no-color,
 * a terminal without colours), to bold/reverse/plain. ncurses turns
 * SIGWINCH into KEY_RESIZE, and each key or resize redraws from the last
 * frame. --once / -n N print the grid as plain text instead: no terminal
 * needed.
 */
#include "top/top.h"

#include "agent/sampler.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lib/token.h"
#include "net/httpc.h"
#include "sources/sources.h"
#include "top/layout.h"
#include "top/top_agent.h"
#include "top/top_alerts.h"
#include "top/top_config.h"

#include <curses.h>
#include <locale.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* uid -> name, cached (unknown uids too): getpwuid may read /etc/passwd
 * or ask NSS over the network each time. */
struct users {
    unsigned n;
    struct {
        uint32_t uid;
        char name[32]; /* "": no such user, shown as the number */
    } e[64];
};

static const char *user_name(uint32_t uid, void *ctx)
{
    struct users *u = ctx;
    for (unsigned i = 0; i < u->n; i++)
        if (u->e[i].uid == uid)
            return u->e[i].name[0] ? u->e[i].name : NULL;
    struct passwd *pw = getpwuid(uid);
    unsigned slot = u->n < 64 ? u->n++ : uid % 64;
    u->e[slot].uid = uid;
    snprintf(u->e[slot].name, sizeof u->e[slot].name, "%s", pw ? pw->pw_name : "");
    return u->e[slot].name[0] ? u->e[slot].name : NULL;
}

struct top {
    struct gp_top_config tc;
    struct gp_agent_config ac;
    char token[4096];
    struct gp_sampler *sampler;
    struct gp_frame frame;   /* the latest tick, copied out of the sampler */
    struct gp_frame remote;  /* --agent: the latest snapshot, parsed */
    char fetch_err[512];     /* --agent: why the latest fetch failed; "" when it did not */
    bool live;
    int copy_rc;
    struct gp_top_view view;
    struct gp_top_screen screen;
    struct gp_top_poller *poller;
    struct users users;
    bool color;
};

static void copy_frame(const struct gp_frame *f, const struct gp_agent_stats *st, void *arg)
{
    (void)st;
    struct top *t = arg;
    t->copy_rc = gp_frame_copy(&t->frame, f) ? GP_ENOMEM : GP_OK;
}

/* --agent: the agent's latest frame instead of a local tick. The live view
 * keeps the last frame and says why when a fetch fails; text frames stop. */
static int fetch_agent(struct top *t)
{
    int rc = gp_top_agent_fetch(t->tc.agent, &t->remote, t->fetch_err, sizeof t->fetch_err);
    if (rc == GP_OK) {
        t->fetch_err[0] = '\0';
        return gp_frame_copy(&t->frame, &t->remote) ? GP_ENOMEM : GP_OK;
    }
    return t->live && t->frame.seq ? GP_OK : rc;
}

/* One tick: sample (or fetch), copy, update the view. GP_OK or an error. */
static int tick(struct top *t)
{
    if (t->tc.agent[0]) {
        int rc = fetch_agent(t);
        if (rc)
            return rc;
    } else {
        gp_sampler_tick(t->sampler);
        gp_sampler_read(t->sampler, copy_frame, t);
    }
    if (t->copy_rc)
        return t->copy_rc;
    int rc = gp_top_view_update(&t->view, &t->frame);
    unsigned errs = 0;
    for (int s = 0; s < GP_SRC__COUNT; s++)
        errs += t->frame.src[s].active ? (unsigned)t->frame.src[s].errors_total : 0;
    if (errs)
        snprintf(t->view.status, sizeof t->view.status, "%u sampling error%s so far (--log-level)", errs,
                 errs == 1 ? "" : "s");
    if (t->fetch_err[0])
        snprintf(t->view.status, sizeof t->view.status, "%.*s", (int)sizeof t->view.status - 1, t->fetch_err);
    return rc;
}

static unsigned text_width(const struct gp_top_config *tc)
{
    if (tc->width)
        return (unsigned)tc->width;
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col >= 20)
        return ws.ws_col;
    const char *c = getenv("COLUMNS");
    long n = c ? strtol(c, NULL, 10) : 0;
    return n >= 20 && n <= 1000 ? (unsigned)n : 160;
}

/* --once / -n N: plain-text frames on stdout, a blank line between them. */
static int run_text(struct top *t, uint64_t frames)
{
    struct gp_buf out;
    gp_buf_init(&out, 0);
    int rc = GP_OK;
    unsigned w = text_width(&t->tc);
    for (uint64_t i = 0; i < frames && !rc; i++) {
        /* CPU % needs two frames: the first one is taken an interval before the first print */
        usleep((useconds_t)(t->ac.interval_ms * 1000));
        if ((rc = tick(t)))
            break;
        if (t->tc.server[0]) {
            /* a failed fetch is reported, never fatal: the frame is printed all the same */
            t->view.alerts_on = true;
            char err[sizeof t->view.alerts_err] = "";
            if (gp_top_alerts_fetch(t->tc.server, t->frame.hostname, t->token, &t->view.alerts, err,
                                    sizeof err)) {
                t->view.alerts_valid = false;
                fprintf(stderr, "gpulse top: %s\n", err);
            } else {
                t->view.alerts_valid = true;
            }
            snprintf(t->view.alerts_err, sizeof t->view.alerts_err, "%s", err);
        }
        gp_buf_reset(&out);
        if (i)
            gp_buf_putc(&out, '\n');
        if ((rc = gp_top_render(&t->view, &t->frame, &t->screen, w, 0)))
            break;
        gp_top_screen_text(&t->screen, &out);
        if (out.err) {
            rc = out.err;
            break;
        }
        fwrite(out.data, 1, out.len, stdout);
        fflush(stdout);
    }
    gp_buf_free(&out);
    if (rc)
        fprintf(stderr, "gpulse top: %s\n", t->fetch_err[0] ? t->fetch_err : gp_strerror(rc));
    return rc ? 1 : 0;
}

/* ---- ncurses ---------------------------------------------------------------- */

static chtype attr_of(const struct top *t, unsigned char a)
{
    if (!t->color) {
        switch (a) {
        case GP_TA_TITLE: case GP_TA_CRIT: return A_BOLD;
        case GP_TA_HEADER: return A_REVERSE;
        default: return A_NORMAL;
        }
    }
    switch (a) {
    case GP_TA_TITLE: return A_BOLD;
    case GP_TA_DIM: return COLOR_PAIR(1);
    case GP_TA_OK: return COLOR_PAIR(2);
    case GP_TA_WARN: return COLOR_PAIR(3);
    case GP_TA_CRIT: return COLOR_PAIR(4) | A_BOLD;
    case GP_TA_HEADER: return COLOR_PAIR(5);
    default: return A_NORMAL;
    }
}

static void paint(struct top *t)
{
    unsigned h = LINES > 0 ? (unsigned)LINES : 0, w = COLS > 0 ? (unsigned)COLS : 0;
    erase();
    if (gp_top_render(&t->view, &t->frame, &t->screen, w, h) == GP_OK) {
        for (unsigned r = 0; r < t->screen.nrows && r < h; r++) {
            const char *text = gp_top_screen_row(&t->screen, r);
            const unsigned char *at = t->screen.attr + (size_t)r * w;
            /* the bottom-right cell is left alone: writing it scrolls some terminals */
            unsigned rw = r + 1 == h ? w - 1 : w;
            for (unsigned c = 0; c < rw;) {
                unsigned e = c;
                while (e < rw && at[e] == at[c])
                    e++;
                attrset(attr_of(t, at[c]));
                mvaddnstr((int)r, (int)c, text + c, (int)(e - c));
                c = e;
            }
        }
        attrset(A_NORMAL);
    }
    refresh();
}

static int map_key(int ch)
{
    switch (ch) {
    case KEY_UP: return GP_TOP_KEY_UP;
    case KEY_DOWN: return GP_TOP_KEY_DOWN;
    case KEY_PPAGE: return GP_TOP_KEY_PGUP;
    case KEY_NPAGE: return GP_TOP_KEY_PGDN;
    case KEY_HOME: return GP_TOP_KEY_HOME;
    case KEY_END: return GP_TOP_KEY_END;
    case 27: return GP_TOP_KEY_ESC;
    default: return ch;
    }
}

/* Ctrl-C, SIGTERM, a closed terminal: leave through endwin, so the
 * terminal is given back in its own state. */
static volatile sig_atomic_t stop_signal;
static void on_stop(int sig) { stop_signal = sig; }

static int run_live(struct top *t)
{
    if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) {
        fprintf(stderr, "gpulse top: %s is not a terminal; use --once or -n N for plain-text frames\n",
                isatty(STDOUT_FILENO) ? "stdin" : "stdout");
        return 2;
    }
    const char *term = getenv("TERM");
    SCREEN *scr = newterm(term && *term ? term : NULL, stdout, stdin);
    if (!scr) {
        fprintf(stderr, "gpulse top: cannot use terminal type '%s' (set TERM)\n", term ? term : "");
        return 1;
    }
    set_term(scr);
    const char *nc = getenv("NO_COLOR");
    t->color = t->tc.color && !(nc && *nc) && has_colors();
    if (t->color) {
        start_color();
        use_default_colors();
        init_pair(1, COLOR_CYAN, -1);
        init_pair(2, COLOR_GREEN, -1);
        init_pair(3, COLOR_YELLOW, -1);
        init_pair(4, COLOR_RED, -1);
        init_pair(5, COLOR_BLACK, COLOR_CYAN);
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    /* stderr shares the terminal: a log line would tear the screen */
    gp_log_min = GP_LOG_OFF;

    int rc = GP_OK;
    char err[sizeof t->view.alerts_err];
    if (t->tc.server[0]) {
        t->view.alerts_on = true;
        if (gp_top_poller_start(&t->poller, t->tc.server, t->frame.hostname, t->token,
                                t->tc.alerts_interval_ms, err, sizeof err))
            snprintf(t->view.alerts_err, sizeof t->view.alerts_err, "%s", err);
    }
    paint(t); /* the first frame at once; CPU % from the next */
    int64_t next = gp_mono_ms() + t->view.interval_ms;
    uint64_t alerts_gen = 0;
    bool quit = false;
    while (!quit && !rc && !stop_signal) {
        int64_t now = gp_mono_ms();
        if (now >= next) {
            if ((rc = tick(t)))
                break;
            next = now + t->view.interval_ms;
            if (t->poller)
                gp_top_poller_get(t->poller, &t->view, &alerts_gen);
            paint(t);
        } else if (t->poller && gp_top_poller_get(t->poller, &t->view, &alerts_gen)) {
            paint(t); /* new alerts show at once, whatever the sampling interval */
        }
        /* at most 200 ms a wait, so a stop signal is seen at once even at 60 s intervals */
        int64_t wait = next - now > 0 ? next - now : 0;
        timeout((int)(wait < 200 ? wait : 200));
        int ch = getch();
        if (ch == ERR)
            continue;
        if (ch == KEY_RESIZE) {
            paint(t);
            continue;
        }
        int64_t old = t->view.interval_ms;
        unsigned page = gp_top_page_rows(&t->view, &t->frame, LINES > 0 ? (unsigned)LINES : 0);
        enum gp_top_action a = gp_top_view_key(&t->view, map_key(ch), page);
        if (a == GP_TOP_QUIT)
            quit = true;
        else if (a == GP_TOP_REDRAW) {
            if (t->view.interval_ms != old)
                next = gp_mono_ms() + t->view.interval_ms; /* the new rate from now */
            paint(t);
        }
    }
    gp_top_poller_stop(t->poller);
    t->poller = NULL;
    endwin();
    delscreen(scr);
    if (rc) {
        fprintf(stderr, "gpulse top: %s\n", gp_strerror(rc));
        return 1;
    }
    return 0;
}

int gp_top_main(int argc, char **argv)
{
    struct top *t = calloc(1, sizeof *t);
    if (!t) {
        fprintf(stderr, "gpulse top: out of memory\n");
        return 1;
    }
    char err[768];
    bool help = false;
    int ret = 2;
    gp_top_config_defaults(&t->tc, &t->ac);
    if (gp_top_config_from_args(&t->tc, &t->ac, argc, argv, &help, err, sizeof err)) {
        fprintf(stderr, "gpulse top: %s\n", err);
        goto out;
    }
    if (help) {
        gp_top_config_usage(stdout);
        ret = 0;
        goto out;
    }
    if (gp_top_config_validate(&t->tc, &t->ac, err, sizeof err) ||
        gp_token_load(t->tc.read_token, t->tc.read_token_file, "read_token", t->token, sizeof t->token, err,
                      sizeof err)) {
        fprintf(stderr, "gpulse top: %s\n", err);
        goto out;
    }
    uint64_t frames = t->tc.iterations ? t->tc.iterations : t->tc.once ? 1 : 0;
    if (!frames && !isatty(STDOUT_FILENO)) {
        /* say so before the sources open: nothing could be shown */
        fprintf(stderr, "gpulse top: stdout is not a terminal; use --once or -n N for plain-text frames\n");
        goto out;
    }
    gp_log_parse_level(t->ac.log_level, &gp_log_min);
    signal(SIGPIPE, SIG_IGN);
    if (!t->ac.hostname[0] && gethostname(t->ac.hostname, sizeof t->ac.hostname - 1))
        snprintf(t->ac.hostname, sizeof t->ac.hostname, "localhost");
    struct gp_source_config sc = {
        .proc_root = t->ac.proc_root,
        .sysfs_root = t->ac.sysfs_root,
        .nvml_library = t->ac.nvml_library,
        .simulate = t->ac.simulate[0] ? t->ac.simulate : NULL,
        .simulate_faults = t->ac.simulate_faults[0] ? t->ac.simulate_faults : NULL,
        .hostname = t->ac.hostname,
        .seed = t->ac.seed,
        .interval_ms = t->ac.interval_ms,
        .gpm = t->ac.gpm,
        .steps_socket = "",
    };
    gp_frame_init(&t->frame);
    gp_frame_init(&t->remote);
    gp_top_view_init(&t->view);
    t->view.interval_ms = t->ac.interval_ms;
    t->view.sort = (enum gp_top_col)gp_top_col_parse(t->tc.sort);
    t->view.user_name = user_name;
    t->view.user_ctx = &t->users;
    int rc = GP_OK; /* --agent: nothing is sampled here */
    if (!t->tc.agent[0] && sc.simulate)
        rc = gp_sampler_open(&t->sampler, &sc, gp_simulated_sources, gp_simulated_sources_count, err,
                             sizeof err);
    else if (!t->tc.agent[0])
        rc = gp_sampler_open(&t->sampler, &sc, gp_hardware_sources, gp_hardware_sources_count, err,
                             sizeof err);
    if (rc) {
        fprintf(stderr, "gpulse top: %s\n", err);
        ret = rc == GP_ECONFIG || rc == GP_EUSAGE ? 2 : 1;
        goto free;
    }
    if (gp_httpc_global_init() != GP_OK) {
        fprintf(stderr, "gpulse top: libcurl did not start\n");
        ret = 1;
        goto free;
    }
    /* the first tick gives the CPU counters the next one is measured against */
    t->live = !frames;
    if ((rc = tick(t))) {
        fprintf(stderr, "gpulse top: %s\n", t->fetch_err[0] ? t->fetch_err : gp_strerror(rc));
        ret = 1;
    } else {
        ret = frames ? run_text(t, frames) : run_live(t);
    }
    gp_httpc_global_cleanup();
free:
    gp_sampler_stop(t->sampler);
    gp_top_screen_free(&t->screen);
    gp_top_view_free(&t->view);
    gp_frame_free(&t->frame);
    gp_frame_free(&t->remote);
out:
    memset(t->token, 0, sizeof t->token);
    free(t);
    return ret;
}
