/* Executor link: the MTU of netdevs. Read from sys/class/net/IF/mtu, set with `ip link set dev
 * IF mtu N` through the runner (undone with the MTU read before), and persisted as a systemd
 * .link file (/etc/systemd/network/60-railyard-IF.link) that udev applies whenever the device
 * appears, whichever of ifupdown, netplan or NetworkManager configures its addresses. */
#include "nodeagent/apply/apply_int.h"

#include "common/util/error.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define LINK_DIR "/etc/systemd/network"

static bool ifname_ok(const char *s)
{
	return s && *s && s[0] != '-' && s[0] != '.' && strlen(s) <= 15 && !strpbrk(s, "/ \t\n");
}

/* The .link file for IF. udev uses the first .link file (in lexical order over /etc, /run and
 * /lib) that matches a device, and only that one: so this file repeats the naming policies of
 * systemd's 99-default.link, or the interface would lose its predictable name. It matches the
 * permanent MAC address, which a rename does not change. */
static int link_content(const char *ifname, const char *mac, json_int_t mtu, char **ret)
{
	return asprintf(ret,
			"# Managed by railyard (link step): MTU of %s\n"
			"[Match]\n"
			"PermanentMACAddress=%s\n"
			"\n"
			"[Link]\n"
			"NamePolicy=keep kernel database onboard slot path\n"
			"AlternativeNamesPolicy=database onboard slot path\n"
			"MACAddressPolicy=persistent\n"
			"MTUBytes=%lld\n",
			ifname, mac, (long long)mtu) < 0
		       ? -ENOMEM
		       : 0;
}

/* Read a one-line sysfs attribute of IF into buf (trailing blanks cut). */
static int read_attr(struct apply_ctx *ctx, const char *ifname, const char *attr, char *buf,
		     size_t len)
{
	char *path = NULL, *v = NULL;
	bool exists;
	int r;

	if (asprintf(&path, "/sys/class/net/%s/%s", ifname, attr) < 0)
		return -ENOMEM;
	r = apply_ctx_read(ctx, path, &v, NULL, &exists);
	if (r == 0 && !exists) {
		apply_ctx_headline(ctx, "network interface %s does not exist on this node", ifname);
		r = apply_ctx_fail(ctx, -ENOENT, "%s: no such interface (%s)", ifname, path);
	}
	if (r == 0) {
		size_t n = strcspn(v, "\r\n");

		while (n > 0 && isspace((unsigned char)v[n - 1]))
			n--;
		snprintf(buf, len, "%.*s", (int)n, v);
	}
	free(v);
	free(path);
	return r;
}

static int one_interface(struct apply_ctx *ctx, const char *ifname, json_int_t mtu, bool persist,
			 struct apply_change *out, bool doit)
{
	char cur[32], mac[64], want[32], *file = NULL, *content = NULL, *end;
	long long now;
	int r;

	if (!ifname_ok(ifname))
		return apply_ctx_fail(ctx, -RY_E_INVALID, "bad interface name");
	r = read_attr(ctx, ifname, "mtu", cur, sizeof(cur));
	if (r < 0)
		return r;
	now = strtoll(cur, &end, 10);
	if (!cur[0] || *end)
		return apply_ctx_fail(ctx, -RY_E_INVALID, "%s: unreadable MTU \"%s\"", ifname, cur);
	snprintf(want, sizeof(want), "%lld", (long long)mtu);
	if (now != mtu) {
		const char *argv[] = {"ip", "link", "set", "dev", ifname, "mtu", want, NULL};
		const char *undo[] = {"ip", "link", "set", "dev", ifname, "mtu", cur, NULL};

		out->changed = true;
		apply_buf_printf(&out->diff, "%s mtu: %s -> %s\n", ifname, cur, want);
		if (doit && (r = apply_ctx_run_undoable(ctx, argv, undo)) < 0) {
			apply_ctx_headline(ctx, "the MTU of %s could not be set to %s: %s", ifname,
					   want, ctx->tool_error);
			return r;
		}
	}
	if (!persist)
		return 0;
	r = read_attr(ctx, ifname, "address", mac, sizeof(mac));
	if (r < 0)
		return r;
	if (strlen(mac) != 17 || strspn(mac, "0123456789abcdefABCDEF:") != 17)
		return apply_ctx_fail(
			ctx, -RY_E_INVALID,
			"%s: unreadable MAC address \"%s\" (needed to persist the MTU)", ifname,
			mac);
	if (asprintf(&file, LINK_DIR "/60-railyard-%s.link", ifname) < 0)
		return -ENOMEM;
	r = link_content(ifname, mac, mtu, &content);
	if (r == 0) {
		struct apply_change f = {0};

		r = apply_file_diff(ctx, file, content, strlen(content), &f);
		if (r == 0 && f.changed) {
			out->changed = true;
			apply_buf_puts(&out->diff, apply_buf_str(&f.diff));
			if (doit)
				r = apply_ctx_write_file(ctx, file, content, strlen(content), 0644);
		}
		apply_buf_done(&f.diff);
	}
	free(content);
	free(file);
	return r;
}

static int link_run(struct apply_ctx *ctx, const json_t *params, struct apply_change *out,
		    bool doit)
{
	json_int_t mtu = apply_param_int(params, "mtu", 0);
	bool persist = apply_param_bool(params, "persist", true);
	size_t i;
	json_t *e;

	if (mtu < 68 || mtu > 65535)
		return apply_ctx_fail(ctx, -RY_E_INVALID, "mtu: expected 68-65535");
	json_array_foreach(json_object_get(params, "interfaces"), i, e)
	{
		int r = one_interface(ctx, json_string_value(e), mtu, persist, out, doit);

		if (r < 0)
			return r;
	}
	return 0;
}

static int link_check(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	return link_run(ctx, params, out, false);
}

static int link_apply(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	return link_run(ctx, params, out, true);
}

static int link_verify(struct apply_ctx *ctx, const json_t *params)
{
	return apply_verify_by_check(ctx, params, link_check);
}

const struct apply_step_ops apply_ops_link = {
	.type = "link",
	.check = link_check,
	.apply = link_apply,
	.verify = link_verify,
};
