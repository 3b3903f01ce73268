/* Unit tests of common/pki: CA, server certificates, key files, CSR signing, verification,
 * revocation, expiry, fingerprints and serials, sign-off certificates and CMS signatures.
 * Expected values are computed with OpenSSL directly, not with the code under test. */
#include "common/pki/pki.h"
#include "common/util/error.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/cms.h> /* after pem.h, for PEM_*_CMS() */
#include <openssl/rsa.h>
#include <openssl/x509v3.h>

struct fixture {
	char dir[PATH_MAX];
	X509 *ca;
	EVP_PKEY *ca_key;
};

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/test_pki.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	if (pki_ca_create("Railyard Test CA", 30, &f->ca, &f->ca_key) < 0) {
		rmdir(f->dir);
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	X509_free(f->ca);
	EVP_PKEY_free(f->ca_key);
	nftw(f->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static char *tmp_path(struct fixture *f, const char *name)
{
	char *p;

	assert_true(asprintf(&p, "%s/%s", f->dir, name) > 0);
	return p;
}

static X509 *issue_node(struct fixture *f, const char *node_id)
{
	EVP_PKEY *key;
	char *csr;
	X509 *cert;

	assert_int_equal(pki_key_generate(&key), 0);
	assert_int_equal(pki_csr_create(key, "agent", &csr), 0);
	assert_int_equal(pki_csr_sign(f->ca, f->ca_key, csr, strlen(csr), node_id, "c1", 1, &cert),
			 0);
	free(csr);
	EVP_PKEY_free(key);
	return cert;
}

static bool ext_critical(X509 *x, int nid)
{
	int idx = X509_get_ext_by_NID(x, nid, -1);

	assert_true(idx >= 0);
	return X509_EXTENSION_get_critical(X509_get_ext(x, idx)) == 1;
}

static void test_ca_create(void **state)
{
	struct fixture *f = *state;
	char *cn = NULL;
	X509 *ca;
	EVP_PKEY *key;

	assert_int_equal(X509_check_ca(f->ca), 1);
	assert_true(ext_critical(f->ca, NID_basic_constraints));
	assert_true(ext_critical(f->ca, NID_key_usage));
	assert_int_equal(X509_get_key_usage(f->ca), KU_KEY_CERT_SIGN | KU_CRL_SIGN);
	assert_non_null(X509_get0_subject_key_id(f->ca));
	assert_int_equal(X509_self_signed(f->ca, 1), 1);
	assert_int_equal(X509_get_version(f->ca), X509_VERSION_3);
	assert_int_equal(EVP_PKEY_get_base_id(f->ca_key), EVP_PKEY_EC);
	assert_int_equal(EVP_PKEY_get_bits(f->ca_key), 256);
	assert_int_equal(X509_check_private_key(f->ca, f->ca_key), 1);
	assert_int_equal(pki_key_matches_cert(f->ca_key, f->ca), 0);
	assert_int_equal(pki_cert_common_name(f->ca, &cn), 0);
	assert_string_equal(cn, "Railyard Test CA");
	free(cn);
	/* Valid now, expires within the requested 30 days (plus rounding). */
	assert_true(X509_cmp_current_time(X509_get0_notBefore(f->ca)) < 0);
	assert_true(X509_cmp_current_time(X509_get0_notAfter(f->ca)) > 0);
	assert_true(X509_cmp_time(X509_get0_notAfter(f->ca), &(time_t){time(NULL) + 31 * 86400}) <
		    0);
	assert_int_equal(pki_cert_verify(f->ca, f->ca, NULL, NULL, NULL, 0), 0);

	/* Bad arguments are refused, outputs untouched. */
	ca = (X509 *)0x1;
	assert_int_equal(pki_ca_create("", 30, &ca, &key), -RY_E_INVALID);
	assert_int_equal(pki_ca_create("x", 0, &ca, &key), -RY_E_INVALID);
	assert_int_equal(pki_ca_create("x", PKI_DAYS_MAX + 1, &ca, &key), -RY_E_INVALID);
	assert_int_equal(
		pki_ca_create("a-name-that-is-much-longer-than-the-sixty-four-bytes-allowed-"
			      "for-a-common-name",
			      30, &ca, &key),
		-RY_E_INVALID);
	assert_ptr_equal(ca, (X509 *)0x1);
}

static void test_server_cert_sans(void **state)
{
	struct fixture *f = *state;
	const char *sans[] = {"controller.example.com", "10.1.2.3", "fd00::17"};
	char err[256];
	EVP_PKEY *key;
	X509 *cert;

	assert_int_equal(pki_key_generate(&key), 0);
	assert_int_equal(
		pki_cert_issue_server(f->ca, f->ca_key, key, "controller", sans, 3, 10, &cert), 0);
	assert_int_equal(pki_cert_verify(f->ca, cert, NULL, NULL, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(pki_key_matches_cert(key, cert), 0);

	assert_int_equal(X509_check_host(cert, "controller.example.com", 0, 0, NULL), 1);
	assert_int_equal(X509_check_ip_asc(cert, "10.1.2.3", 0), 1);
	assert_int_equal(X509_check_ip_asc(cert, "fd00:0:0::17", 0), 1);
	assert_int_equal(X509_check_host(cert, "other.example.com", 0, 0, NULL), 0);
	assert_int_equal(X509_check_ip_asc(cert, "10.1.2.4", 0), 0);

	/* The IP addresses are iPAddress entries, not DNS names. */
	GENERAL_NAMES *gens = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
	int n_ip = 0, n_dns = 0;
	assert_non_null(gens);
	for (int i = 0; i < sk_GENERAL_NAME_num(gens); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
		n_ip += g->type == GEN_IPADD;
		n_dns += g->type == GEN_DNS;
	}
	assert_int_equal(n_ip, 2);
	assert_int_equal(n_dns, 1);
	GENERAL_NAMES_free(gens);

	assert_int_equal(X509_check_purpose(cert, X509_PURPOSE_SSL_SERVER, 0), 1);
	assert_int_equal(X509_check_purpose(cert, X509_PURPOSE_SSL_CLIENT, 0), 1);
	assert_int_equal(X509_check_ca(cert), 0);
	/* AKID names the CA's SKID. */
	assert_non_null(X509_get0_authority_key_id(cert));
	assert_int_equal(ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(cert),
					       X509_get0_subject_key_id(f->ca)),
			 0);
	X509_free(cert);

	/* A SAN that is neither an address nor a DNS name is refused, not smuggled through. */
	const char *bad[] = {"ok.example.com", "evil.com,IP:1.2.3.4"};
	cert = NULL;
	assert_int_equal(
		pki_cert_issue_server(f->ca, f->ca_key, key, "controller", bad, 2, 10, &cert),
		-RY_E_INVALID);
	assert_null(cert);
	/* A key that is not the CA's key cannot issue. */
	assert_int_equal(pki_cert_issue_server(f->ca, key, key, "controller", sans, 3, 10, &cert),
			 -EINVAL);
	ERR_clear_error();
	EVP_PKEY_free(key);
}

static void test_key_file(void **state)
{
	struct fixture *f = *state;
	char *path = tmp_path(f, "node.key"), *garbage = tmp_path(f, "garbage.key");
	EVP_PKEY *key, *loaded = NULL;
	struct stat st;
	FILE *fp;

	assert_int_equal(pki_key_generate(&key), 0);
	assert_int_equal(pki_key_write_pem(path, key), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(pki_key_load(path, &loaded), 0);
	assert_non_null(loaded);
	assert_int_equal(EVP_PKEY_eq(key, loaded), 1);
	EVP_PKEY_free(loaded);
	loaded = NULL;

	/* Overwriting keeps the mode and the new content. */
	EVP_PKEY *key2;
	assert_int_equal(pki_key_generate(&key2), 0);
	assert_int_equal(pki_key_write_pem(path, key2), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(pki_key_load(path, &loaded), 0);
	assert_int_equal(EVP_PKEY_eq(key2, loaded), 1);
	assert_int_not_equal(EVP_PKEY_eq(key, loaded), 1);
	EVP_PKEY_free(loaded);
	EVP_PKEY_free(key2);
	loaded = NULL;

	fp = fopen(garbage, "w");
	assert_non_null(fp);
	fputs("-----BEGIN PRIVATE KEY-----\nnot base64 at all!\n-----END PRIVATE KEY-----\n", fp);
	fclose(fp);
	assert_int_equal(pki_key_load(garbage, &loaded), -RY_E_INVALID);
	assert_null(loaded);
	ERR_clear_error();
	free(garbage);
	garbage = tmp_path(f, "missing.key");
	assert_int_equal(pki_key_load(garbage, &loaded), -ENOENT);

	EVP_PKEY_free(key);
	free(garbage);
	free(path);
}

static void test_cert_file_pem(void **state)
{
	struct fixture *f = *state;
	char *path = tmp_path(f, "ca.crt"), *pem;
	X509 *loaded = NULL;
	struct stat st;

	assert_int_equal(pki_cert_write(path, f->ca), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(pki_cert_load(path, &loaded), 0);
	assert_int_equal(X509_cmp(loaded, f->ca), 0);
	X509_free(loaded);
	loaded = NULL;

	assert_int_equal(pki_cert_to_pem(f->ca, &pem), 0);
	assert_non_null(strstr(pem, "-----BEGIN CERTIFICATE-----"));
	/* Not NUL-terminated within len: only len bytes are read. */
	assert_int_equal(pki_cert_from_pem(pem, strlen(pem), &loaded), 0);
	assert_int_equal(X509_cmp(loaded, f->ca), 0);
	X509_free(loaded);
	loaded = NULL;
	assert_int_equal(pki_cert_from_pem(pem, 40, &loaded), -RY_E_INVALID);
	assert_int_equal(pki_cert_from_pem("garbage", 7, &loaded), -RY_E_INVALID);
	assert_null(loaded);

	/* pki_last_error() reports the reasons and drains the queue. */
	char err[512];
	assert_string_not_equal(pki_last_error(err, sizeof(err)), "no OpenSSL error");
	assert_int_equal(ERR_peek_error(), 0);
	assert_string_equal(pki_last_error(err, sizeof(err)), "no OpenSSL error");
	free(pem);
	free(path);
}

static bool has_cn(X509 *x, const char *cn)
{
	char *got = NULL;
	bool eq;

	assert_int_equal(pki_cert_common_name(x, &got), 0);
	eq = strcmp(got, cn) == 0;
	free(got);
	return eq;
}

/* A CSR asking for another CN, an organisation and CA:TRUE plus a SAN; none may survive. */
static char *csr_greedy(EVP_PKEY *key)
{
	X509_REQ *req = X509_REQ_new();
	X509_NAME *name = X509_NAME_new();
	STACK_OF(X509_EXTENSION) *exts = sk_X509_EXTENSION_new_null();
	X509_EXTENSION *ext;
	BIO *bio = BIO_new(BIO_s_mem());
	char *data, *pem;
	long len;

	assert_non_null(req);
	assert_non_null(name);
	assert_non_null(exts);
	assert_non_null(bio);
	assert_int_equal(X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
						    (const unsigned char *)"other-cluster", -1, -1,
						    0),
			 1);
	assert_int_equal(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
						    (const unsigned char *)"controller", -1, -1, 0),
			 1);
	assert_int_equal(X509_REQ_set_subject_name(req, name), 1);
	assert_int_equal(X509_REQ_set_pubkey(req, key), 1);
	ext = X509V3_EXT_nconf_nid(NULL, NULL, NID_basic_constraints, "critical,CA:TRUE");
	assert_non_null(ext);
	sk_X509_EXTENSION_push(exts, ext);
	ext = X509V3_EXT_nconf_nid(NULL, NULL, NID_subject_alt_name, "DNS:controller.example.com");
	assert_non_null(ext);
	sk_X509_EXTENSION_push(exts, ext);
	assert_int_equal(X509_REQ_add_extensions(req, exts), 1);
	assert_true(X509_REQ_sign(req, key, EVP_sha256()) > 0);
	assert_int_equal(PEM_write_bio_X509_REQ(bio, req), 1);
	len = BIO_get_mem_data(bio, &data);
	pem = strndup(data, (size_t)len);
	assert_non_null(pem);
	BIO_free(bio);
	sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
	X509_NAME_free(name);
	X509_REQ_free(req);
	return pem;
}

static void test_csr_round_trip(void **state)
{
	struct fixture *f = *state;
	EVP_PKEY *key, *other;
	char *csr, org[128], err[256];
	X509 *cert;

	assert_int_equal(pki_key_generate(&key), 0);
	csr = csr_greedy(key);
	assert_int_equal(
		pki_csr_sign(f->ca, f->ca_key, csr, strlen(csr), "node-0042", "prod-a", 7, &cert),
		0);
	assert_true(has_cn(cert, "node-0042"));
	assert_int_equal(X509_NAME_get_text_by_NID(X509_get_subject_name(cert),
						   NID_organizationName, org, sizeof(org)),
			 (int)strlen("prod-a"));
	assert_string_equal(org, "prod-a");
	/* Exactly O and CN: nothing of the requested subject is kept. */
	assert_int_equal(X509_NAME_entry_count(X509_get_subject_name(cert)), 2);
	assert_int_equal(X509_NAME_cmp(X509_get_issuer_name(cert), X509_get_subject_name(f->ca)),
			 0);

	/* Client auth only, not a CA, no SAN carried over from the request. */
	assert_true(X509_get_extension_flags(cert) & EXFLAG_XKUSAGE);
	assert_int_equal(X509_get_extended_key_usage(cert), XKU_SSL_CLIENT);
	assert_int_equal(X509_check_purpose(cert, X509_PURPOSE_SSL_CLIENT, 0), 1);
	assert_int_equal(X509_check_purpose(cert, X509_PURPOSE_SSL_SERVER, 0), 0);
	assert_int_equal(X509_check_ca(cert), 0);
	assert_true(ext_critical(cert, NID_basic_constraints));
	assert_int_equal(X509_get_key_usage(cert), KU_DIGITAL_SIGNATURE);
	assert_true(X509_get_ext_by_NID(cert, NID_subject_alt_name, -1) < 0);
	assert_non_null(X509_get0_authority_key_id(cert));

	assert_int_equal(pki_key_matches_cert(key, cert), 0);
	assert_int_equal(pki_key_generate(&other), 0);
	assert_int_equal(pki_key_matches_cert(other, cert), -RY_E_INVALID);
	assert_int_equal(pki_cert_verify(f->ca, cert, NULL, NULL, err, sizeof(err)), 0);

	X509_free(cert);
	free(csr);

	/* pki_csr_create() output is a valid CSR with the requested CN and key. */
	assert_int_equal(pki_csr_create(key, "agent-host", &csr), 0);
	BIO *bio = BIO_new_mem_buf(csr, -1);
	X509_REQ *req = PEM_read_bio_X509_REQ(bio, NULL, NULL, NULL);
	char cn[64];
	assert_non_null(req);
	assert_int_equal(X509_REQ_verify(req, X509_REQ_get0_pubkey(req)), 1);
	assert_int_equal(EVP_PKEY_eq(X509_REQ_get0_pubkey(req), key), 1);
	assert_true(X509_NAME_get_text_by_NID(X509_REQ_get_subject_name(req), NID_commonName, cn,
					      sizeof(cn)) > 0);
	assert_string_equal(cn, "agent-host");
	X509_REQ_free(req);
	BIO_free(bio);
	free(csr);
	EVP_PKEY_free(other);
	EVP_PKEY_free(key);
}

/* Re-encode DER as PEM under the CSR label, without parsing it. */
static char *der_to_csr_pem(const unsigned char *der, long len)
{
	BIO *bio = BIO_new(BIO_s_mem());
	char *data, *pem;
	long n;

	assert_non_null(bio);
	assert_int_equal(PEM_write_bio(bio, "CERTIFICATE REQUEST", "", der, len) > 0, 1);
	n = BIO_get_mem_data(bio, &data);
	pem = strndup(data, (size_t)n);
	assert_non_null(pem);
	BIO_free(bio);
	return pem;
}

static void test_csr_rejected(void **state)
{
	struct fixture *f = *state;
	unsigned char *der = NULL, *hit;
	char *csr, *bad, *big;
	EVP_PKEY *key, *weak;
	X509_REQ *req;
	X509 *cert = NULL;
	BIO *bio;
	int len;

	assert_int_equal(pki_key_generate(&key), 0);
	assert_int_equal(pki_csr_create(key, "tampered-name", &csr), 0);
	bio = BIO_new_mem_buf(csr, -1);
	req = PEM_read_bio_X509_REQ(bio, NULL, NULL, NULL);
	assert_non_null(req);
	len = i2d_X509_REQ(req, &der);
	assert_true(len > 0);

	/* Flip a byte of the signed subject: still parses, signature no longer matches. */
	hit = memmem(der, (size_t)len, "tampered-name", 13);
	assert_non_null(hit);
	hit[0] ^= 0x01;
	bad = der_to_csr_pem(der, len);
	assert_int_equal(pki_csr_sign(f->ca, f->ca_key, bad, strlen(bad), "n1", "c1", 1, &cert),
			 -RY_E_INVALID);
	free(bad);
	hit[0] ^= 0x01;

	/* Flip the last byte of the signature itself. */
	der[len - 1] ^= 0x55;
	bad = der_to_csr_pem(der, len);
	assert_int_equal(pki_csr_sign(f->ca, f->ca_key, bad, strlen(bad), "n1", "c1", 1, &cert),
			 -RY_E_INVALID);
	free(bad);
	der[len - 1] ^= 0x55;

	/* Untampered re-encoding still signs: the rejections above were the tampering. */
	bad = der_to_csr_pem(der, len);
	assert_int_equal(pki_csr_sign(f->ca, f->ca_key, bad, strlen(bad), "n1", "c1", 1, &cert), 0);
	X509_free(cert);
	cert = NULL;
	free(bad);

	/* Garbage, empty, truncated, and oversized input. */
	assert_int_equal(pki_csr_sign(f->ca, f->ca_key, "hello", 5, "n1", "c1", 1, &cert),
			 -RY_E_INVALID);
	assert_int_equal(pki_csr_sign(f->ca, f->ca_key, "", 0, "n1", "c1", 1, &cert),
			 -RY_E_INVALID);
	assert_int_equal(pki_csr_sign(f->ca, f->ca_key, csr, strlen(csr) / 2, "n1", "c1", 1, &cert),
			 -RY_E_INVALID);
	big = malloc(PKI_CSR_MAX + 2);
	assert_non_null(big);
	memcpy(big, csr, strlen(csr));
	memset(big + strlen(csr), '\n', PKI_CSR_MAX + 1 - strlen(csr));
	big[PKI_CSR_MAX + 1] = '\0';
	assert_int_equal(pki_csr_sign(f->ca, f->ca_key, big, PKI_CSR_MAX + 1, "n1", "c1", 1, &cert),
			 -RY_E_INVALID);
	free(big);
	/* A certificate is not a CSR. */
	char *cert_pem;
	assert_int_equal(pki_cert_to_pem(f->ca, &cert_pem), 0);
	assert_int_equal(
		pki_csr_sign(f->ca, f->ca_key, cert_pem, strlen(cert_pem), "n1", "c1", 1, &cert),
		-RY_E_INVALID);
	free(cert_pem);
	/* Names chosen by the controller are checked too. */
	assert_int_equal(pki_csr_sign(f->ca, f->ca_key, csr, strlen(csr), "", "c1", 1, &cert),
			 -RY_E_INVALID);
	assert_null(cert);

	/* Weak keys: RSA-1024 and Ed25519 CSRs, correctly self-signed, are refused. */
	weak = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024);
	assert_non_null(weak);
	free(csr);
	assert_int_equal(pki_csr_create(weak, "weak", &csr), 0);
	assert_int_equal(pki_csr_sign(f->ca, f->ca_key, csr, strlen(csr), "n1", "c1", 1, &cert),
			 -RY_E_INVALID);
	EVP_PKEY_free(weak);
	free(csr);
	weak = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	assert_non_null(weak);
	assert_int_equal(pki_csr_create(weak, "ed", &csr), 0);
	assert_int_equal(pki_csr_sign(f->ca, f->ca_key, csr, strlen(csr), "n1", "c1", 1, &cert),
			 -RY_E_INVALID);
	assert_null(cert);
	EVP_PKEY_free(weak);
	free(csr);
	ERR_clear_error();

	OPENSSL_free(der);
	X509_REQ_free(req);
	BIO_free(bio);
	EVP_PKEY_free(key);
}

static void test_csr_rsa_2048_accepted(void **state)
{
	struct fixture *f = *state;
	EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
	X509 *cert;
	char *csr;

	assert_non_null(key);
	assert_int_equal(pki_csr_create(key, "rsa", &csr), 0);
	assert_int_equal(pki_csr_sign(f->ca, f->ca_key, csr, strlen(csr), "n-rsa", "c1", 1, &cert),
			 0);
	assert_true(has_cn(cert, "n-rsa"));
	assert_int_equal(pki_cert_verify(f->ca, cert, NULL, NULL, NULL, 0), 0);
	X509_free(cert);
	free(csr);
	EVP_PKEY_free(key);
}

static void test_other_ca_refused(void **state)
{
	struct fixture *f = *state;
	EVP_PKEY *other_key, *fake_key;
	X509 *other_ca, *cert, *fake_ca, *fake_cert;
	char err[256];

	/* A genuine certificate from another CA. */
	assert_int_equal(pki_ca_create("Other CA", 30, &other_ca, &other_key), 0);
	cert = issue_node(&(struct fixture){.ca = other_ca, .ca_key = other_key}, "node-1");
	assert_int_equal(pki_cert_verify(other_ca, cert, NULL, NULL, NULL, 0), 0);
	assert_int_equal(pki_cert_verify(f->ca, cert, NULL, NULL, err, sizeof(err)), -RY_E_CRYPTO);
	assert_true(strlen(err) > 0);
	assert_int_equal(ERR_peek_error(), 0);

	/* An impostor CA with the very same name as ours but its own key. */
	assert_int_equal(pki_ca_create("Railyard Test CA", 30, &fake_ca, &fake_key), 0);
	fake_cert = issue_node(&(struct fixture){.ca = fake_ca, .ca_key = fake_key}, "node-1");
	assert_int_equal(pki_cert_verify(f->ca, fake_cert, NULL, NULL, err, sizeof(err)),
			 -RY_E_CRYPTO);
	assert_true(strlen(err) > 0);
	assert_int_equal(pki_cert_verify(f->ca, fake_ca, NULL, NULL, NULL, 0), -RY_E_CRYPTO);

	X509_free(fake_cert);
	X509_free(fake_ca);
	EVP_PKEY_free(fake_key);
	X509_free(cert);
	X509_free(other_ca);
	EVP_PKEY_free(other_key);
}

struct revoked {
	const char *serial;
	int calls;
	int fail;
};

static int is_revoked(void *userdata, const char *serial_hex)
{
	struct revoked *rv = userdata;

	rv->calls++;
	if (rv->fail)
		return rv->fail;
	return strcmp(serial_hex, rv->serial) == 0;
}

static void test_revoked(void **state)
{
	struct fixture *f = *state;
	X509 *a = issue_node(f, "node-a"), *b = issue_node(f, "node-b");
	char sa[PKI_SERIAL_LEN], err[256];
	struct revoked rv = {.serial = sa};

	assert_int_equal(pki_cert_serial(a, sa), 0);
	assert_int_equal(pki_cert_verify(f->ca, a, is_revoked, &rv, err, sizeof(err)),
			 -RY_E_REVOKED);
	assert_int_equal(rv.calls, 1);
	assert_non_null(strstr(err, sa));
	assert_int_equal(pki_cert_verify(f->ca, b, is_revoked, &rv, err, sizeof(err)), 0);
	assert_int_equal(rv.calls, 2);
	/* A failing lookup fails verification with its own error. */
	rv.fail = -EIO;
	assert_int_equal(pki_cert_verify(f->ca, b, is_revoked, &rv, err, sizeof(err)), -EIO);
	/* The revocation list is not asked about certificates that do not chain. */
	EVP_PKEY *ok;
	X509 *other_ca;
	assert_int_equal(pki_ca_create("Other CA", 30, &other_ca, &ok), 0);
	rv.fail = 0;
	rv.calls = 0;
	assert_int_equal(pki_cert_verify(other_ca, a, is_revoked, &rv, err, sizeof(err)),
			 -RY_E_CRYPTO);
	assert_int_equal(rv.calls, 0);
	X509_free(other_ca);
	EVP_PKEY_free(ok);
	X509_free(a);
	X509_free(b);
}

static void test_expired(void **state)
{
	struct fixture *f = *state;
	X509 *cert = issue_node(f, "node-old");
	char err[256];

	/* Valid now; with pki_cert_verify_at, expired in 2 days and not yet valid yesterday. */
	assert_int_equal(pki_cert_verify(f->ca, cert, NULL, NULL, err, sizeof(err)), 0);
	assert_int_equal(pki_cert_verify_at(f->ca, cert, time(NULL) + 2 * 86400, NULL, NULL, err,
					    sizeof(err)),
			 -RY_E_CRYPTO);
	assert_non_null(strstr(err, "expired"));
	assert_int_equal(
		pki_cert_verify_at(f->ca, cert, time(NULL) - 86400, NULL, NULL, err, sizeof(err)),
		-RY_E_CRYPTO);
	assert_non_null(strstr(err, "not yet valid"));

	/* A certificate that really expired yesterday, re-signed by our CA with OpenSSL. */
	assert_non_null(X509_time_adj_ex(X509_getm_notBefore(cert), -3, 0, NULL));
	assert_non_null(X509_time_adj_ex(X509_getm_notAfter(cert), -1, 0, NULL));
	assert_true(X509_sign(cert, f->ca_key, EVP_sha256()) > 0);
	assert_int_equal(pki_cert_verify(f->ca, cert, NULL, NULL, err, sizeof(err)), -RY_E_CRYPTO);
	assert_non_null(strstr(err, "expired"));
	X509_free(cert);
}

static void test_fingerprint(void **state)
{
	struct fixture *f = *state;
	unsigned char *der = NULL, md[32];
	char fp[PKI_FINGERPRINT_LEN], cli[128], bare[65];
	unsigned int mdlen = 0;
	int len;

	assert_int_equal(pki_cert_fingerprint(f->ca, fp), 0);
	assert_int_equal(strlen(fp), PKI_FINGERPRINT_LEN - 1);
	assert_memory_equal(fp, "sha256:", 7);

	/* Expected: SHA-256 of the DER, printed as `openssl x509 -noout -fingerprint -sha256`. */
	len = i2d_X509(f->ca, &der);
	assert_true(len > 0);
	assert_int_equal(EVP_Digest(der, (size_t)len, md, &mdlen, EVP_sha256(), NULL), 1);
	assert_int_equal(mdlen, 32);
	OPENSSL_free(der);
	int off = snprintf(cli, sizeof(cli), "sha256 Fingerprint=");
	for (int i = 0; i < 32; i++) {
		off += snprintf(cli + off, sizeof(cli) - (size_t)off, i ? ":%02X" : "%02X", md[i]);
		snprintf(bare + 2 * i, 3, "%02x", md[i]);
	}
	assert_true(pki_fingerprint_equal(fp, cli));
	assert_true(pki_fingerprint_equal(cli + strlen("sha256 Fingerprint="), fp));
	assert_true(pki_fingerprint_equal(fp, bare));
	assert_string_equal(fp + 7, bare);
	assert_true(pki_fingerprint_equal(fp, fp + 7));
	assert_true(
		pki_fingerprint_equal("SHA256:ABC0000000000000000000000000000000000000000000000"
				      "000000000000000\n",
				      "abc000000000000000000000000000000000000000000000000000000"
				      "0000000"));

	/* One digit off, too short, too long, junk, NULL: all unequal. */
	bare[10] = bare[10] == '0' ? '1' : '0';
	assert_false(pki_fingerprint_equal(fp, bare));
	bare[10] = '\0';
	assert_false(pki_fingerprint_equal(bare, bare));
	char longer[80];
	snprintf(longer, sizeof(longer), "%s00", fp);
	assert_false(pki_fingerprint_equal(fp, longer));
	assert_false(pki_fingerprint_equal(fp, "sha1:00"));
	assert_false(pki_fingerprint_equal(fp, NULL));
	assert_false(pki_fingerprint_equal(NULL, NULL));

	/* Another certificate has another fingerprint. */
	X509 *cert = issue_node(f, "node-fp");
	char fp2[PKI_FINGERPRINT_LEN];
	assert_int_equal(pki_cert_fingerprint(cert, fp2), 0);
	assert_false(pki_fingerprint_equal(fp, fp2));

	/* From PEM without parsing: the same, for the first certificate; a key block before it is
	 * passed over; no certificate, no fingerprint. */
	char *pem = NULL, *two = NULL, fp3[PKI_FINGERPRINT_LEN];
	assert_int_equal(pki_cert_to_pem(cert, &pem), 0);
	assert_int_equal(pki_pem_fingerprint(pem, strlen(pem), fp3), 0);
	assert_string_equal(fp3, fp2);
	assert_true(asprintf(&two,
			     "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n%s",
			     pem) > 0);
	assert_int_equal(pki_pem_fingerprint(two, strlen(two), fp3), 0);
	assert_string_equal(fp3, fp2);
	assert_int_equal(pki_pem_fingerprint(two, 40, fp3), -RY_E_INVALID);
	assert_int_equal(pki_pem_fingerprint("not pem", 7, fp3), -RY_E_INVALID);
	assert_int_equal(pki_pem_fingerprint("", 0, fp3), -RY_E_INVALID);
	assert_int_equal(pki_pem_fingerprint(pem, PKI_PEM_MAX + 1, fp3), -RY_E_TOO_BIG);
	free(two);
	free(pem);
	X509_free(cert);
}

static void test_serials(void **state)
{
	struct fixture *f = *state;
	X509 *a = issue_node(f, "node-s1"), *b = issue_node(f, "node-s2");
	char sa[PKI_SERIAL_LEN], sb[PKI_SERIAL_LEN], *hex;
	BIGNUM *bn;

	assert_int_equal(pki_cert_serial(a, sa), 0);
	assert_int_equal(pki_cert_serial(b, sb), 0);
	assert_string_not_equal(sa, sb);
	/* 128-bit positive serials, lower-case, equal to what OpenSSL prints (modulo case). */
	assert_int_equal(strlen(sa), 32);
	assert_int_equal(strspn(sa, "0123456789abcdef"), 32);
	bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(a), NULL);
	assert_non_null(bn);
	assert_false(BN_is_negative(bn));
	hex = BN_bn2hex(bn);
	assert_int_equal(strcasecmp(hex, sa), 0);
	OPENSSL_free(hex);
	BN_free(bn);
	X509_free(a);
	X509_free(b);
}

static X509 *issue_signing(struct fixture *f, EVP_PKEY **ret_key)
{
	X509 *cert;

	assert_int_equal(pki_key_generate(ret_key), 0);
	assert_int_equal(pki_cert_issue_signing(f->ca, f->ca_key, *ret_key, "Railyard sign-off",
						3650, &cert),
			 0);
	return cert;
}

static void test_signing_cert(void **state)
{
	struct fixture *f = *state;
	EXTENDED_KEY_USAGE *eku;
	ASN1_OBJECT *want;
	char org[64], err[256], *text;
	EVP_PKEY *key, *weak;
	X509 *cert = NULL;
	BIO *bio;
	long n;

	cert = issue_signing(f, &key);
	assert_true(has_cn(cert, "Railyard sign-off"));
	assert_int_equal(X509_NAME_get_text_by_NID(X509_get_subject_name(cert),
						   NID_organizationName, org, sizeof(org)),
			 (int)strlen("railyard"));
	assert_string_equal(org, "railyard");
	assert_int_equal(X509_NAME_entry_count(X509_get_subject_name(cert)), 2);
	assert_int_equal(pki_key_matches_cert(key, cert), 0);
	assert_int_equal(pki_cert_verify(f->ca, cert, NULL, NULL, err, sizeof(err)), 0);

	/* Exactly basicConstraints, keyUsage, extendedKeyUsage, SKID and AKID. */
	assert_int_equal(X509_get_ext_count(cert), 5);
	assert_true(ext_critical(cert, NID_basic_constraints));
	assert_true(ext_critical(cert, NID_key_usage));
	assert_true(ext_critical(cert, NID_ext_key_usage));
	assert_int_equal(X509_check_ca(cert), 0);
	assert_int_equal(X509_get_key_usage(cert), KU_DIGITAL_SIGNATURE | KU_NON_REPUDIATION);
	eku = X509_get_ext_d2i(cert, NID_ext_key_usage, NULL, NULL);
	want = OBJ_txt2obj("1.3.6.1.5.5.7.3.36", 1);
	assert_non_null(eku);
	assert_non_null(want);
	assert_int_equal(sk_ASN1_OBJECT_num(eku), 1);
	assert_int_equal(OBJ_cmp(sk_ASN1_OBJECT_value(eku, 0), want), 0);
	assert_string_equal(PKI_OID_DOCUMENT_SIGNING, "1.3.6.1.5.5.7.3.36");
	ASN1_OBJECT_free(want);
	sk_ASN1_OBJECT_pop_free(eku, ASN1_OBJECT_free);
	assert_non_null(X509_get0_subject_key_id(cert));
	assert_int_equal(ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(cert),
					       X509_get0_subject_key_id(f->ca)),
			 0);
	/* TLS refuses it, both ways. */
	assert_int_equal(X509_check_purpose(cert, X509_PURPOSE_SSL_SERVER, 0), 0);
	assert_int_equal(X509_check_purpose(cert, X509_PURPOSE_SSL_CLIENT, 0), 0);

	/* As `openssl x509 -text` prints it: critical, the OID in some spelling. */
	bio = BIO_new(BIO_s_mem());
	assert_non_null(bio);
	assert_int_equal(X509_print(bio, cert), 1);
	n = BIO_get_mem_data(bio, &text);
	text = strndup(text, (size_t)n);
	assert_non_null(text);
	assert_non_null(strstr(text, "X509v3 Extended Key Usage: critical"));
	assert_true(strstr(text, "1.3.6.1.5.5.7.3.36") || strstr(text, "Document Signing"));
	free(text);
	BIO_free(bio);
	X509_free(cert);
	cert = NULL;

	/* Bad name, days, key or CA key: refused, output untouched. */
	assert_int_equal(pki_cert_issue_signing(f->ca, f->ca_key, key, "", 10, &cert),
			 -RY_E_INVALID);
	assert_int_equal(pki_cert_issue_signing(f->ca, f->ca_key, key, "s", 0, &cert),
			 -RY_E_INVALID);
	assert_int_equal(pki_cert_issue_signing(f->ca, key, key, "s", 10, &cert), -EINVAL);
	weak = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024);
	assert_non_null(weak);
	assert_int_equal(pki_cert_issue_signing(f->ca, f->ca_key, weak, "s", 10, &cert),
			 -RY_E_INVALID);
	assert_null(cert);
	ERR_clear_error();
	EVP_PKEY_free(weak);
	EVP_PKEY_free(key);
}

