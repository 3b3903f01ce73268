/* PKI over OpenSSL 3: keys, the controller's own CA, server and node (client) certificates
 * issued from CSRs, verification against the CA with revocation by serial, fingerprints, and
 * the sign-off certificate with detached CMS signatures over reports (docs/signoff.md).
 * Owns no global state; every object handed out is owned by the caller. */
#ifndef RAILYARD_PKI_H
#define RAILYARD_PKI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#define PKI_FINGERPRINT_LEN 72 /* "sha256:" + 64 hex + NUL */
#define PKI_SERIAL_LEN	    41 /* up to 20 bytes as hex + NUL */

#define PKI_CSR_MAX	 (16 * 1024)  /* largest CSR (PEM) pki_csr_sign() accepts */
#define PKI_PEM_MAX	 (256 * 1024) /* largest PEM text pki_cert_from_pem()/load accept */
#define PKI_DAYS_MAX	 36500	      /* longest validity accepted, in days */
#define PKI_NAME_MAX	 64	      /* longest CN / O in bytes (RFC 5280 upper bounds) */
#define PKI_SANS_MAX	 256	      /* most subjectAltName entries accepted */
#define PKI_BACKDATE_SEC 300	      /* notBefore is set this far in the past (clock skew) */

/* id-kp-documentSigning (RFC 9336): the only extended key usage of a sign-off certificate. */
#define PKI_OID_DOCUMENT_SIGNING "1.3.6.1.5.5.7.3.36"

#define PKI_WUR __attribute__((warn_unused_result))

/* Conventions for every function below unless stated otherwise:
 * - 0 on success; -EINVAL for a NULL argument that must not be NULL (programmer error);
 *   -RY_E_INVALID for a malformed value (empty or over-long name, bad SAN, days outside
 *   1..PKI_DAYS_MAX, unparsable PEM); -RY_E_CRYPTO when OpenSSL fails; -ENOMEM.
 * - Each call clears the calling thread's OpenSSL error queue on entry. On -RY_E_CRYPTO or
 *   -RY_E_INVALID the queue may hold OpenSSL's reasons: call pki_last_error() on the same
 *   thread to log and drain them before unrelated TLS work (stale entries confuse
 *   SSL_get_error()).
 * - Arguments are borrowed; ret_* objects are new and owned by the caller (EVP_PKEY_free(),
 *   X509_free(), free() for strings). ret_* are written only on success.
 * - Thread-safe on distinct objects; the CA certificate and key may be shared between threads
 *   for the issuing and verifying calls, which only read them. */

/* Generate a new EC P-256 key pair into *ret_key (caller frees with EVP_PKEY_free()). */
PKI_WUR int pki_key_generate(EVP_PKEY **ret_key);

/* Write key's private key as unencrypted PKCS#8 PEM to path, atomically and with mode 0600.
 * The PEM text is wiped from memory afterwards. Errors: -errno from the file system. */
PKI_WUR int pki_key_write_pem(const char *path, EVP_PKEY *key);

/* Load a PEM private key from path into *ret_key (caller frees with EVP_PKEY_free()).
 * -ENOENT etc. from the file system, -RY_E_TOO_BIG over PKI_PEM_MAX, -RY_E_INVALID when the
 * file holds no usable unencrypted private key. */
PKI_WUR int pki_key_load(const char *path, EVP_PKEY **ret_key);

/* Create a self-signed CA: new P-256 key, subject CN=common_name, valid for days days,
 * basicConstraints critical CA:TRUE, keyUsage critical keyCertSign+cRLSign, subject key id,
 * random positive 128-bit serial. Caller frees *ret_cert (X509_free) and *ret_key. */
PKI_WUR int pki_ca_create(const char *common_name, int days, X509 **ret_cert, EVP_PKEY **ret_key);

/* Issue a TLS server certificate for key's public key, signed by ca/ca_key: subject
 * CN=common_name, subjectAltName from sans (each entry an IPv4/IPv6 address when inet_pton
 * accepts it, otherwise a DNS name of at most 253 letters, digits, '-', '.', '_' and '*'),
 * at most PKI_SANS_MAX of them,
 * EKU serverAuth+clientAuth, keyUsage digitalSignature (+keyEncipherment for RSA),
 * basicConstraints CA:FALSE, SKID, AKID, random positive 128-bit serial. n_sans may be 0.
 * -RY_E_INVALID for a bad SAN or name, -EINVAL when ca_key is not ca's key. */
