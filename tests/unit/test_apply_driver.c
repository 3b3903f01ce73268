/* Unit tests of the driver-stack executors on copies of the fixture sysroots (doubles of curl,
 * apt-get, apt-mark, ip and mlnx_qos installed): repo (key fetched and pinned, inline key,
 * update only on change, rollback), package holds and pins, link MTU with its .link file,
 * DSCP -> priority mapping, HCA firmware minimums, and the OpenPGP reader against gpg's own
 * fingerprints. Each: check mode changes nothing, apply changes, a second apply is a no-op. */
#include "nodeagent/apply/apply.h"

#include "common/playbook/pgp.h"
#include "common/util/error.h"
#include "nodeagent/facts/facts.h"
#include "tests/unit/test_apply_util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* check (changed, tree untouched), apply (changed), apply again and check (ok, nothing moves). */
static struct tu_outcome cycle(const char *root, const char *type, const char *params)
{
	uint64_t before = tu_tree_hash(root);
	struct tu_outcome chk = tu_run1(root, type, params, true, NULL), o;

	if (chk.status != APPLY_STATUS_CHANGED)
		fail_msg("check: %s: %s", apply_status_name(chk.status), chk.message);
	assert_true(tu_tree_hash(root) == before);
	o = tu_run1(root, type, params, false, NULL);
	if (o.status != APPLY_STATUS_CHANGED)
		fail_msg("apply: %s: %s", apply_status_name(o.status), o.message);
	before = tu_tree_hash(root);
	o = tu_run1(root, type, params, false, NULL);
	if (o.status != APPLY_STATUS_OK)
		fail_msg("second apply: %s: %s / %s", apply_status_name(o.status), o.message,
			 o.diff);
	assert_true(tu_tree_hash(root) == before);
	assert_int_equal(tu_run1(root, type, params, true, NULL).status, APPLY_STATUS_OK);
	return chk;
}

static void expect_in(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("expected \"%s\" in:\n%s", needle, hay);
}

static void key_file_has(const char *root, const char *rel, const char *fpr, bool armored)
{
	char *data = tu_read(root, rel);
	struct pb_pgp_keys keys;

	assert_non_null(data);
	assert_int_equal(pb_pgp_is_armored(data, strlen(data)), armored);
	free(data);
	{
		/* binary files may hold NUL bytes: read them whole */
		char path[4200];
		FILE *f;
		unsigned char buf[65536];
		size_t n;

		snprintf(path, sizeof(path), "%s/%s", root, rel);
		f = fopen(path, "rb");
		assert_non_null(f);
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		assert_int_equal(pb_pgp_keys_read(buf, n, &keys, NULL, 0), 0);
	}
	assert_int_equal(keys.n, 1);
	assert_string_equal(keys.fpr[0], fpr);
}