/* A detached CMS signature made with OpenSSL directly, as pki_cms_sign() would not make it:
 * flags as for CMS_sign(); a signing time of its own when signed_at is not 0. */
static char *cms_raw(X509 *cert, EVP_PKEY *key, const void *data, size_t len, unsigned int flags,
		     time_t signed_at)
{
	BIO *in = BIO_new_mem_buf(data, (int)len), *out = BIO_new(BIO_s_mem());
	CMS_ContentInfo *cms;
	CMS_SignerInfo *si;
	char *pem, *text;
	long n;

	assert_non_null(in);
	assert_non_null(out);
	cms = CMS_sign(NULL, NULL, NULL, NULL, flags | CMS_PARTIAL);
	assert_non_null(cms);
	si = CMS_add1_signer(cms, cert, key, EVP_sha256(), flags);
	assert_non_null(si);
	if (signed_at) {
		ASN1_TIME *t = ASN1_TIME_set(NULL, signed_at);

		assert_non_null(t);
		assert_int_equal(CMS_signed_add1_attr_by_NID(si, NID_pkcs9_signingTime,
							     ASN1_STRING_type(t), t, -1),
				 1);
		ASN1_TIME_free(t);
	}
	assert_int_equal(CMS_final(cms, in, NULL, flags), 1);
	assert_int_equal(PEM_write_bio_CMS(out, cms), 1);
	n = BIO_get_mem_data(out, &text);
	pem = strndup(text, (size_t)n);
	assert_non_null(pem);
	CMS_ContentInfo_free(cms);
	BIO_free(out);
	BIO_free(in);
	return pem;
}