PKI_WUR int pki_cert_issue_server(X509 *ca, EVP_PKEY *ca_key, EVP_PKEY *key,
				  const char *common_name, const char *const *sans, size_t n_sans,
				  int days, X509 **ret_cert);

/* Issue a sign-off (document signing) certificate for key's public key, signed by ca/ca_key:
 * subject O=railyard, CN=common_name; keyUsage critical digitalSignature+nonRepudiation;
 * extendedKeyUsage critical PKI_OID_DOCUMENT_SIGNING and nothing else (so TLS refuses it);
 * basicConstraints critical CA:FALSE; SKID, AKID and a random serial. key must be EC of at
 * least 256 bits or RSA of at least 2048 bits. Caller frees *ret_cert with X509_free().
 * -RY_E_INVALID for a bad name, days or key; -EINVAL when ca_key is not ca's key. */
PKI_WUR int pki_cert_issue_signing(X509 *ca, EVP_PKEY *ca_key, EVP_PKEY *key,
				   const char *common_name, int days, X509 **ret_cert);

/* Create a PEM certificate signing request for key with subject CN=common_name, signed with
 * key. *ret_pem is NUL-terminated; caller frees with free(). */
PKI_WUR int pki_csr_create(EVP_PKEY *key, const char *common_name, char **ret_pem);

/* Sign a node's CSR (csr_len bytes of PEM, need not be NUL-terminated). The CSR's
 * self-signature is verified and its public key must be EC of at least 256 bits or RSA of at
 * least 2048 bits; the requested subject and extensions are ignored. The certificate gets
 * subject CN=node_id, O=cluster, EKU clientAuth only, keyUsage critical digitalSignature,
 * basicConstraints critical CA:FALSE, SKID, AKID and a random serial.
 * -RY_E_INVALID for an empty, over-PKI_CSR_MAX, unparsable or badly signed CSR or an
 * unacceptable key; -EINVAL when ca_key is not ca's key. */
PKI_WUR int pki_csr_sign(X509 *ca, EVP_PKEY *ca_key, const char *csr_pem, size_t csr_len,
			 const char *node_id, const char *cluster, int days, X509 **ret_cert);

/* PEM text of cert, NUL-terminated, into *ret_pem (caller frees with free()). */
PKI_WUR int pki_cert_to_pem(X509 *cert, char **ret_pem);

/* Parse the first certificate in len bytes of PEM (need not be NUL-terminated).
 * -RY_E_TOO_BIG over PKI_PEM_MAX, -RY_E_INVALID when no certificate can be parsed. */
PKI_WUR int pki_cert_from_pem(const char *pem, size_t len, X509 **ret_cert);

/* Load the first PEM certificate of the file at path: errors of fs_read_file() and
 * pki_cert_from_pem(). */
PKI_WUR int pki_cert_load(const char *path, X509 **ret_cert);

/* Write cert as PEM to path, atomically and with mode 0644. -errno from the file system. */
PKI_WUR int pki_cert_write(const char *path, X509 *cert);

/* "sha256:" followed by the lower-case hex SHA-256 of cert's DER encoding. */
PKI_WUR int pki_cert_fingerprint(X509 *cert, char ret[PKI_FINGERPRINT_LEN]);

/* pki_cert_fingerprint() of the first certificate in len bytes of PEM, from its DER bytes
 * alone: the certificate is not parsed (3 us against ~160 us for pki_cert_from_pem() and
 * pki_cert_verify() together), for a certificate TLS has already verified. -RY_E_TOO_BIG over
 * PKI_PEM_MAX, -RY_E_INVALID when there is no CERTIFICATE block. */
PKI_WUR int pki_pem_fingerprint(const char *pem, size_t len, char ret[PKI_FINGERPRINT_LEN]);

/* Lower-case hex of cert's serial number (big-endian bytes, even number of digits, "00" for
 * zero). -RY_E_INVALID for a negative serial or one longer than 20 bytes. */
PKI_WUR int pki_cert_serial(X509 *cert, char ret[PKI_SERIAL_LEN]);

/* The subject's commonName as UTF-8 into *ret_cn (caller frees with free()). -RY_E_NOT_FOUND
 * when there is none, -RY_E_INVALID when there are several or it contains a NUL. */
PKI_WUR int pki_cert_common_name(X509 *cert, char **ret_cn);

