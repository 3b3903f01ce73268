/* Benchmark, not a test: a sign-off report of a synthetic campaign (N nodes x R rails, a
 * per-rail pairs latency test and a bandwidth test: every pair's row fed through so_results as
 * so_report_build() feeds the store's rows), rendered the way `signoff create` and `signoff
 * export` do: the canonical bytes, their hash, the CMS signature, its verification, the HTML
 * page. Prints KEY=VALUE lines for bench/signoff-render.sh. */
#include "common/pki/pki.h"
#include "common/util/fs.h"
#include "controller/signoff/canon.h"
#include "controller/signoff/html.h"
#include "controller/signoff/results.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double peak_rss_mib(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss / 1024.0 : -1;
}

static json_t *snapshot(int rails)
{
	json_t *hcas = json_array(), *gpus = json_array();

	for (int i = 0; i < rails; i++) {
		char dev[16], pci[16];

		snprintf(dev, sizeof(dev), "mlx5_%d", i);
		snprintf(pci, sizeof(pci), "0000:%02x:00.0", 0x16 + 0x11 * i);
		json_array_append_new(
			hcas, json_pack("{s:s, s:s, s:s, s:s, s:i, s:s, s:s, s:i, s:s, s:s}",
					"device", dev, "fw_ver", "28.42.1000", "board_id",
					"MT_0000000838", "pci_address", pci, "numa_node", i / 4,
					"link_layer", "InfiniBand", "state", "ACTIVE", "rate_gbps",
					400, "pcie", "Gen5 x16", "pcie_max", "Gen5 x16"));
		json_array_append_new(gpus, json_pack("{s:s, s:s, s:i, s:s, s:s}", "bus", pci,
						      "model", "NVIDIA H200", "numa_node", i / 4,
						      "pcie", "Gen5 x16", "pcie_max", "Gen5 x16"));
	}
	return json_pack("{s:s, s:s, s:{s:s}, s:s, s:s, s:{s:s, s:s, s:s}, s:o, s:o, s:s}", "os",
			 "Debian GNU/Linux 12 (bookworm)", "kernel", "6.1.0-28-amd64", "ofed",
			 "version", "24.10-1.1.4.0", "nvidia_driver", "550.127.05", "gpudirect",
			 "peermem", "software", "nccl", "2.23.4", "ucx", "1.17.0", "openmpi",
			 "4.1.7", "hcas", hcas, "gpus", gpus, "topology_digest",
			 "sha256:0000000000000000000000000000000000000000000000000000000000000000");
}

/* The report without its results: nodes with snapshots, a verdict that passed. */
static json_t *report_head(int n, int rails, json_t *hosts, json_t *ids)
{
	json_t *nodes = json_array(), *snap = snapshot(rails), *enodes = json_array();
	char host[32], id[32];

	for (int i = 0; i < n; i++) {
		snprintf(host, sizeof(host), "gpu-node-%04d", i + 1);
		snprintf(id, sizeof(id), "n-%04d", i + 1);
		json_array_append_new(hosts, json_string(host));
		json_array_append_new(ids, json_string(id));
		json_array_append_new(nodes,
				      json_pack("{s:s, s:s, s:s, s:O}", "id", id, "hostname", host,
						"agent_version", "0.9.0", "snapshot", snap));
		json_array_append_new(enodes,
				      json_pack("{s:s, s:s, s:s, s:[], s:[]}", "id", id, "hostname",
						host, "result", "pass", "reasons", "rails"));
	}
	json_decref(snap);
	return json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:s, s:s, s:[s], s:{s:s, s:s}, s:[], "
			 "s:[], s:o, "
			 "s:{s:s, s:[{s:s, s:s, s:s, s:b, s:[]}, {s:s, s:s, s:s, s:b, s:[]}], s:o, "
			 "s:[], s:[]}, s:n, s:n}",
			 "schema", SO_SCHEMA, "id", "so-bench", "kind", "signoff", "created_at",
			 "2026-12-01T00:00:00.000Z", "controller", "version", "bench",
			 "ca_fingerprint", "sha256:00", "cluster", "bench", "verdict", "pass",
			 "summary", "every test passed", "campaign", "id", "c-bench", "state",
			 "passed", "playbooks", "deployments", "nodes", nodes, "evaluation",
			 "result", "pass", "tests", "name", "pair-lat", "kind", "lat", "pattern",
			 "pairs", "per_rail", 1, "failures", "name", "pair-bw", "kind", "bw",
			 "pattern", "pairs", "per_rail", 1, "failures", "nodes", enodes, "links",
			 "findings", "baseline", "comparison");
}

/* Every pair on every rail of both tests, through so_results as report.c feeds it. */
static int add_results(json_t *doc, int n, int rails, const json_t *hosts, const json_t *ids,
		       size_t *ret_rows)
{
	json_t *tests = json_pack("[{s:s, s:s}, {s:s, s:s}]", "name", "pair-lat", "kind", "lat",
				  "name", "pair-bw", "kind", "bw");
	json_t *counters = json_pack("{s:i, s:i}", "symbol_error", 0, "link_downed", 0);
	size_t total = (size_t)n * (size_t)(n - 1) / 2 * (size_t)rails * 2, rows = 0;
	struct so_results *acc =
		so_results_new(tests, hosts, ids, json_object_get(doc, "evaluation"), total);
	int r = acc ? 0 : -1;

	for (int t = 0; r == 0 && t < 2; t++)
		for (int i = 0; r == 0 && i < n; i++)
			for (int j = i + 1; r == 0 && j < n; j++)
				for (int k = 0; r == 0 && k < rails; k++) {
					double v =
						t == 0 ? 1.8 + (double)((i * 7 + j * 13 + k) % 97) /
									 100
						       : 392.0 + (double)((i + j * 3 + k) % 50) /
									 10;
					json_t *m = t == 0 ? json_pack("{s:f, s:f}", "p50_us", v,
								       "p99_us", v * 1.6)
							   : json_pack("{s:f}", "gbps", v);
					char dev[16];
					struct so_row w = {.test = (size_t)t,
							   .a = (size_t)i,
							   .b = (size_t)j,
							   .rail = k,
							   .phase = "run",
							   .role = "measure",
							   .device = dev,
							   .state = "done",
							   .metrics = m,
							   .counters = counters};

					snprintf(dev, sizeof(dev), "mlx5_%d", k);
					r = so_results_add(acc, &w);
					json_decref(m);
					rows++;
				}
	if (r == 0)
		r = so_results_finish(acc, doc);
	else
		so_results_free(acc);
	json_decref(tests);
	json_decref(counters);
	*ret_rows = rows;
	return r;
}