static const char report[] = "{\"schema\":\"railyard-signoff/1\",\"verdict\":\"pass\"}\n";

static void test_cms_round_trip(void **state)
{
	struct fixture *f = *state;
	EVP_PKEY *key, *other;
	X509 *cert, *signer = NULL, *node;
	int64_t at = 0;
	char *p7s, err[256];
	time_t now = time(NULL);

	cert = issue_signing(f, &key);
	assert_int_equal(pki_cms_sign(cert, key, f->ca, report, strlen(report), &p7s), 0);
	assert_memory_equal(p7s, "-----BEGIN CMS-----\n", 20);
	assert_non_null(strstr(p7s, "-----END CMS-----\n"));
	assert_int_equal(pki_cms_verify(f->ca, report, strlen(report), p7s, strlen(p7s), &signer,
					&at, err, sizeof(err)),
			 0);
	assert_string_equal(err, "");
	assert_non_null(signer);
	assert_int_equal(X509_cmp(signer, cert), 0);
	assert_true(at >= (int64_t)now - 5 && at <= (int64_t)time(NULL) + 5);
	assert_int_equal(ERR_peek_error(), 0);
	X509_free(signer);
	/* The outputs are optional. */
	assert_int_equal(pki_cms_verify(f->ca, report, strlen(report), p7s, strlen(p7s), NULL, NULL,
					NULL, 0),
			 0);

	/* Its shape, read with OpenSSL: detached, one SHA-256 signer, only its certificate. */
	BIO *bio = BIO_new_mem_buf(p7s, -1);
	CMS_ContentInfo *cms = PEM_read_bio_CMS(bio, NULL, NULL, NULL);
	STACK_OF(X509) * certs;
	X509_ALGOR *dig;
	assert_non_null(cms);
	assert_int_equal(CMS_is_detached(cms), 1);
	assert_int_equal(sk_CMS_SignerInfo_num(CMS_get0_SignerInfos(cms)), 1);
	CMS_SignerInfo *si = sk_CMS_SignerInfo_value(CMS_get0_SignerInfos(cms), 0);
	CMS_SignerInfo_get0_algs(si, NULL, NULL, &dig, NULL);
	assert_int_equal(OBJ_obj2nid(dig->algorithm), NID_sha256);
	assert_true(CMS_signed_get_attr_by_NID(si, NID_pkcs9_signingTime, -1) >= 0);
	certs = CMS_get1_certs(cms);
	assert_int_equal(sk_X509_num(certs), 1);
	assert_int_equal(X509_cmp(sk_X509_value(certs, 0), cert), 0);
	sk_X509_pop_free(certs, X509_free);
	CMS_ContentInfo_free(cms);
	BIO_free(bio);
	free(p7s);

	/* Empty content signs and verifies too. */
	assert_int_equal(pki_cms_sign(cert, key, f->ca, NULL, 0, &p7s), 0);
	assert_int_equal(pki_cms_verify(f->ca, NULL, 0, p7s, strlen(p7s), NULL, NULL, NULL, 0), 0);
	assert_int_equal(pki_cms_verify(f->ca, "x", 1, p7s, strlen(p7s), NULL, NULL, NULL, 0),
			 -RY_E_CRYPTO);
	free(p7s);

	/* pki_cms_sign() refuses what would not verify: another key, a node or CA certificate,
	 * a signing certificate of another CA. */
	p7s = NULL;
	assert_int_equal(pki_key_generate(&other), 0);
	assert_int_equal(pki_cms_sign(cert, other, f->ca, report, strlen(report), &p7s),
			 -RY_E_INVALID);
	node = issue_node(f, "node-signer");
	assert_int_equal(pki_cms_sign(node, key, f->ca, report, strlen(report), &p7s),
			 -RY_E_INVALID);
	assert_int_equal(pki_cms_sign(f->ca, f->ca_key, f->ca, report, strlen(report), &p7s),
			 -RY_E_INVALID);
	X509 *other_ca;
	EVP_PKEY *other_ca_key;
	assert_int_equal(pki_ca_create("Other CA", 30, &other_ca, &other_ca_key), 0);
	assert_int_equal(pki_cms_sign(cert, key, other_ca, report, strlen(report), &p7s),
			 -RY_E_INVALID);
	assert_null(p7s);
	assert_int_equal(ERR_peek_error(), 0);
	X509_free(other_ca);
	EVP_PKEY_free(other_ca_key);
	X509_free(node);
	EVP_PKEY_free(other);
	X509_free(cert);
	EVP_PKEY_free(key);
}

