/* OpenPGP key files for apt (see pgp.h): armor (RFC 4880 section 6), packet headers (section
 * 4.2, old and new format), primary-key fingerprints (v4: SHA-1 over 0x99 || len16 || body;
 * v5: SHA-256 over 0x9A || len32 || body; v6: SHA-256 over 0x9B || len32 || body). */
#include "common/playbook/pgp.h"

#include "common/util/error.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#define ARMOR_BEGIN "-----BEGIN PGP PUBLIC KEY BLOCK-----"
#define ARMOR_END   "-----END PGP PUBLIC KEY BLOCK-----"

enum {
	TAG_SECRET_KEY = 5,
	TAG_PUBLIC_KEY = 6,
	TAG_SECRET_SUBKEY = 7,
	TAG_PUBLIC_SUBKEY = 14,
};

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -RY_E_INVALID;
}

bool pb_pgp_is_armored(const void *data, size_t len)
{
	const char *p = data, *end = p + len;

	while (p < end && isspace((unsigned char)*p))
		p++;
	return (size_t)(end - p) >= 15 && memcmp(p, "-----BEGIN PGP", 14) == 0;
}

/* CRC-24 of RFC 4880 section 6.1. */
static uint32_t crc24(const unsigned char *p, size_t len)
{
	uint32_t crc = 0xB704CEu;

	for (size_t i = 0; i < len; i++) {
		crc ^= (uint32_t)p[i] << 16;
		for (int b = 0; b < 8; b++) {
			crc <<= 1;
			if (crc & 0x1000000u)
				crc ^= 0x1864CFBu;
		}
	}
	return crc & 0xFFFFFFu;
}

static int b64val(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Decode base64 from s[0..n) (blanks and line breaks skipped, '=' padding at the end) into out
 * (at least n * 3 / 4 + 3 bytes). Returns the decoded length or -1. */
static long b64decode(const char *s, size_t n, unsigned char *out)
{
	uint32_t acc = 0;
	int bits = 0, pad = 0;
	long o = 0;

	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i], v;

		if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
			continue;
		if (c == '=') {
			pad++;
			continue;
		}
		if (pad || (v = b64val(c)) < 0)
			return -1;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
		}
	}
	return pad > 2 ? -1 : o;
}

static const char *find_line(const char *p, const char *end, const char *what)
{
	size_t n = strlen(what);

	for (; p && p + n <= end; p = memchr(p, '\n', (size_t)(end - p)), p = p ? p + 1 : NULL)
		if (memcmp(p, what, n) == 0)
			return p;
	return NULL;
}

int pb_pgp_dearmor(const char *text, size_t len, unsigned char **ret, size_t *ret_len, char *err,
		   size_t errlen)
{
	const char *end = text + len, *p, *body, *stop, *crc_line = NULL;
	unsigned char *bin;
	long n;

	if (len > PB_PGP_MAX_SIZE)
		return fail(err, errlen, "key is %zu bytes, over the limit of %d", len,
			    PB_PGP_MAX_SIZE);
	if (find_line(text, end, "-----BEGIN PGP PRIVATE KEY BLOCK-----") ||
	    find_line(text, end, "-----BEGIN PGP SECRET KEY BLOCK-----"))
		return fail(err, errlen, "this is a private key: give the public key only");
	p = find_line(text, end, ARMOR_BEGIN);
	if (!p)
		return fail(err, errlen, "no \"" ARMOR_BEGIN "\" line");
	p = memchr(p, '\n', (size_t)(end - p));
	if (!p)
		return fail(err, errlen, "armor ends after its first line");
	p++;
	/* Armor headers ("Version: ...", "Comment: ...") up to the blank line, which GnuPG always
	 * writes; tolerate its absence when the body starts right away. */
	body = p;
	for (const char *q = p; q < end;) {
		const char *nl = memchr(q, '\n', (size_t)(end - q)), *le = nl ? nl : end;
		size_t l = (size_t)(le - q);

		while (l > 0 && (q[l - 1] == '\r' || q[l - 1] == ' '))
			l--;
		if (l == 0) {
			body = nl ? nl + 1 : end;
			break;
		}
		if (!memchr(q, ':', l)) {
			body = q;
			break;
		}
		q = nl ? nl + 1 : end;
		body = q;
	}
	stop = find_line(body, end, ARMOR_END);
	if (!stop)
		return fail(err, errlen, "no \"" ARMOR_END "\" line");
	for (const char *q = body; q < stop;) {
		const char *nl = memchr(q, '\n', (size_t)(stop - q));

		if (*q == '=' && q + 1 < stop && q[1] != '=' && q[1] != '\n' && q[1] != '\r') {
			crc_line = q;
			break;
		}
		q = nl ? nl + 1 : stop;
	}
	bin = malloc((size_t)(stop - body) * 3 / 4 + 4);
	if (!bin)
		return -ENOMEM;
	n = b64decode(body, (size_t)((crc_line ? crc_line : stop) - body), bin);
	if (n <= 0) {
		free(bin);
		return fail(err, errlen, "bad base64 in the armored key");
	}
	if (crc_line) {
		unsigned char c[8];
		const char *ce = memchr(crc_line, '\n', (size_t)(stop - crc_line));
		long cn = b64decode(crc_line + 1, (size_t)((ce ? ce : stop) - crc_line - 1), c);
		uint32_t want = crc24(bin, (size_t)n);

		if (cn != 3 || (((uint32_t)c[0] << 16) | ((uint32_t)c[1] << 8) | c[2]) != want) {
			free(bin);
			return fail(err, errlen,
				    "armor checksum does not match: the key was altered or cut");
		}
	}
	*ret = bin;
	*ret_len = (size_t)n;
	return 0;
}

