/* Executor hca_firmware: every HCA's firmware (rdma.devices[].fw_ver in this node's facts) at or
 * above the minimum the playbook gives for its model. The model is the PCI device id (from the
 * PCI function the HCA sits on, else from hca_type "MT<decimal id>"); an entry that also names a
 * board id (PSID) wins over one that does not. Changes nothing: flashing firmware is a
 * maintenance job (mlxfwmanager, a reboot or a reset), not a playbook step. */
#include "nodeagent/apply/apply_int.h"

#include "common/playbook/playbook.h"
#include "common/util/error.h"

#include <stdlib.h>
#include <string.h>

static const char *dflt(const char *s, const char *d)
{
	return s ? s : d;
}

/* The PCI device id ("0x1021") of an RDMA device, or "" when unknown. */
static void device_id(const json_t *facts, const json_t *dev, char out[8])
{
	const char *addr = json_string_value(json_object_get(dev, "pci_address"));
	const char *type = json_string_value(json_object_get(dev, "hca_type"));
	const json_t *pcis = json_object_get(json_object_get(facts, "pci"), "devices"), *p;
	size_t i;

	out[0] = '\0';
	json_array_foreach(pcis, i, p)
	{
		const char *a = json_string_value(json_object_get(p, "address")),
			   *d = json_string_value(json_object_get(p, "device"));

		if (addr && a && d && strcmp(a, addr) == 0 && strlen(d) == 6) {
			snprintf(out, 8, "%s", d);
			return;
		}
	}
	if (type && strncmp(type, "MT", 2) == 0) {
		char *end;
		long v = strtol(type + 2, &end, 10);

		if (!*end && v > 0 && v <= 0xffff)
			snprintf(out, 8, "0x%04lx", v);
	}
}

/* The table entry for (id, board): a board match first, else the entry without a board. */
static const json_t *find_entry(const json_t *table, const char *id, const char *board)
{
	const json_t *e, *any = NULL;
	size_t i;

	json_array_foreach(table, i, e)
	{
		const char *d = json_string_value(json_object_get(e, "device_id")),
			   *b = json_string_value(json_object_get(e, "board_id"));

		if (!d || strcmp(d, id) != 0)
			continue;
		if (b && board && strcmp(b, board) == 0)
			return e;
		if (!b && !any)
			any = e;
	}
	return any;
}

static int fw_check(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	const json_t *table = json_object_get(params, "minimum"), *dev;
	const json_t *devs = json_object_get(json_object_get(ctx->facts, "rdma"), "devices");
	bool ignore = strcmp(dflt(apply_param_str(params, "unknown"), "fail"), "ignore") == 0;
	size_t i, good = 0, bad = 0, skipped = 0;
	struct apply_buf why = {0}, head = {0};

	(void)out;
	if (!ctx->facts)
		return apply_ctx_fail(ctx, -RY_E_UNMET, "no facts to check firmware on");
	json_array_foreach(devs, i, dev)
	{
		const char *name = dflt(json_string_value(json_object_get(dev, "name")), "?");
		const char *fw = json_string_value(json_object_get(dev, "fw_ver"));
		const char *board = json_string_value(json_object_get(dev, "board_id"));
		const json_t *e;
		const char *min, *model;
		char id[8];

		device_id(ctx->facts, dev, id);
		e = id[0] ? find_entry(table, id, board) : NULL;
		if (!e) {
			if (ignore) {
				skipped++;
				continue;
			}
			bad++;
			if (bad <= 4)
				apply_buf_printf(&head,
						 "%s%s is a model the firmware table does not list",
						 apply_buf_len(&head) ? "; " : "", name);
			apply_buf_printf(&why, "%s%s (device %s, board %s): model not in the table",
					 apply_buf_len(&why) ? "; " : "", name,
					 id[0] ? id : "unknown", dflt(board, "unknown"));
			continue;
		}
		min = json_string_value(json_object_get(e, "version"));
		model = json_string_value(json_object_get(e, "model"));
		if (!fw || !min || playbook_version_compare(fw, min) < 0) {
			bad++;
			if (bad <= 4)
				apply_buf_printf(&head, "%s%s firmware %s is below the minimum %s",
						 apply_buf_len(&head) ? "; " : "", name,
						 dflt(fw, "(unknown)"), dflt(min, "?"));
			apply_buf_printf(&why, "%s%s (%s %s, board %s): firmware %s < %s",
					 apply_buf_len(&why) ? "; " : "", name, dflt(model, "?"),
					 id, dflt(board, "unknown"), dflt(fw, "unknown"),
					 dflt(min, "?"));
			continue;
		}
		good++;
	}
	if (bad) {
		int r = apply_ctx_fail(ctx, -RY_E_UNMET, "%zu of %zu HCA(s) below the minimum: %s",
				       bad, good + bad + skipped, apply_buf_str(&why));

		if (bad > 4)
			apply_buf_printf(&head, "; and %zu more", bad - 4);
		apply_ctx_headline(ctx, "%s", apply_buf_str(&head));
		apply_buf_done(&why);
		apply_buf_done(&head);
		return r;
	}
	apply_buf_done(&why);
	apply_buf_done(&head);
	if (good == 0 && skipped == 0)
		return apply_ctx_fail(ctx, -RY_E_UNMET, "no HCA in this node's facts");
	apply_ctx_note(ctx, "%zu HCA(s) at or above the minimum firmware", good);
	if (skipped)
		apply_ctx_note(ctx, "; %zu not in the table (ignored)", skipped);
	return 0;
}

static int fw_apply(struct apply_ctx *ctx, const json_t *params, struct apply_change *out)
{
	(void)params;
	(void)out;
	return apply_ctx_fail(ctx, -RY_E_INVALID, "hca_firmware changes nothing");
}

static int fw_verify(struct apply_ctx *ctx, const json_t *params)
{
	(void)ctx;
	(void)params;
	return 0;
}

const struct apply_step_ops apply_ops_hca_firmware = {
	.type = "hca_firmware",
	.check = fw_check,
	.apply = fw_apply,
	.verify = fw_verify,
};
