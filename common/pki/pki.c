/* PKI over OpenSSL 3 (EVP/X509/CMS only, no deprecated calls): key files, the controller CA,
 * server, node and sign-off certificates, CSR signing, verification, fingerprints and serials,
 * detached CMS signatures over sign-off reports. */
#include "common/pki/pki.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
/* After pem.h: cms.h declares PEM_read_bio_CMS() only when pem.h came first. */
#include <openssl/cms.h>
#include <openssl/x509v3.h>

#define SERIAL_BYTES 16

/* PEM readers must never fall back to OpenSSL's default callback, which prompts on the
 * controlling terminal for an encrypted block: a daemon would hang on hostile input. */
static int no_password_cb(char *buf, int size, int rwflag, void *u)
{
	return -1;
}

static int check_name(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > PKI_NAME_MAX)
		return -RY_E_INVALID;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return -RY_E_INVALID;
	return 0;
}

static int check_days(int days)
{
	return days >= 1 && days <= PKI_DAYS_MAX ? 0 : -RY_E_INVALID;
}

/* EdDSA keys sign without a separate digest; everything else signs SHA-256. */
static const EVP_MD *sign_md(EVP_PKEY *key)
{
	int id = EVP_PKEY_get_base_id(key);

	return id == EVP_PKEY_ED25519 || id == EVP_PKEY_ED448 ? NULL : EVP_sha256();
}

/* Copy the contents of a memory BIO into a new NUL-terminated string (caller frees). */
static int bio_take_string(BIO *bio, char **ret)
{
	char *data, *s;
	long len;

	len = BIO_get_mem_data(bio, &data);
	if (len <= 0)
		return -RY_E_CRYPTO;
	s = malloc((size_t)len + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, data, (size_t)len);
	s[len] = '\0';
	*ret = s;
	return 0;
}

static int ca_check(X509 *ca, EVP_PKEY *ca_key)
{
	if (X509_check_ca(ca) == 0)
		return -EINVAL;
	if (X509_check_private_key(ca, ca_key) != 1)
		return -EINVAL;
	return 0;
}

/* A random positive serial of exactly SERIAL_BYTES bytes (126 random bits): the top bit is
 * cleared so that the DER integer needs no padding byte, the next one set so that it never
 * gets shorter. */
static int set_random_serial(X509 *x)
{
	unsigned char b[SERIAL_BYTES];
	BIGNUM *bn = NULL;
	int r;

	r = util_random_bytes(b, sizeof(b));
	if (r < 0)
		return r;
	b[0] = (unsigned char)((b[0] & 0x7f) | 0x40);
	bn = BN_bin2bn(b, sizeof(b), NULL);
	if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)))
		r = -RY_E_CRYPTO;
	BN_free(bn);
	return r;
}

/* A new unsigned certificate: v3, random serial, subject [O=org,] CN=cn, issued by issuer's
 * subject (or self-issued when issuer is NULL), valid from a little before now for days. */
static int cert_new(X509 *issuer, const char *cn, const char *org, EVP_PKEY *pub, int days,
		    X509 **ret)
{
	X509_NAME *name = NULL;
	X509 *x = NULL;
	int r;

	x = X509_new();
	name = X509_NAME_new();
	if (!x || !name) {
		r = -ENOMEM;
		goto out;
	}
	if (!X509_set_version(x, X509_VERSION_3)) {
		r = -RY_E_CRYPTO;
		goto out;
	}
	r = set_random_serial(x);
	if (r < 0)
		goto out;
	/* Rejected entries here are bad UTF-8 in outside-supplied names. */
	if (org && !X509_NAME_add_entry_by_NID(name, NID_organizationName, MBSTRING_UTF8,
					       (const unsigned char *)org, -1, -1, 0)) {
		r = -RY_E_INVALID;
		goto out;
	}
	if (!X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8,
					(const unsigned char *)cn, -1, -1, 0)) {
		r = -RY_E_INVALID;
		goto out;
	}
	if (!X509_set_subject_name(x, name) ||
	    !X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name) ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), -PKI_BACKDATE_SEC) ||
	    !X509_time_adj_ex(X509_getm_notAfter(x), days, 0, NULL) || !X509_set_pubkey(x, pub)) {
		r = -RY_E_CRYPTO;
		goto out;
	}
	*ret = x;
	x = NULL;
	r = 0;
out:
	X509_NAME_free(name);
	X509_free(x);
	return r;
}

/* Add one extension written in openssl.cnf syntax; values are constants of this file, never
 * outside input (SANs are built structurally in add_sans()). */
static int add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509_EXTENSION *ext;
	X509V3_CTX ctx;
	int r = 0;

	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	ext = X509V3_EXT_nconf_nid(NULL, &ctx, nid, value);
	if (!ext)
		return -RY_E_CRYPTO;
	if (!X509_add_ext(x, ext, -1))
		r = -RY_E_CRYPTO;
	X509_EXTENSION_free(ext);
	return r;
}

static bool dns_name_valid(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > 253 || s[0] == '.' || strstr(s, ".."))
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!isalnum(c) && c != '-' && c != '.' && c != '_' && c != '*')
			return false;
	}
	return true;
}

