/* The controller's state directory: creation (CA, server certificate, database) and loading. */
#include "controller/state.h"
#include "controller/nodes.h"
#include "controller/store/store.h"
#include "controller/store/store_nodes.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CA_DAYS	    3650
#define SERVER_DAYS 825

char *ctl_state_path(const struct ctl_state *st, const char *name)
{
	return fs_path_join(st->dir, name);
}

static char *path_in(const char *dir, const char *name)
{
	return fs_path_join(dir, name);
}

int ctl_state_init(const char *dir, const char *const *extra_sans, size_t n_extra, char *errbuf,
		   size_t errlen)
{
	const char *base_sans[] = {CTL_SERVER_NAME, "localhost", "127.0.0.1", "::1"};
	const char **sans = NULL;
	char host[256] = "", cn[300];
	char *ca_crt = path_in(dir, "ca.crt"), *ca_key = path_in(dir, "ca.key");
	char *srv_crt = path_in(dir, "server.crt"), *srv_key = path_in(dir, "server.key");
	char *db = path_in(dir, "controller.db");
	X509 *ca = NULL, *srv = NULL;
	EVP_PKEY *cakey = NULL, *srvkey = NULL;
	struct store *store = NULL;
	size_t n = 0;
	int r;

	if (!ca_crt || !ca_key || !srv_crt || !srv_key || !db) {
		r = -ENOMEM;
		goto out;
	}
	r = fs_mkdir_p(dir, 0700);
	if (r >= 0)
		r = fs_check_writable_dir(dir);
	if (r < 0) {
		snprintf(errbuf, errlen, "state directory %s: %s", dir, ry_strerror(r));
		goto out;
	}
	if (access(ca_crt, F_OK) == 0 || access(db, F_OK) == 0) {
		r = -RY_E_EXISTS;
		snprintf(errbuf, errlen,
			 "%s is already initialised (ca.crt or controller.db exists)", dir);
		goto out;
	}
	(void)gethostname(host, sizeof(host) - 1);
	sans = calloc(RY_ARRAY_SIZE(base_sans) + 1 + n_extra, sizeof(*sans));
	if (!sans) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < RY_ARRAY_SIZE(base_sans); i++)
		sans[n++] = base_sans[i];
	if (host[0] && strcmp(host, "localhost") != 0)
		sans[n++] = host;
	for (size_t i = 0; i < n_extra; i++)
		sans[n++] = extra_sans[i];

	snprintf(cn, sizeof(cn), "Railyard CA %.40s", host[0] ? host : "controller");
	r = pki_ca_create(cn, CA_DAYS, &ca, &cakey);
	if (r >= 0)
		r = pki_key_generate(&srvkey);
	if (r >= 0)
		r = pki_cert_issue_server(ca, cakey, srvkey, CTL_SERVER_NAME, sans, n, SERVER_DAYS,
					  &srv);
	if (r < 0) {
		char e[256];

		snprintf(errbuf, errlen, "creating the CA: %s (%s)", ry_strerror(r),
			 pki_last_error(e, sizeof(e)));
		goto out;
	}
	r = pki_key_write_pem(ca_key, cakey);
	if (r >= 0)
		r = pki_cert_write(ca_crt, ca);
	if (r >= 0)
		r = pki_key_write_pem(srv_key, srvkey);
	if (r >= 0)
		r = pki_cert_write(srv_crt, srv);
	if (r < 0) {
		snprintf(errbuf, errlen, "writing certificates into %s: %s", dir, ry_strerror(r));
		goto out;
	}
	r = store_open(db, &store);
	if (r < 0) {
		snprintf(errbuf, errlen, "creating %s: %s", db, ry_strerror(r));
		goto out;
	}
out:
	store_free(store);
	X509_free(ca);
	X509_free(srv);
	EVP_PKEY_free(cakey);
	EVP_PKEY_free(srvkey);
	free(sans);
	free(ca_crt);
	free(ca_key);
	free(srv_crt);
	free(srv_key);
	free(db);
	return r;
}

static int read_text(const char *dir, const char *name, char **ret, char *errbuf, size_t errlen)
{
	char *p = path_in(dir, name);
	int r;

	if (!p)
		return -ENOMEM;
	r = fs_read_file(p, 1024 * 1024, ret, NULL);
	if (r < 0)
		snprintf(errbuf, errlen, "%s: %s", p, ry_strerror(r));
	free(p);
	return r;
}

int ctl_state_open(const char *dir, bool with_server_key, struct ctl_state **ret, char *errbuf,
		   size_t errlen)
{
	struct ctl_state *st;
	char *p = NULL, *srv_pem = NULL;
	int r;

	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->dir = strdup(dir);
	if (!st->dir) {
		r = -ENOMEM;
		goto fail;
	}
	p = path_in(dir, "controller.db");
	if (!p) {
		r = -ENOMEM;
		goto fail;
	}
	if (access(p, F_OK) < 0) {
		r = -errno;
		if (r == -ENOENT)
			snprintf(errbuf, errlen,
				 "%s: no such file (run `railyard-controller init --state-dir %s`)",
				 p, dir);
		else
			snprintf(errbuf, errlen, "%s: %s%s", p, ry_strerror(r),
				 r == -EACCES ? " (run as root or as the controller's user)" : "");
		goto fail;
	}
	/* serve checks the whole file once; commands read only what they need. */
	r = store_open_flags(p, with_server_key ? STORE_OPEN_QUICK_CHECK : 0, &st->store);
	if (r < 0) {
		snprintf(errbuf, errlen, "database %s: %s%s", p, ry_strerror(r),
			 r == -EACCES ? " (run as root or as the controller's user)" : "");
		goto fail;
	}
	store_set_facts_deriver(st->store, &ctl_facts_deriver);
	r = read_text(dir, "ca.crt", &st->ca_pem, errbuf, errlen);
	if (r < 0)
		goto fail;
	r = pki_cert_from_pem(st->ca_pem, strlen(st->ca_pem), &st->ca_cert);
	if (r < 0) {
		snprintf(errbuf, errlen, "%s/ca.crt: not a PEM certificate", dir);
		goto fail;
	}
	r = pki_cert_fingerprint(st->ca_cert, st->ca_fingerprint);
	if (r < 0)
		goto fail;
	free(p);
	p = path_in(dir, "ca.key");
	r = p ? pki_key_load(p, &st->ca_key) : -ENOMEM;
	if (r < 0) {
		snprintf(errbuf, errlen, "%s: %s", p ? p : "ca.key", ry_strerror(r));
		goto fail;
	}
	if (with_server_key) {
		r = read_text(dir, "server.crt", &srv_pem, errbuf, errlen);
		if (r < 0)
			goto fail;
		r = read_text(dir, "server.key", &st->server_key_pem, errbuf, errlen);
		if (r < 0)
			goto fail;
		if (asprintf(&st->server_chain_pem, "%s%s", srv_pem, st->ca_pem) < 0) {
			st->server_chain_pem = NULL;
			r = -ENOMEM;
			goto fail;
		}
	}
	free(srv_pem);
	free(p);
	*ret = st;
	return 0;
fail:
	free(srv_pem);
	free(p);
	ctl_state_free(st);
	return r;
}

void ctl_state_free(struct ctl_state *st)
{
	if (!st)
		return;
	store_free(st->store);
	X509_free(st->ca_cert);
	EVP_PKEY_free(st->ca_key);
	free(st->ca_pem);
	free(st->server_chain_pem);
	free(st->server_key_pem);
	free(st->dir);
	free(st);
}
