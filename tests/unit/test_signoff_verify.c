/* Unit tests of common/signoff/verify (the offline sign-off verifier) and of the stock-OpenSSL
 * recipe every surface shows (SO_VERIFY_OPENSSL), on a CA of the test's own with a sign-off
 * certificate and a node's TLS client certificate. The forgery is the one a member node can
 * make: a report rewritten to pass, signed with the node's own key, which the CA issued. */
#include "common/pki/pki.h"
#include "common/signoff/verify.h"
#include "common/util/error.h"

#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/cms.h> /* after pem.h, for PEM_*_CMS() */
#include <openssl/x509v3.h>

struct fixture {
	char dir[PATH_MAX];
	X509 *ca, *signer, *node;
	EVP_PKEY *ca_key, *signer_key, *node_key;
};

/* A report of schema 1 with the members the verifier requires: a failed campaign. */
#define REPORT_V1                                                                                  \
	"{\"campaign\": {\"id\": \"c-1\"}, \"cluster\": \"prod-a\", \"created_at\": "              \
	"\"2026-12-01T04:30:00.000Z\", \"evaluation\": {}, \"id\": \"so-1\", \"kind\": "           \
	"\"signoff\", \"nodes\": [], \"results\": [], \"schema\": \"railyard-signoff/1\", "        \
	"\"summary\": [\"pair-bw fails on gpu-node-03\"], \"verdict\": \"fail\"}\n"
/* The same, rewritten by a node: pass. */
#define REPORT_FORGED                                                                              \
	"{\"campaign\": {\"id\": \"c-1\"}, \"cluster\": \"prod-a\", \"created_at\": "              \
	"\"2026-12-01T04:30:00.000Z\", \"evaluation\": {}, \"id\": \"so-1\", \"kind\": "           \
	"\"signoff\", \"nodes\": [], \"results\": [], \"schema\": \"railyard-signoff/1\", "        \
	"\"summary\": [\"every test passed\"], \"verdict\": \"pass\"}\n"

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char *csr = NULL;

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/test_signoff_verify.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(f->dir) || pki_ca_create("Railyard Test CA", 30, &f->ca, &f->ca_key) < 0 ||
	    pki_key_generate(&f->signer_key) < 0 ||
	    pki_cert_issue_signing(f->ca, f->ca_key, f->signer_key, "Railyard sign-off", 3650,
				   &f->signer) < 0 ||
	    pki_key_generate(&f->node_key) < 0 || pki_csr_create(f->node_key, "agent", &csr) < 0 ||
	    pki_csr_sign(f->ca, f->ca_key, csr, strlen(csr), "n-0001", "prod-a", 30, &f->node) <
		    0) {
		free(csr);
		return -1;
	}
	free(csr);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	X509_free(f->ca);
	X509_free(f->signer);
	X509_free(f->node);
	EVP_PKEY_free(f->ca_key);
	EVP_PKEY_free(f->signer_key);
	EVP_PKEY_free(f->node_key);
	nftw(f->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static void write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char path[PATH_MAX];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "w");
	assert_non_null(fp);
	assert_int_equal(fwrite(data, 1, len, fp), len);
	assert_int_equal(fclose(fp), 0);
}

/* A detached CMS signature over data by cert/key, made with OpenSSL directly, as stock
 * `openssl cms -sign -binary` makes it (signing time included): pki_cms_sign() refuses any
 * signer but a sign-off certificate, a forger does not use it. Caller frees. */
static char *cms_by(X509 *cert, EVP_PKEY *key, const char *data)
{
	BIO *in = BIO_new_mem_buf(data, (int)strlen(data)), *out = BIO_new(BIO_s_mem());
	unsigned int flags = CMS_DETACHED | CMS_BINARY;
	CMS_ContentInfo *cms;
	char *pem, *text;
	long n;

	assert_non_null(in);
	assert_non_null(out);
	cms = CMS_sign(cert, key, NULL, in, flags);
	assert_non_null(cms);
	assert_int_equal(PEM_write_bio_CMS(out, cms), 1);
	n = BIO_get_mem_data(out, &text);
	pem = strndup(text, (size_t)n);
	assert_non_null(pem);
	CMS_ContentInfo_free(cms);
	BIO_free(out);
	BIO_free(in);
	return pem;
}