static int san_push(GENERAL_NAMES *gens, const char *san)
{
	unsigned char addr[16];
	GENERAL_NAME *gen = NULL;
	ASN1_STRING *value = NULL;
	int type, alen = 0;

	if (inet_pton(AF_INET, san, addr) == 1)
		alen = 4;
	else if (inet_pton(AF_INET6, san, addr) == 1)
		alen = 16;
	else if (!dns_name_valid(san))
		return -RY_E_INVALID;

	if (alen > 0) {
		type = GEN_IPADD;
		value = ASN1_OCTET_STRING_new();
		if (!value || !ASN1_STRING_set(value, addr, alen))
			goto fail;
	} else {
		type = GEN_DNS;
		value = ASN1_IA5STRING_new();
		if (!value || !ASN1_STRING_set(value, san, -1))
			goto fail;
	}
	gen = GENERAL_NAME_new();
	if (!gen)
		goto fail;
	GENERAL_NAME_set0_value(gen, type, value);
	value = NULL;
	if (!sk_GENERAL_NAME_push(gens, gen))
		goto fail;
	return 0;
fail:
	GENERAL_NAME_free(gen);
	ASN1_STRING_free(value);
	return -ENOMEM;
}

static int add_sans(X509 *x, const char *const *sans, size_t n_sans)
{
	GENERAL_NAMES *gens;
	int r = 0;

	if (n_sans == 0)
		return 0;
	gens = sk_GENERAL_NAME_new_null();
	if (!gens)
		return -ENOMEM;
	for (size_t i = 0; i < n_sans; i++) {
		if (!sans[i]) {
			r = -EINVAL;
			goto out;
		}
		r = san_push(gens, sans[i]);
		if (r < 0)
			goto out;
	}
	if (X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, X509V3_ADD_DEFAULT) != 1)
		r = -RY_E_CRYPTO;
out:
	GENERAL_NAMES_free(gens);
	return r;
}

static int cert_sign(X509 *x, EVP_PKEY *key)
{
	return X509_sign(x, key, sign_md(key)) > 0 ? 0 : -RY_E_CRYPTO;
}

int pki_key_generate(EVP_PKEY **ret_key)
{
	EVP_PKEY *key;

	if (!ret_key)
		return -EINVAL;
	ERR_clear_error();
	key = EVP_EC_gen("P-256");
	if (!key)
		return -RY_E_CRYPTO;
	*ret_key = key;
	return 0;
}

int pki_key_write_pem(const char *path, EVP_PKEY *key)
{
	char *data;
	long len;
	BIO *bio;
	int r;

	if (!path || !key)
		return -EINVAL;
	ERR_clear_error();
	/* secmem: the buffer is wiped on every reallocation and on free. */
	bio = BIO_new(BIO_s_secmem());
	if (!bio)
		return -ENOMEM;
	if (!PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL)) {
		r = -RY_E_CRYPTO;
		goto out;
	}
	len = BIO_get_mem_data(bio, &data);
	if (len <= 0) {
		r = -RY_E_CRYPTO;
		goto out;
	}
	r = fs_write_file_atomic(path, data, (size_t)len, 0600);
out:
	BIO_free(bio);
	return r;
}

int pki_key_load(const char *path, EVP_PKEY **ret_key)
{
	EVP_PKEY *key = NULL;
	char *buf = NULL;
	BIO *bio = NULL;
	size_t len;
	int r;

	if (!path || !ret_key)
		return -EINVAL;
	ERR_clear_error();
	r = fs_read_file(path, PKI_PEM_MAX, &buf, &len);
	if (r < 0)
		return r;
	bio = BIO_new_mem_buf(buf, (int)len);
	if (!bio) {
		r = -ENOMEM;
		goto out;
	}
	key = PEM_read_bio_PrivateKey(bio, NULL, no_password_cb, NULL);
	if (!key) {
		r = -RY_E_INVALID;
		goto out;
	}
	*ret_key = key;
	r = 0;
out:
	BIO_free(bio);
	OPENSSL_cleanse(buf, len);
	free(buf);
	return r;
}

