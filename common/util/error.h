/* Project error codes and their messages.
 * Functions return 0 on success and a negative value on failure: either -errno or -RY_E_*.
 * Codes are append-only; never renumber. */
#ifndef RAILYARD_UTIL_ERROR_H
#define RAILYARD_UTIL_ERROR_H

enum ry_error {
	RY_E_BASE = 1000,    /* project codes start above the errno range */
	RY_E_INVALID = 1000, /* malformed input from outside (message, file, argument) */
	RY_E_CRYPTO,	     /* an OpenSSL operation failed */
	RY_E_DB,	     /* SQLite reported an error */
	RY_E_CORRUPT,	     /* stored state is unreadable or inconsistent */
	RY_E_TOKEN_UNKNOWN,  /* enrollment or API token not known */
	RY_E_TOKEN_EXPIRED,  /* enrollment or API token past its expiry */
	RY_E_TOKEN_USED,     /* enrollment token has no uses left */
	RY_E_REVOKED,	     /* certificate, node or API token revoked */
	RY_E_FINGERPRINT,    /* CA fingerprint does not match the pin */
	RY_E_RPC,	     /* gRPC call failed */
	RY_E_TOO_BIG,	     /* input over its size limit */
	RY_E_EXISTS,	     /* object already exists */
	RY_E_NOT_FOUND,	     /* object does not exist */
	RY_E_SCHEMA,	     /* database schema newer than this program */
	RY_E_UNSAFE_PATH,    /* path escapes the sysroot (.., symlink pointing outside) */
	RY_E_UNMET,	     /* a condition or desired state is not met (assert, verify) */
	RY_E_CLOCK,	     /* a clock went back or did not advance */
	RY_E_DATA_MISMATCH,  /* received data differs from what was sent */
	RY_E_PARAM_MISMATCH, /* the peer's parameters differ from ours */
	RY_E_DISK_FULL,	     /* the database or its disk is full */
	RY_E_BUSY,	     /* the database is locked by another process for too long */
	RY_E_REFUSED,	     /* a report from a node that has no business sending it */
	RY_E_LOCKED,	     /* a state directory is in use by another process */
	RY_E_TOKEN_SECRET,   /* API token known, but its secret does not match */
	RY_E_TOKEN_REVOKED,  /* enrollment token revoked */
	RY_E_MAX
};

/* Message for a negative return value (-errno or -RY_E_*). Thread-safe; never NULL. */
const char *ry_strerror(int r);

#endif
