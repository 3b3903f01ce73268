/* Verifying a sign-off report (docs/signoff.md, "Verifying"): the detached CMS signature, its
 * signer (a sign-off certificate issued by the given CA, nothing else) and the report's schema,
 * from the files or bytes alone: no state directory, no network. Both command lines link it
 * (`railyard-controller signoff verify`, `railyard signoff verify`), as does the controller's
 * verification of a stored report; and the stock-OpenSSL recipe every surface shows is here. */
#ifndef RAILYARD_COMMON_SIGNOFF_VERIFY_H
#define RAILYARD_COMMON_SIGNOFF_VERIFY_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/* Exit codes of `signoff verify` (docs/signoff.md), the same in both command lines. */
enum so_verify_status {
	SO_VERIFIED = 0,
	SO_NOT_VERIFIED = 1, /* signature, chain, signer, or a file that is not what it should be */
	SO_VERIFY_USAGE = 2, /* a missing or unreadable file */
	SO_BAD_REPORT = 3,   /* the signature holds, the report's schema is unknown or malformed */
};

/* The largest report read from a file. */
#define SO_VERIFY_REPORT_MAX (1024UL * 1024 * 1024)

/* The schema versions the verifier reads: 1, and 2 (version 1's members, plus "acceptance" and
 * "acceptance_reasons"). */
#define SO_VERIFY_SCHEMA_V1 "railyard-signoff/1"
#define SO_VERIFY_SCHEMA_V2 "railyard-signoff/2"

/* How to verify the exported files (signoff.json, signoff.p7s, ca.pem) in their directory, as
 * every surface shows it: the HTML view, both command lines, the portal (portal/js/views/
 * signoffs.js, the same text), docs/signoff.md and docs/rest.md.
 *
 * With stock OpenSSL: the signature and its chain to ca.pem, then the signer's extended key
 * usage, which must be exactly id-kp-documentSigning (1.3.6.1.5.5.7.3.36; OpenSSL 3.0 prints
 * the number, an OpenSSL that knows the name prints "Document Signing"). The first command
 * alone accepts a signature by any certificate the CA issued, a node's TLS client certificate
 * included; the whole exits 0, and prints its last line, only when both hold. */
#define SO_VERIFY_OPENSSL                                                                          \
	"openssl cms -verify -binary -content signoff.json -in signoff.p7s -inform PEM \\\n"       \
	"    -CAfile ca.pem -purpose any -signer signer.pem -out /dev/null &&\n"                   \
	"openssl x509 -in signer.pem -noout -ext extendedKeyUsage |\n"                             \
	"    grep -Eqx ' *(1\\.3\\.6\\.1\\.5\\.5\\.7\\.3\\.36|Document Signing)' &&\n"             \
	"echo 'sign-off verified: signed by the sign-off key'"
/* With the railyard command line (exit codes as enum so_verify_status). */
#define SO_VERIFY_RAILYARD "railyard signoff verify signoff.json signoff.p7s --ca ca.pem"

/* Verify len bytes of report against the PEM signature p7s (plen bytes) and the PEM CA
 * certificate ca_pem (clen bytes; ca_name names it in reasons), into o (borrowed; members set
 * or replaced): verified (bool), status (the returned value), reason (null when verified),
 * and once the signature holds signer (its common name), signed_at; once the report is read
 * too, schema, id, cluster, kind, verdict, created_at, summary, and acceptance and
 * acceptance_reasons when the report has them. The signer must be a sign-off certificate
 * issued by the CA (pki_cms_verify()); the report must be JSON of a schema version above with
 * the members docs/signoff.md requires. Thread-safe; never prints. */
enum so_verify_status so_verify_bytes(json_t *o, const char *report, size_t len, const char *p7s,
				      size_t plen, const char *ca_pem, size_t clen,
				      const char *ca_name);

/* so_verify_bytes() of three files: a report (at most SO_VERIFY_REPORT_MAX), its signature and
 * the CA certificate. SO_VERIFY_USAGE when one cannot be read (SO_NOT_VERIFIED when it is too
 * big to be one). *ret (always set when not NULL; caller decrefs; NULL only when out of
 * memory) as so_verify_bytes() fills it. */
enum so_verify_status so_verify_files(const char *report_path, const char *p7s_path,
				      const char *ca_path, json_t **ret);

/* What `signoff verify` prints of the result doc (as so_verify_bytes() fills it): verified,
 * its id, cluster, signer and time, the verdict, whether it is an acceptance sign-off, and
 * the summary on out; otherwise "PROG: signoff verify: NOT VERIFIED: reason" (or, for a report
 * it cannot read, that the signature holds but the report does not) on err. */
void so_verify_print(FILE *out, FILE *err, const char *prog, const json_t *doc);

#endif