int pki_ca_create(const char *common_name, int days, X509 **ret_cert, EVP_PKEY **ret_key)
{
	EVP_PKEY *key = NULL;
	X509 *x = NULL;
	int r;

	if (!common_name || !ret_cert || !ret_key)
		return -EINVAL;
	ERR_clear_error();
	r = check_name(common_name);
	if (r < 0)
		return r;
	r = check_days(days);
	if (r < 0)
		return r;
	r = pki_key_generate(&key);
	if (r < 0)
		goto out;
	r = cert_new(NULL, common_name, NULL, key, days, &x);
	if (r < 0)
		goto out;
	if ((r = add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE")) < 0 ||
	    (r = add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign")) < 0 ||
	    (r = add_ext(x, x, NID_subject_key_identifier, "hash")) < 0)
		goto out;
	r = cert_sign(x, key);
	if (r < 0)
		goto out;
	*ret_cert = x;
	*ret_key = key;
	x = NULL;
	key = NULL;
out:
	X509_free(x);
	EVP_PKEY_free(key);
	return r;
}

int pki_cert_issue_server(X509 *ca, EVP_PKEY *ca_key, EVP_PKEY *key, const char *common_name,
			  const char *const *sans, size_t n_sans, int days, X509 **ret_cert)
{
	const char *ku;
	X509 *x = NULL;
	int r;

	if (!ca || !ca_key || !key || !common_name || (n_sans > 0 && !sans) || !ret_cert)
		return -EINVAL;
	ERR_clear_error();
	if (n_sans > PKI_SANS_MAX)
		return -RY_E_INVALID;
	r = check_name(common_name);
	if (r < 0)
		return r;
	r = check_days(days);
	if (r < 0)
		return r;
	r = ca_check(ca, ca_key);
	if (r < 0)
		return r;
	/* RSA key exchange (TLS 1.2 without ECDHE) needs keyEncipherment; EC keys only sign. */
	ku = EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA ? "critical,digitalSignature,keyEncipherment"
						       : "critical,digitalSignature";
	r = cert_new(ca, common_name, NULL, key, days, &x);
	if (r < 0)
		goto out;
	if ((r = add_ext(x, ca, NID_basic_constraints, "critical,CA:FALSE")) < 0 ||
	    (r = add_ext(x, ca, NID_key_usage, ku)) < 0 ||
	    (r = add_ext(x, ca, NID_ext_key_usage, "serverAuth,clientAuth")) < 0 ||
	    (r = add_ext(x, ca, NID_subject_key_identifier, "hash")) < 0 ||
	    (r = add_ext(x, ca, NID_authority_key_identifier, "keyid")) < 0 ||
	    (r = add_sans(x, sans, n_sans)) < 0)
		goto out;
	r = cert_sign(x, ca_key);
	if (r < 0)
		goto out;
	*ret_cert = x;
	x = NULL;
out:
	X509_free(x);
	return r;
}

int pki_csr_create(EVP_PKEY *key, const char *common_name, char **ret_pem)
{
	X509_NAME *name = NULL;
	X509_REQ *req = NULL;
	BIO *bio = NULL;
	char *pem;
	int r;

	if (!key || !common_name || !ret_pem)
		return -EINVAL;
	ERR_clear_error();
	r = check_name(common_name);
	if (r < 0)
		return r;
	req = X509_REQ_new();
	name = X509_NAME_new();
	bio = BIO_new(BIO_s_mem());
	if (!req || !name || !bio) {
		r = -ENOMEM;
		goto out;
	}
	if (!X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8,
					(const unsigned char *)common_name, -1, -1, 0)) {
		r = -RY_E_INVALID;
		goto out;
	}
	if (!X509_REQ_set_version(req, X509_REQ_VERSION_1) ||
	    !X509_REQ_set_subject_name(req, name) || !X509_REQ_set_pubkey(req, key) ||
	    X509_REQ_sign(req, key, sign_md(key)) <= 0 || !PEM_write_bio_X509_REQ(bio, req)) {
		r = -RY_E_CRYPTO;
		goto out;
	}
	r = bio_take_string(bio, &pem);
	if (r < 0)
		goto out;
	*ret_pem = pem;
out:
	BIO_free(bio);
	X509_NAME_free(name);
	X509_REQ_free(req);
	return r;
}

/* Node and sign-off keys: EC of at least 256 bits, or RSA of at least 2048 bits. */
static int check_node_key(EVP_PKEY *pub)
{
	int id = EVP_PKEY_get_base_id(pub);
	int bits = EVP_PKEY_get_bits(pub);

	if (id == EVP_PKEY_EC && bits >= 256)
		return 0;
	if (id == EVP_PKEY_RSA && bits >= 2048)
		return 0;
	return -RY_E_INVALID;
}

int pki_csr_sign(X509 *ca, EVP_PKEY *ca_key, const char *csr_pem, size_t csr_len,
		 const char *node_id, const char *cluster, int days, X509 **ret_cert)
{
	X509_REQ *req = NULL;
	EVP_PKEY *pub;
	BIO *bio = NULL;
	X509 *x = NULL;
	int r;

	if (!ca || !ca_key || !csr_pem || !node_id || !cluster || !ret_cert)
		return -EINVAL;
	ERR_clear_error();
	if (csr_len == 0 || csr_len > PKI_CSR_MAX)
		return -RY_E_INVALID;
	if ((r = check_name(node_id)) < 0 || (r = check_name(cluster)) < 0 ||
	    (r = check_days(days)) < 0)
		return r;
	r = ca_check(ca, ca_key);
	if (r < 0)
		return r;
	bio = BIO_new_mem_buf(csr_pem, (int)csr_len);
	if (!bio) {
		r = -ENOMEM;
		goto out;
	}
	req = PEM_read_bio_X509_REQ(bio, NULL, no_password_cb, NULL);
	if (!req) {
		r = -RY_E_INVALID;
		goto out;
	}
	pub = X509_REQ_get0_pubkey(req);
	if (!pub) {
		r = -RY_E_INVALID;
		goto out;
	}
	/* Key policy first: it is cheap, and it bounds the cost of the signature check. */
	r = check_node_key(pub);
	if (r < 0)
		goto out;
	/* Proof of possession of the private key. */
	if (X509_REQ_verify(req, pub) != 1) {
		r = -RY_E_INVALID;
		goto out;
	}
	/* Subject and extensions come from the controller, never from the request. */
	r = cert_new(ca, node_id, cluster, pub, days, &x);
	if (r < 0)
		goto out;
	if ((r = add_ext(x, ca, NID_basic_constraints, "critical,CA:FALSE")) < 0 ||
	    (r = add_ext(x, ca, NID_key_usage, "critical,digitalSignature")) < 0 ||
	    (r = add_ext(x, ca, NID_ext_key_usage, "clientAuth")) < 0 ||
	    (r = add_ext(x, ca, NID_subject_key_identifier, "hash")) < 0 ||
	    (r = add_ext(x, ca, NID_authority_key_identifier, "keyid")) < 0)
		goto out;
	r = cert_sign(x, ca_key);
	if (r < 0)
		goto out;
	*ret_cert = x;
	x = NULL;
out:
	X509_free(x);
	X509_REQ_free(req);
	BIO_free(bio);
	return r;
}

int pki_cert_issue_signing(X509 *ca, EVP_PKEY *ca_key, EVP_PKEY *key, const char *common_name,
			   int days, X509 **ret_cert)
{
	X509 *x = NULL;
	int r;

	if (!ca || !ca_key || !key || !common_name || !ret_cert)
		return -EINVAL;
	ERR_clear_error();
	if ((r = check_name(common_name)) < 0 || (r = check_days(days)) < 0 ||
	    (r = check_node_key(key)) < 0)
		return r;
	r = ca_check(ca, ca_key);
	if (r < 0)
		return r;
	r = cert_new(ca, common_name, "railyard", key, days, &x);
	if (r < 0)
		goto out;
	/* documentSigning alone, critical: no TLS stack accepts this key for a handshake. */
	if ((r = add_ext(x, ca, NID_basic_constraints, "critical,CA:FALSE")) < 0 ||
	    (r = add_ext(x, ca, NID_key_usage, "critical,digitalSignature,nonRepudiation")) < 0 ||
	    (r = add_ext(x, ca, NID_ext_key_usage, "critical," PKI_OID_DOCUMENT_SIGNING)) < 0 ||
	    (r = add_ext(x, ca, NID_subject_key_identifier, "hash")) < 0 ||
	    (r = add_ext(x, ca, NID_authority_key_identifier, "keyid")) < 0)
		goto out;
	r = cert_sign(x, ca_key);
	if (r < 0)
		goto out;
	*ret_cert = x;
	x = NULL;
out:
	X509_free(x);
	return r;
}

int pki_cert_to_pem(X509 *cert, char **ret_pem)
{
	char *pem;
	BIO *bio;
	int r;

	if (!cert || !ret_pem)
		return -EINVAL;
	ERR_clear_error();
	bio = BIO_new(BIO_s_mem());
	if (!bio)
		return -ENOMEM;
	if (!PEM_write_bio_X509(bio, cert)) {
		r = -RY_E_CRYPTO;
		goto out;
	}
	r = bio_take_string(bio, &pem);
	if (r < 0)
		goto out;
	*ret_pem = pem;
out:
	BIO_free(bio);
	return r;
}

int pki_cert_from_pem(const char *pem, size_t len, X509 **ret_cert)
{
	X509 *x;
	BIO *bio;

	if (!pem || !ret_cert)
		return -EINVAL;
	ERR_clear_error();
	if (len == 0)
		return -RY_E_INVALID;
	if (len > PKI_PEM_MAX)
		return -RY_E_TOO_BIG;
	bio = BIO_new_mem_buf(pem, (int)len);
	if (!bio)
		return -ENOMEM;
	x = PEM_read_bio_X509(bio, NULL, no_password_cb, NULL);
	BIO_free(bio);
	if (!x)
		return -RY_E_INVALID;
	*ret_cert = x;
	return 0;
}

int pki_cert_load(const char *path, X509 **ret_cert)
{
	char *buf;
	size_t len;
	int r;

	if (!path || !ret_cert)
		return -EINVAL;
	r = fs_read_file(path, PKI_PEM_MAX, &buf, &len);
	if (r < 0)
		return r;
	r = pki_cert_from_pem(buf, len, ret_cert);
	free(buf);
	return r;
}

int pki_cert_write(const char *path, X509 *cert)
{
	char *pem;
	int r;

	if (!path || !cert)
		return -EINVAL;
	r = pki_cert_to_pem(cert, &pem);
	if (r < 0)
		return r;
	r = fs_write_file_atomic(path, pem, strlen(pem), 0644);
	free(pem);
	return r;
}

/* "sha256:" and the hex of a 32-byte digest. */
static void fingerprint_text(const unsigned char md[32], char ret[PKI_FINGERPRINT_LEN])
{
	memcpy(ret, "sha256:", 7);
	util_hex(md, 32, ret + 7);
}

int pki_cert_fingerprint(X509 *cert, char ret[PKI_FINGERPRINT_LEN])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	if (!cert || !ret)
		return -EINVAL;
	ERR_clear_error();
	if (!X509_digest(cert, EVP_sha256(), md, &n) || n != 32)
		return -RY_E_CRYPTO;
	fingerprint_text(md, ret);
	return 0;
}