static void test_cms_tampered(void **state)
{
	struct fixture *f = *state;
	char *p7s, *data, err[256];
	size_t len = strlen(report);
	X509 *cert, *signer = NULL;
	EVP_PKEY *key;

	cert = issue_signing(f, &key);
	assert_int_equal(pki_cms_sign(cert, key, f->ca, report, len, &p7s), 0);
	data = strdup(report);
	assert_non_null(data);
	/* "pass" becomes "fail" in spirit: one byte changed. */
	data[len - 4] ^= 0x01;
	assert_int_equal(
		pki_cms_verify(f->ca, data, len, p7s, strlen(p7s), &signer, NULL, err, sizeof(err)),
		-RY_E_CRYPTO);
	assert_string_equal(err, "signature does not match the content");
	assert_null(signer);
	assert_int_equal(ERR_peek_error(), 0);
	/* One byte fewer. */
	data[len - 4] ^= 0x01;
	assert_int_equal(pki_cms_verify(f->ca, data, len - 1, p7s, strlen(p7s), NULL, NULL, err,
					sizeof(err)),
			 -RY_E_CRYPTO);
	assert_int_equal(pki_cms_verify(f->ca, data, len, p7s, strlen(p7s), NULL, NULL, NULL, 0),
			 0);
	free(data);
	free(p7s);
	X509_free(cert);
	EVP_PKEY_free(key);
}

