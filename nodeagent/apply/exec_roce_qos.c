/* Executor roce_qos: QoS of RoCE ports. Trust mode, PFC priorities and the DSCP -> priority
 * mapping are read from and set with `mlnx_qos -i IF` (through the runner); ECN (DCQCN) per
 * priority is read and written in sys/class/net/IF/ecn/roce_{np,rp}/enable/N. */
#include "nodeagent/apply/apply_int.h"

#include "common/util/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define P_INTERFACES "interfaces"
#define P_TRUST	     "trust"
#define P_PFC	     "pfc"
#define P_ECN	     "ecn"
#define P_DSCP2PRIO  "dscp2prio"

struct qos_state {
	char trust[16];
	int pfc[8];
	int dscp2prio[64]; /* -1: not shown */
	bool have_trust, have_pfc, have_dscp;
};

/* The "dscp2prio mapping:" block that mlnx_qos prints in dscp trust mode, one row per priority:
 * "\tprio:3 dscp:31,30,29,28,27,26,25,24,". */
static void parse_dscp2prio(const char *out, struct qos_state *st)
{
	const char *p = strstr(out, "dscp2prio mapping:");

	for (int d = 0; d < 64; d++)
		st->dscp2prio[d] = -1;
	if (!p)
		return;
	p = strchr(p, '\n');
	while (p) {
		int prio, n = 0;

		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (sscanf(p, "prio:%d dscp:%n", &prio, &n) != 1 || n == 0 || prio < 0 || prio > 7)
			break;
		p += n;
		while (*p >= '0' && *p <= '9') {
			char *end;
			long d = strtol(p, &end, 10);

			if (d >= 0 && d < 64)
				st->dscp2prio[d] = prio;
			p = end;
			if (*p == ',')
				p++;
		}
		st->have_dscp = true;
		p = strchr(p, '\n');
	}
}

/* Parse `mlnx_qos -i IF` output: "Priority trust state: dscp" and, under "PFC configuration:",
 * the row "enabled 0 0 0 1 0 0 0 0". */
static void parse_qos(const char *out, struct qos_state *st)
{
	const char *t = strstr(out, "Priority trust state:"),
		   *pfc = strstr(out, "PFC configuration:");

	memset(st, 0, sizeof(*st));
	if (t && sscanf(t, "Priority trust state: %15s", st->trust) == 1)
		st->have_trust = true;
	if (pfc) {
		const char *en = strstr(pfc, "enabled");

		if (en && sscanf(en, "enabled %d %d %d %d %d %d %d %d", &st->pfc[0], &st->pfc[1],
				 &st->pfc[2], &st->pfc[3], &st->pfc[4], &st->pfc[5], &st->pfc[6],
				 &st->pfc[7]) == 8)
			st->have_pfc = true;
	}
	parse_dscp2prio(out, st);
}

static int prio_mask(struct apply_ctx *ctx, const json_t *list, const char *what, int want[8])
{
	size_t i;
	json_t *e;

	memset(want, 0, 8 * sizeof(int));
	json_array_foreach(list, i, e)
	{
		json_int_t p = json_integer_value(e);

		if (!json_is_integer(e) || p < 0 || p > 7)
			return apply_ctx_fail(ctx, -RY_E_INVALID, "%s: priorities are 0-7", what);
		want[p] = 1;
	}
	return 0;
}

static void fmt_prios(const int v[8], char *buf)
{
	for (int i = 0; i < 8; i++)
		sprintf(buf + 2 * i, "%d%s", v[i] ? 1 : 0, i < 7 ? "," : "");
}

/* Set each DSCP -> priority mapping that differs (`mlnx_qos -i IF --dscp2prio set,D,P`, one
 * call per mapping; undone with the priority read before). A port not yet in dscp trust mode
 * shows no mapping: check mode reports it unknown, apply reads it again after the trust
 * change. */