int pki_pem_fingerprint(const char *pem, size_t len, char ret[PKI_FINGERPRINT_LEN])
{
	unsigned char md[EVP_MAX_MD_SIZE], *der = NULL;
	unsigned int n = 0;
	long der_len = 0;
	BIO *bio;
	int ok;

	if (!pem || !ret)
		return -EINVAL;
	if (len == 0)
		return -RY_E_INVALID;
	if (len > PKI_PEM_MAX)
		return -RY_E_TOO_BIG;
	ERR_clear_error();
	bio = BIO_new_mem_buf(pem, (int)len);
	if (!bio)
		return -ENOMEM;
	ok = PEM_bytes_read_bio(&der, &der_len, NULL, PEM_STRING_X509, bio, no_password_cb, NULL) ==
	     1;
	BIO_free(bio);
	ok = ok && der_len > 0 && EVP_Digest(der, (size_t)der_len, md, &n, EVP_sha256(), NULL) &&
	     n == 32;
	OPENSSL_free(der);
	ERR_clear_error();
	if (!ok)
		return -RY_E_INVALID;
	fingerprint_text(md, ret);
	return 0;
}

int pki_cert_serial(X509 *cert, char ret[PKI_SERIAL_LEN])
{
	unsigned char b[20];
	BIGNUM *bn;
	int n, r = 0;

	if (!cert || !ret)
		return -EINVAL;
	ERR_clear_error();
	bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), NULL);
	if (!bn)
		return -RY_E_INVALID;
	n = BN_num_bytes(bn);
	if (BN_is_negative(bn) || n > (int)sizeof(b)) {
		r = -RY_E_INVALID;
		goto out;
	}
	if (n == 0) {
		strcpy(ret, "00");
		goto out;
	}
	BN_bn2bin(bn, b);
	util_hex(b, (size_t)n, ret);