/* A SignedData whose digestAlgorithms names a digest OpenSSL does not know: refused, and nothing
 * leaks (OpenSSL 3.0's CMS_verify() leaked its copy of a memory BIO then; found by
 * tests/fuzz/fuzz_signoff_verify, the ASan suite's LeakSanitizer checks it here). */
static void test_cms_unknown_digest(void **state)
{
	static const unsigned char sha256_oid[] = {0x06, 0x09, 0x60, 0x86, 0x48, 0x01,
						   0x65, 0x03, 0x04, 0x02, 0x01};
	struct fixture *f = *state;
	char *p7s, *pem = NULL, err[256];
	size_t len = strlen(report);
	unsigned char *der = NULL;
	long der_len = 0, pem_len;
	char *name = NULL, *header = NULL;
	X509 *cert;
	EVP_PKEY *key;
	BIO *bio;

	cert = issue_signing(f, &key);
	assert_int_equal(pki_cms_sign(cert, key, f->ca, report, len, &p7s), 0);
	bio = BIO_new_mem_buf(p7s, -1);
	assert_int_equal(PEM_read_bio(bio, &name, &header, &der, &der_len), 1);
	BIO_free(bio);
	/* The first SHA-256 OID is the SignedData's digestAlgorithms: 2.16.840.1.101.3.4.2.99. */
	for (long i = 0; i + (long)sizeof(sha256_oid) <= der_len; i++) {
		if (memcmp(der + i, sha256_oid, sizeof(sha256_oid)) == 0) {
			der[i + sizeof(sha256_oid) - 1] = 99;
			break;
		}
	}
	bio = BIO_new(BIO_s_mem());
	assert_true(PEM_write_bio(bio, "CMS", "", der, der_len) > 0);
	pem_len = BIO_get_mem_data(bio, &pem);
	assert_true(pem_len > 0);
	assert_int_equal(pki_cms_verify(f->ca, report, len, pem, (size_t)pem_len, NULL, NULL, err,
					sizeof(err)),
			 -RY_E_CRYPTO);
	assert_true(strlen(err) > 0);
	assert_int_equal(ERR_peek_error(), 0);
	BIO_free(bio);
	OPENSSL_free(name);
	OPENSSL_free(header);
	OPENSSL_free(der);
	free(p7s);
	X509_free(cert);
	EVP_PKEY_free(key);
}