/* The OpenPGP reader agrees with gpg, in both encodings, and refuses what is not a public key. */
static void test_pgp(void **state)
{
	char *root = tu_sysroot(""), *fpr = tu_test_key(root, "k.asc"),
	     *asc = tu_read(root, "k.asc");
	unsigned char *bin = NULL;
	char *again = NULL, err[200];
	struct pb_pgp_keys keys;
	size_t blen = 0;
	char norm[65];

	(void)state;
	assert_int_equal(pb_pgp_keys_read(asc, strlen(asc), &keys, err, sizeof(err)), 0);
	assert_int_equal(keys.n, 1);
	assert_string_equal(keys.fpr[0], fpr);
	assert_int_equal(pb_pgp_dearmor(asc, strlen(asc), &bin, &blen, err, sizeof(err)), 0);
	assert_int_equal(pb_pgp_keys_read(bin, blen, &keys, NULL, 0), 0);
	assert_string_equal(keys.fpr[0], fpr);
	assert_int_equal(pb_pgp_armor(bin, blen, &again), 0);
	assert_int_equal(pb_pgp_keys_read(again, strlen(again), &keys, NULL, 0), 0);
	assert_string_equal(keys.fpr[0], fpr);
	/* one changed character: the CRC24 (or the packets) say so */
	{
		char *cut = strdup(asc), *p = strstr(cut, "\n\n") + 10;

		*p = *p == 'A' ? 'B' : 'A';
		assert_int_equal(pb_pgp_keys_read(cut, strlen(cut), &keys, err, sizeof(err)),
				 -RY_E_INVALID);
		free(cut);
	}
	assert_int_equal(pb_pgp_keys_read("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nxx\n", 42,
					  &keys, err, sizeof(err)),
			 -RY_E_INVALID);
	expect_in(err, "private key");
	bin[0] = 0x95; /* old-format tag 5: a secret key packet */
	assert_int_equal(pb_pgp_keys_read(bin, blen, &keys, err, sizeof(err)), -RY_E_INVALID);
	assert_int_equal(
		pb_pgp_fpr_normalize("eb69 3b30 35cd 5710 e231  e123 a4b4 6996 3bf8 63cc", norm),
		40);
	assert_string_equal(norm, "EB693B3035CD5710E231E123A4B469963BF863CC");
	assert_int_equal(pb_pgp_fpr_normalize("0xA024F6F0E6D6A281", norm), 16);
	assert_int_equal(pb_pgp_fpr_normalize("3bf863cc", norm), -EINVAL);
	assert_int_equal(pb_pgp_fpr_normalize(fpr + 24, norm), 16);
	assert_int_equal(pb_pgp_keys_read(asc, strlen(asc), &keys, NULL, 0), 0);
	assert_true(pb_pgp_keys_have(&keys, norm)); /* a long key ID names a v4 key */
	free(again);
	free(bin);
	free(asc);
	free(fpr);
	tu_rm(root);
}

#define REPO_URI "https://vendor.example/repo/debian12/x86_64/"