out:
	BN_free(bn);
	return r;
}

int pki_cert_common_name(X509 *cert, char **ret_cn)
{
	unsigned char *utf8 = NULL;
	const X509_NAME *name;
	char *cn;
	int idx, len, r;

	if (!cert || !ret_cn)
		return -EINVAL;
	ERR_clear_error();
	name = X509_get_subject_name(cert);
	idx = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
	if (idx < 0)
		return -RY_E_NOT_FOUND;
	/* Two CNs would make the identity ambiguous: refuse rather than pick one. */
	if (X509_NAME_get_index_by_NID(name, NID_commonName, idx) >= 0)
		return -RY_E_INVALID;
	len = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, idx)));
	if (len < 0)
		return -RY_E_INVALID;
	if (memchr(utf8, '\0', (size_t)len)) {
		r = -RY_E_INVALID;
		goto out;
	}
	cn = strndup((const char *)utf8, (size_t)len);
	if (!cn) {
		r = -ENOMEM;
		goto out;
	}
	*ret_cn = cn;
	r = 0;
out:
	OPENSSL_free(utf8);
	return r;
}

__attribute__((format(printf, 3, 4))) static void errbuf_set(char *errbuf, size_t errlen,
							     const char *fmt, ...)
{
	va_list ap;

	if (!errbuf || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(errbuf, errlen, fmt, ap);
	va_end(ap);
}

/* Not an X509_V_ERR_* code: the verification context could not be set up. */
#define CHAIN_SETUP_FAILED (-1)

/* Verify that cert is issued by the self-signed ca (no intermediates; purpose any) and valid
 * at time at. On -RY_E_CRYPTO, *ret_verr is OpenSSL's verification error, CHAIN_SETUP_FAILED,
 * or X509_V_OK when the reason is only in the error queue; *ret_depth is where in the chain
 * it failed (0: cert, 1: ca). */
static int chain_check(X509 *ca, X509 *cert, time_t at, int *ret_verr, int *ret_depth)
{
	X509_STORE_CTX *ctx = NULL;
	X509_STORE *store = NULL;
	int r;

	*ret_verr = X509_V_OK;
	*ret_depth = 0;
	store = X509_STORE_new();
	ctx = X509_STORE_CTX_new();
	if (!store || !ctx) {
		r = -ENOMEM;
		goto out;
	}
	if (!X509_STORE_add_cert(store, ca) || !X509_STORE_CTX_init(ctx, store, cert, NULL) ||
	    !X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_ANY)) {
		*ret_verr = CHAIN_SETUP_FAILED;
		r = -RY_E_CRYPTO;
		goto out;
	}
	X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), at);
	if (X509_verify_cert(ctx) != 1) {
		*ret_verr = X509_STORE_CTX_get_error(ctx);
		*ret_depth = X509_STORE_CTX_get_error_depth(ctx);
		r = -RY_E_CRYPTO;
		goto out;
	}
	r = 0;
out:
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return r;
}

int pki_cert_verify_at(X509 *ca, X509 *cert, time_t at, pki_revoked_fn is_revoked, void *userdata,
		       char *errbuf, size_t errlen)
{
	char serial[PKI_SERIAL_LEN];
	int r, verr, depth;

	if (!ca || !cert || (errlen > 0 && !errbuf))
		return -EINVAL;
	if (errlen > 0)
		errbuf[0] = '\0';
	ERR_clear_error();
	r = chain_check(ca, cert, at, &verr, &depth);
	if (r < 0) {
		if (verr == CHAIN_SETUP_FAILED)
			errbuf_set(errbuf, errlen, "%s", "cannot set up verification");
		else if (verr != X509_V_OK)
			errbuf_set(errbuf, errlen, "certificate verify failed: %s",
				   X509_verify_cert_error_string(verr));
		else if (r == -RY_E_CRYPTO && errbuf)
			(void)pki_last_error(errbuf, errlen);
		goto out;
	}
	if (is_revoked) {
		r = pki_cert_serial(cert, serial);
		if (r < 0) {
			errbuf_set(errbuf, errlen, "%s", "unusable certificate serial");
			goto out;
		}
		r = is_revoked(userdata, serial);
		if (r < 0) {
			errbuf_set(errbuf, errlen, "revocation check failed: %s", ry_strerror(r));
			goto out;
		}
		if (r > 0) {
			r = -RY_E_REVOKED;
			errbuf_set(errbuf, errlen, "certificate %s is revoked", serial);
			goto out;
		}
	}
	r = 0;
out:
	/* The reason is in errbuf: leave nothing behind to confuse later TLS calls. */
	ERR_clear_error();
	return r;
}

int pki_cert_verify(X509 *ca, X509 *cert, pki_revoked_fn is_revoked, void *userdata, char *errbuf,
		    size_t errlen)
{
	return pki_cert_verify_at(ca, cert, time(NULL), is_revoked, userdata, errbuf, errlen);
}

/* Why x is not a sign-off certificate (docs/signoff.md, "The sign-off key"): -RY_E_REFUSED
 * with the reason in why (may be NULL when whylen is 0), or 0 when it is one:
 * extendedKeyUsage exactly {documentSigning}, keyUsage with digitalSignature, not a CA. */
