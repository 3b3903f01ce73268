/* Enrollment: CA pinning over a raw TLS handshake, local key, CSR, Enroll call, state files. */
#include "nodeagent/enroll.h"
#include "nodeagent/config.h"
#include "nodeagent/facts/facts.h"
#include "common/log/log.h"
#include "common/pki/pki.h"
#include "common/rpc/rpc.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"
#include "railyard/v1/railyard.pb-c.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/ssl.h>

#define AGENT_SERVER_NAME "railyard-controller"

/* Split "host:port" or "[v6]:port". */
static int split_target(const char *target, char *host, size_t hostlen, char *port, size_t portlen)
{
	const char *colon = strrchr(target, ':');
	const char *h = target;
	size_t n;

	if (!colon || !colon[1] || strlen(colon + 1) >= portlen)
		return -EINVAL;
	n = (size_t)(colon - target);
	if (n > 1 && h[0] == '[' && h[n - 1] == ']') {
		h++;
		n -= 2;
	}
	if (n == 0 || n >= hostlen)
		return -EINVAL;
	memcpy(host, h, n);
	host[n] = '\0';
	strcpy(port, colon + 1);
	return 0;
}

static int tcp_connect(const char *target, int timeout_ms, char *errbuf, size_t errlen)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *ai = NULL, *a;
	char host[256], port[16];
	int fd = -1, r, gai;

	if (split_target(target, host, sizeof(host), port, sizeof(port)) < 0) {
		snprintf(errbuf, errlen, "controller address '%s' is not HOST:PORT", target);
		return -EINVAL;
	}
	gai = getaddrinfo(host, port, &hints, &ai);
	if (gai != 0) {
		snprintf(errbuf, errlen, "resolving %s: %s", host, gai_strerror(gai));
		return -EHOSTUNREACH;
	}
	r = -ECONNREFUSED;
	for (a = ai; a; a = a->ai_next) {
		struct pollfd pfd;
		socklen_t sl = sizeof(int);
		int err = 0;

		fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			continue;
		if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS) {
			r = -errno;
			close(fd);
			fd = -1;
			continue;
		}
		pfd.fd = fd;
		pfd.events = POLLOUT;
		if (poll(&pfd, 1, timeout_ms) != 1) {
			r = -ETIMEDOUT;
		} else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0 || err) {
			r = -(err ? err : errno);
		} else {
			/* Back to blocking for the handshake, bounded by socket timeouts. */
			struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};

			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
			setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
			r = 0;
			break;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0) {
		snprintf(errbuf, errlen, "connecting to %s: %s", target, ry_strerror(r));
		return r;
	}
	return fd;
}

int agent_fetch_ca(const char *target, const char *pin, int timeout_ms, char **ret_ca_pem,
		   char *errbuf, size_t errlen)
{
	static const unsigned char alpn[] = "\x02h2";
	SSL_CTX *ctx = NULL;
	SSL *ssl = NULL;
	STACK_OF(X509) * chain;
	X509 *ca = NULL, *leaf;
	char seen[512] = "", err[256];
	int fd, r;

	fd = tcp_connect(target, timeout_ms, errbuf, errlen);
	if (fd < 0)
		return fd;
	ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx) {
		r = -RY_E_CRYPTO;
		snprintf(errbuf, errlen, "TLS context: %s", pki_last_error(err, sizeof(err)));
		goto out;
	}
	/* Nothing to verify against yet: the pin below is the check. */
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	(void)SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1);
	ssl = SSL_new(ctx);
	if (!ssl || SSL_set_fd(ssl, fd) != 1 ||
	    SSL_set_tlsext_host_name(ssl, AGENT_SERVER_NAME) != 1) {
		r = -RY_E_CRYPTO;
		snprintf(errbuf, errlen, "TLS set-up: %s", pki_last_error(err, sizeof(err)));
		goto out;
	}
	if (SSL_connect(ssl) != 1) {
		r = -RY_E_CRYPTO;
		snprintf(errbuf, errlen, "TLS handshake with %s failed: %s", target,
			 pki_last_error(err, sizeof(err)));
		goto out;
	}
	chain = SSL_get_peer_cert_chain(ssl);
	leaf = SSL_get0_peer_certificate(ssl);
	for (int i = 0; chain && i < sk_X509_num(chain); i++) {
		X509 *c = sk_X509_value(chain, i);
		char fp[PKI_FINGERPRINT_LEN];

		if (pki_cert_fingerprint(c, fp) < 0)
			continue;
		if (pki_fingerprint_equal(fp, pin)) {
			ca = c;
			break;
		}
		if (strlen(seen) + strlen(fp) + 3 < sizeof(seen))
			snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen), "%s%s",
				 seen[0] ? ", " : "", fp);
	}
	if (!ca) {
		r = -RY_E_FINGERPRINT;
		snprintf(errbuf, errlen,
			 "CA fingerprint mismatch: %s presented %s, expected %s; not sending the "
			 "token",
			 target, seen[0] ? seen : "no certificates", pin);
		goto out;
	}
	if (!leaf || pki_cert_verify(ca, leaf, NULL, NULL, err, sizeof(err)) < 0) {
		r = -RY_E_FINGERPRINT;
		snprintf(errbuf, errlen,
			 "controller certificate is not signed by the pinned CA: %s", err);
		goto out;
	}
	r = pki_cert_to_pem(ca, ret_ca_pem);
	if (r < 0)
		snprintf(errbuf, errlen, "encoding the CA: %s", ry_strerror(r));
