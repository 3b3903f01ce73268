/* GPU<->HCA topology from the PCIe tree in sysfs: where each GPU (sys/bus/pci/devices/<bus>) and
 * each HCA (sys/class/infiniband/<dev>/device) sits below its host bridge, the relation of every
 * pair as `nvidia-smi topo -m` names it, one HCA per GPU (its rail) and the problems an operator
 * must fix. Runs after the gpu and rdma collectors and reads their members. */
#include "nodeagent/facts/facts_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Bounds: 64 x 64 pairs keep the facts document (1 MiB at the controller) well inside its limit,
 * about 230 KiB of pairs; an HGX node has 8 x 8 to 10. */
#define TOPO_MAX_DEPTH 16 /* PCI bridges between a host bridge and a device */
#define TOPO_MAX_HCAS  64
#define TOPO_MAX_GPUS  FACTS_MAX_GPUS

/* Closest first; the order is the preference when a GPU picks its HCA. */
enum topo_rel { TOPO_PIX, TOPO_PXB, TOPO_PHB, TOPO_NODE, TOPO_SYS, TOPO__COUNT };

static const char *const topo_rel_names[TOPO__COUNT] = {"PIX", "PXB", "PHB", "NODE", "SYS"};

/* A GPU or an HCA placed in the PCIe tree. */
struct topo_dev {
	const char *name; /* GPU bus id or HCA name: borrowed from the facts */
	const char *pci;  /* its PCI address: borrowed */
	json_t *entry;	  /* its gpus[] or rdma.devices[] entry: borrowed */
	char *root;	  /* path up to its host bridge ("sys/devices/pci0000:10"), owned */
	char bridges[TOPO_MAX_DEPTH][16];
	size_t depth; /* bridges between the host bridge and the device */
	long long numa;
	long long port; /* HCA: the first ACTIVE port, else the first; 0: none */
};

struct topo {
	struct facts_ctx *ctx;
	struct topo_dev gpus[TOPO_MAX_GPUS], hcas[TOPO_MAX_HCAS];
	size_t ngpus, nhcas;
	unsigned char rel[TOPO_MAX_GPUS][TOPO_MAX_HCAS];    /* enum topo_rel */
	unsigned char common[TOPO_MAX_GPUS][TOPO_MAX_HCAS]; /* bridges in common */
	int assign[TOPO_MAX_GPUS];			    /* HCA index; -1 none */
	unsigned uses[TOPO_MAX_HCAS];
};

/* "0000:17:00.0": domain of 4 to 8 hex digits (VMD domains have 5), bus, device, function. */
static bool topo_pci_address(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");

	if (n < 4 || n > 8 || s[n] != ':')
		return false;
	s += n + 1;
	return isxdigit((unsigned char)s[0]) && isxdigit((unsigned char)s[1]) && s[2] == ':' &&
	       isxdigit((unsigned char)s[3]) && isxdigit((unsigned char)s[4]) && s[5] == '.' &&
	       s[6] >= '0' && s[6] <= '7' && s[7] == '\0' && strspn(s, "0123456789abcdef:.") == 7;
}

/* "pci0000:10", the directory of a PCI host bridge (root bus 0x10 of domain 0). */
static bool topo_host_bridge(const char *s)
{
	size_t n;

	if (strncmp(s, "pci", 3) != 0)
		return false;
	s += 3;
	n = strspn(s, "0123456789abcdef");
	return n >= 4 && n <= 8 && s[n] == ':' && strlen(s + n + 1) == 2 &&
	       strspn(s + n + 1, "0123456789abcdef") == 2;
}

/* Place d from the link at path (relative to the sysroot, formatted by the caller): the link's
 * target must be sys/devices/.../pciDDDD:BB/<bridge>/.../<d->pci>. Components before the host
 * bridge (a hypervisor's bus, e.g. VMBus) are kept in root. false and a warning when d cannot be
 * placed. */