static void test_cms_other_ca(void **state)
{
	struct fixture *f = *state;
	struct fixture other = {0}, fake = {0};
	EVP_PKEY *key, *fake_key;
	X509 *cert, *fake_cert;
	char *p7s, err[256];

	/* A genuine sign-off signature under another CA. */
	assert_int_equal(pki_ca_create("Other CA", 30, &other.ca, &other.ca_key), 0);
	cert = issue_signing(&other, &key);
	assert_int_equal(pki_cms_sign(cert, key, other.ca, report, strlen(report), &p7s), 0);
	assert_int_equal(pki_cms_verify(other.ca, report, strlen(report), p7s, strlen(p7s), NULL,
					NULL, NULL, 0),
			 0);
	assert_int_equal(pki_cms_verify(f->ca, report, strlen(report), p7s, strlen(p7s), NULL, NULL,
					err, sizeof(err)),
			 -RY_E_CRYPTO);
	assert_non_null(strstr(err, "signer not issued by this CA"));
	assert_int_equal(ERR_peek_error(), 0);
	free(p7s);

	/* An impostor CA with our CA's very name. */
	assert_int_equal(pki_ca_create("Railyard Test CA", 30, &fake.ca, &fake.ca_key), 0);
	fake_cert = issue_signing(&fake, &fake_key);
	assert_int_equal(pki_cms_sign(fake_cert, fake_key, fake.ca, report, strlen(report), &p7s),
			 0);
	assert_int_equal(pki_cms_verify(f->ca, report, strlen(report), p7s, strlen(p7s), NULL, NULL,
					err, sizeof(err)),
			 -RY_E_CRYPTO);
	assert_non_null(strstr(err, "signer not issued by this CA"));
	free(p7s);

	X509_free(fake_cert);
	EVP_PKEY_free(fake_key);
	X509_free(fake.ca);
	EVP_PKEY_free(fake.ca_key);
	X509_free(cert);
	EVP_PKEY_free(key);
	X509_free(other.ca);
	EVP_PKEY_free(other.ca_key);
}