/* dir/NAME made, with signoff.json (report), signoff.p7s (p7s) and ca.pem, as an export is.
 * Caller frees the path. */
static char *export_dir(struct fixture *f, const char *name, const char *report, const char *p7s)
{
	char *dir, *ca = NULL;
	BIO *b = BIO_new(BIO_s_mem());
	long n;

	assert_true(asprintf(&dir, "%s/%s", f->dir, name) > 0);
	assert_int_equal(mkdir(dir, 0755), 0);
	write_file(dir, "signoff.json", report, strlen(report));
	write_file(dir, "signoff.p7s", p7s, strlen(p7s));
	assert_non_null(b);
	assert_int_equal(PEM_write_bio_X509(b, f->ca), 1);
	n = BIO_get_mem_data(b, &ca);
	write_file(dir, "ca.pem", ca, (size_t)n);
	BIO_free(b);
	return dir;
}

/* so_verify_files() on dir's three files; *ret the result document (caller decrefs). */
static enum so_verify_status verify_dir(const char *dir, json_t **ret)
{
	char r[PATH_MAX], s[PATH_MAX], c[PATH_MAX];

	snprintf(r, sizeof(r), "%s/signoff.json", dir);
	snprintf(s, sizeof(s), "%s/signoff.p7s", dir);
	snprintf(c, sizeof(c), "%s/ca.pem", dir);
	return so_verify_files(r, s, c, ret);
}

#define JS(o, k) json_string_value(json_object_get((o), (k)))

/* A report signed by the sign-off key verifies (verdict fail, read as it is); the forgery, signed
 * by a node certificate of the same CA, is not verified, whatever it says. */
static void test_genuine_and_node_forgery(void **state)
{
	struct fixture *f = *state;
	char *p7s = NULL, *forged = cms_by(f->node, f->node_key, REPORT_FORGED), *good, *bad;
	json_t *o = NULL;

	assert_int_equal(
		pki_cms_sign(f->signer, f->signer_key, f->ca, REPORT_V1, strlen(REPORT_V1), &p7s),
		0);
	good = export_dir(f, "good", REPORT_V1, p7s);
	bad = export_dir(f, "forged", REPORT_FORGED, forged);

	assert_int_equal(verify_dir(good, &o), SO_VERIFIED);
	assert_true(json_is_true(json_object_get(o, "verified")));
	assert_string_equal(JS(o, "verdict"), "fail");
	assert_string_equal(JS(o, "signer"), "Railyard sign-off");
	assert_string_equal(JS(o, "schema"), "railyard-signoff/1");
	assert_null(json_object_get(o, "acceptance"));
	json_decref(o);

	assert_int_equal(verify_dir(bad, &o), SO_NOT_VERIFIED);
	assert_true(json_is_false(json_object_get(o, "verified")));
	assert_non_null(strstr(JS(o, "reason"), "not a sign-off certificate"));
	assert_null(json_object_get(o, "verdict"));
	json_decref(o);

	free(good);
	free(bad);
	free(forged);
	free(p7s);
}

/* Schema versions 1 and 2 are read, v2's acceptance members shown when present and checked
 * for their type; anything else is exit 3 with the signature holding. */
