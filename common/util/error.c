/* Messages for the project's error codes; errno values fall through to strerror_r. */
#include "common/util/error.h"

#include <string.h>

static const char *const ry_messages[] = {
	[RY_E_INVALID - RY_E_BASE] = "invalid input",
	[RY_E_CRYPTO - RY_E_BASE] = "cryptographic operation failed",
	[RY_E_DB - RY_E_BASE] = "database error",
	[RY_E_CORRUPT - RY_E_BASE] = "stored state is corrupt",
	[RY_E_TOKEN_UNKNOWN - RY_E_BASE] = "enrollment token unknown",
	[RY_E_TOKEN_EXPIRED - RY_E_BASE] = "enrollment token expired",
	[RY_E_TOKEN_USED - RY_E_BASE] = "enrollment token already used",
	[RY_E_REVOKED - RY_E_BASE] = "revoked",
	[RY_E_FINGERPRINT - RY_E_BASE] = "CA fingerprint mismatch",
	[RY_E_RPC - RY_E_BASE] = "RPC failed",
	[RY_E_TOO_BIG - RY_E_BASE] = "input too big",
	[RY_E_EXISTS - RY_E_BASE] = "already exists",
	[RY_E_NOT_FOUND - RY_E_BASE] = "not found",
	[RY_E_SCHEMA - RY_E_BASE] = "database schema is newer than this program",
	[RY_E_UNSAFE_PATH - RY_E_BASE] = "path escapes the sysroot",
	[RY_E_UNMET - RY_E_BASE] = "condition not met",
	[RY_E_CLOCK - RY_E_BASE] = "clock went back or did not advance",
	[RY_E_DATA_MISMATCH - RY_E_BASE] = "data mismatch",
	[RY_E_PARAM_MISMATCH - RY_E_BASE] = "parameters differ from the peer's",
	[RY_E_DISK_FULL - RY_E_BASE] = "database or disk is full",
	[RY_E_BUSY - RY_E_BASE] = "database is locked by another process",
	[RY_E_REFUSED - RY_E_BASE] = "report refused",
	[RY_E_LOCKED - RY_E_BASE] = "state directory is in use by another process",
	[RY_E_TOKEN_SECRET - RY_E_BASE] = "token secret does not match",
	[RY_E_TOKEN_REVOKED - RY_E_BASE] = "enrollment token revoked",
};

const char *ry_strerror(int r)
{
	static __thread char buf[128];
	int e = r < 0 ? -r : r;

	if (e >= RY_E_BASE && e < RY_E_MAX && ry_messages[e - RY_E_BASE])
		return ry_messages[e - RY_E_BASE];
	/* GNU strerror_r returns the message, possibly not in buf. */
	return strerror_r(e, buf, sizeof(buf));
}