static bool topo_place(struct facts_ctx *ctx, struct topo_dev *d, const char *link)
{
	char *real = NULL, *save = NULL, *tok, *hb_end = NULL;
	const char *comps[TOPO_MAX_DEPTH + 2];
	size_t n = 0;
	bool ok = false;

	if (facts_realpathf(ctx, 0, &real, "%s", link) < 0)
		return false;
	if (strncmp(real, "sys/devices/", 12) != 0)
		goto bad;
	for (tok = strtok_r(real + 12, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (topo_host_bridge(tok)) {
			/* the host bridge nearest the device counts; what was above is root */
			n = 0;
			hb_end = tok + strlen(tok);
			continue;
		}
		if (!hb_end)
			continue;
		if (!topo_pci_address(tok) || n == TOPO_MAX_DEPTH + 2)
			goto bad;
		comps[n++] = tok;
	}
	if (!hb_end || n == 0 || n > TOPO_MAX_DEPTH + 1 || strcasecmp(comps[n - 1], d->pci) != 0)
		goto bad;
	/* strtok_r cut the path at every slash: put them back up to the host bridge */
	for (char *p = real; p < hb_end; p++)
		if (*p == '\0')
			*p = '/';
	*hb_end = '\0';
	d->root = strdup(real);
	if (!d->root) {
		ctx->oom = true;
		goto out;
	}
	d->depth = n - 1;
	for (size_t i = 0; i < d->depth; i++)
		snprintf(d->bridges[i], sizeof(d->bridges[i]), "%s", comps[i]);
	ok = true;
	goto out;
bad:
	facts_warn(ctx, "/%s: not a PCI device below a host bridge", link);
out:
	free(real);
	return ok;
}

static long long topo_numa(const json_t *entry)
{
	const json_t *v = json_object_get(entry, "numa_node");

	return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* The port an HCA's rail uses: the first ACTIVE one, else the first; 0 when it has none. */
static long long topo_port(const json_t *dev)
{
	const json_t *ports = json_object_get(dev, "ports"), *p;
	long long first = 0;
	size_t i;

	json_array_foreach(ports, i, p)
	{
		const json_t *num = json_object_get(p, "port");
		const char *state = json_string_value(json_object_get(p, "state"));

		if (!json_is_integer(num))
			continue;
		if (state && strcmp(state, "ACTIVE") == 0)
			return json_integer_value(num);
		if (!first)
			first = json_integer_value(num);
	}
	return first;
}

/* HCAs with a PCI function of their own: software devices (rxe, siw) have none, and SR-IOV
 * virtual functions (a physfn link) share their physical function's place. */
static void topo_hcas(struct topo *t, json_t *facts)
{
	json_t *devs = json_object_get(json_object_get(facts, "rdma"), "devices"), *d;
	size_t i;

	json_array_foreach(devs, i, d)
	{
		struct topo_dev *h = &t->hcas[t->nhcas];
		const char *name = json_string_value(json_object_get(d, "name"));
		const char *pci = json_string_value(json_object_get(d, "pci_address"));
		char *phys = NULL;

		if (t->ctx->oom)
			break;
		/* sub-functions (mlx5_core.sf.N) sit on their physical function like VFs */
		if (!name || !pci || !topo_pci_address(pci))
			continue;
		if (t->nhcas == TOPO_MAX_HCAS) {
			facts_warn(t->ctx,
				   "/sys/class/infiniband: more than %d HCAs, the topology "
				   "pairs the first %d",
				   TOPO_MAX_HCAS, TOPO_MAX_HCAS);
			break;
		}
		if (facts_readlinkf(t->ctx, FACTS_QUIET, &phys,
				    "sys/class/infiniband/%s/device/physfn", name) == 0) {
			free(phys);
			continue;
		}
		*h = (struct topo_dev){.name = name, .pci = pci, .entry = d};
		h->numa = topo_numa(d);
		h->port = topo_port(d);
		{
			char link[300];

			snprintf(link, sizeof(link), "sys/class/infiniband/%s/device", name);
			if (!topo_place(t->ctx, h, link))
				continue;
		}
		t->nhcas++;
	}
}

/* GPUs the driver did not exclude (an excluded GPU takes no rail). */
static void topo_gpus(struct topo *t, json_t *gpus)
{
	json_t *g;
	size_t i;

	json_array_foreach(gpus, i, g)
	{
		struct topo_dev *d = &t->gpus[t->ngpus];
		const char *bus = json_string_value(json_object_get(g, "bus"));
		char link[64];

		if (t->ctx->oom)
			break;
		if (!bus || json_is_true(json_object_get(g, "excluded")) || strlen(bus) > 16)
			continue;
		if (t->ngpus == TOPO_MAX_GPUS) {
			facts_warn(t->ctx,
				   "/sys/bus/pci/devices: more than %d GPUs, the topology "
				   "pairs the first %d",
				   TOPO_MAX_GPUS, TOPO_MAX_GPUS);
			break;
		}
		*d = (struct topo_dev){.name = bus, .pci = bus, .entry = g};
		d->numa = topo_numa(g);
		snprintf(link, sizeof(link), "sys/bus/pci/devices/%s", bus);
		if (!topo_place(t->ctx, d, link))
			continue;
		t->ngpus++;
	}
}

/* The relation of g and h, and how many bridges their paths share. Below one host bridge: a
 * common bridge with each device at most one bridge below it is one PCIe switch (PIX), deeper
 * is several switches (PXB), none is the host bridge itself (PHB). Across host bridges the NUMA
 * nodes decide (NODE or SYS); an unreported node (-1) on both sides counts as the same. */
static enum topo_rel topo_relation(const struct topo_dev *g, const struct topo_dev *h,
				   size_t *ret_common)
{
	size_t c = 0;

	*ret_common = 0;
	if (strcmp(g->root, h->root) != 0)
		return g->numa == h->numa ? TOPO_NODE : TOPO_SYS;
	while (c < g->depth && c < h->depth && strcmp(g->bridges[c], h->bridges[c]) == 0)
		c++;
	*ret_common = c;
	if (c == 0)
		return TOPO_PHB;
	return g->depth - c <= 1 && h->depth - c <= 1 ? TOPO_PIX : TOPO_PXB;
}

/* One HCA per GPU: level by level (PIX first), GPUs in bus order take the free HCA of that
 * relation with the most bridges in common (then the first by name). GPUs left over when HCAs
 * are fewer share the nearest, least used one. */
static void topo_assign(struct topo *t)
{
	for (size_t g = 0; g < t->ngpus; g++)
		t->assign[g] = -1;
	for (int lvl = 0; lvl < TOPO__COUNT; lvl++) {
		for (size_t g = 0; g < t->ngpus; g++) {
			int best = -1;

			if (t->assign[g] >= 0)
				continue;
			for (size_t h = 0; h < t->nhcas; h++) {
				if (t->uses[h] || t->rel[g][h] != lvl)
					continue;
				if (best < 0 || t->common[g][h] > t->common[g][best])
					best = (int)h;
			}
			if (best >= 0) {
				t->assign[g] = best;
				t->uses[best]++;
			}
		}
	}
	for (size_t g = 0; g < t->ngpus; g++) {
		int best = -1;

		if (t->assign[g] >= 0)
			continue;
		for (size_t h = 0; h < t->nhcas; h++) {
			if (best < 0 || t->rel[g][h] < t->rel[g][best] ||
			    (t->rel[g][h] == t->rel[g][best] &&
			     (t->uses[h] < t->uses[best] ||
			      (t->uses[h] == t->uses[best] &&
			       t->common[g][h] > t->common[g][best]))))
				best = (int)h;
		}
		if (best >= 0) {
			t->assign[g] = best;
			t->uses[best]++;
		}
	}
}

/* A GPU whose HCA is beyond PXB: NCCL's default GPUDirect RDMA level (NCCL_NET_GDR_LEVEL=PXB)
 * stages its traffic through host memory. Names the GPU, its HCA and, when a closer HCA serves
 * another GPU, that one. */
static void topo_problem(struct topo *t, json_t *problems, size_t g)
{
	const struct topo_dev *gpu = &t->gpus[g], *hca = &t->hcas[t->assign[g]];
	enum topo_rel rel = t->rel[g][t->assign[g]];
	char why[128], closer[160] = "", *msg = NULL;
	size_t best = (size_t)t->assign[g];

	for (size_t h = 0; h < t->nhcas; h++)
		if (t->rel[g][h] < t->rel[g][best])
			best = h;
	if (rel == TOPO_PHB)
		snprintf(why, sizeof(why), "through the host bridge: no PCIe switch in common");
	else if (rel == TOPO_NODE)
		snprintf(why, sizeof(why), "through the CPU: another host bridge of NUMA node %lld",
			 gpu->numa);
	else
		snprintf(why, sizeof(why),
			 "across sockets: GPU on NUMA node %lld, HCA on node %lld", gpu->numa,
			 hca->numa);
	if (best != (size_t)t->assign[g]) {
		for (size_t o = 0; o < t->ngpus; o++) {
			if (t->assign[o] != (int)best)
				continue;
			snprintf(closer, sizeof(closer), "; the closer %s (%s) serves GPU %s",
				 t->hcas[best].name, topo_rel_names[t->rel[g][best]],
				 t->gpus[o].name);
			break;
		}
	}
	if (asprintf(&msg, "GPU %s: %s HCA %s (%s) is %s (%s)%s", gpu->name,
		     closer[0] ? "nearest free" : "nearest", hca->name, hca->pci,
		     topo_rel_names[rel], why, closer) < 0) {
		t->ctx->oom = true;
		return;
	}
	facts_append_str(t->ctx, problems, msg);
	free(msg);
}

/* The gpus[] members and the topology object from the placed devices. */
static void topo_report(struct topo *t, json_t *facts)
{
	json_t *topo = json_object(), *pairs = json_array(), *problems = json_array();
	char *hcas = NULL;
	size_t len = 0;
	FILE *f = NULL;

	if (!topo || !pairs || !problems)
		goto oom;
	for (size_t g = 0; g < t->ngpus; g++) {
		for (size_t h = 0; h < t->nhcas; h++) {
			json_t *p = json_object();

			if (!p)
				goto oom;
			facts_set_str(t->ctx, p, "gpu", t->gpus[g].name);
			facts_set_str(t->ctx, p, "hca", t->hcas[h].name);
			facts_set_str(t->ctx, p, "relation", topo_rel_names[t->rel[g][h]]);
			facts_append_new(t->ctx, pairs, p);
		}
	}
	f = open_memstream(&hcas, &len);
	if (!f)
		goto oom;
	for (size_t g = 0; g < t->ngpus; g++) {
		const struct topo_dev *h;
		json_t *near;
		bool seen = false;

		if (t->assign[g] < 0)
			continue;
		h = &t->hcas[t->assign[g]];
		near = json_object();
		if (!near)
			goto oom;
		facts_set_str(t->ctx, near, "device", h->name);
		if (h->port)
			facts_set_int(t->ctx, near, "port", h->port);
		facts_set_str(t->ctx, near, "relation", topo_rel_names[t->rel[g][t->assign[g]]]);
		facts_set_new(t->ctx, t->gpus[g].entry, "nearest_hca", near);
		if (t->rel[g][t->assign[g]] > TOPO_PXB)
			topo_problem(t, problems, g);
		/* NCCL_IB_HCA names each HCA once, in the order of the GPUs it serves */
		for (size_t o = 0; o < g; o++)
			seen = seen || t->assign[o] == t->assign[g];
		if (seen)
			continue;
		fprintf(f, "%s%s", ftell(f) > 0 ? "," : "", h->name);
		if (h->port)
			fprintf(f, ":%lld", h->port);
	}
	if (fclose(f) != 0) {
		f = NULL;
		goto oom;
	}
	f = NULL;
	facts_set_str(t->ctx, topo, "source", "sysfs");
	facts_set_new(t->ctx, topo, "pairs", pairs);
	if (hcas && hcas[0])
		facts_set_str(t->ctx, topo, "nccl_ib_hca", hcas);
	facts_set_new(t->ctx, topo, "problems", problems);
	facts_set_new(t->ctx, facts, "topology", topo);
	free(hcas);
	return;
oom:
	if (f)
		fclose(f);
	free(hcas);
	json_decref(topo);
	json_decref(pairs);
	json_decref(problems);
	t->ctx->oom = true;
}

int facts_collect_topology(struct facts_ctx *ctx, json_t *facts)
{
	json_t *gpus = json_object_get(facts, "gpus");
	struct topo *t;

	/* no GPU: nothing to pair */
	if (json_array_size(gpus) == 0)
		return ctx->oom ? -ENOMEM : 0;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->ctx = ctx;
	topo_hcas(t, facts);
	/* GPUs are placed only when there is an HCA to pair them with */
	if (t->nhcas)
		topo_gpus(t, gpus);
	for (size_t g = 0; g < t->ngpus; g++) {
		for (size_t h = 0; h < t->nhcas; h++) {
			size_t common;

			t->rel[g][h] =
				(unsigned char)topo_relation(&t->gpus[g], &t->hcas[h], &common);
			t->common[g][h] = (unsigned char)common;
		}
	}
	topo_assign(t);
	if (!ctx->oom)
		topo_report(t, facts);
	for (size_t i = 0; i < t->ngpus; i++)
		free(t->gpus[i].root);
	for (size_t i = 0; i < t->nhcas; i++)
		free(t->hcas[i].root);
	free(t);
	return ctx->oom ? -ENOMEM : 0;
}
