/* The canonical form of a sign-off report: the exact bytes that are signed, their SHA-256, and
 * its times. Pure. */
#ifndef RAILYARD_SIGNOFF_CANON_H
#define RAILYARD_SIGNOFF_CANON_H

#include "common/signoff/verify.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Schema of the reports this program writes (docs/signoff.md); it reads version 1 too (before
 * acceptance, exclusions and `regressed`). The names are the verifier's. */
#define SO_SCHEMA    SO_VERIFY_SCHEMA_V2
#define SO_SCHEMA_V1 SO_VERIFY_SCHEMA_V1

#define SO_SHA256_TEXT_LEN (7 + 64 + 1) /* "sha256:" + hex + NUL */

/* The exact bytes a report is signed as: UTF-8 JSON, keys sorted, two-space indent, reals with
 * 12 significant digits, one trailing newline. The same document gives the same bytes whatever
 * order its members were added in. New string (free()) with *ret_len, or NULL on allocation
 * failure. */
char *so_report_bytes(const json_t *report, size_t *ret_len);

/* "sha256:" and the lower-case hex SHA-256 of len bytes. */
void so_sha256_text(const void *data, size_t len, char out[SO_SHA256_TEXT_LEN]);

/* What a report is, in one line every surface shows: "pass; acceptance sign-off", "pass with 1
 * excluded; acceptance sign-off", "pass; smoke / baseline report, not an acceptance sign-off". */
void so_headline(const char *verdict, bool acceptance, long excluded, char *buf, size_t len);
/* The same, short, for a list's column: "pass (smoke)", "pass +1 excluded (acceptance)". */
void so_label(const char *verdict, bool acceptance, long excluded, char *buf, size_t len);

/* RFC 3339 UTC with milliseconds ("2026-12-01T04:30:00.123Z"); null for 0. New reference. */
json_t *so_time_json(int64_t unix_ms);

#endif
