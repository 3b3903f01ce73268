/* Controller.Enroll: check the token, sign the agent's CSR with an identity the controller
 * chooses, and store the node, all or nothing. Refusals are audited and logged. */
#include "controller/server_int.h"
#include "controller/throttle.h"
#include "controller/store/store.h"
#include "controller/store/store_apitoken.h"
#include "controller/store/store_audit.h"
#include "controller/store/store_nodes.h"
#include "common/log/log.h"
#include "common/util/error.h"
#include "common/util/util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

bool ctl_valid_text(const char *s, size_t max)
{
	size_t n = 0;

	if (!s)
		return false;
	for (; s[n]; n++) {
		if (n >= max || !isprint((unsigned char)s[n]))
			return false;
	}
	return n > 0;
}

bool ctl_valid_hostname(const char *s)
{
	size_t len, label = 0;

	if (!s || (len = strlen(s)) == 0 || len > CTL_HOSTNAME_MAX)
		return false;
	for (size_t i = 0; i <= len; i++) {
		char c = s[i];

		if (c == '.' || c == '\0') {
			if (label == 0 || label > 63 || s[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!isalnum((unsigned char)c) && c != '-')
			return false;
		if (label == 0 && c == '-')
			return false;
		label++;
	}
	return true;
}

/* The source of a call without its port: "ipv4:10.0.0.5:40312" -> "10.0.0.5",
 * "ipv6:[fd00::5]:40312" -> "fd00::5". */
static void peer_source(const char *address, char *buf, size_t len)
{
	const char *h = strchr(address, ':'), *end;

	h = h ? h + 1 : address;
	if (*h == '[') {
		h++;
		end = strchr(h, ']');
	} else {
		end = strrchr(h, ':');
	}
	snprintf(buf, len, "%.*s", end ? (int)(end - h) : (int)strlen(h), h);
}

static grpc_status_code refuse(struct ctl_server *srv, const struct rpc_peer *peer,
			       const char *hostname, grpc_status_code code, char **ret_msg,
			       const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* A refused enrollment: logged and audited, except that a source refused again and again gets
 * one audit row (and one log line) per window, counting the ones in between. */
static grpc_status_code refuse(struct ctl_server *srv, const struct rpc_peer *peer,
			       const char *hostname, grpc_status_code code, char **ret_msg,
			       const char *fmt, ...)
{
	char reason[512], detail[800], source[128];
	unsigned suppressed = 0;
	int64_t now = util_now_unix_ms();
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	peer_source(peer->address, source, sizeof(source));
	if (ctl_throttle_refusal(srv->enroll_throttle, source, util_now_mono_ms(), &suppressed)) {
		if (suppressed)
			snprintf(detail, sizeof(detail),
				 "%s (from %s; and %u more refusals from this address since the "
				 "last entry)",
				 reason, peer->address, suppressed);
		else
			snprintf(detail, sizeof(detail), "%s (from %s)", reason, peer->address);
		log_warn("enrollment refused for %s: %s", hostname ? hostname : "?", detail);
		if (store_audit(srv->state->store, now, "agent", "node.enroll",
				hostname && ctl_valid_text(hostname, CTL_HOSTNAME_MAX) ? hostname
										       : NULL,
				"refused", detail) < 0)
			log_error("audit log write failed: %s", store_errmsg(srv->state->store));
	}
	*ret_msg = strdup(reason);
	return code;
}

static grpc_status_code token_status(int r)
{
	switch (-r) {
	case RY_E_TOKEN_UNKNOWN:
	case RY_E_TOKEN_EXPIRED:
	case RY_E_TOKEN_USED:
	case RY_E_TOKEN_REVOKED:
		return GRPC_STATUS_PERMISSION_DENIED;
	case RY_E_EXISTS:
		return GRPC_STATUS_ALREADY_EXISTS;
	default:
		return GRPC_STATUS_INTERNAL;
	}
}

static grpc_status_code enroll(struct ctl_server *srv, const struct rpc_peer *peer,
			       const Railyard__V1__EnrollRequest *rq, ProtobufCMessage **ret_resp,
			       char **ret_msg);

grpc_status_code ctl_enroll(void *userdata, const struct rpc_peer *peer,
			    const ProtobufCMessage *req, ProtobufCMessage **ret_resp,
			    char **ret_msg)
{
	struct ctl_server *srv = userdata;
	const Railyard__V1__EnrollRequest *rq = (const Railyard__V1__EnrollRequest *)req;
	char source[128];
	int64_t retry_ms = 0;
	int max = srv->cfg.threads > 1 ? srv->cfg.threads - 1 : 1;
	grpc_status_code code;

	/* A source that keeps getting refused is turned away before any database work. */
	peer_source(peer->address, source, sizeof(source));
	if (ctl_throttle_blocked(srv->enroll_throttle, source, util_now_mono_ms(), &retry_ms))
		return refuse(srv, peer, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, ret_msg,
			      "too many refused enrollment attempts from %s; retry in %lld s",
			      source, (long long)(retry_ms + 999) / 1000);
	/* Enrollment works on the database on a completion-queue thread: leave one thread free
	 * for the sessions whatever the database does. */
	if (atomic_fetch_add(&srv->enroll_active, 1) >= max) {
		atomic_fetch_sub(&srv->enroll_active, 1);
		*ret_msg = strdup("the controller is busy enrolling other nodes; retry");
		return GRPC_STATUS_UNAVAILABLE;
	}
	code = enroll(srv, peer, rq, ret_resp, ret_msg);
	atomic_fetch_sub(&srv->enroll_active, 1);
	return code;
}

/* The database failed, not the request: the agent retries; nothing counts against it. */
static grpc_status_code unavailable(struct ctl_server *srv, const char *hostname, int r,
				    char **ret_msg)
{
	log_error("enrollment of %.64s not stored: %s (%s)", hostname, ry_strerror(r),
		  store_errmsg(srv->state->store));
	*ret_msg = strdup("the controller's database is unavailable; retry");
	return GRPC_STATUS_UNAVAILABLE;
}

static grpc_status_code enroll(struct ctl_server *srv, const struct rpc_peer *peer,
			       const Railyard__V1__EnrollRequest *rq, ProtobufCMessage **ret_resp,
			       char **ret_msg)
{
	Railyard__V1__EnrollResponse *resp = NULL;
	struct store_enroll e = {0};
	char node_id[20], rnd_hex[17], serial[PKI_SERIAL_LEN], fp[PKI_FINGERPRINT_LEN];
	char *cluster = NULL, *cluster2 = NULL, *cert_pem = NULL;
	unsigned char rnd[8];
	X509 *cert = NULL;
	grpc_status_code code;
	int r;

	if (!ctl_valid_hostname(rq->hostname))
		return refuse(srv, peer, NULL, GRPC_STATUS_INVALID_ARGUMENT, ret_msg,
			      "invalid hostname");
	if (!ctl_valid_text(rq->token, CTL_TOKEN_MAX))
		return refuse(srv, peer, rq->hostname, GRPC_STATUS_INVALID_ARGUMENT, ret_msg,
			      "missing or malformed token");
	if (rq->agent_version[0] && !ctl_valid_text(rq->agent_version, CTL_VERSION_MAX))
		return refuse(srv, peer, rq->hostname, GRPC_STATUS_INVALID_ARGUMENT, ret_msg,
			      "invalid agent_version");

	r = store_token_check(srv->state->store, rq->token, util_now_unix_ms(), &cluster);
	if (r < 0 && token_status(r) == GRPC_STATUS_INTERNAL)
		return unavailable(srv, rq->hostname, r, ret_msg);
	if (r < 0)
		return refuse(srv, peer, rq->hostname, token_status(r), ret_msg, "%s",
			      ry_strerror(r));

	/* The identity is ours: a random id, not anything the agent asked for. */
	if (util_random_bytes(rnd, sizeof(rnd)) < 0) {
		code = refuse(srv, peer, rq->hostname, GRPC_STATUS_INTERNAL, ret_msg,
			      "no randomness");
		goto out;
	}
	util_hex(rnd, sizeof(rnd), rnd_hex);
	snprintf(node_id, sizeof(node_id), "n-%.12s", rnd_hex);
	r = pki_csr_sign(srv->state->ca_cert, srv->state->ca_key, rq->csr_pem, strlen(rq->csr_pem),
			 node_id, cluster, srv->cfg.cert_days, &cert);
	if (r < 0) {
		code = refuse(srv, peer, rq->hostname, GRPC_STATUS_INVALID_ARGUMENT, ret_msg,
			      "certificate request rejected: %s", ry_strerror(r));
		goto out;
	}
	if (pki_cert_serial(cert, serial) < 0 || pki_cert_fingerprint(cert, fp) < 0 ||
	    pki_cert_to_pem(cert, &cert_pem) < 0) {
		code = refuse(srv, peer, rq->hostname, GRPC_STATUS_INTERNAL, ret_msg,
			      "certificate encoding failed");
		goto out;
	}
	e.token = rq->token;
	e.node_id = node_id;
	e.hostname = rq->hostname;
	e.cert_serial = serial;
	e.cert_fingerprint = fp;
	e.peer = peer->address;
	r = store_enroll_node(srv->state->store, &e, util_now_unix_ms(), &cluster2);
	if (r == -RY_E_EXISTS) {
		code = refuse(srv, peer, rq->hostname, GRPC_STATUS_ALREADY_EXISTS, ret_msg,
			      "host name %s is already enrolled; revoke that node first",
			      rq->hostname);
		goto out;
	}
	if (r < 0 && token_status(r) == GRPC_STATUS_INTERNAL) {
		code = unavailable(srv, rq->hostname, r, ret_msg);
		goto out;
	}
	if (r < 0) {
		code = refuse(srv, peer, rq->hostname, token_status(r), ret_msg, "%s",
			      ry_strerror(r));
		goto out;
	}

	resp = malloc(sizeof(*resp));
	if (!resp) {
		code = GRPC_STATUS_RESOURCE_EXHAUSTED;
		goto out;
	}
	railyard__v1__enroll_response__init(resp);
	resp->node_id = strdup(node_id);
	resp->cluster = cluster2;
	cluster2 = NULL;
	resp->cert_pem = cert_pem;
	cert_pem = NULL;
	resp->ca_pem = strdup(srv->state->ca_pem);
	if (!resp->node_id || !resp->ca_pem) {
		protobuf_c_message_free_unpacked(&resp->base, NULL);
		code = GRPC_STATUS_RESOURCE_EXHAUSTED;
		goto out;
	}
	log_info("enrolled %s as node %s in cluster %s (certificate %s, from %s)", rq->hostname,
		 node_id, resp->cluster, serial, peer->address);
	*ret_resp = &resp->base;
	code = GRPC_STATUS_OK;
out:
	X509_free(cert);
	free(cert_pem);
	free(cluster);
	free(cluster2);
	return code;
}
