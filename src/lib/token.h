/*
 * token.h - bearer tokens from the config, for every role that sends or
 * checks one (the server's read/write tokens, the agent's push token).
 */
#ifndef GP_LIB_TOKEN_H
#define GP_LIB_TOKEN_H

#include <stddef.h>

/*
 * Resolves one token: the inline value, else the first line of file
 * (trailing blanks and newline cut), else none (out = ""). A token must
 * be visible ASCII without spaces. GP_OK or GP_ECONFIG with detail;
 * `what` names the key in messages ("write_token").
 */
int gp_token_load(const char *inline_token, const char *file, const char *what, char *out,
                  size_t outlen, char *err, size_t errlen);

#endif
