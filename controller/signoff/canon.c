/* The exact bytes of a report, its hash, and the times it carries. */
#include "controller/signoff/canon.h"

#include "common/util/util.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

json_t *so_time_json(int64_t unix_ms)
{
	time_t t = (time_t)(unix_ms / 1000);
	struct tm tm;
	char buf[40], out[48];

	if (unix_ms <= 0 || !gmtime_r(&t, &tm))
		return json_null();
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, sizeof(out), "%s.%03dZ", buf, (int)(unix_ms % 1000));
	return json_string(out);
}

void so_sha256_text(const void *data, size_t len, char out[SO_SHA256_TEXT_LEN])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	memcpy(out, "sha256:", 8);
	if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32)
		return;
	util_hex(md, 32, out + 7);
}

char *so_report_bytes(const json_t *report, size_t *ret_len)
{
	char *s = json_dumps(report, JSON_SORT_KEYS | JSON_INDENT(2) | JSON_REAL_PRECISION(12));
	char *t;
	size_t n;

	if (!s)
		return NULL;
	n = strlen(s);
	t = realloc(s, n + 2);
	if (!t) {
		free(s);
		return NULL;
	}
	t[n] = '\n';
	t[n + 1] = '\0';
	*ret_len = n + 1;
	return t;
}

void so_headline(const char *verdict, bool acceptance, long excluded, char *buf, size_t len)
{
	char ex[48] = "";

	if (excluded > 0)
		snprintf(ex, sizeof(ex), " with %ld excluded", excluded);
	snprintf(buf, len, "%s%s; %s", verdict ? verdict : "incomplete", ex,
		 acceptance ? "acceptance sign-off"
			    : "smoke / baseline report, not an acceptance sign-off");
}

void so_label(const char *verdict, bool acceptance, long excluded, char *buf, size_t len)
{
	char ex[48] = "";

	if (excluded > 0)
		snprintf(ex, sizeof(ex), " +%ld excluded", excluded);
	snprintf(buf, len, "%s%s (%s)", verdict ? verdict : "incomplete", ex,
		 acceptance ? "acceptance" : "smoke");
}
