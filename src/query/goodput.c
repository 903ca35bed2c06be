/* goodput.c - the split of a rank's wall time (goodput.h). */
#include "query/goodput.h"

#include "sources/steps_proto.h"

#include <math.h>
#include <string.h>

void gp_goodput_rank_init(struct gp_goodput_rank *r, double start_s, double resume_from)
{
    memset(r, 0, sizeof *r);
    r->start_s = start_s;
    r->first_step_s = NAN;
    r->resume_from = resume_from;
    r->last_step = -1;
}

void gp_goodput_step(struct gp_goodput_rank *r, double t_end, double seconds, double wait,
                     double n)
{
    gp_goodput_interval(r, t_end, seconds, wait, n, 1);
}

void gp_goodput_interval(struct gp_goodput_rank *r, double t_end, double seconds, double wait,
                         double n_last, double nsteps)
{
    if (!isfinite(seconds) || seconds < 0 || !isfinite(t_end) || !(nsteps > 0))
        return;
    double w = isfinite(wait) && wait > 0 ? (wait < seconds ? wait : seconds) : 0;
    double start = t_end - seconds;
    if (!(r->first_step_s <= start))
        r->first_step_s = start;
    r->steps += nsteps;
    if (n_last >= 0 && n_last > r->last_step)
        r->last_step = n_last;
    /* the steps numbered n_last - nsteps + 1 .. n_last done before the
     * restart already are lost work, wait included */
    double lost = 0;
    if (n_last >= 0 && r->resume_from >= 0) {
        double k = r->resume_from - (n_last - nsteps);
        lost = k <= 0 ? 0 : k >= nsteps ? 1 : k / nsteps;
    }
    r->part[GP_GOODPUT_LOST] += seconds * lost;
    r->part[GP_GOODPUT_PRODUCTIVE] += (seconds - w) * (1 - lost);
    r->part[GP_GOODPUT_DATA_WAIT] += w * (1 - lost);
}

enum gp_goodput_part gp_goodput_phase_part(const char *name)
{
    switch (gp_steps_phase_of(name)) {
    case GP_STEPS_PHASE_CHECKPOINT: return GP_GOODPUT_CHECKPOINT;
    case GP_STEPS_PHASE_EVALUATION: return GP_GOODPUT_EVALUATION;
    case GP_STEPS_PHASE_OTHER: break;
    }
    return GP_GOODPUT_OTHER;
}

void gp_goodput_phase(struct gp_goodput_rank *r, const char *name, double t_end, double seconds)
{
    if (!isfinite(seconds) || seconds < 0 || !isfinite(t_end))
        return;
    r->part[gp_goodput_phase_part(name)] += seconds;
    /* a checkpoint restored before the loop is not start-up */
    if (isnan(r->first_step_s))
        r->phases_before += seconds;
}

const char *gp_goodput_part_name(enum gp_goodput_part p)
{
    static const char *const names[GP_GOODPUT_NPARTS] = {
        "startup", "productive", "data_wait", "checkpoint", "evaluation", "other", "lost", "idle"};
    return (unsigned)p < GP_GOODPUT_NPARTS ? names[p] : "?";
}

void gp_goodput_figures_init(struct gp_goodput_figures *f)
{
    memset(f, 0, sizeof *f);
    f->ratio = NAN;
    f->biggest_badput = -1;
}

void gp_goodput_add_rank(struct gp_goodput_figures *f, const struct gp_goodput_rank *r,
                         double end_s)
{
    double wall = end_s - r->start_s;
    if (!isfinite(wall) || wall < 0)
        return;
    struct gp_goodput_figures g;
    gp_goodput_figures_init(&g);
    g.wall = wall;
    memcpy(g.part, r->part, sizeof g.part);
    double before = isnan(r->first_step_s) ? wall : r->first_step_s - r->start_s;
    double startup = before - r->phases_before;
    g.part[GP_GOODPUT_STARTUP] = startup > 0 ? (startup < wall ? startup : wall) : 0;
    double used = 0;
    for (int p = 0; p < GP_GOODPUT_NPARTS; p++)
        if (p != GP_GOODPUT_IDLE)
            used += g.part[p];
    /* records may overlap a little (clock reads, a phase inside a step):
     * idle is never negative */
    g.part[GP_GOODPUT_IDLE] = wall > used ? wall - used : 0;
    gp_goodput_add(f, &g);
}

void gp_goodput_add(struct gp_goodput_figures *f, const struct gp_goodput_figures *g)
{
    f->wall += g->wall;
    for (int p = 0; p < GP_GOODPUT_NPARTS; p++)
        f->part[p] += g->part[p];
}

void gp_goodput_finish(struct gp_goodput_figures *f)
{
    f->ratio = f->wall > 0 ? f->part[GP_GOODPUT_PRODUCTIVE] / f->wall : NAN;
    f->biggest_badput = -1;
    double best = 0;
    for (int p = 0; p < GP_GOODPUT_NPARTS; p++)
        if (p != GP_GOODPUT_PRODUCTIVE && f->part[p] > best)
            best = f->part[p], f->biggest_badput = p;
}
