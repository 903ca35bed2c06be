/*
 * channels.c - the table of channels: receiver type -> its ops, and the
 * types' names as the configuration spells them (docs/notify.md). One
 * explicit table, as the sources have, rather than registration by
 * constructors: what a build can send through is readable here.
 */
#include "notify/notify.h"

#include <stddef.h>

const char *const gp_receiver_type_names[GP_RT__COUNT] = {
#define GP_RT_NAME_(id, name) [GP_RT_##id] = name,
    GP_NOTIFY_TYPES(GP_RT_NAME_)
#undef GP_RT_NAME_
};

const struct gp_channel_ops *gp_channel_of(enum gp_receiver_type t)
{
    switch (t) {
    case GP_RT_SLACK:
        return &gp_channel_slack;
    case GP_RT_WEBHOOK:
        return &gp_channel_webhook;
    case GP_RT_ALERTMANAGER:
        return &gp_channel_alertmanager;
    default:
        return NULL;
    }
}