out:
	if (ssl) {
		(void)SSL_shutdown(ssl);
		SSL_free(ssl);
	}
	SSL_CTX_free(ctx);
	close(fd);
	return r;
}

static char *hostname_from_facts(const char *sysroot)
{
	json_t *facts = NULL;
	const char *h;
	char *out = NULL;

	if (facts_collect(sysroot, &facts) < 0)
		return NULL;
	h = json_string_value(json_object_get(facts, "hostname"));
	if (h)
		out = strdup(h);
	json_decref(facts);
	return out;
}

static grpc_status_code enroll_call(const struct agent_enroll_opts *o, const char *ca_pem,
				    const char *hostname, const char *csr,
				    Railyard__V1__EnrollResponse **ret, char *errbuf, size_t errlen)
{
	Railyard__V1__EnrollRequest rq = RAILYARD__V1__ENROLL_REQUEST__INIT;
	struct rpc_channel_config cc = {0};
	struct rpc_channel *ch = NULL;
	struct rpc_status st = {0};
	ProtobufCMessage *resp = NULL;
	int r;

	cc.target = o->controller;
	cc.tls.ca_pem = ca_pem;
	cc.server_name = AGENT_SERVER_NAME;
	if (rpc_channel_new(&cc, &ch) < 0) {
		snprintf(errbuf, errlen, "cannot create a channel to %s", o->controller);
		return GRPC_STATUS_INTERNAL;
	}
	rq.token = (char *)o->token;
	rq.csr_pem = (char *)csr;
	rq.hostname = (char *)hostname;
	rq.agent_version = (char *)RAILYARD_VERSION;
	/* UNAVAILABLE (busy enrolling others, database unavailable) is worth another try within
	 * the timeout; every other answer is final. */
	for (int64_t deadline = util_now_mono_ms() + o->timeout_ms, delay = 200;;) {
		int64_t left = deadline - util_now_mono_ms();

		r = rpc_unary_call(ch, "/railyard.v1.Controller/Enroll", &rq.base,
				   &railyard__v1__enroll_response__descriptor, left > 0 ? left : 1,
				   &resp, &st);
		if (r < 0 || st.code != GRPC_STATUS_UNAVAILABLE ||
		    util_now_mono_ms() + delay >= deadline)
			break;
		usleep((useconds_t)delay * 1000);
		delay = delay < 3200 ? delay * 2 : delay;
	}
	rpc_channel_free(ch);
	if (r < 0) {
		snprintf(errbuf, errlen, "Enroll call failed: %s", ry_strerror(r));
		return GRPC_STATUS_INTERNAL;
	}
	if (st.code != GRPC_STATUS_OK) {
		snprintf(errbuf, errlen, "enrollment refused by %s: %s (%s)", o->controller,
			 st.details, rpc_status_name(st.code));
		return st.code;
	}
	*ret = (Railyard__V1__EnrollResponse *)resp;
	return GRPC_STATUS_OK;
}

