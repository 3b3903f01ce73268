/* The REST API of a serving controller (docs/rest.md): HTTPS on --http, plain HTTP on the
 * state directory's unix socket for host-local admin commands, over controller/http. Every
 * route is one row of the table in api_routes.c: method, path, the permission it needs
 * (controller/api/authz.h) and a handler calling the controller's services. Requests carry an
 * API token (Authorization: Bearer), except over the unix socket, whose peer (root or the
 * controller's user, checked by its credentials) acts as admin. */
#ifndef RAILYARD_CONTROLLER_API_H
#define RAILYARD_CONTROLLER_API_H

#include <stddef.h>
#include <stdint.h>

struct ctl_server;
struct ctl_api;

/* The API socket in the state directory. */
#define CTL_API_SOCKET "api.sock"
/* The URL of the running API, written by serve (like controller.addr). */
#define CTL_API_ADDR "api.addr"
/* /readyz's write probe in the state directory (written, fsynced and removed at once). */
#define CTL_API_READY_PROBE "ready.probe"
/* The default HTTPS listener: loopback, so that a fresh controller exposes no API until an
 * operator chooses an address (docs/rest.md). */
#define CTL_API_LISTEN_DEFAULT "127.0.0.1:8443"

struct ctl_api_config {
	const char *listen;   /* HOST:PORT; NULL: no TCP listener (the socket only) */
	const char *cert_pem; /* NULL: the controller's server certificate */
	const char *key_pem;
};

__attribute__((warn_unused_result)) int ctl_api_start(struct ctl_server *srv,
						      const struct ctl_api_config *cfg,
						      struct ctl_api **ret, char *errbuf,
						      size_t errlen);
uint16_t ctl_api_port(const struct ctl_api *api);
void ctl_api_stop(struct ctl_api *api);

/* The route table, for the matrix test and the OpenAPI check: method, path and permission of
 * route i < *ret_n. */
struct ctl_api_route_info {
	const char *method, *path, *perm;
	int scoped; /* the route's object belongs to a cluster (out of scope: 404) */
	int fleet;  /* about every cluster at once: a token scoped to clusters gets 403 */
};
const struct ctl_api_route_info *ctl_api_routes(size_t *ret_n);

#endif