static int signoff_cert_check(X509 *x, char *why, size_t whylen)
{
	EXTENDED_KEY_USAGE *eku = NULL;
	ASN1_OBJECT *want = NULL;
	uint32_t flags;
	size_t off = 0;
	int n, r;

	flags = X509_get_extension_flags(x);
	r = -RY_E_REFUSED;
	if (flags & EXFLAG_INVALID) {
		snprintf(why, whylen, "invalid or duplicate extensions");
		goto out;
	}
	if (X509_check_ca(x) != 0) {
		snprintf(why, whylen, "a CA certificate");
		goto out;
	}
	if (!(flags & EXFLAG_KUSAGE) || !(X509_get_key_usage(x) & KU_DIGITAL_SIGNATURE)) {
		snprintf(why, whylen, "key usage without digitalSignature");
		goto out;
	}
	if (!(flags & EXFLAG_XKUSAGE)) {
		snprintf(why, whylen, "no extended key usage");
		goto out;
	}
	eku = X509_get_ext_d2i(x, NID_ext_key_usage, NULL, NULL);
	want = OBJ_txt2obj(PKI_OID_DOCUMENT_SIGNING, 1);
	if (!want) {
		r = -ENOMEM;
		goto out;
	}
	if (!eku) {
		snprintf(why, whylen, "unreadable extended key usage");
		goto out;
	}
	if (sk_ASN1_OBJECT_num(eku) == 1 && OBJ_cmp(sk_ASN1_OBJECT_value(eku, 0), want) == 0) {
		r = 0;
		goto out;
	}
	/* Name what it is for, as `openssl x509 -ext extendedKeyUsage` would. */
	n = snprintf(why, whylen, "extended key usage ");
	off = n > 0 && (size_t)n < whylen ? (size_t)n : 0;
	for (int i = 0; i < sk_ASN1_OBJECT_num(eku) && off + 1 < whylen; i++) {
		const ASN1_OBJECT *obj = sk_ASN1_OBJECT_value(eku, i);
		int nid = OBJ_obj2nid(obj);
		char oid[80];

		if (nid != NID_undef)
			snprintf(oid, sizeof(oid), "%s", OBJ_nid2sn(nid));
		else if (OBJ_obj2txt(oid, sizeof(oid), obj, 1) <= 0)
			snprintf(oid, sizeof(oid), "?");
		n = snprintf(why + off, whylen - off, "%s%s", i > 0 ? ", " : "", oid);
		if (n < 0)
			break;
		off = (size_t)n >= whylen - off ? whylen - 1 : off + (size_t)n;
	}
out:
	ASN1_OBJECT_free(want);
	sk_ASN1_OBJECT_pop_free(eku, ASN1_OBJECT_free);
	return r;
}

int pki_cms_sign(X509 *cert, EVP_PKEY *key, X509 *ca, const void *data, size_t len, char **ret_pem)
{
	/* Binary: the signature covers the bytes as they are, never a canonicalised copy. */
	const unsigned int flags = CMS_DETACHED | CMS_BINARY | CMS_NOSMIMECAP;
	CMS_ContentInfo *cms = NULL;
	BIO *in = NULL, *out = NULL;
	EVP_PKEY *pub;
	char *pem;
	int r, verr, depth;

	if (!cert || !key || !ca || (!data && len > 0) || !ret_pem)
		return -EINVAL;
	ERR_clear_error();
	if (len > INT_MAX)
		return -RY_E_TOO_BIG;
	/* No reason text: the caller chose the certificate, the error code says enough. */
	r = signoff_cert_check(cert, NULL, 0);
	if (r < 0)
		return r == -RY_E_REFUSED ? -RY_E_INVALID : r;
	pub = X509_get0_pubkey(cert);
	if (!pub || EVP_PKEY_eq(pub, key) != 1) {
		ERR_clear_error();
		return -RY_E_INVALID;
	}
	/* A signature that pki_cms_verify() would refuse is not worth making. */
	r = chain_check(ca, cert, time(NULL), &verr, &depth);
	if (r < 0) {
		ERR_clear_error();
		return r == -ENOMEM ? r : -RY_E_INVALID;
	}
	in = BIO_new_mem_buf(len > 0 ? data : "", (int)len);
	out = BIO_new(BIO_s_mem());
	if (!in || !out) {
		r = -ENOMEM;
		goto out;
	}
	/* The default signed attributes: content type, signing time, message digest. */
	cms = CMS_sign(NULL, NULL, NULL, NULL, flags | CMS_PARTIAL);
	if (!cms || !CMS_add1_signer(cms, cert, key, EVP_sha256(), flags) ||
	    CMS_final(cms, in, NULL, flags) != 1 || !PEM_write_bio_CMS(out, cms)) {
		r = -RY_E_CRYPTO;
		goto out;
	}
	r = bio_take_string(out, &pem);
	if (r < 0)
		goto out;
	*ret_pem = pem;
out:
	CMS_ContentInfo_free(cms);
	BIO_free(out);
	BIO_free(in);
	return r;
}

/* The signingTime signed attribute of si, in seconds since the epoch: -RY_E_INVALID when
 * there is none, several, or it is not a valid time. */
static int cms_signing_time(CMS_SignerInfo *si, time_t *ret)
{
	const ASN1_TIME *t;
	X509_ATTRIBUTE *attr;
	ASN1_TIME *epoch;
	ASN1_TYPE *v;
	int idx, day, sec, ok;

	idx = CMS_signed_get_attr_by_NID(si, NID_pkcs9_signingTime, -1);
	if (idx < 0 || CMS_signed_get_attr_by_NID(si, NID_pkcs9_signingTime, idx) >= 0)
		return -RY_E_INVALID;
	attr = CMS_signed_get_attr(si, idx);
	if (!attr || X509_ATTRIBUTE_count(attr) != 1)
		return -RY_E_INVALID;
	v = X509_ATTRIBUTE_get0_type(attr, 0);
	if (!v)
		return -RY_E_INVALID;
	if (v->type == V_ASN1_UTCTIME)
		t = v->value.utctime;
	else if (v->type == V_ASN1_GENERALIZEDTIME)
		t = v->value.generalizedtime;
	else
		return -RY_E_INVALID;
	epoch = ASN1_TIME_set(NULL, 0);
	if (!epoch)
		return -ENOMEM;
	/* ASN1_TIME_diff() also validates t's syntax. */
	ok = ASN1_TIME_diff(&day, &sec, epoch, t);
	ASN1_TIME_free(epoch);
	if (!ok)
		return -RY_E_INVALID;
	*ret = (time_t)day * 86400 + sec;
	return 0;
}