static int put(const char *dir, const char *name, const void *data, size_t len)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return fs_write_file_atomic(path, data, len, 0600);
}

/* What the anchor (stock openssl cms) signs and verifies in the script: the report, our
 * signature and page, the CA, the signer's certificate and key. */
static int write_files(const char *dir, const char *bytes, size_t len, const char *p7s,
		       const char *html, size_t hlen, X509 *ca, X509 *cert, EVP_PKEY *key)
{
	char path[4096];
	int r = put(dir, "signoff.json", bytes, len);

	if (r >= 0)
		r = put(dir, "signoff.p7s", p7s, strlen(p7s));
	if (r >= 0)
		r = put(dir, "signoff.html", html, hlen);
	snprintf(path, sizeof(path), "%s/ca.pem", dir);
	if (r >= 0)
		r = pki_cert_write(path, ca);
	snprintf(path, sizeof(path), "%s/signer.crt", dir);
	if (r >= 0)
		r = pki_cert_write(path, cert);
	snprintf(path, sizeof(path), "%s/signer.key", dir);
	if (r >= 0)
		r = pki_key_write_pem(path, key);
	return r;
}

int main(int argc, char **argv)
{
	int n = 1024, rails = 8;
	const char *out = NULL;
	size_t rows = 0, len = 0, hlen = 0;
	double t0, t_bytes, t_hash, t_sign, t_verify, t_html;
	char sha[SO_SHA256_TEXT_LEN], why[256] = "", *bytes, *p7s = NULL, *html = NULL;
	X509 *ca = NULL, *cert = NULL;
	EVP_PKEY *ca_key = NULL, *key = NULL;
	json_t *doc, *hosts, *ids;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--nodes") == 0)
			n = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--rails") == 0)
			rails = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--out") == 0)
			out = argv[i + 1];
	}
	if (n < 2 || n > 4096 || rails < 1 || rails > 16) {
		fprintf(stderr, "usage: %s [--nodes 2..4096] [--rails 1..16]\n", argv[0]);
		return 2;
	}
	if (pki_ca_create("bench CA", 30, &ca, &ca_key) < 0 || pki_key_generate(&key) < 0 ||
	    pki_cert_issue_signing(ca, ca_key, key, "bench sign-off", 30, &cert) < 0) {
		fprintf(stderr, "pki setup failed\n");
		return 1;
	}
	hosts = json_array();
	ids = json_array();
	doc = report_head(n, rails, hosts, ids);
	t0 = now_ms();
	if (!doc || add_results(doc, n, rails, hosts, ids, &rows) < 0)
		return 1;
	printf("rows=%zu\nresults_ms=%.0f\nrows_listed=%zu\n", rows, now_ms() - t0,
	       json_array_size(json_object_get(doc, "results")));
	json_decref(hosts);
	json_decref(ids);
	t0 = now_ms();
	bytes = so_report_bytes(doc, &len);
	t_bytes = now_ms() - t0;
	json_decref(doc);
	if (!bytes)
		return 1;
	t0 = now_ms();
	so_sha256_text(bytes, len, sha);
	t_hash = now_ms() - t0;
	t0 = now_ms();
	if (pki_cms_sign(cert, key, ca, bytes, len, &p7s) < 0)
		return 1;
	t_sign = now_ms() - t0;
	t0 = now_ms();
	if (pki_cms_verify(ca, bytes, len, p7s, strlen(p7s), NULL, NULL, why, sizeof(why)) < 0) {
		fprintf(stderr, "verify: %s\n", why);
		return 1;
	}
	t_verify = now_ms() - t0;
	t0 = now_ms();
	if (so_html_render(bytes, len, &html, &hlen, why, sizeof(why)) < 0) {
		fprintf(stderr, "html: %s\n", why);
		return 1;
	}
	t_html = now_ms() - t0;
	printf("json_bytes=%zu\np7s_bytes=%zu\nhtml_bytes=%zu\n", len, strlen(p7s), hlen);
	printf("bytes_ms=%.0f\nhash_ms=%.0f\nsign_ms=%.0f\nverify_ms=%.0f\nhtml_ms=%.0f\n", t_bytes,
	       t_hash, t_sign, t_verify, t_html);
	printf("render_ms=%.0f\npeak_rss_mib=%.0f\n", t_bytes + t_hash + t_sign + t_html,
	       peak_rss_mib());
	if (out && write_files(out, bytes, len, p7s, html, hlen, ca, cert, key) < 0) {
		fprintf(stderr, "writing into %s failed\n", out);
		return 1;
	}
	free(bytes);
	free(p7s);
	free(html);
	X509_free(ca);
	X509_free(cert);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(key);
	return 0;
}
