/* The offline sign-off verifier: signature and signer through pki_cms_verify(), then the
 * report's schema and members. Owns nothing beyond one call. */
#include "common/signoff/verify.h"

#include "common/pki/pki.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define JSTR(o, k) json_string_value(json_object_get((o), (k)))

static enum so_verify_status status_of(json_t *o, enum so_verify_status s, const char *reason)
{
	json_object_set_new(o, "verified", json_boolean(s == SO_VERIFIED));
	json_object_set_new(o, "status", json_integer(s));
	json_object_set_new(o, "reason", reason ? json_string(reason) : json_null());
	return s;
}

/* "2026-12-01T04:30:00.000Z" (as the reports write times), or null. */
static json_t *time_json(int64_t unix_s)
{
	time_t t = (time_t)unix_s;
	struct tm tm;
	char buf[48];

	if (unix_s <= 0 || !gmtime_r(&t, &tm) ||
	    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S.000Z", &tm) == 0)
		return json_null();
	return json_string(buf);
}

/* The members every known schema version requires, with their JSON types; NULL, or the reason
 * (in why) the report is malformed. */
static const char *report_malformed(const json_t *doc, char *why, size_t len)
{
	static const struct {
		const char *key;
		json_type type;
	} need[] = {
		{"id", JSON_STRING},	     {"cluster", JSON_STRING},	  {"verdict", JSON_STRING},
		{"created_at", JSON_STRING}, {"campaign", JSON_OBJECT},	  {"nodes", JSON_ARRAY},
		{"results", JSON_ARRAY},     {"evaluation", JSON_OBJECT}, {"summary", JSON_ARRAY},
	};
	const json_t *acc = json_object_get(doc, "acceptance"),
		     *reasons = json_object_get(doc, "acceptance_reasons"), *r;
	size_t i;

	for (i = 0; i < RY_ARRAY_SIZE(need); i++) {
		const json_t *v = json_object_get(doc, need[i].key);

		if (!v || json_typeof(v) != need[i].type) {
			snprintf(why, len, "the report's \"%s\" is missing or of the wrong type",
				 need[i].key);
			return why;
		}
	}
	/* Version 2's acceptance, shown when present, must be what it says it is. */
	if (acc && !json_is_boolean(acc)) {
		snprintf(why, len, "the report's \"acceptance\" is not true or false");
		return why;
	}
	if (reasons && !json_is_array(reasons)) {
		snprintf(why, len, "the report's \"acceptance_reasons\" is not an array");
		return why;
	}
	json_array_foreach(reasons, i, r) if (!json_is_string(r))
	{
		snprintf(why, len, "the report's \"acceptance_reasons\" holds a non-string");
		return why;
	}
	return NULL;
}

static enum so_verify_status check_report(json_t *o, const char *bytes, size_t len)
{
	static const char *const copy[] = {"schema",  "id",	    "cluster",
					   "kind",    "verdict",    "created_at",
					   "summary", "acceptance", "acceptance_reasons"};
	json_error_t je;
	json_t *doc = json_loadb(bytes, len, JSON_REJECT_DUPLICATES, &je);
	const char *schema = JSTR(doc, "schema");
	char why[256];
	enum so_verify_status s;

	if (!doc) {
		snprintf(why, sizeof(why), "the report is not JSON: line %d column %d: %s", je.line,
			 je.column, je.text);
		return status_of(o, SO_BAD_REPORT, why);
	}
	if (!schema || (strcmp(schema, SO_VERIFY_SCHEMA_V1) != 0 &&
			strcmp(schema, SO_VERIFY_SCHEMA_V2) != 0)) {
		snprintf(why, sizeof(why),
			 "unknown report schema %s (this program reads %s and %s)",
			 schema ? schema : "(none)", SO_VERIFY_SCHEMA_V1, SO_VERIFY_SCHEMA_V2);
		s = status_of(o, SO_BAD_REPORT, why);
	} else if (report_malformed(doc, why, sizeof(why))) {
		s = status_of(o, SO_BAD_REPORT, why);
	} else {
		for (size_t i = 0; i < RY_ARRAY_SIZE(copy); i++)
			if (json_object_get(doc, copy[i]))
				json_object_set(o, copy[i], json_object_get(doc, copy[i]));
		s = status_of(o, SO_VERIFIED, NULL);
	}
	json_decref(doc);
	return s;
}

enum so_verify_status so_verify_bytes(json_t *o, const char *report, size_t len, const char *p7s,
				      size_t plen, const char *ca_pem, size_t clen,
				      const char *ca_name)
{
	X509 *ca = NULL, *signer = NULL;
	char why[512] = "", *cn = NULL;
	enum so_verify_status s;
	int64_t at = 0;
	int r;

	if (pki_cert_from_pem(ca_pem, clen, &ca) < 0) {
		snprintf(why, sizeof(why), "%s: not a PEM certificate", ca_name);
		return status_of(o, SO_NOT_VERIFIED, why);
	}
	r = pki_cms_verify(ca, report, len, p7s, plen, &signer, &at, why, sizeof(why));
	if (r < 0) {
		if (!why[0])
			snprintf(why, sizeof(why), "%s", ry_strerror(r));
		s = status_of(o, SO_NOT_VERIFIED, why);
		goto out;
	}
	if (pki_cert_common_name(signer, &cn) >= 0)
		json_object_set_new(o, "signer", json_string(cn));
	json_object_set_new(o, "signed_at", time_json(at));
	s = check_report(o, report, len);
out:
	free(cn);
	X509_free(ca);
	X509_free(signer);
	return s;
}

enum so_verify_status so_verify_files(const char *report_path, const char *p7s_path,
				      const char *ca_path, json_t **ret)
{
	char *bytes = NULL, *p7s = NULL, *ca_pem = NULL, why[512];
	size_t len = 0, plen = 0, clen = 0;
	json_t *o = json_object();
	enum so_verify_status s;
	int r;

	if (!o) {
		s = SO_NOT_VERIFIED;
		goto out;
	}
	if ((r = fs_read_file(report_path, SO_VERIFY_REPORT_MAX, &bytes, &len)) < 0 ||
	    (r = fs_read_file(p7s_path, PKI_PEM_MAX, &p7s, &plen)) < 0 ||
	    (r = fs_read_file(ca_path, PKI_PEM_MAX, &ca_pem, &clen)) < 0) {
		const char *which = !bytes ? report_path : !p7s ? p7s_path : ca_path;

		snprintf(why, sizeof(why), "%s: %s", which, ry_strerror(r));
		s = status_of(o, r == -RY_E_TOO_BIG ? SO_NOT_VERIFIED : SO_VERIFY_USAGE, why);
	} else {
		s = so_verify_bytes(o, bytes, len, p7s, plen, ca_pem, clen, ca_path);
	}
out:
	free(bytes);
	free(p7s);
	free(ca_pem);
	if (ret)
		*ret = o;
	else
		json_decref(o);
	return s;
}

void so_verify_print(FILE *out, FILE *err, const char *prog, const json_t *doc)
{
	enum so_verify_status s =
		(enum so_verify_status)json_integer_value(json_object_get(doc, "status"));
	const json_t *acc = json_object_get(doc, "acceptance"), *l;
	const char *reason = JSTR(doc, "reason");
	size_t i;

	if (!doc) {
		util_fprintf_safe(err, "%s: signoff verify: out of memory\n", prog);
		return;
	}
	if (s == SO_BAD_REPORT) {
		util_fprintf_safe(err,
				  "%s: signoff verify: the signature holds, but the report is "
				  "not one this program reads: %s\n",
				  prog, reason ? reason : "?");
		return;
	}
	if (s != SO_VERIFIED) {
		util_fprintf_safe(err, "%s: signoff verify: NOT VERIFIED: %s\n", prog,
				  reason ? reason : "?");
		return;
	}
	util_fprintf_safe(out, "verified: %s of cluster %s, signed %s by %s\n", JSTR(doc, "id"),
			  JSTR(doc, "cluster"), JSTR(doc, "signed_at"), JSTR(doc, "signer"));
	util_fprintf_safe(out, "verdict: %s\n", JSTR(doc, "verdict"));
	/* Version 2 says whether the report is an acceptance sign-off; version 1 does not. */
	if (json_is_true(acc))
		util_fprintf_safe(out, "acceptance: yes (an acceptance sign-off)\n");
	else if (json_is_false(acc))
		util_fprintf_safe(out, "acceptance: no (a smoke / baseline report, not an "
				       "acceptance sign-off)\n");
	json_array_foreach(json_object_get(doc, "acceptance_reasons"), i, l)
		util_fprintf_safe(out, "  not acceptance: %s\n", json_string_value(l));
	json_array_foreach(json_object_get(doc, "summary"), i, l)
		util_fprintf_safe(out, "  %s\n", json_string_value(l));
}
