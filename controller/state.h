/* The controller's state directory: database, CA, server certificate, and the address file of a
 * running controller. Layout (all under --state-dir):
 *   controller.db  ca.crt  ca.key (0600)  server.crt  server.key (0600)  controller.addr */
#ifndef RAILYARD_CONTROLLER_STATE_H
#define RAILYARD_CONTROLLER_STATE_H

#include <stdbool.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "common/pki/pki.h"
#include "controller/store/store.h"

#define CTL_DEFAULT_STATE_DIR "/var/lib/railyard/controller"
/* The lock file of a serving controller, in its state directory (flock; a second serve exits
 * RY_EXIT_LOCKED, common/util/exitcode.h). */
#define CTL_SERVE_LOCK "serve.lock"
/* Name every agent checks in the controller's certificate, whatever address it dials. */
#define CTL_SERVER_NAME "railyard-controller"

struct ctl_state {
	char *dir;
	struct store *store;
	X509 *ca_cert;
	EVP_PKEY *ca_key;
	char *ca_pem;
	char *server_chain_pem; /* server certificate followed by the CA certificate */
	char *server_key_pem;
	char ca_fingerprint[PKI_FINGERPRINT_LEN];
};

/* Create a new state directory: database, CA (CN "Railyard CA <name>") and a server certificate
 * whose SANs are CTL_SERVER_NAME, localhost, 127.0.0.1, ::1, the host name and extra_sans.
 * Refuses (-RY_E_EXISTS) when the directory already holds a CA. */
__attribute__((warn_unused_result)) int ctl_state_init(const char *dir,
						       const char *const *extra_sans,
						       size_t n_extra, char *errbuf, size_t errlen);

/* Open an initialised state directory (database migrated, CA and server key loaded).
 * with_server_key: load the server certificate and key too (serve). Caller frees. */
__attribute__((warn_unused_result)) int ctl_state_open(const char *dir, bool with_server_key,
						       struct ctl_state **ret, char *errbuf,
						       size_t errlen);
void ctl_state_free(struct ctl_state *st);

/* Path of a file in the state directory (caller frees). */
char *ctl_state_path(const struct ctl_state *st, const char *name);

#endif
