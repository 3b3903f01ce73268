/* OpenPGP public keys, as much as apt's signed-by key files need: ASCII armor to binary and
 * back, the packet framing, and the fingerprints of the primary keys (RFC 4880 / RFC 9580).
 * Signatures are not verified here: apt verifies the repository's with the key. Shared by the
 * playbook checks (a `repo` step's inline key) and the agent (the key file on the node). */
#ifndef RAILYARD_PGP_H
#define RAILYARD_PGP_H

#include <stdbool.h>
#include <stddef.h>

/* Largest key file accepted, armored or binary (bytes). */
#define PB_PGP_MAX_SIZE (256 * 1024)
/* Primary keys kept per file; more is an error. */
#define PB_PGP_MAX_KEYS 8

/* The primary keys of a key file: upper-case hex fingerprints, 40 digits for v4 keys, 64 for
 * v5/v6. Caller-embedded; no allocation. */
struct pb_pgp_keys {
	size_t n;
	char fpr[PB_PGP_MAX_KEYS][65];
};

/* Whether data (len bytes, borrowed) is ASCII-armored (starts, after blanks, with "-----BEGIN
 * PGP"). */
bool pb_pgp_is_armored(const void *data, size_t len);

/* Read a key file, armored or binary, into *ret. Refused with -RY_E_INVALID and a reason in err
 * (NUL-terminated, may be NULL when errlen is 0): bad armor or base64, a CRC24 that does not
 * match, truncated or malformed packets, a file that does not start with a public key, any
 * secret-key packet ("a private key"), a v3 key, more than PB_PGP_MAX_KEYS primary keys, more
 * than PB_PGP_MAX_SIZE bytes. Thread-safe. */
__attribute__((warn_unused_result)) int
pb_pgp_keys_read(const void *data, size_t len, struct pb_pgp_keys *ret, char *err, size_t errlen);

/* Decode ASCII armor into binary packets (*ret, caller frees, *ret_len bytes). Errors as
 * pb_pgp_keys_read(); -ENOMEM. */
__attribute__((warn_unused_result)) int pb_pgp_dearmor(const char *text, size_t len,
						       unsigned char **ret, size_t *ret_len,
						       char *err, size_t errlen);

/* Encode binary packets as an armored PUBLIC KEY BLOCK (64-column base64 and its CRC24) into
 * *ret (caller frees, NUL-terminated). -ENOMEM. */
__attribute__((warn_unused_result)) int pb_pgp_armor(const unsigned char *bin, size_t len,
						     char **ret);

/* Normalize a fingerprint as written by people and tools ("EB69 3B30 ...", lower case, a "0x"
 * prefix) into out: upper-case hex without blanks. Accepted: 40 hex digits (v4), 64 (v5/v6)
 * or 16 (a long key ID: the last 16 digits of a v4 fingerprint, weaker). Returns the number of
 * digits, or -EINVAL. */
int pb_pgp_fpr_normalize(const char *in, char out[65]);

/* Whether keys holds the key named by fpr (normalized): equal fingerprints, or for a long key
 * ID the last 16 digits of a v4 fingerprint. */
bool pb_pgp_keys_have(const struct pb_pgp_keys *keys, const char *fpr);

#endif