static void format_utc(time_t t, char buf[32])
{
	struct tm tm;

	if (!gmtime_r(&t, &tm) || strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, 32, "%lld", (long long)t);
}

/* The reason chain_check() failed for a signer, in the words of docs/signoff.md. */
static void signer_chain_reason(int verr, int depth, time_t at, char *errbuf, size_t errlen)
{
	const char *whose = depth > 0 ? "CA" : "signer";
	char when[32];

	format_utc(at, when);
	switch (verr) {
	case CHAIN_SETUP_FAILED:
		errbuf_set(errbuf, errlen, "%s", "cannot set up verification");
		break;
	case X509_V_OK:
		errbuf_set(errbuf, errlen, "%s", "signer certificate verify failed");
		break;
	case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
	case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
	case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
	case X509_V_ERR_CERT_SIGNATURE_FAILURE:
	case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
	case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
		errbuf_set(errbuf, errlen, "signer not issued by this CA (%s)",
			   X509_verify_cert_error_string(verr));
		break;
	case X509_V_ERR_CERT_HAS_EXPIRED:
		errbuf_set(errbuf, errlen, "%s certificate had expired at the signing time %s",
			   whose, when);
		break;
	case X509_V_ERR_CERT_NOT_YET_VALID:
		errbuf_set(errbuf, errlen,
			   "%s certificate was not yet valid at the signing time %s", whose, when);
		break;
	default:
		errbuf_set(errbuf, errlen,
			   "%s certificate verify failed at the signing time %s: %s", whose, when,
			   X509_verify_cert_error_string(verr));
	}
}

