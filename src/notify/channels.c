/*
 * channels.c - the table of channels: receiver type -> its ops (the
 * types' names are config.c's). One explicit table, as the sources have, rather than registration by
 * constructors: what a build can send through is readable here.
 */
#include "notify/notify.h"

#include <stddef.h>

const struct gp_channel_ops *gp_channel_of(enum gp_receiver_type t)
{
    switch (t) {
    case GP_RT_SLACK:
        return &gp_channel_slack;
    case GP_RT_EMAIL:
        return &gp_channel_email;
    case GP_RT_WEBHOOK:
        return &gp_channel_webhook;
    case GP_RT_ALERTMANAGER:
        return &gp_channel_alertmanager;
    default:
        return NULL;
    }
}
