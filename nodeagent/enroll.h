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

/* Longest enrollment token --token-file reads (tokens are ~80 bytes). */
#define AGENT_TOKEN_FILE_MAX 4096

/* The token of `enroll --token-file PATH`, so that it is never on a command line (where any
 * local user reads it in /proc/PID/cmdline): the first line of PATH, or of standard input when
 * PATH is "-", without its line end. PATH must be a regular file or a pipe, and a file one that
 * neither group nor others may read or write (mode 0600 or stricter: it holds a secret), as
 * opened (fstat: no race with a rename); standard input may be anything that reads. *ret_token is
 * the token (caller frees, after clearing it). Errors, with the reason in errbuf: -EPERM for a file
 * group or others may access (naming its mode), -EINVAL for one that is not a regular file or pipe,
 * empty, over AGENT_TOKEN_FILE_MAX bytes, or whose token holds a blank or control character; -errno
 * when it cannot be opened or read; -ENOMEM. */
__attribute__((warn_unused_result)) int agent_token_read(const char *path, char **ret_token,
							 char *errbuf, size_t errlen);

/* The whole enrollment. Returns 0 or a negative error with the reason in errbuf; nothing is
 * left in the state directory on failure except the private key (reused by a retry). */
__attribute__((warn_unused_result)) int agent_enroll(const struct agent_enroll_opts *o,
						     char *errbuf, size_t errlen);

#endif