static void test_repo(void **state)
{
	char *root = tu_sysroot("h200-ib"), *fpr, *other, *asc, *params = NULL, *src;
	struct tu_outcome o;

	(void)state;
	fpr = tu_test_key(root, "etc/railyard-test/www/vendor.example/repo/key.pub");
	tu_write(root, "etc/railyard-test/apt-repos", REPO_URI " vendor-tools 1.2-1\n");
	assert_true(asprintf(&params,
			     "{\"name\":\"vendor\",\"uri\":\"" REPO_URI "\",\"suite\":\"/\","
			     "\"architectures\":[\"amd64\"],"
			     "\"key_path\":\"/usr/share/keyrings/vendor.gpg\","
			     "\"key_url\":\"https://vendor.example/repo/key.pub\","
			     "\"fingerprint\":\"%s\"}",
			     fpr) > 0);
	/* before the repository, apt knows no such package */
	o = tu_run1(root, "package", "{\"name\":\"vendor-tools\"}", false, NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	expect_in(o.message, "Unable to locate package vendor-tools");
	o = cycle(root, "repo", params);
	expect_in(o.diff, "key /usr/share/keyrings/vendor.gpg: (absent) -> fingerprint ");
	expect_in(o.diff, fpr);
	expect_in(o.diff, "(from https://vendor.example/repo/key.pub)\n");
	expect_in(o.diff, "--- /dev/null\n+++ /etc/apt/sources.list.d/vendor.sources\n");
	expect_in(o.diff, "+URIs: " REPO_URI "\n+Suites: /\n+Architectures: amd64\n"
			  "+Signed-By: /usr/share/keyrings/vendor.gpg\n");
	/* fetched once (check mode and the re-runs read the key file), updated once */
	assert_int_equal(tu_calls(root, "curl https://vendor.example/repo/key.pub"), 1);
	assert_int_equal(tu_calls(root, "apt-get update"), 1);
	key_file_has(root, "usr/share/keyrings/vendor.gpg", fpr, false);
	src = tu_read(root, "etc/apt/sources.list.d/vendor.sources");
	expect_in(src, "Types: deb\nURIs: " REPO_URI "\nSuites: /\n");
	free(src);
	/* now the package installs, pinned */
	o = tu_run1(root, "package", "{\"name\":\"vendor-tools\",\"version\":\"= 1.2-1\"}", false,
		    NULL);
	assert_int_equal(o.status, APPLY_STATUS_CHANGED);

	/* the server hands out another key: refused, nothing written */
	other = tu_test_key(root, "etc/railyard-test/www/vendor.example/repo/key.pub");
	free(params);
	assert_true(asprintf(&params,
			     "{\"name\":\"vendor2\",\"uri\":\"" REPO_URI "\",\"suite\":\"/\","
			     "\"key_path\":\"/etc/apt/keyrings/vendor2.asc\","
			     "\"key_url\":\"https://vendor.example/repo/key.pub\","
			     "\"fingerprint\":\"%s\"}",
			     fpr) > 0);
	o = tu_run1(root, "repo", params, false, NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	expect_in(o.message, other);
	expect_in(o.message, "pinned: nothing written");
	assert_false(tu_exists(root, "etc/apt/keyrings/vendor2.asc"));
	assert_false(tu_exists(root, "etc/apt/sources.list.d/vendor2.sources"));

	/* inline key into an .asc file; the update fails: both files rolled back */
	asc = tu_read(root, "etc/railyard-test/www/vendor.example/repo/key.pub");
	tu_write(root, "etc/railyard-test/apt-update-fail", "https://site.example/debian\n");
	free(params);
	params = NULL;
	{
		json_t *p =
			json_pack("{s:s, s:s, s:s, s:[s], s:s, s:s}", "name", "site", "uri",
				  "https://site.example/debian", "suite", "bookworm", "components",
				  "main", "key_path", "/etc/apt/keyrings/site.asc", "key", asc);

		params = json_dumps(p, 0);
		json_decref(p);
	}
	o = tu_run1(root, "repo", params, true, NULL);
	assert_int_equal(o.status, APPLY_STATUS_CHANGED);
	expect_in(o.diff, "key /etc/apt/keyrings/site.asc: (absent) -> fingerprint ");
	expect_in(o.diff, "(inline)\n");
	expect_in(o.diff, "+Components: main\n");
	o = tu_run1(root, "repo", params, false, NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	assert_true(o.rolled_back);
	expect_in(o.message, "`apt-get update -q` exit 100: E: Failed to fetch");
	expect_in(o.message, "rolled back 2 file(s)");
	assert_false(tu_exists(root, "etc/apt/keyrings/site.asc"));
	assert_false(tu_exists(root, "etc/apt/sources.list.d/site.sources"));
	/* once the archive answers, it applies; the .asc holds the key armored */
	tu_write(root, "etc/railyard-test/apt-update-fail", "");
	cycle(root, "repo", params);
	key_file_has(root, "etc/apt/keyrings/site.asc", other, true);

	/* only a fingerprint: the key must already be there */
	free(params);
	assert_true(asprintf(&params,
			     "{\"name\":\"imaged\",\"uri\":\"" REPO_URI "\",\"suite\":\"/\","
			     "\"key_path\":\"/usr/share/keyrings/imaged.gpg\","
			     "\"fingerprint\":\"%s\"}",
			     fpr) > 0);
	o = tu_run1(root, "repo", params, true, NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	expect_in(o.message, "key /usr/share/keyrings/imaged.gpg is (absent), expected the key");
	expect_in(o.message, "nothing to install it from");
	free(asc);
	free(params);
	free(other);
	free(fpr);
	tu_rm(root);
}

static void test_package_hold(void **state)
{
	char *root = tu_sysroot("h200-ib"), *st;
	struct tu_outcome o;

	(void)state;
	tu_write(root, "etc/railyard-test/apt-candidates",
		 "nvidia-driver 550.127.05-1\n"
		 "nvidia-driver 550.90.07-1\n");
	o = cycle(root, "package",
		  "{\"name\":\"nvidia-driver\",\"version\":\"550.127.05-1\",\"hold\":true}");
	assert_string_equal(o.diff, "package nvidia-driver: (not installed) -> 550.127.05-1\n"
				    "package nvidia-driver hold: not held -> held\n");
	assert_int_equal(tu_calls(root, "apt-mark hold nvidia-driver"), 1);
	st = tu_read(root, "var/lib/dpkg/status");
	expect_in(st, "Package: nvidia-driver\nStatus: hold ok installed\n");
	free(st);
	/* moving the pin moves a held package (and may go down) */
	o = cycle(root, "package",
		  "{\"name\":\"nvidia-driver\",\"version\":\"= 550.90.07-1\",\"hold\":true}");
	assert_string_equal(o.diff, "package nvidia-driver: 550.127.05-1 -> = 550.90.07-1\n");
	assert_int_equal(tu_calls(root, "apt-get install -y -q --allow-downgrades "
					"--allow-change-held-packages nvidia-driver=550.90.07-1"),
			 1);
	/* without the step's consent apt refuses to move a held package */
	o = tu_run1(root, "package", "{\"name\":\"nvidia-driver\",\"version\":\"= 550.127.05-1\"}",
		    false, NULL);
	assert_int_equal(o.status, APPLY_STATUS_CHANGED); /* the step consents when it is held */
	o = cycle(root, "package", "{\"name\":\"nvidia-driver\",\"hold\":false}");
	assert_string_equal(o.diff, "package nvidia-driver hold: held -> not held\n");
	tu_rm(root);
}

static void test_link(void **state)
{
	char *root = tu_sysroot("h200-roce"), *mac;
	struct tu_outcome o;

	(void)state;
	tu_write(root, "sys/class/net/enp22s0np0/mtu", "1500\n");
	tu_write(root, "sys/class/net/enp39s0np0/mtu", "1500\n");
	mac = tu_read(root, "sys/class/net/enp22s0np0/address");
	mac[strcspn(mac, "\n")] = '\0';
	o = cycle(root, "link", "{\"interfaces\":[\"enp22s0np0\"],\"mtu\":9000}");
	expect_in(o.diff, "enp22s0np0 mtu: 1500 -> 9000\n");
	expect_in(o.diff, "+++ /etc/systemd/network/60-railyard-enp22s0np0.link\n");
	expect_in(o.diff, "+MTUBytes=9000\n");
	expect_in(o.diff, mac);
	assert_int_equal(tu_calls(root, "ip link set dev enp22s0np0 mtu 9000"), 1);
	{
		char *m = tu_read(root, "sys/class/net/enp22s0np0/mtu");

		assert_string_equal(m, "9000\n");
		free(m);
	}
	/* the second port refuses: the first is put back, MTU and file */
	tu_write(root, "etc/railyard-test/ip-fail", "enp56s0np0\n");
	o = tu_run1(root, "link", "{\"interfaces\":[\"enp39s0np0\",\"enp56s0np0\"],\"mtu\":4200}",
		    false, NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	assert_true(o.rolled_back);
	expect_in(o.message, "mtu greater than device maximum");
	expect_in(o.message, "rolled back 1 file(s) from backup; undid 1 command(s)");
	assert_int_equal(tu_calls(root, "ip link set dev enp39s0np0 mtu 1500"), 1);
	{
		char *m = tu_read(root, "sys/class/net/enp39s0np0/mtu");

		assert_string_equal(m, "1500\n");
		free(m);
	}
	assert_false(tu_exists(root, "etc/systemd/network/60-railyard-enp39s0np0.link"));
	o = tu_run1(root, "link", "{\"interfaces\":[\"eth9\"],\"mtu\":9000}", true, NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	expect_in(o.message, "eth9: no such interface");
	free(mac);
	tu_rm(root);
}

static void test_dscp2prio(void **state)
{
	char *root = tu_sysroot("h200-roce"), *st;
	struct tu_outcome o;

	(void)state;
	/* from pcp: the mapping is not shown before the trust change, then only 26 moves */
	o = cycle(root, "roce_qos",
		  "{\"interfaces\":[\"enp22s0np0\"],\"trust\":\"dscp\","
		  "\"dscp2prio\":{\"26\":\"5\",\"48\":\"6\"}}");
	expect_in(o.diff, "enp22s0np0 trust: pcp -> dscp\n");
	expect_in(o.diff, "enp22s0np0 dscp2prio 26: (not shown in trust pcp) -> 5\n");
	assert_int_equal(tu_calls(root, "mlnx_qos -i enp22s0np0 --dscp2prio set,26,5"), 1);
	assert_int_equal(tu_calls(root, "--dscp2prio set,48"), 0);
	/* in dscp trust the diff reads back the current priority */
	o = tu_run1(root, "roce_qos",
		    "{\"interfaces\":[\"enp22s0np0\"],\"dscp2prio\":{\"26\":\"3\"}}", true, NULL);
	assert_string_equal(o.diff, "enp22s0np0 dscp2prio 26: 5 -> 3\n");
	/* the second port refuses: the first port's mapping is put back */
	tu_write(root, "etc/railyard-test/mlnx_qos-fail", "enp39s0np0\n");
	o = tu_run1(root, "roce_qos",
		    "{\"interfaces\":[\"enp22s0np0\",\"enp39s0np0\"],\"dscp2prio\":{\"26\":\"3\"}}",
		    false, NULL);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	assert_true(o.rolled_back);
	assert_int_equal(tu_calls(root, "mlnx_qos -i enp22s0np0 --dscp2prio set,26,5"), 2);
	st = tu_read(root, "var/lib/railyard-test/mlnx_qos/enp22s0np0");
	expect_in(st, "cur_d2p=0,0,0,0,0,0,0,0,1,1,1,1,1,1,1,1,2,2,2,2,2,2,2,2,3,3,5,3,");
	free(st);
	tu_rm(root);
}

static void test_hca_firmware(void **state)
{
	char *root = tu_sysroot("h200-ib");
	json_t *facts = NULL;
	uint64_t before = tu_tree_hash(root);
	struct tu_outcome o;

	(void)state;
	assert_int_equal(facts_collect(root, &facts), 0);
	o = tu_run1(root, "hca_firmware",
		    "{\"minimum\":[{\"model\":\"ConnectX-7\",\"device_id\":\"0x1021\","
		    "\"version\":\"28.42.1000\"}]}",
		    false, facts);
	assert_int_equal(o.status, APPLY_STATUS_OK);
	assert_string_equal(o.message, "8 HCA(s) at or above the minimum firmware");
	o = tu_run1(root, "hca_firmware",
		    "{\"minimum\":[{\"model\":\"ConnectX-7\",\"device_id\":\"0x1021\","
		    "\"version\":\"28.43.1014\"}]}",
		    true, facts);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	expect_in(o.message, "8 of 8 HCA(s) below the minimum: mlx5_0 (ConnectX-7 0x1021, board "
			     "MT_0000000838): firmware 28.42.1000 < 28.43.1014");
	/* the headline, in words, names four and counts the rest */
	{
		const char *head = "mlx5_0 firmware 28.42.1000 is below the minimum 28.43.1014; "
				   "mlx5_1 firmware 28.42.1000 is below the minimum 28.43.1014; ";

		assert_true(strncmp(o.message, head, strlen(head)) == 0);
	}
	expect_in(o.message, "is below the minimum 28.43.1014; and 4 more\n8 of 8 HCA(s)");
	/* a board-specific row wins over the model's */
	o = tu_run1(root, "hca_firmware",
		    "{\"minimum\":[{\"model\":\"ConnectX-7\",\"device_id\":\"0x1021\","
		    "\"version\":\"28.43.1014\"},{\"model\":\"ConnectX-7 OSFP\",\"device_id\":"
		    "\"0x1021\",\"board_id\":\"MT_0000000838\",\"version\":\"28.39.1002\"}]}",
		    false, facts);
	assert_int_equal(o.status, APPLY_STATUS_OK);
	/* a model the table does not know */
	o = tu_run1(root, "hca_firmware",
		    "{\"minimum\":[{\"model\":\"ConnectX-6 Dx\",\"device_id\":\"0x101d\","
		    "\"version\":\"22.42.1000\"}]}",
		    false, facts);
	assert_int_equal(o.status, APPLY_STATUS_FAILED);
	expect_in(o.message, "mlx5_0 (device 0x1021, board MT_0000000838): model not in the table");
	o = tu_run1(root, "hca_firmware",
		    "{\"minimum\":[{\"model\":\"ConnectX-6 Dx\",\"device_id\":\"0x101d\","
		    "\"version\":\"22.42.1000\"}],\"unknown\":\"ignore\"}",
		    false, facts);
	assert_int_equal(o.status, APPLY_STATUS_OK);
	expect_in(o.message, "8 not in the table (ignored)");
	assert_true(tu_tree_hash(root) == before);
	json_decref(facts);
	tu_rm(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pgp),	     cmocka_unit_test(test_repo),
		cmocka_unit_test(test_package_hold), cmocka_unit_test(test_link),
		cmocka_unit_test(test_dscp2prio),    cmocka_unit_test(test_hca_firmware),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