static void test_cms_malformed(void **state)
{
	struct fixture *f = *state;
	const char *garbage = "-----BEGIN CMS-----\nbm90IGEgc2lnbmF0dXJl\n-----END CMS-----\n";
	char *p7s, *raw, *big, *ca_pem, err[256];
	size_t len = strlen(report);
	X509 *cert, *signer = NULL;
	EVP_PKEY *key;
	int64_t at = 42;

	cert = issue_signing(f, &key);
	assert_int_equal(pki_cms_sign(cert, key, f->ca, report, len, &p7s), 0);

	/* Half the PEM: an error, never a verification. */
	assert_int_equal(pki_cms_verify(f->ca, report, len, p7s, strlen(p7s) / 2, &signer, &at, err,
					sizeof(err)),
			 -RY_E_INVALID);
	assert_true(strlen(err) > 0);
	assert_null(signer);
	assert_int_equal(at, 42);
	assert_int_equal(ERR_peek_error(), 0);
	/* Garbage with and without PEM armour, empty, another PEM type, too big. */
	assert_int_equal(pki_cms_verify(f->ca, report, len, garbage, strlen(garbage), NULL, NULL,
					err, sizeof(err)),
			 -RY_E_INVALID);
	assert_non_null(strstr(err, "not a PEM CMS signature"));
	assert_int_equal(
		pki_cms_verify(f->ca, report, len, "hello", 5, NULL, NULL, err, sizeof(err)),
		-RY_E_INVALID);
	assert_int_equal(pki_cms_verify(f->ca, report, len, "", 0, NULL, NULL, err, sizeof(err)),
			 -RY_E_INVALID);
	assert_int_equal(pki_cert_to_pem(f->ca, &ca_pem), 0);
	assert_int_equal(pki_cms_verify(f->ca, report, len, ca_pem, strlen(ca_pem), NULL, NULL, err,
					sizeof(err)),
			 -RY_E_INVALID);
	free(ca_pem);
	big = malloc(PKI_PEM_MAX + 1);
	assert_non_null(big);
	memcpy(big, p7s, strlen(p7s));
	memset(big + strlen(p7s), '\n', PKI_PEM_MAX + 1 - strlen(p7s));
	assert_int_equal(pki_cms_verify(f->ca, report, len, big, PKI_PEM_MAX + 1, NULL, NULL, err,
					sizeof(err)),
			 -RY_E_TOO_BIG);
	free(big);
	assert_int_equal(ERR_peek_error(), 0);

	/* Well-formed CMS, but not what a sign-off is: no signed attributes (so no signing
	 * time), or the content embedded instead of detached. */
	raw = cms_raw(cert, key, report, len, CMS_DETACHED | CMS_BINARY | CMS_NOATTR, 0);
	assert_int_equal(
		pki_cms_verify(f->ca, report, len, raw, strlen(raw), NULL, NULL, err, sizeof(err)),
		-RY_E_INVALID);
	assert_non_null(strstr(err, "signing time"));
	free(raw);
	raw = cms_raw(cert, key, report, len, CMS_BINARY, 0);
	assert_int_equal(
		pki_cms_verify(f->ca, report, len, raw, strlen(raw), NULL, NULL, err, sizeof(err)),
		-RY_E_INVALID);
	assert_non_null(strstr(err, "detached"));
	free(raw);
	/* The raw route itself is sound: the same signature, detached, verifies. */
	raw = cms_raw(cert, key, report, len, CMS_DETACHED | CMS_BINARY, 0);
	assert_int_equal(pki_cms_verify(f->ca, report, len, raw, strlen(raw), NULL, NULL, NULL, 0),
			 0);
	free(raw);
	assert_int_equal(ERR_peek_error(), 0);

	free(p7s);
	X509_free(cert);
	EVP_PKEY_free(key);
}

static void test_cms_not_signoff_signer(void **state)
{
	struct fixture *f = *state;
	const char *sans[] = {"controller"};
	EVP_PKEY *key, *server_key;
	char *csr, *raw, err[256];
	size_t len = strlen(report);
	X509 *node, *server, *signer = NULL;

	/* A node's client certificate from this very CA: chain and signature are fine. */
	assert_int_equal(pki_key_generate(&key), 0);
	assert_int_equal(pki_csr_create(key, "agent", &csr), 0);
	assert_int_equal(
		pki_csr_sign(f->ca, f->ca_key, csr, strlen(csr), "node-7", "c1", 30, &node), 0);
	raw = cms_raw(node, key, report, len, CMS_DETACHED | CMS_BINARY, 0);
	assert_int_equal(pki_cms_verify(f->ca, report, len, raw, strlen(raw), &signer, NULL, err,
					sizeof(err)),
			 -RY_E_REFUSED);
	assert_string_equal(err,
			    "signer is not a sign-off certificate (extended key usage clientAuth)");
	assert_null(signer);
	assert_int_equal(ERR_peek_error(), 0);
	free(raw);

	/* Nor the controller's server certificate. */
	assert_int_equal(pki_key_generate(&server_key), 0);
	assert_int_equal(pki_cert_issue_server(f->ca, f->ca_key, server_key, "controller", sans, 1,
					       30, &server),
			 0);
	raw = cms_raw(server, server_key, report, len, CMS_DETACHED | CMS_BINARY, 0);
	assert_int_equal(
		pki_cms_verify(f->ca, report, len, raw, strlen(raw), NULL, NULL, err, sizeof(err)),
		-RY_E_REFUSED);
	assert_non_null(strstr(err, "serverAuth, clientAuth"));
	free(raw);

	/* Nor the CA itself. */
	raw = cms_raw(f->ca, f->ca_key, report, len, CMS_DETACHED | CMS_BINARY, 0);
	assert_int_equal(
		pki_cms_verify(f->ca, report, len, raw, strlen(raw), NULL, NULL, err, sizeof(err)),
		-RY_E_REFUSED);
	assert_non_null(strstr(err, "a CA certificate"));
	free(raw);

	X509_free(server);
	EVP_PKEY_free(server_key);
	X509_free(node);
	free(csr);
	EVP_PKEY_free(key);
}