int pb_pgp_armor(const unsigned char *bin, size_t len, char **ret)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t cap = sizeof(ARMOR_BEGIN) + sizeof(ARMOR_END) + len * 4 / 3 + len / 48 + 32;
	uint32_t crc = crc24(bin, len);
	unsigned char c3[3] = {(unsigned char)(crc >> 16), (unsigned char)(crc >> 8),
			       (unsigned char)crc};
	char *out = malloc(cap), *o;

	if (!out)
		return -ENOMEM;
	o = out + sprintf(out, "%s\n\n", ARMOR_BEGIN);
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)bin[i] << 16;
		size_t left = len - i;

		if (left > 1)
			v |= (uint32_t)bin[i + 1] << 8;
		if (left > 2)
			v |= bin[i + 2];
		*o++ = tab[(v >> 18) & 63];
		*o++ = tab[(v >> 12) & 63];
		*o++ = left > 1 ? tab[(v >> 6) & 63] : '=';
		*o++ = left > 2 ? tab[v & 63] : '=';
		if ((i / 3 + 1) % 16 == 0 || i + 3 >= len)
			*o++ = '\n';
	}
	*o++ = '=';
	*o++ = tab[c3[0] >> 2];
	*o++ = tab[((c3[0] & 3) << 4) | (c3[1] >> 4)];
	*o++ = tab[((c3[1] & 15) << 2) | (c3[2] >> 6)];
	*o++ = tab[c3[2] & 63];
	o += sprintf(o, "\n%s\n", ARMOR_END);
	*ret = out;
	return 0;
}

static int fingerprint(const unsigned char *body, size_t len, char out[65], char *err,
		       size_t errlen)
{
	unsigned char pre[5], md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	size_t prelen;
	EVP_MD_CTX *c;
	int ok;

	if (len < 1)
		return fail(err, errlen, "empty public key packet");
	switch (body[0]) {
	case 4:
		if (len > 0xFFFF)
			return fail(err, errlen, "public key packet too long");
		pre[0] = 0x99;
		pre[1] = (unsigned char)(len >> 8);
		pre[2] = (unsigned char)len;
		prelen = 3;
		break;
	case 5:
	case 6:
		pre[0] = body[0] == 5 ? 0x9A : 0x9B;
		pre[1] = (unsigned char)(len >> 24);
		pre[2] = (unsigned char)(len >> 16);
		pre[3] = (unsigned char)(len >> 8);
		pre[4] = (unsigned char)len;
		prelen = 5;
		break;
	default:
		return fail(err, errlen, "version %u keys are not supported (only 4, 5 and 6)",
			    body[0]);
	}
	c = EVP_MD_CTX_new();
	if (!c)
		return -ENOMEM;
	ok = EVP_DigestInit_ex(c, body[0] == 4 ? EVP_sha1() : EVP_sha256(), NULL) == 1 &&
	     EVP_DigestUpdate(c, pre, prelen) == 1 && EVP_DigestUpdate(c, body, len) == 1 &&
	     EVP_DigestFinal_ex(c, md, &mdlen) == 1;
	EVP_MD_CTX_free(c);
	if (!ok)
		return -RY_E_CRYPTO;
	for (unsigned int i = 0; i < mdlen; i++)
		sprintf(out + 2 * i, "%02X", md[i]);
	return 0;
}

