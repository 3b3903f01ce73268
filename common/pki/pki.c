/* PKI over OpenSSL 3 (EVP/X509 only, no deprecated calls): key files, the controller CA,
 * server and node certificates, CSR signing, verification, fingerprints and serials. */
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

/* Node keys: EC of at least 256 bits, or RSA of at least 2048 bits. */
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

int pki_cert_fingerprint(X509 *cert, char ret[PKI_FINGERPRINT_LEN])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	if (!cert || !ret)
		return -EINVAL;
	ERR_clear_error();
	if (!X509_digest(cert, EVP_sha256(), md, &n) || n != 32)
		return -RY_E_CRYPTO;
	memcpy(ret, "sha256:", 7);
	util_hex(md, n, ret + 7);
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

int pki_cert_verify_at(X509 *ca, X509 *cert, time_t at, pki_revoked_fn is_revoked, void *userdata,
		       char *errbuf, size_t errlen)
{
	X509_STORE_CTX *ctx = NULL;
	X509_STORE *store = NULL;
	char serial[PKI_SERIAL_LEN];
	int r, vr;

	if (!ca || !cert || (errlen > 0 && !errbuf))
		return -EINVAL;
	if (errlen > 0)
		errbuf[0] = '\0';
	ERR_clear_error();
	store = X509_STORE_new();
	ctx = X509_STORE_CTX_new();
	if (!store || !ctx) {
		r = -ENOMEM;
		goto out;
	}
	if (!X509_STORE_add_cert(store, ca) || !X509_STORE_CTX_init(ctx, store, cert, NULL) ||
	    !X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_ANY)) {
		r = -RY_E_CRYPTO;
		errbuf_set(errbuf, errlen, "%s", "cannot set up verification");
		goto out;
	}
	X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), at);
	vr = X509_verify_cert(ctx);
	if (vr != 1) {
		int err = X509_STORE_CTX_get_error(ctx);

		r = -RY_E_CRYPTO;
		if (err != X509_V_OK)
			errbuf_set(errbuf, errlen, "certificate verify failed: %s",
				   X509_verify_cert_error_string(err));
		else if (errbuf)
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
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return r;
}

int pki_cert_verify(X509 *ca, X509 *cert, pki_revoked_fn is_revoked, void *userdata, char *errbuf,
		    size_t errlen)
{
	return pki_cert_verify_at(ca, cert, time(NULL), is_revoked, userdata, errbuf, errlen);
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