static void test_schema_versions(void **state)
{
	static const struct {
		const char *edit; /* jansson edits on REPORT_V1, as a JSON object merged on top */
		enum so_verify_status want;
		const char *reason;
	} cases[] = {
		{"{}", SO_VERIFIED, NULL},
		{"{\"schema\": \"railyard-signoff/2\", \"acceptance\": false, "
		 "\"acceptance_reasons\": [\"a quick campaign\", \"tcp, not the validation's "
		 "rdma\"], \"verdict\": \"pass\"}",
		 SO_VERIFIED, NULL},
		{"{\"schema\": \"railyard-signoff/2\", \"acceptance\": true, "
		 "\"acceptance_reasons\": [], \"verdict\": \"regressed\"}",
		 SO_VERIFIED, NULL},
		/* v2 needs v1's members too. */
		{"{\"schema\": \"railyard-signoff/2\", \"acceptance\": true, \"results\": null}",
		 SO_BAD_REPORT, "\"results\" is missing"},
		{"{\"schema\": \"railyard-signoff/2\", \"acceptance\": \"yes\"}", SO_BAD_REPORT,
		 "\"acceptance\" is not true or false"},
		{"{\"schema\": \"railyard-signoff/2\", \"acceptance\": false, "
		 "\"acceptance_reasons\": [1]}",
		 SO_BAD_REPORT, "\"acceptance_reasons\" holds a non-string"},
		{"{\"schema\": \"railyard-signoff/3\"}", SO_BAD_REPORT,
		 "unknown report schema railyard-signoff/3"},
		{"{\"schema\": null}", SO_BAD_REPORT, "unknown report schema (none)"},
	};
	struct fixture *f = *state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *doc = json_loads(REPORT_V1, 0, NULL),
		       *edit = json_loads(cases[i].edit, 0, NULL);
		json_t *o = json_object();
		char *bytes, *p7s = NULL, ca_pem[16384];
		const char *k;
		json_t *v;
		BIO *b = BIO_new(BIO_s_mem());
		long n;
		char *cap;
		enum so_verify_status s;

		assert_non_null(doc);
		assert_non_null(edit);
		json_object_foreach(edit, k, v)
		{
			if (json_is_null(v) && strcmp(k, "schema") != 0)
				json_object_del(doc, k);
			else
				json_object_set(doc, k, v);
		}
		bytes = json_dumps(doc, JSON_SORT_KEYS | JSON_INDENT(2));
		assert_non_null(bytes);
		assert_int_equal(
			pki_cms_sign(f->signer, f->signer_key, f->ca, bytes, strlen(bytes), &p7s),
			0);
		assert_int_equal(PEM_write_bio_X509(b, f->ca), 1);
		n = BIO_get_mem_data(b, &cap);
		assert_true((size_t)n < sizeof(ca_pem));
		memcpy(ca_pem, cap, (size_t)n);
		s = so_verify_bytes(o, bytes, strlen(bytes), p7s, strlen(p7s), ca_pem, (size_t)n,
				    "ca.pem");
		if (s != cases[i].want)
			fail_msg("case %zu: status %d, want %d (%s)", i, (int)s, (int)cases[i].want,
				 JS(o, "reason") ? JS(o, "reason") : "no reason");
		if (cases[i].reason && !strstr(JS(o, "reason"), cases[i].reason))
			fail_msg("case %zu: reason \"%s\", want \"%s\"", i, JS(o, "reason"),
				 cases[i].reason);
		if (s == SO_VERIFIED) {
			assert_string_equal(JS(o, "schema"), JS(doc, "schema"));
			assert_string_equal(JS(o, "verdict"), JS(doc, "verdict"));
			assert_true(json_equal(json_object_get(o, "acceptance"),
					       json_object_get(doc, "acceptance")) ||
				    !json_object_get(doc, "acceptance"));
		}
		/* The signature held: the signer is named whatever the report holds. */
		assert_string_equal(JS(o, "signer"), "Railyard sign-off");
		BIO_free(b);
		free(p7s);
		free(bytes);
		json_decref(o);
		json_decref(edit);
		json_decref(doc);
	}
}

/* What `signoff verify` prints: the verdict and, for a v2 report, whether it is an acceptance
 * sign-off with the reasons; NOT VERIFIED with the reason otherwise. */
static void test_print(void **state)
{
	json_t *ok =
		json_pack("{s:b, s:i, s:n, s:s, s:s, s:s, s:s, s:s, s:b, s:[s], s:[s]}", "verified",
			  1, "status", SO_VERIFIED, "reason", "id", "so-1", "cluster", "prod-a",
			  "signed_at", "2026-12-01T04:30:00.000Z", "signer", "Railyard sign-off",
			  "verdict", "pass", "acceptance", 0, "acceptance_reasons",
			  "a quick campaign", "summary", "every test passed");
	json_t *no = json_pack("{s:b, s:i, s:s}", "verified", 0, "status", SO_NOT_VERIFIED,
			       "reason", "the signer is not a sign-off certificate");
	char *out = NULL, *err = NULL;
	size_t olen = 0, elen = 0;
	FILE *fo, *fe;

	(void)state;
	assert_non_null(ok);
	assert_non_null(no);
	fo = open_memstream(&out, &olen);
	fe = open_memstream(&err, &elen);
	assert_non_null(fo);
	assert_non_null(fe);
	so_verify_print(fo, fe, "railyard", ok);
	so_verify_print(fo, fe, "railyard", no);
	fclose(fo);
	fclose(fe);
	assert_string_equal(out,
			    "verified: so-1 of cluster prod-a, signed 2026-12-01T04:30:00.000Z "
			    "by Railyard sign-off\n"
			    "verdict: pass\n"
			    "acceptance: no (a smoke / baseline report, not an acceptance "
			    "sign-off)\n"
			    "  not acceptance: a quick campaign\n"
			    "  every test passed\n");
	assert_string_equal(err, "railyard: signoff verify: NOT VERIFIED: the signer is not a "
				 "sign-off certificate\n");
	free(out);
	free(err);
	json_decref(ok);
	json_decref(no);
}

