/* The rules of a `repo` step (an apt source and its signed-by key): names apt and the shell
 * would misread, non-https archives and key URLs, key files outside the keyring directories,
 * and an inline key that is not an armored public key or not the one its fingerprint names. */
#include "common/playbook/pgp.h"
#include "common/playbook/playbook_int.h"

#include "common/util/error.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int fail(const char **ret_key, const char *key, char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int fail(const char **ret_key, const char *key, char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (ret_key)
		*ret_key = key;
	if (buf && len) {
		va_start(ap, fmt);
		vsnprintf(buf, len, fmt, ap);
		va_end(ap);
	}
	return -RY_E_INVALID;
}

/* Non-empty, at most max characters, each alphanumeric or in extra, not starting with - or . */
static bool word_ok(const char *s, const char *extra, size_t max)
{
	size_t n = 0;

	if (!s || !*s || s[0] == '-' || s[0] == '.')
		return false;
	for (; *s; s++, n++)
		if (!isalnum((unsigned char)*s) && !strchr(extra, *s))
			return false;
	return n <= max;
}

/* https://HOST[:PORT][/PATH]: a host of letters, digits, '.' and '-', a path of printable
 * characters other than blanks, quotes, '#', '[' and ']' (which would end or break a sources
 * entry). */
static bool https_url_ok(const char *s)
{
	size_t h;

	if (!s || strncmp(s, "https://", 8) != 0 || strlen(s) > 512)
		return false;
	s += 8;
	h = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-");
	if (h == 0 || s[0] == '.' || s[0] == '-')
		return false;
	s += h;
	if (*s == ':') {
		size_t d = strspn(s + 1, "0123456789");

		if (d == 0 || d > 5)
			return false;
		s += 1 + d;
	}
	if (*s && *s != '/')
		return false;
	for (; *s; s++)
		if (!isgraph((unsigned char)*s) || strchr("\"'#[]\\", *s))
			return false;
	return true;
}

static bool key_path_ok(const char *s)
{
	static const char *const dirs[] = {"/usr/share/keyrings/", "/etc/apt/keyrings/", NULL};
	size_t n;

	for (size_t i = 0; dirs[i]; i++) {
		if (strncmp(s, dirs[i], strlen(dirs[i])) != 0)
			continue;
		s += strlen(dirs[i]);
		n = strlen(s);
		return word_ok(s, "_.-+", 128) && n > 4 &&
		       (strcmp(s + n - 4, ".gpg") == 0 || strcmp(s + n - 4, ".asc") == 0);
	}
	return false;
}

#define STR(k) json_string_value(json_object_get(p, k))

int pb_check_repo(const json_t *p, bool plan, const char **ret_key, char *buf, size_t len)
{
	const char *s, *suite = STR("suite"), *key = STR("key"), *fpr = STR("fingerprint");
	json_t *comps = json_object_get(p, "components"),
	       *archs = json_object_get(p, "architectures");
	json_t *e;
	char nfpr[65] = "";
	size_t i;

	(void)plan;
	if ((s = STR("name")) && !word_ok(s, "_.-", 64))
		return fail(ret_key, "name", buf, len,
			    "name: bad source name \"%s\" (letters, digits, _ . -)", s);
	if ((s = STR("uri")) && !https_url_ok(s))
		return fail(ret_key, "uri", buf, len,
			    "uri: \"%s\" is not an https:// URL (only https archives are accepted)",
			    s);
	if (suite && (!word_ok(suite, "_.-/", 64) || strstr(suite, "..")) &&
	    strcmp(suite, "/") != 0 && strcmp(suite, "./") != 0)
		return fail(ret_key, "suite", buf, len,
			    "suite: bad suite \"%s\" (a name like bookworm, or a path ending in / "
			    "for a flat repository)",
			    suite);
	if (suite && suite[strlen(suite) - 1] == '/') {
		if (json_array_size(comps) > 0)
			return fail(ret_key, "components", buf, len,
				    "components: a flat repository (suite \"%s\") has none", suite);
	} else if (suite && !comps) {
		return fail(ret_key, "suite", buf, len,
			    "suite \"%s\" needs components (or a path ending in / for a flat "
			    "repository)",
			    suite);
	} else if (suite && json_is_array(comps) && json_array_size(comps) == 0) {
		return fail(ret_key, "components", buf, len, "components: at least one component");
	}
	json_array_foreach(comps, i, e)
	{
		if (json_is_string(e) && !word_ok(json_string_value(e), "_.-", 64))
			return fail(ret_key, "components", buf, len,
				    "components: bad component \"%s\"", json_string_value(e));
	}
	json_array_foreach(archs, i, e)
	{
		if (json_is_string(e) && !word_ok(json_string_value(e), "-", 32))
			return fail(ret_key, "architectures", buf, len,
				    "architectures: bad architecture \"%s\"", json_string_value(e));
	}
	if ((s = STR("key_path")) && !key_path_ok(s))
		return fail(ret_key, "key_path", buf, len,
			    "key_path: \"%s\" is not a .gpg or .asc file directly under "
			    "/usr/share/keyrings or /etc/apt/keyrings",
			    s);
	if ((s = STR("key_url")) && !https_url_ok(s))
		return fail(ret_key, "key_url", buf, len, "key_url: \"%s\" is not an https:// URL",
			    s);
	if (fpr && pb_pgp_fpr_normalize(fpr, nfpr) < 0)
		return fail(ret_key, "fingerprint", buf, len,
			    "fingerprint: \"%s\" is not a key fingerprint (40 or 64 hex digits, or "
			    "a 16-digit long key ID)",
			    fpr);
	if (json_object_get(p, "key") && json_object_get(p, "key_url"))
		return fail(ret_key, "key_url", buf, len, "give key or key_url, not both");
	if (json_object_get(p, "key_url") && !json_object_get(p, "fingerprint"))
		return fail(ret_key, "key_url", buf, len,
			    "key_url needs fingerprint: a fetched key is only trusted when it is "
			    "the one pinned");
	if (!json_object_get(p, "key") && !json_object_get(p, "key_url") &&
	    !json_object_get(p, "fingerprint"))
		return fail(ret_key, "key_path", buf, len,
			    "a repo step needs key, key_url or fingerprint");
	if (key) {
		struct pb_pgp_keys keys;
		char why[160];

		if (!pb_pgp_is_armored(key, strlen(key)))
			return fail(ret_key, "key", buf, len,
				    "key: expected an ASCII-armored public key (-----BEGIN PGP "
				    "PUBLIC KEY BLOCK-----)");
		if (pb_pgp_keys_read(key, strlen(key), &keys, why, sizeof(why)) < 0)
			return fail(ret_key, "key", buf, len, "key: %s", why);
		if (nfpr[0] && (!pb_pgp_keys_have(&keys, nfpr) || keys.n != 1))
			return fail(ret_key, "key", buf, len,
				    "key: its fingerprint is %s%s, not the %s pinned", keys.fpr[0],
				    keys.n > 1 ? " (and more keys)" : "", nfpr);
	}
	return 0;
}

#undef STR