static int read_packets(const unsigned char *p, size_t len, struct pb_pgp_keys *keys, char *err,
			size_t errlen)
{
	size_t off = 0;
	bool first = true;

	memset(keys, 0, sizeof(*keys));
	while (off < len) {
		unsigned b = p[off++], tag;
		size_t plen = 0;
		int r;

		if (!(b & 0x80))
			return fail(err, errlen, "byte %zu: not an OpenPGP packet", off - 1);
		if (b & 0x40) { /* new format */
			unsigned o1;

			tag = b & 0x3f;
			if (off >= len)
				return fail(err, errlen, "truncated packet header");
			o1 = p[off++];
			if (o1 < 192) {
				plen = o1;
			} else if (o1 < 224) {
				if (off >= len)
					return fail(err, errlen, "truncated packet header");
				plen = ((size_t)(o1 - 192) << 8) + p[off++] + 192;
			} else if (o1 == 255) {
				if (len - off < 4)
					return fail(err, errlen, "truncated packet header");
				plen = ((size_t)p[off] << 24) | ((size_t)p[off + 1] << 16) |
				       ((size_t)p[off + 2] << 8) | p[off + 3];
				off += 4;
			} else {
				return fail(err, errlen,
					    "partial-length packets do not belong in a key file");
			}
		} else { /* old format */
			unsigned lt = b & 3, nb = lt == 0 ? 1 : lt == 1 ? 2 : 4;

			tag = (b >> 2) & 0xf;
			if (lt == 3)
				return fail(
					err, errlen,
					"indeterminate-length packets do not belong in a key file");
			if (len - off < nb)
				return fail(err, errlen, "truncated packet header");
			for (unsigned i = 0; i < nb; i++)
				plen = (plen << 8) | p[off++];
		}
		if (plen > len - off)
			return fail(err, errlen, "truncated packet (tag %u)", tag);
		if (tag == TAG_SECRET_KEY || tag == TAG_SECRET_SUBKEY)
			return fail(err, errlen, "this is a private key: give the public key only");
		if (first && tag != TAG_PUBLIC_KEY)
			return fail(err, errlen, "does not start with a public key (packet tag %u)",
				    tag);
		first = false;
		if (tag == TAG_PUBLIC_KEY) {
			if (keys->n == PB_PGP_MAX_KEYS)
				return fail(err, errlen, "more than %d keys in one file",
					    PB_PGP_MAX_KEYS);
			r = fingerprint(p + off, plen, keys->fpr[keys->n], err, errlen);
			if (r < 0)
				return r;
			keys->n++;
		}
		off += plen;
	}
	if (keys->n == 0)
		return fail(err, errlen, "no public key in it");
	return 0;
}

int pb_pgp_keys_read(const void *data, size_t len, struct pb_pgp_keys *ret, char *err,
		     size_t errlen)
{
	struct pb_pgp_keys keys;
	unsigned char *bin = NULL;
	size_t blen = 0;
	int r;

	if (len > PB_PGP_MAX_SIZE)
		return fail(err, errlen, "key file is %zu bytes, over the limit of %d", len,
			    PB_PGP_MAX_SIZE);
	if (pb_pgp_is_armored(data, len)) {
		r = pb_pgp_dearmor(data, len, &bin, &blen, err, errlen);
		if (r < 0)
			return r;
		r = read_packets(bin, blen, &keys, err, errlen);
		free(bin);
	} else {
		r = read_packets(data, len, &keys, err, errlen);
	}
	if (r == 0)
		*ret = keys;
	return r;
}

int pb_pgp_fpr_normalize(const char *in, char out[65])
{
	size_t n = 0;

	if (!in)
		return -EINVAL;
	while (*in == ' ')
		in++;
	if (in[0] == '0' && (in[1] == 'x' || in[1] == 'X'))
		in += 2;
	for (; *in; in++) {
		if (*in == ' ')
			continue;
		if (!isxdigit((unsigned char)*in) || n == 64)
			return -EINVAL;
		out[n++] = (char)toupper((unsigned char)*in);
	}
	out[n] = '\0';
	return n == 16 || n == 40 || n == 64 ? (int)n : -EINVAL;
}

bool pb_pgp_keys_have(const struct pb_pgp_keys *keys, const char *fpr)
{
	size_t n = strlen(fpr);

	for (size_t i = 0; i < keys->n; i++) {
		size_t kn = strlen(keys->fpr[i]);

		if (strcmp(keys->fpr[i], fpr) == 0)
			return true;
		if (n == 16 && kn == 40 && strcmp(keys->fpr[i] + 24, fpr) == 0)
			return true;
	}
	return false;
}