static int dscp2prio_run(struct apply_ctx *ctx, const char *ifname, const json_t *map,
			 struct qos_state *st, bool trust_changed, struct apply_change *out,
			 bool doit)
{
	const char *k;
	json_t *v;
	int r;

	if (doit && trust_changed) {
		const char *argv[] = {"mlnx_qos", "-i", ifname, NULL};
		struct runner_result res;

		r = apply_ctx_run_ok(ctx, argv, &res);
		if (r < 0)
			return r;
		parse_qos(res.out, st);
		runner_result_done(&res);
	}
	json_object_foreach((json_t *)map, k, v)
	{
		char *end, set[16], undo[16];
		long d = strtol(k, &end, 10);
		const char *ps = json_string_value(v);
		long p = ps ? strtol(ps, NULL, 10) : -1;
		int cur;

		if (*end || d < 0 || d > 63 || p < 0 || p > 7)
			return apply_ctx_fail(ctx, -RY_E_INVALID,
					      "dscp2prio: DSCP 0-63 -> priority 0-7");
		cur = st->dscp2prio[d];
		if (cur == p)
			continue;
		if (doit && !st->have_dscp)
			return apply_ctx_fail(ctx, -RY_E_INVALID,
					      "%s: cannot read the dscp2prio mapping (trust %s)",
					      ifname, st->trust);
		out->changed = true;
		if (cur < 0)
			apply_buf_printf(&out->diff,
					 "%s dscp2prio %ld: (not shown in trust %s) -> %ld\n",
					 ifname, d, st->trust, p);
		else
			apply_buf_printf(&out->diff, "%s dscp2prio %ld: %d -> %ld\n", ifname, d,
					 cur, p);
		if (!doit)
			continue;
		snprintf(set, sizeof(set), "set,%ld,%ld", d, p);
		snprintf(undo, sizeof(undo), "set,%ld,%d", d, cur);
		{
			const char *argv[] = {"mlnx_qos", "-i", ifname, "--dscp2prio", set, NULL};
			const char *uargv[] = {"mlnx_qos", "-i", ifname, "--dscp2prio", undo, NULL};

			r = apply_ctx_run_undoable(ctx, argv, uargv);
			if (r < 0) {
				apply_ctx_headline(
					ctx, "the DSCP %ld mapping of %s could not be set: %s", d,
					ifname, ctx->tool_error);
				return r;
			}
		}
	}
	return 0;
}

static int one_interface(struct apply_ctx *ctx, const char *ifname, const json_t *params,
			 struct apply_change *out, bool doit)
{
	const char *trust = apply_param_str(params, P_TRUST);
	const json_t *pfc = json_object_get(params, P_PFC), *ecn = json_object_get(params, P_ECN);
	const json_t *dscp2prio = json_object_get(params, P_DSCP2PRIO);
	char *dev = NULL, *host = NULL, want_s[16], cur_s[16];
	struct runner_result res;
	struct qos_state st;
	struct stat sb;
	int want[8], r;
	bool set_trust = false, set_pfc = false;

