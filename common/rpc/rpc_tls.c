/* OpenSSL settings of this process's TLS servers that gRPC 1.51's C API does not reach: it makes
 * its SSL_CTX itself and hands out no handle on it. What OpenSSL applies to every SSL_CTX it
 * creates is the "system_default" section of its configuration's ssl_conf module, so that is
 * where the setting goes: a configuration loaded into this process from memory, which keeps the
 * system file's own system_default settings (if it has any) and adds ours. The system file is
 * read, never changed; other processes are not affected. */
#include "common/rpc/rpc.h"

#include <openssl/conf.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A value as the configuration syntax reads it back: its special characters escaped. */
static void put_value(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (strchr("\\#$\"';", *v))
			fputc('\\', f);
		fputc(*v, f);
	}
}

/* The system configuration's system_default settings (not NumTickets), as "name = value"
 * lines; nothing when the file has none or cannot be read (OpenSSL then had none either). */
static void system_defaults(FILE *f)
{
	char *file = CONF_get1_default_config_file();
	CONF *conf = NCONF_new(NULL);
	const char *init, *ssl, *sd;
	STACK_OF(CONF_VALUE) * sect;

	if (!file || !conf || NCONF_load(conf, file, NULL) <= 0)
		goto out;
	init = NCONF_get_string(conf, NULL, "openssl_conf");
	ssl = init ? NCONF_get_string(conf, init, "ssl_conf") : NULL;
	sd = ssl ? NCONF_get_string(conf, ssl, "system_default") : NULL;
	sect = sd ? NCONF_get_section(conf, sd) : NULL;
	for (int i = 0; sect && i < sk_CONF_VALUE_num(sect); i++) {
		const CONF_VALUE *v = sk_CONF_VALUE_value(sect, i);

		if (!v->name || !v->value || strcasecmp(v->name, "NumTickets") == 0)
			continue;
		fprintf(f, "%s = ", v->name);
		put_value(f, v->value);
		fputc('\n', f);
	}
out:
	/* NCONF_load() of a missing or broken file leaves errors queued: not ours to report. */
	ERR_clear_error();
	NCONF_free(conf);
	OPENSSL_free(file);
}

static int load(char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	CONF *conf = NULL;
	BIO *bio = NULL;
	long eline = 0;
	int r = 0;

	/* The system file first (OpenSSL loads it once, at its first use), so that ours, loaded
	 * after it, is the one in force. */
	if (OPENSSL_init_ssl(OPENSSL_INIT_LOAD_CONFIG, NULL) != 1) {
		snprintf(err, errlen, "OpenSSL did not initialise");
		return -EIO;
	}
	f = open_memstream(&text, &len);
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	fputs("openssl_conf = railyard_openssl\n"
	      "[railyard_openssl]\n"
	      "ssl_conf = railyard_ssl\n"
	      "[railyard_ssl]\n"
	      "system_default = railyard_tls\n"
	      "[railyard_tls]\n",
	      f);
	system_defaults(f);
	fputs("NumTickets = 0\n", f);
	if (fclose(f) != 0) {
		free(text);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	conf = NCONF_new(NULL);
	bio = BIO_new_mem_buf(text, (int)len);
	if (!conf || !bio || NCONF_load_bio(conf, bio, &eline) <= 0 ||
	    CONF_modules_load(conf, NULL, 0) <= 0) {
		unsigned long e = ERR_peek_last_error();

		snprintf(err, errlen, "OpenSSL refused the configuration (line %ld): %s", eline,
			 e ? ERR_reason_error_string(e) : "unknown error");
		r = -EINVAL;
	}
	ERR_clear_error();
	BIO_free(bio);
	NCONF_free(conf);
	free(text);
	return r;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int once_r;
static char once_err[256];

static void load_once(void)
{
	once_r = load(once_err, sizeof(once_err));
}

int rpc_tls_no_session_tickets(char *err, size_t errlen)
{
	pthread_once(&once, load_once);
	if (once_r < 0)
		snprintf(err, errlen, "%s", once_err);
	return once_r;
}