/* Run sh script in dir (output into dir/out); its exit status, or -1. */
static int run_in(const char *dir, const char *script)
{
	char *cmd;
	int rc;

	write_file(dir, "check.sh", script, strlen(script));
	assert_true(asprintf(&cmd, "cd '%s' && rm -f signer.pem && sh ./check.sh >out 2>&1", dir) >
		    0);
	rc = system(cmd);
	free(cmd);
	return rc >= 0 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static bool out_has(const char *dir, const char *text)
{
	char path[PATH_MAX], buf[4096];
	size_t n;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/out", dir);
	fp = fopen(path, "r");
	assert_non_null(fp);
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	return strstr(buf, text) != NULL;
}

/* A certificate of the CA with keyUsage digitalSignature and the EKUs eku ("critical,..."). */
static X509 *issue_with_eku(struct fixture *f, EVP_PKEY *key, const char *eku)
{
	X509 *x = X509_new();
	X509V3_CTX ctx;
	X509_EXTENSION *e;

	assert_non_null(x);
	assert_int_equal(X509_set_version(x, 2), 1);
	assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(x), 4242), 1);
	assert_non_null(X509_gmtime_adj(X509_getm_notBefore(x), -60));
	assert_non_null(X509_gmtime_adj(X509_getm_notAfter(x), 86400));
	assert_int_equal(X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
						    (const unsigned char *)"mixed", -1, -1, 0),
			 1);
	assert_int_equal(X509_set_issuer_name(x, X509_get_subject_name(f->ca)), 1);
	assert_int_equal(X509_set_pubkey(x, key), 1);
	X509V3_set_ctx(&ctx, f->ca, x, NULL, NULL, 0);
	e = X509V3_EXT_conf_nid(NULL, &ctx, NID_key_usage, "critical,digitalSignature");
	assert_non_null(e);
	assert_int_equal(X509_add_ext(x, e, -1), 1);
	X509_EXTENSION_free(e);
	e = X509V3_EXT_conf_nid(NULL, &ctx, NID_ext_key_usage, eku);
	assert_non_null(e);
	assert_int_equal(X509_add_ext(x, e, -1), 1);
	X509_EXTENSION_free(e);
	assert_true(X509_sign(x, f->ca_key, EVP_sha256()) > 0);
	return x;
}

/* The stock-OpenSSL recipe every surface shows, run as shown (sh, in the export's directory):
 * it accepts the genuine report and refuses the node-signed forgery, and a signer whose EKU
 * holds documentSigning among others; the signature check alone (what was shown before)
 * accepts the forgery, which is why the recipe has a second step. */
