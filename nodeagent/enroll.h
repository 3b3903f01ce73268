/* `railyard-agent enroll`: pin the controller's CA by fingerprint, make a key on this node,
 * have the controller sign a CSR, and write the state directory. */
#ifndef RAILYARD_AGENT_ENROLL_H
#define RAILYARD_AGENT_ENROLL_H

#include <stdbool.h>
#include <stddef.h>

struct agent_enroll_opts {
	const char *controller; /* HOST:PORT */
	const char *token;
	const char *ca_fingerprint; /* "sha256:<hex>" */
	const char *state_dir;
	const char *hostname; /* NULL: from the facts under sysroot */
	const char *sysroot;
	int timeout_ms;
	bool quiet; /* do not print "enrolled ... as node ..." on stdout */
};

/* Fetch the CA certificate the controller presents and check it against pin before anything
 * secret is sent: the handshake does not verify (there is nothing to verify against yet); the
 * pin does. *ret_ca_pem is the matching certificate (caller frees). -RY_E_FINGERPRINT when no
 * certificate of the presented chain matches, with the presented fingerprints in errbuf. */
__attribute__((warn_unused_result)) int agent_fetch_ca(const char *target, const char *pin,
						       int timeout_ms, char **ret_ca_pem,
						       char *errbuf, size_t errlen);

/* The whole enrollment. Returns 0 or a negative error with the reason in errbuf; nothing is
 * left in the state directory on failure except the private key (reused by a retry). */
__attribute__((warn_unused_result)) int agent_enroll(const struct agent_enroll_opts *o,
						     char *errbuf, size_t errlen);

#endif