static void test_cms_signing_time(void **state)
{
	struct fixture *f = *state, ca = {0};
	time_t now = time(NULL), signed_at = now - 2 * 86400;
	size_t len = strlen(report);
	char *raw, err[256];
	int64_t at = 0;
	EVP_PKEY *key;
	X509 *cert;

	/* The chain is checked at the signing time, the CA's validity included: a CA valid
	 * from ten days ago, then a sign-off certificate valid from three days ago to yesterday. */
	assert_int_equal(pki_ca_create("Railyard Old CA", 30, &ca.ca, &ca.ca_key), 0);
	assert_non_null(X509_time_adj_ex(X509_getm_notBefore(ca.ca), -10, 0, NULL));
	assert_true(X509_sign(ca.ca, ca.ca_key, EVP_sha256()) > 0);
	cert = issue_signing(&ca, &key);
	assert_non_null(X509_time_adj_ex(X509_getm_notBefore(cert), -3, 0, NULL));
	assert_non_null(X509_time_adj_ex(X509_getm_notAfter(cert), -1, 0, NULL));
	assert_true(X509_sign(cert, ca.ca_key, EVP_sha256()) > 0);

	/* Signed while it was valid: the report outlives the certificate. */
	raw = cms_raw(cert, key, report, len, CMS_DETACHED | CMS_BINARY, signed_at);
	assert_int_equal(
		pki_cms_verify(ca.ca, report, len, raw, strlen(raw), NULL, &at, err, sizeof(err)),
		0);
	assert_int_equal(at, (int64_t)signed_at);
	free(raw);

	/* Signed after it expired: refused, whatever the signature. */
	raw = cms_raw(cert, key, report, len, CMS_DETACHED | CMS_BINARY, 0);
	assert_int_equal(
		pki_cms_verify(ca.ca, report, len, raw, strlen(raw), NULL, &at, err, sizeof(err)),
		-RY_E_CRYPTO);
	assert_non_null(strstr(err, "signer certificate had expired at the signing time"));
	free(raw);
	/* Before it was valid: likewise. */
	raw = cms_raw(cert, key, report, len, CMS_DETACHED | CMS_BINARY, now - 4 * 86400);
	assert_int_equal(
		pki_cms_verify(ca.ca, report, len, raw, strlen(raw), NULL, &at, err, sizeof(err)),
		-RY_E_CRYPTO);
	assert_non_null(strstr(err, "signer certificate was not yet valid at the signing time"));
	free(raw);
	/* And pki_cms_sign() does not sign with it now. */
	assert_int_equal(pki_cms_sign(cert, key, ca.ca, report, len, &raw), -RY_E_INVALID);
	assert_int_equal(ERR_peek_error(), 0);

	/* A signing time before the CA itself was valid: the CA's validity counts too. */
	raw = cms_raw(cert, key, report, len, CMS_DETACHED | CMS_BINARY, now - 20 * 86400);
	assert_int_equal(
		pki_cms_verify(ca.ca, report, len, raw, strlen(raw), NULL, &at, err, sizeof(err)),
		-RY_E_CRYPTO);
	assert_non_null(strstr(err, "CA certificate was not yet valid at the signing time"));
	free(raw);
	/* The fixture's CA did not issue it. */
	raw = cms_raw(cert, key, report, len, CMS_DETACHED | CMS_BINARY, signed_at);
	assert_int_equal(
		pki_cms_verify(f->ca, report, len, raw, strlen(raw), NULL, &at, err, sizeof(err)),
		-RY_E_CRYPTO);
	assert_non_null(strstr(err, "signer not issued by this CA"));
	assert_int_equal(at, (int64_t)signed_at);
	free(raw);

	X509_free(cert);
	EVP_PKEY_free(key);
	X509_free(ca.ca);
	EVP_PKEY_free(ca.ca_key);
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	assert_int_equal(fwrite(data, 1, len, fp), len);
	assert_int_equal(fclose(fp), 0);
}

/* Stock OpenSSL accepts what pki_cms_sign() writes, as docs/signoff.md promises (the first step
 * of its recipe; the whole recipe, signer check included, is tested in test_signoff_verify). */
static void test_cms_openssl_cli(void **state)
{
	struct fixture *f = *state;
	char *data = tmp_path(f, "signoff.json"), *sig = tmp_path(f, "signoff.p7s");
	char *ca = tmp_path(f, "ca.pem"), *cmd, *p7s;
	EVP_PKEY *key;
	X509 *cert;
	int rc;

	if (system("command -v openssl >/dev/null 2>&1") != 0) {
		free(data);
		free(sig);
		free(ca);
		skip();
	}
	cert = issue_signing(f, &key);
	assert_int_equal(pki_cms_sign(cert, key, f->ca, report, strlen(report), &p7s), 0);
	write_file(data, report, strlen(report));
	write_file(sig, p7s, strlen(p7s));
	assert_int_equal(pki_cert_write(ca, f->ca), 0);
	assert_true(asprintf(&cmd,
			     "openssl cms -verify -binary -content '%s' -in '%s' -inform PEM "
			     "-CAfile '%s' -purpose any -out /dev/null 2>/dev/null",
			     data, sig, ca) > 0);
	rc = system(cmd);
	assert_int_equal(rc, 0);
	/* And refuses it over other bytes. */
	write_file(data, report, strlen(report) - 1);
	rc = system(cmd);
	assert_int_not_equal(rc, 0);

	free(cmd);
	free(p7s);
	X509_free(cert);
	EVP_PKEY_free(key);
	free(ca);
	free(sig);
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ca_create),
		cmocka_unit_test(test_server_cert_sans),
		cmocka_unit_test(test_key_file),
		cmocka_unit_test(test_cert_file_pem),
		cmocka_unit_test(test_csr_round_trip),
		cmocka_unit_test(test_csr_rejected),
		cmocka_unit_test(test_csr_rsa_2048_accepted),
		cmocka_unit_test(test_other_ca_refused),
		cmocka_unit_test(test_revoked),
		cmocka_unit_test(test_expired),
		cmocka_unit_test(test_fingerprint),
		cmocka_unit_test(test_serials),
		cmocka_unit_test(test_signing_cert),
		cmocka_unit_test(test_cms_round_trip),
		cmocka_unit_test(test_cms_tampered),
		cmocka_unit_test(test_cms_unknown_digest),
		cmocka_unit_test(test_cms_other_ca),
		cmocka_unit_test(test_cms_malformed),
		cmocka_unit_test(test_cms_not_signoff_signer),
		cmocka_unit_test(test_cms_signing_time),
		cmocka_unit_test(test_cms_openssl_cli),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