int pki_cms_verify(X509 *ca, const void *data, size_t len, const char *p7s_pem, size_t p7s_len,
		   X509 **ret_signer, int64_t *ret_signing_time, char *errbuf, size_t errlen)
{
	STACK_OF(CMS_SignerInfo) * sis;
	CMS_ContentInfo *cms = NULL;
	X509_STORE *store = NULL;
	BIO *in = NULL, *content = NULL, *buffered;
	X509_VERIFY_PARAM *param;
	CMS_SignerInfo *si;
	X509 *signer = NULL;
	char why[256];
	time_t at;
	int r, verr, depth, n;

	if (!ca || (!data && len > 0) || !p7s_pem || (errlen > 0 && !errbuf))
		return -EINVAL;
	if (errlen > 0)
		errbuf[0] = '\0';
	ERR_clear_error();
	if (p7s_len > PKI_PEM_MAX) {
		errbuf_set(errbuf, errlen, "signature larger than %d bytes", PKI_PEM_MAX);
		return -RY_E_TOO_BIG;
	}
	if (len > INT_MAX) {
		errbuf_set(errbuf, errlen, "content larger than %d bytes", INT_MAX);
		return -RY_E_TOO_BIG;
	}
	if (p7s_len == 0) {
		errbuf_set(errbuf, errlen, "%s", "empty signature");
		return -RY_E_INVALID;
	}
	in = BIO_new_mem_buf(p7s_pem, (int)p7s_len);
	content = BIO_new_mem_buf(len > 0 ? data : "", (int)len);
	if (!in || !content) {
		r = -ENOMEM;
		goto out;
	}

	/* Shape: one detached SignedData by one signer who says when it signed. */
	r = -RY_E_INVALID;
	cms = PEM_read_bio_CMS(in, NULL, no_password_cb, NULL);
	if (!cms) {
		errbuf_set(errbuf, errlen, "%s",
			   "not a PEM CMS signature (truncated, damaged or another format)");
		goto out;
	}
	if (OBJ_obj2nid(CMS_get0_type(cms)) != NID_pkcs7_signed) {
		errbuf_set(errbuf, errlen, "%s", "not a CMS SignedData");
		goto out;
	}
	/* Embedded content would be what CMS_verify() checks, not the caller's bytes. */
	if (CMS_is_detached(cms) != 1) {
		errbuf_set(errbuf, errlen, "%s",
			   "the signature embeds its content; expected detached");
		goto out;
	}
	sis = CMS_get0_SignerInfos(cms);
	n = sk_CMS_SignerInfo_num(sis);
	if (n != 1) {
		errbuf_set(errbuf, errlen, "%d signers, expected one", n < 0 ? 0 : n);
		goto out;
	}
	si = sk_CMS_SignerInfo_value(sis, 0);
	r = cms_signing_time(si, &at);
	if (r < 0) {
		if (r == -RY_E_INVALID)
			errbuf_set(errbuf, errlen, "%s",
				   "the signature carries no valid signing time");
		goto out;
	}
	/* Attach the signer's certificate from the CMS certificates, if it is there. */
	(void)CMS_set1_signers_certs(cms, NULL, 0);
	CMS_SignerInfo_get0_algs(si, NULL, &signer, NULL, NULL);
	if (!signer) {
		r = -RY_E_INVALID;
		errbuf_set(errbuf, errlen, "%s",
			   "the signature does not carry the signer's certificate");
		goto out;
	}

	/* Chain at the signing time first, for a precise reason; CMS_verify() checks it again. */
	r = chain_check(ca, signer, at, &verr, &depth);
	if (r < 0) {
		if (r == -RY_E_CRYPTO)
			signer_chain_reason(verr, depth, at, errbuf, errlen);
		goto out;
	}
	store = X509_STORE_new();
	if (!store) {
		r = -ENOMEM;
		goto out;
	}
	param = X509_STORE_get0_param(store);
	/* Purpose any: OpenSSL's S/MIME purpose does not know documentSigning; the role is
	 * checked below. Depth 0: the signer is issued by ca itself, no intermediates. */
	if (!X509_STORE_add_cert(store, ca) || !X509_STORE_set_purpose(store, X509_PURPOSE_ANY)) {
		r = -RY_E_CRYPTO;
		errbuf_set(errbuf, errlen, "%s", "cannot set up verification");
		goto out;
	}
	X509_VERIFY_PARAM_set_depth(param, 0);
	X509_VERIFY_PARAM_set_time(param, at);
	/* The content through a buffer BIO, not as a memory BIO: OpenSSL 3.0's CMS_verify()
	 * copies a memory BIO into a temporary one that it leaks when the SignedData names a
	 * digest it cannot set up (found by fuzzing, tests/fuzz/fuzz_signoff_verify). */
	buffered = BIO_new(BIO_f_buffer());
	if (!buffered) {
		r = -ENOMEM;
		goto out;
	}
	content = BIO_push(buffered, content);
	if (CMS_verify(cms, NULL, store, content, NULL, CMS_BINARY) != 1) {
		unsigned long e = ERR_peek_last_error();

		r = -RY_E_CRYPTO;
		if (ERR_GET_LIB(e) == ERR_LIB_CMS &&
		    (ERR_GET_REASON(e) == CMS_R_CONTENT_VERIFY_ERROR ||
		     ERR_GET_REASON(e) == CMS_R_VERIFICATION_FAILURE))
			errbuf_set(errbuf, errlen, "%s", "signature does not match the content");
		else
			errbuf_set(errbuf, errlen, "signature verification failed: %s",
				   pki_last_error(why, sizeof(why)));
		goto out;
	}

	/* Authentic, and by a certificate of this CA: but is it the sign-off key? */
	r = signoff_cert_check(signer, why, sizeof(why));
	if (r < 0) {
		if (r == -RY_E_REFUSED)
			errbuf_set(errbuf, errlen, "signer is not a sign-off certificate (%s)",
				   why);
		goto out;
	}
	if (ret_signer) {
		if (!X509_up_ref(signer)) {
			r = -RY_E_CRYPTO;
			goto out;
		}
		*ret_signer = signer;
	}
	if (ret_signing_time)
		*ret_signing_time = (int64_t)at;
	r = 0;
out:
	/* The reason is in errbuf: leave nothing behind to confuse later TLS calls. */
	ERR_clear_error();
	X509_STORE_free(store);
	CMS_ContentInfo_free(cms);
	BIO_free_all(content);
	BIO_free(in);
	return r;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool fingerprint_parse(const char *s, unsigned char out[32])
{
	while (isspace((unsigned char)*s))
		s++;
	if (strncasecmp(s, "sha256 fingerprint=", 19) == 0)
		s += 19;
	else if (strncasecmp(s, "sha256:", 7) == 0)
		s += 7;
	for (int i = 0; i < 32; i++) {
		int hi = hexval(s[0]), lo;

		if (hi < 0)
			return false;
		lo = hexval(s[1]);
		if (lo < 0)
			return false;
		out[i] = (unsigned char)(hi << 4 | lo);
		s += 2;
		if (i < 31 && *s == ':')
			s++;
	}
	while (isspace((unsigned char)*s))
		s++;
	return *s == '\0';
}

bool pki_fingerprint_equal(const char *a, const char *b)
{
	unsigned char da[32], db[32];

	if (!a || !b || !fingerprint_parse(a, da) || !fingerprint_parse(b, db))
		return false;
	return CRYPTO_memcmp(da, db, sizeof(da)) == 0;
}

int pki_key_matches_cert(EVP_PKEY *key, X509 *cert)
{
	EVP_PKEY *pub;

	if (!key || !cert)
		return -EINVAL;
	ERR_clear_error();
	pub = X509_get0_pubkey(cert);
	if (!pub)
		return -RY_E_INVALID;
	return EVP_PKEY_eq(pub, key) == 1 ? 0 : -RY_E_INVALID;
}

const char *pki_last_error(char *buf, size_t len)
{
	const char *data = NULL;
	unsigned long e;
	size_t off = 0;
	int flags = 0;

	if (buf && len > 0)
		buf[0] = '\0';
	while ((e = ERR_get_error_all(NULL, NULL, NULL, &data, &flags)) != 0) {
		const char *reason = ERR_reason_error_string(e);
		const char *lib = ERR_lib_error_string(e);
		bool has_data = (flags & ERR_TXT_STRING) && data && data[0];
		char code[32];
		int n;

		if (!buf || off + 1 >= len)
			continue;
		if (!reason) {
			snprintf(code, sizeof(code), "error %lx", e);
			reason = code;
		}
		n = snprintf(buf + off, len - off, "%s%s (%s%s%s)", off > 0 ? "; " : "", reason,
			     lib ? lib : "unknown library", has_data ? ": " : "",
			     has_data ? data : "");
		if (n < 0)
			break;
		off = (size_t)n >= len - off ? len - 1 : off + (size_t)n;
	}
	if (!buf || len == 0)
		return "";
	if (off == 0)
		snprintf(buf, len, "no OpenSSL error");
	return buf;
}