int agent_enroll(const struct agent_enroll_opts *o, char *errbuf, size_t errlen)
{
	char *key_path = fs_path_join(o->state_dir, "node.key");
	char *crt_path = fs_path_join(o->state_dir, "node.crt");
	char *ca_path = fs_path_join(o->state_dir, "ca.crt");
	char *ca_pem = NULL, *csr = NULL, *hostname = NULL;
	Railyard__V1__EnrollResponse *resp = NULL;
	struct agent_config cfg = {0};
	EVP_PKEY *key = NULL;
	X509 *cert = NULL, *ca = NULL;
	int r;

	if (!key_path || !crt_path || !ca_path) {
		r = -ENOMEM;
		goto out;
	}
	r = fs_mkdir_p(o->state_dir, 0700);
	if (r >= 0)
		r = fs_check_writable_dir(o->state_dir);
	if (r < 0) {
		snprintf(errbuf, errlen, "state directory %s: %s", o->state_dir, ry_strerror(r));
		goto out;
	}
	if (access(crt_path, F_OK) == 0) {
		r = -RY_E_EXISTS;
		snprintf(errbuf, errlen,
			 "%s exists: this state directory is already enrolled (use another "
			 "--state-dir, or remove it to enroll again)",
			 crt_path);
		goto out;
	}
	hostname = o->hostname ? strdup(o->hostname) : hostname_from_facts(o->sysroot);
	if (!hostname) {
		r = -RY_E_INVALID;
		snprintf(errbuf, errlen, "cannot tell this node's host name; pass --hostname");
		goto out;
	}

	/* 1. The pin is checked before the token leaves this node. */
	r = agent_fetch_ca(o->controller, o->ca_fingerprint, o->timeout_ms, &ca_pem, errbuf,
			   errlen);
	if (r < 0)
		goto out;

	/* 2. The key is made here and never sent; a retry reuses it. */
	if (access(key_path, F_OK) == 0)
		r = pki_key_load(key_path, &key);
	else if ((r = pki_key_generate(&key)) >= 0)
		r = pki_key_write_pem(key_path, key);
	if (r < 0) {
		snprintf(errbuf, errlen, "node key %s: %s", key_path, ry_strerror(r));
		goto out;
	}
	r = pki_csr_create(key, hostname, &csr);
	if (r < 0) {
		snprintf(errbuf, errlen, "creating the CSR: %s", ry_strerror(r));
		goto out;
	}

	/* 3. The controller decides the identity and signs. */
	if (enroll_call(o, ca_pem, hostname, csr, &resp, errbuf, errlen) != GRPC_STATUS_OK) {
		r = -RY_E_RPC;
		goto out;
	}
	if (pki_cert_from_pem(resp->cert_pem, strlen(resp->cert_pem), &cert) < 0 ||
	    pki_cert_from_pem(ca_pem, strlen(ca_pem), &ca) < 0 ||
	    pki_cert_verify(ca, cert, NULL, NULL, errbuf, errlen) < 0 ||
	    pki_key_matches_cert(key, cert) < 0) {
		r = -RY_E_INVALID;
		snprintf(errbuf, errlen,
			 "the controller returned a certificate that does not "
			 "match this node's key or the pinned CA");
		goto out;
	}
	cfg.controller = (char *)o->controller;
	cfg.node_id = resp->node_id;
	cfg.cluster = resp->cluster;
	r = pki_cert_write(ca_path, ca);
	if (r >= 0)
		r = agent_config_save(o->state_dir, &cfg);
	/* node.crt last: its presence means "enrolled". */
	if (r >= 0)
		r = pki_cert_write(crt_path, cert);
	if (r < 0) {
		snprintf(errbuf, errlen, "writing %s: %s", o->state_dir, ry_strerror(r));
		goto out;
	}
	if (!o->quiet)
		printf("enrolled %s as node %s in cluster %s\n", hostname, resp->node_id,
		       resp->cluster);
out:
	if (resp)
		protobuf_c_message_free_unpacked(&resp->base, NULL);
	X509_free(cert);
	X509_free(ca);
	EVP_PKEY_free(key);
	free(ca_pem);
	free(csr);
	free(hostname);
	free(key_path);
	free(crt_path);
	free(ca_path);
	return r;
}

int agent_token_read(const char *path, char **ret_token, char *errbuf, size_t errlen)
{
	bool is_stdin = strcmp(path, "-") == 0;
	const char *name = is_stdin ? "standard input" : path;
	char buf[AGENT_TOKEN_FILE_MAX + 1], *tok;
	size_t len = 0, end;
	struct stat st;
	int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY), r = 0;

	if (fd < 0) {
		r = -errno;
		snprintf(errbuf, errlen, "--token-file %s: %s", name, ry_strerror(r));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		snprintf(errbuf, errlen, "--token-file %s: %s", name, ry_strerror(r));
		goto out;
	}
	if (!is_stdin && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
		r = -EINVAL;
		snprintf(errbuf, errlen, "--token-file %s: not a regular file or a pipe", name);
		goto out;
	}
	/* A pipe's mode is its creator's business (a shell's is 0600); a file's is ours. */
	if (S_ISREG(st.st_mode) && (st.st_mode & (S_IRWXG | S_IRWXO))) {
		r = -EPERM;
		snprintf(errbuf, errlen,
			 "--token-file %s: mode %04o lets others at the token; chmod 600 it", name,
			 (unsigned)(st.st_mode & 07777));
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			snprintf(errbuf, errlen, "--token-file %s: %s", name, ry_strerror(r));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == sizeof(buf)) {
			r = -EINVAL;
			snprintf(errbuf, errlen, "--token-file %s: over %d bytes: not a token",
				 name, AGENT_TOKEN_FILE_MAX);
			goto out;
		}
	}
	buf[len] = '\0';
	end = strcspn(buf, "\r\n");
	buf[end] = '\0';
	if (end == 0) {
		r = -EINVAL;
		snprintf(errbuf, errlen, "--token-file %s: empty: no token on its first line",
			 name);
		goto out;
	}
	for (size_t i = 0; i < end; i++) {
		if ((unsigned char)buf[i] <= ' ' || buf[i] == 0x7f) {
			r = -EINVAL;
			snprintf(errbuf, errlen,
				 "--token-file %s: a blank or control character in the token (byte "
				 "%zu)",
				 name, i + 1);
			goto out;
		}
	}
	tok = strdup(buf);
	if (!tok) {
		r = -ENOMEM;
		snprintf(errbuf, errlen, "out of memory");
		goto out;
	}
	*ret_token = tok;
out:
	explicit_bzero(buf, sizeof(buf));
	if (!is_stdin)
		close(fd);
	return r;
}
