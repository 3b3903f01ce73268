/* Fuzz target: the offline sign-off verifier (`signoff verify`, so_verify_files(): a
 * detached CMS signature in PEM over a report's JSON, checked against a CA certificate, then the
 * report's schema), as a customer runs it on files handed to them. The set-up makes a CA and a
 * sign-off certificate and signs the fixture report (tests/fixtures/signoff/report.json).
 *
 * Input: u8 mode, then:
 *   mode % 4 == 0: the signature file's text; the fixture report
 *   mode % 4 == 1: DER bytes, written as the PEM a signer would; the fixture report
 *   mode % 4 == 2: the fixture's own signature (DER) with patches applied: (u16 offset, u8 xor)
 *                  each, and a last u16 that truncates when it is shorter
 *   mode % 4 == 3: a report (the rest) that the set-up's real key signs: the signature holds,
 *                  so everything after it (the report's schema checks) is reached
 * Invariants: the status is one of the four and "verified" says whether it is 0; a signature
 * the real key made over the bytes verifies, whatever the report holds (status 0 or 3). */
#include "tests/fuzz/fuzz_util.h"

#include "common/pki/pki.h"
#include "common/signoff/verify.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

static X509 *ca, *signer;
static EVP_PKEY *key;
static char *dir, *ca_path, *json_path, *p7s_path;
static char *report;
static size_t report_len;
static unsigned char *base_der;
static int base_der_len;

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0)
		abort();
}

/* The body of a PEM block as DER (a new buffer, caller frees). */
static unsigned char *pem_to_der(const char *pem, int *ret_len)
{
	const char *b = strstr(pem, "-----\n"), *e = strstr(pem, "\n-----END");
	char *b64 = malloc(strlen(pem) + 1);
	unsigned char *der = malloc(strlen(pem));
	size_t n = 0;
	int len;

	if (!b || !e || !b64 || !der)
		abort();
	for (const char *p = b + 6; p < e; p++)
		if (*p != '\n')
			b64[n++] = *p;
	len = EVP_DecodeBlock(der, (unsigned char *)b64, (int)n);
	if (len < 0)
		abort();
	while (n > 0 && b64[n - 1] == '=') {
		len--;
		n--;
	}
	free(b64);
	*ret_len = len;
	return der;
}

/* DER as the PEM a signer writes: "-----BEGIN CMS-----", base64 in 64-column lines. */
static char *der_to_pem(const unsigned char *der, size_t len, size_t *ret_len)
{
	size_t b64len = 4 * ((len + 2) / 3), cap = b64len + b64len / 64 + 64, n = 0;
	char *pem = malloc(cap), *b64 = malloc(b64len + 1);

	if (!pem || !b64)
		abort();
	EVP_EncodeBlock((unsigned char *)b64, der, (int)len);
	n += (size_t)snprintf(pem, cap, "-----BEGIN CMS-----\n");
	for (size_t i = 0; i < b64len; i += 64) {
		size_t k = b64len - i < 64 ? b64len - i : 64;

		memcpy(pem + n, b64 + i, k);
		n += k;
		pem[n++] = '\n';
	}
	n += (size_t)snprintf(pem + n, cap - n, "-----END CMS-----\n");
	free(b64);
	*ret_len = n;
	return pem;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	EVP_PKEY *ca_key = NULL;
	char *pem = NULL, *p;

	(void)argc;
	(void)argv;
	fuzz_quiet_logs();
	if (pki_ca_create("Railyard CA fuzz", 30, &ca, &ca_key) < 0 || pki_key_generate(&key) < 0 ||
	    pki_cert_issue_signing(ca, ca_key, key, "railyard sign-off fuzz", 30, &signer) < 0 ||
	    pki_cert_to_pem(ca, &pem) < 0)
		abort();
	EVP_PKEY_free(ca_key);
	dir = fuzz_mkdtemp("signoff");
	if (asprintf(&ca_path, "%s/ca.pem", dir) < 0 ||
	    asprintf(&json_path, "%s/signoff.json", dir) < 0 ||
	    asprintf(&p7s_path, "%s/signoff.p7s", dir) < 0)
		abort();
	write_file(ca_path, pem, strlen(pem));
	free(pem);
	p = fuzz_src_path("tests/fixtures/signoff/report.json");
	report = fuzz_read_file(p, &report_len);
	free(p);
	if (pki_cms_sign(signer, key, ca, report, report_len, &pem) < 0)
		abort();
	base_der = pem_to_der(pem, &base_der_len);
	/* FUZZ_DUMP=DIR: the signature as made here, for seeds (another run has another key). */
	if (getenv("FUZZ_DUMP")) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/signoff.p7s", getenv("FUZZ_DUMP"));
		write_file(path, pem, strlen(pem));
		snprintf(path, sizeof(path), "%s/signoff.der", getenv("FUZZ_DUMP"));
		write_file(path, base_der, (size_t)base_der_len);
	}
	free(pem);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {data, size};
	unsigned mode = fuzz_u8(&in) % 4;
	enum so_verify_status s;
	bool signed_by_us = false;
	json_t *o = NULL;
	char *p7s = NULL;
	size_t n, p7s_len = 0;
	const uint8_t *rest;

	switch (mode) {
	case 0:
		rest = fuzz_bytes(&in, in.left, &n);
		write_file(p7s_path, rest, n);
		write_file(json_path, report, report_len);
		break;
	case 1:
		rest = fuzz_bytes(&in, in.left, &n);
		p7s = der_to_pem(rest, n, &p7s_len);
		write_file(p7s_path, p7s, p7s_len);
		write_file(json_path, report, report_len);
		break;
	case 2: {
		unsigned char *der = malloc((size_t)base_der_len);
		size_t len = (size_t)base_der_len;

		if (!der)
			abort();
		memcpy(der, base_der, len);
		while (in.left >= 3) {
			size_t off = fuzz_u16(&in);
			uint8_t x = fuzz_u8(&in);

			der[off % len] ^= x;
		}
		if (in.left == 2) {
			size_t cut = fuzz_u16(&in);

			if (cut < len)
				len = cut;
		}
		p7s = der_to_pem(der, len, &p7s_len);
		free(der);
		write_file(p7s_path, p7s, p7s_len);
		write_file(json_path, report, report_len);
		break;
	}
	default:
		rest = fuzz_bytes(&in, in.left, &n);
		FUZZ_CHECK(pki_cms_sign(signer, key, ca, rest, n, &p7s) == 0, "cannot sign");
		write_file(p7s_path, p7s, strlen(p7s));
		write_file(json_path, rest, n);
		signed_by_us = true;
		break;
	}
	s = so_verify_files(json_path, p7s_path, ca_path, &o);
	FUZZ_CHECK(s == SO_VERIFIED || s == SO_NOT_VERIFIED || s == SO_VERIFY_USAGE ||
			   s == SO_BAD_REPORT,
		   "status %d", (int)s);
	FUZZ_CHECK(json_is_boolean(json_object_get(o, "verified")) &&
			   json_is_true(json_object_get(o, "verified")) == (s == SO_VERIFIED),
		   "\"verified\" does not match status %d", (int)s);
	if (signed_by_us)
		FUZZ_CHECK(s == SO_VERIFIED || s == SO_BAD_REPORT,
			   "a good signature did not verify: %s",
			   json_string_value(json_object_get(o, "reason")));
	json_decref(o);
	free(p7s);
	return 0;
}