	if (!ifname || !*ifname || strpbrk(ifname, "/ \t\n") || ifname[0] == '.')
		return apply_ctx_fail(ctx, -RY_E_INVALID, "bad interface name");
	if (asprintf(&dev, "/sys/class/net/%s", ifname) < 0)
		return -ENOMEM;
	r = apply_ctx_path(ctx, dev, &host);
	if (r < 0)
		goto out;
	if (stat(host, &sb) < 0) {
		apply_ctx_headline(ctx, "network interface %s does not exist on this node", ifname);
		r = apply_ctx_fail(ctx, -ENOENT, "%s: no such interface (%s)", ifname, dev);
		goto out;
	}
	{
		const char *argv[] = {"mlnx_qos", "-i", ifname, NULL};

		r = apply_ctx_run_ok(ctx, argv, &res);
		if (r < 0)
			goto out;
		parse_qos(res.out, &st);
		runner_result_done(&res);
	}
	if (trust) {
		if (!st.have_trust) {
			r = apply_ctx_fail(ctx, -RY_E_INVALID, "%s: cannot read trust state",
					   ifname);
			goto out;
		}
		if (strcmp(st.trust, trust) != 0) {
			set_trust = true;
			apply_buf_printf(&out->diff, "%s trust: %s -> %s\n", ifname, st.trust,
					 trust);
		}
	}
	if (pfc) {
		r = prio_mask(ctx, pfc, P_PFC, want);
		if (r < 0)
			goto out;
		if (!st.have_pfc) {
			r = apply_ctx_fail(ctx, -RY_E_INVALID, "%s: cannot read PFC state", ifname);
			goto out;
		}
		fmt_prios(want, want_s);
		fmt_prios(st.pfc, cur_s);
		if (strcmp(want_s, cur_s) != 0) {
			set_pfc = true;
			apply_buf_printf(&out->diff, "%s pfc: %s -> %s\n", ifname, cur_s, want_s);
		}
	}
	if (set_trust || set_pfc) {
		const char *argv[8] = {"mlnx_qos", "-i", ifname};
		const char *undo[8] = {"mlnx_qos", "-i", ifname}; /* the state read above */
		int n = 3;

		out->changed = true;
		if (set_trust) {
			undo[n] = argv[n] = "--trust";
			argv[n + 1] = trust;
			undo[n + 1] = st.trust;
			n += 2;
		}
		if (set_pfc) {
			undo[n] = argv[n] = "--pfc";
			argv[n + 1] = want_s;
			undo[n + 1] = cur_s;
			n += 2;
		}
		argv[n] = undo[n] = NULL;
		if (doit && (r = apply_ctx_run_undoable(ctx, argv, undo)) < 0) {
			apply_ctx_headline(ctx, "the QoS (trust, PFC) of %s could not be set: %s",
					   ifname, ctx->tool_error);
			goto out;
		}
	}
	if (dscp2prio) {
		r = dscp2prio_run(ctx, ifname, dscp2prio, &st, set_trust, out, doit);
		if (r < 0)
			goto out;
	}
	if (ecn) {
		static const char *const kinds[] = {"roce_np", "roce_rp"};

		r = prio_mask(ctx, ecn, P_ECN, want);
		if (r < 0)
			goto out;
		for (int k = 0; k < 2; k++) {
			for (int p = 0; p < 8; p++) {
				char *path = NULL, *cur = NULL, val[2] = {(char)('0' + want[p]), 0};
				bool exists;

				if (asprintf(&path, "%s/ecn/%s/enable/%d", dev, kinds[k], p) < 0) {
					r = -ENOMEM;
					goto out;
				}
				r = apply_ctx_read(ctx, path, &cur, NULL, &exists);
				if (r == 0 && !exists)
					r = apply_ctx_fail(ctx, -ENOENT, "%s: no ECN control (%s)",
							   ifname, path);
				if (r == 0 && atoi(cur) != want[p]) {
					out->changed = true;
					apply_buf_printf(&out->diff, "%s ecn %s/%d: %d -> %d\n",
							 ifname, kinds[k], p, atoi(cur), want[p]);
					if (doit)
						r = apply_ctx_write_value(ctx, path, val);
				}
				free(cur);
				free(path);
				if (r < 0)
					goto out;
			}
		}
	}
out:
	free(host);
	free(dev);
	return r;
}

static int qos_run(struct apply_ctx *ctx, const json_t *params, struct apply_change *out, bool doit)
{
	size_t i;
	json_t *e;

	json_array_foreach(json_object_get(params, P_INTERFACES), i, e)
	{
		int r = one_interface(ctx, json_string_value(e), params, out, doit);

		if (r < 0)
			return r;
	}
	return 0;
}

static int qos_check(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	return qos_run(ctx, params, out, false);
}

static int qos_apply(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	return qos_run(ctx, params, out, true);
}

static int qos_verify(struct apply_ctx *ctx, const json_t *params)
{
	return apply_verify_by_check(ctx, params, qos_check);
}

const struct apply_step_ops apply_ops_roce_qos = {
	.type = "roce_qos",
	.check = qos_check,
	.apply = qos_apply,
	.verify = qos_verify,
};
