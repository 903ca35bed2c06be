/*
 * auth.h - who may write and read, and where the server may listen.
 *
 * Bearer tokens (RFC 6750) from the config: POST /api/v1/write needs the
 * write token, the query API and /metrics the read token; /api/v1/health
 * is open (load balancers probe it). Tokens are compared in time that
 * depends only on what the client sent, never on where it differs.
 *
 * Exposure rule: a server that would listen beyond loopback without
 * both tokens binds 127.0.0.1 on the same port instead, and says why at
 * start, so a default config never opens unauthenticated writes or reads
 * to the network.
 */
#ifndef GP_SERVER_AUTH_H
#define GP_SERVER_AUTH_H

#include <stddef.h>

/* 1 when the Authorization header value is "Bearer <token>" (scheme
 * case-insensitive) with exactly token; 0 otherwise, and always 0 for an
 * empty token. */
int gp_auth_bearer_ok(const char *authorization, const char *token);

/* 1 for 127.0.0.0/8, ::1 and ::ffff:127.x.y.z literals. */
int gp_auth_is_loopback(const char *host);

/*
 * Chooses the address to bind: listen itself, or "127.0.0.1:PORT" when
 * listen is not loopback and a token is missing; then *fell_back is 1 and
 * why says which token. GP_OK or GP_ECONFIG (listen malformed).
 */
int gp_auth_bind_address(const char *listen, int have_write_token, int have_read_token, char *out,
                         size_t outlen, int *fell_back, char *why, size_t whylen);

#endif