static void test_openssl_recipe(void **state)
{
	static const char old_cmd[] = "openssl cms -verify -binary -content signoff.json -in "
				      "signoff.p7s -inform PEM -CAfile ca.pem -purpose any -out "
				      "/dev/null\n";
	struct fixture *f = *state;
	char *p7s = NULL, *forged, *mixed_p7s, *good, *bad, *mixed;
	EVP_PKEY *mkey = NULL;
	X509 *mcert;

	if (system("command -v openssl >/dev/null 2>&1") != 0)
		skip();
	assert_int_equal(
		pki_cms_sign(f->signer, f->signer_key, f->ca, REPORT_V1, strlen(REPORT_V1), &p7s),
		0);
	forged = cms_by(f->node, f->node_key, REPORT_FORGED);
	assert_int_equal(pki_key_generate(&mkey), 0);
	mcert = issue_with_eku(f, mkey, "critical,1.3.6.1.5.5.7.3.36,clientAuth");
	mixed_p7s = cms_by(mcert, mkey, REPORT_FORGED);
	good = export_dir(f, "r-good", REPORT_V1, p7s);
	bad = export_dir(f, "r-node", REPORT_FORGED, forged);
	mixed = export_dir(f, "r-mixed", REPORT_FORGED, mixed_p7s);

	assert_int_equal(run_in(good, SO_VERIFY_OPENSSL "\n"), 0);
	assert_true(out_has(good, "sign-off verified"));
	/* Before: the signature check alone passes the node's forgery. */
	assert_int_equal(run_in(bad, old_cmd), 0);
	/* The recipe refuses it, and does not print the verified line. */
	assert_int_not_equal(run_in(bad, SO_VERIFY_OPENSSL "\n"), 0);
	assert_false(out_has(bad, "sign-off verified"));
	assert_int_equal(run_in(mixed, old_cmd), 0);
	assert_int_not_equal(run_in(mixed, SO_VERIFY_OPENSSL "\n"), 0);
	assert_false(out_has(mixed, "sign-off verified"));
	/* And the verifier agrees on all three. */
	assert_int_equal(verify_dir(good, NULL), SO_VERIFIED);
	assert_int_equal(verify_dir(bad, NULL), SO_NOT_VERIFIED);
	assert_int_equal(verify_dir(mixed, NULL), SO_NOT_VERIFIED);

	free(good);
	free(bad);
	free(mixed);
	free(mixed_p7s);
	free(forged);
	free(p7s);
	X509_free(mcert);
	EVP_PKEY_free(mkey);
}

/* Files: a missing one is usage (2), a CA file that is not a certificate is not verified. */
static void test_files(void **state)
{
	struct fixture *f = *state;
	char *p7s = NULL, *dir, r[PATH_MAX], s[PATH_MAX];
	json_t *o = NULL;

	assert_int_equal(
		pki_cms_sign(f->signer, f->signer_key, f->ca, REPORT_V1, strlen(REPORT_V1), &p7s),
		0);
	dir = export_dir(f, "files", REPORT_V1, p7s);
	snprintf(r, sizeof(r), "%s/signoff.json", dir);
	snprintf(s, sizeof(s), "%s/nope.p7s", dir);
	assert_int_equal(so_verify_files(r, s, r, &o), SO_VERIFY_USAGE);
	assert_non_null(strstr(JS(o, "reason"), "nope.p7s"));
	json_decref(o);
	snprintf(s, sizeof(s), "%s/signoff.p7s", dir);
	assert_int_equal(so_verify_files(r, s, r, &o), SO_NOT_VERIFIED);
	assert_non_null(strstr(JS(o, "reason"), "not a PEM certificate"));
	json_decref(o);
	free(dir);
	free(p7s);
}

/* The recipe is one text: the docs and the scripts that run it hold SO_VERIFY_OPENSSL as it is
 * (the HTML view and the CLI print the constant; test_portal runs the portal's). */
static void test_recipe_everywhere(void **state)
{
	static const char *const files[] = {"docs/signoff.md", "docs/rest.md", "deploy/demo.sh",
					    "bench/signoff-render.sh"};
	const char *src = getenv("RAILYARD_SOURCE_DIR");

	(void)state;
	if (!src)
		skip();
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[PATH_MAX], *text;
		size_t len;
		FILE *fp;

		snprintf(path, sizeof(path), "%s/%s", src, files[i]);
		fp = fopen(path, "r");
		assert_non_null(fp);
		text = calloc(1, 1 << 20);
		assert_non_null(text);
		len = fread(text, 1, (1 << 20) - 1, fp);
		fclose(fp);
		text[len] = '\0';
		if (!strstr(text, SO_VERIFY_OPENSSL))
			fail_msg(
				"%s does not show the verification recipe as SO_VERIFY_OPENSSL has "
				"it",
				files[i]);
		/* Nor the signature check alone, with nothing after it. */
		if (strstr(text, "-purpose any -out /dev/null\n") ||
		    strstr(text, "-purpose any -out /dev/null`"))
			fail_msg("%s still shows the signature check alone", files[i]);
		free(text);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_genuine_and_node_forgery, setup, teardown),
		cmocka_unit_test_setup_teardown(test_schema_versions, setup, teardown),
		cmocka_unit_test(test_print),
		cmocka_unit_test_setup_teardown(test_openssl_recipe, setup, teardown),
		cmocka_unit_test_setup_teardown(test_files, setup, teardown),
		cmocka_unit_test(test_recipe_everywhere),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