/* Revocation lookup: 1 when serial_hex (as pki_cert_serial() writes it) is revoked, 0 when
 * not, a negative error to make verification fail with that error. */
typedef int (*pki_revoked_fn)(void *userdata, const char *serial_hex);

/* Verify that cert chains to the self-signed ca (purpose any) and is within its validity
 * period now; then, when is_revoked is not NULL, ask it about cert's serial.
 * -RY_E_REVOKED when revoked, the callback's error when it fails, -RY_E_CRYPTO for any other
 * failure, with OpenSSL's reason written to errbuf (errbuf may be NULL when errlen is 0).
 * The OpenSSL error queue is drained into errbuf, not left behind. */
PKI_WUR int pki_cert_verify(X509 *ca, X509 *cert, pki_revoked_fn is_revoked, void *userdata,
			    char *errbuf, size_t errlen);

/* As pki_cert_verify(), checking the validity period at time at instead of now. */
PKI_WUR int pki_cert_verify_at(X509 *ca, X509 *cert, time_t at, pki_revoked_fn is_revoked,
			       void *userdata, char *errbuf, size_t errlen);

/* Sign len bytes of data (data may be NULL when len is 0) with key as a detached CMS SignedData
 * (binary: the bytes as they are, no MIME canonicalisation), SHA-256, signed attributes with
 * the signing time, the signer's certificate included (not ca's). *ret_pem is the PEM text
 * ("-----BEGIN CMS-----"), NUL-terminated; caller frees with free().
 * -RY_E_INVALID when cert is not a sign-off certificate (as pki_cms_verify() requires), is not
 * issued by ca or not valid now, or key is not cert's key; -RY_E_TOO_BIG when len > INT_MAX. */
PKI_WUR int pki_cms_sign(X509 *cert, EVP_PKEY *key, X509 *ca, const void *data, size_t len,
			 char **ret_pem);

/* Verify the detached PEM CMS signature p7s_pem (p7s_len bytes, need not be NUL-terminated)
 * over len bytes of data (may be NULL when len is 0) against the self-signed ca:
 * - a detached SignedData with exactly one signer, whose certificate it carries, and a
 *   signingTime signed attribute;
 * - the signer's certificate issued directly by ca (purpose any) and valid at that signing
 *   time, not now: a report outlives its signer's certificate;
 * - the signature matches the bytes;
 * - the signer is a sign-off certificate: extendedKeyUsage exactly {documentSigning},
 *   keyUsage with digitalSignature, not a CA.
 * On success *ret_signer gets a new reference to the signer's certificate (caller frees with
 * X509_free()) and *ret_signing_time the signing time in seconds since the epoch; either may
 * be NULL. Errors, each with a human reason in errbuf (may be NULL when errlen is 0):
 * -RY_E_TOO_BIG over PKI_PEM_MAX; -RY_E_INVALID for an empty, truncated, unparsable or
 * non-CMS input, an embedded (not detached) content, not exactly one signer, no signer
 * certificate or no/bad signing time; -RY_E_CRYPTO when the chain or the signature does not
 * verify; -RY_E_REFUSED when the signer is not a sign-off certificate. The OpenSSL error
 * queue is drained, never left behind. */
PKI_WUR int pki_cms_verify(X509 *ca, const void *data, size_t len, const char *p7s_pem,
			   size_t p7s_len, X509 **ret_signer, int64_t *ret_signing_time,
			   char *errbuf, size_t errlen);

/* Whether two SHA-256 fingerprints are equal. Each may carry a "sha256:" or
 * "sha256 Fingerprint=" prefix (any case), hex digits in any case, optionally as colon-separated
 * pairs (as `openssl x509 -fingerprint -sha256` prints), and surrounding white space. false
 * when either is NULL or not exactly 32 bytes of hex. */
bool pki_fingerprint_equal(const char *a, const char *b);

/* 0 when cert's public key is key's public key, -RY_E_INVALID when it is not. */
PKI_WUR int pki_key_matches_cert(EVP_PKEY *key, X509 *cert);

/* Drain the calling thread's OpenSSL error queue into buf as "reason (lib: detail); ..."
 * text, truncated to len bytes; "no OpenSSL error" when empty. Returns buf (an empty static
 * string when buf is NULL or len is 0, the queue being drained all the same). */
const char *pki_last_error(char *buf, size_t len);

#endif
