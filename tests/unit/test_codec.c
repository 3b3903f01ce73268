/* Unit tests: protocol codec round trips and rejects, reconnect backoff, agent.conf parsing,
 * duration, path, HOST:PORT, escaping, CRC-32, atomic-write and lock helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/rpc/rpc.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"
#include "nodeagent/config.h"
#include "railyard/v1/railyard.pb-c.h"

static void test_agent_message_round_trip(void **state)
{
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT, *out;
	Railyard__V1__Hello h = RAILYARD__V1__HELLO__INIT;
	ProtobufCMessage *decoded = NULL;
	uint8_t *buf;
	size_t len;

	h.agent_version = "1.2.3";
	h.facts_json = "{\"hostname\":\"gpu-node-01\"}";
	h.resume_ack = 41;
	h.boot_id = "abcd";
	m.seq = 7;
	m.ack = 3;
	m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO;
	m.hello = &h;
	assert_int_equal(rpc_pack(&m.base, &buf, &len), 0);
	assert_true(len > 0);
	assert_int_equal(rpc_unpack(&railyard__v1__agent_message__descriptor, buf, len, &decoded),
			 0);
	out = (Railyard__V1__AgentMessage *)decoded;
	assert_int_equal(out->seq, 7);
	assert_int_equal(out->ack, 3);
	assert_int_equal(out->body_case, RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO);
	assert_string_equal(out->hello->agent_version, "1.2.3");
	assert_string_equal(out->hello->facts_json, h.facts_json);
	assert_int_equal(out->hello->resume_ack, 41);
	assert_string_equal(out->hello->boot_id, "abcd");
	protobuf_c_message_free_unpacked(decoded, NULL);
	free(buf);
}

static void test_controller_message_round_trip(void **state)
{
	Railyard__V1__ControllerMessage m = RAILYARD__V1__CONTROLLER_MESSAGE__INIT, *out;
	Railyard__V1__Welcome w = RAILYARD__V1__WELCOME__INIT;
	ProtobufCMessage *decoded = NULL;
	uint8_t *buf;
	size_t len;

	w.node_id = "n-0123456789ab";
	w.cluster = "demo";
	w.heartbeat_interval_ms = 5000;
	w.last_agent_seq = 99;
	m.seq = 1;
	m.body_case = RAILYARD__V1__CONTROLLER_MESSAGE__BODY_WELCOME;
	m.welcome = &w;
	assert_int_equal(rpc_pack(&m.base, &buf, &len), 0);
	assert_int_equal(
		rpc_unpack(&railyard__v1__controller_message__descriptor, buf, len, &decoded), 0);
	out = (Railyard__V1__ControllerMessage *)decoded;
	assert_int_equal(out->body_case, RAILYARD__V1__CONTROLLER_MESSAGE__BODY_WELCOME);
	assert_string_equal(out->welcome->node_id, "n-0123456789ab");
	assert_string_equal(out->welcome->cluster, "demo");
	assert_int_equal(out->welcome->heartbeat_interval_ms, 5000);
	assert_int_equal(out->welcome->last_agent_seq, 99);
	protobuf_c_message_free_unpacked(decoded, NULL);
	free(buf);
}

static void test_undecodable_rejected(void **state)
{
	static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x08, 0x96};
	Railyard__V1__EnrollRequest rq = RAILYARD__V1__ENROLL_REQUEST__INIT;
	ProtobufCMessage *decoded = NULL;
	uint8_t *buf;
	size_t len;

	assert_int_equal(
		rpc_unpack(&railyard__v1__agent_message__descriptor, junk, sizeof(junk), &decoded),
		-RY_E_INVALID);
	/* A valid message cut short must not decode either. */
	rq.token = "ry1.abcdef";
	rq.hostname = "gpu-node-01";
	rq.csr_pem = "-----BEGIN CERTIFICATE REQUEST-----";
	assert_int_equal(rpc_pack(&rq.base, &buf, &len), 0);
	assert_int_equal(
		rpc_unpack(&railyard__v1__enroll_request__descriptor, buf, len - 3, &decoded),
		-RY_E_INVALID);
	assert_null(decoded);
	assert_int_equal(rpc_unpack(&railyard__v1__enroll_request__descriptor, buf,
				    RPC_MAX_MESSAGE + 1, &decoded),
			 -RY_E_TOO_BIG);
	free(buf);
}

static void test_backoff(void **state)
{
	struct rpc_backoff b = {100, 1000, 0};
	int prev_cap = 0;

	for (int i = 0; i < 12; i++) {
		int cap = 100 << (i < 4 ? i : 4);
		int d = rpc_backoff_next_ms(&b);

		if (cap > 1000)
			cap = 1000;
		/* Equal jitter: [cap/2, cap). */
		assert_true(d >= cap / 2);
		assert_true(d < cap);
		assert_true(cap >= prev_cap);
		prev_cap = cap;
	}
	rpc_backoff_reset(&b);
	assert_true(rpc_backoff_next_ms(&b) < 100);
}

static void test_agent_config(void **state)
{
	struct agent_config cfg = {0};
	char err[256] = "";

	assert_int_equal(agent_config_parse("# c\n\ncontroller = 10.0.0.1:7443\n"
					    "node_id=n-1\n  cluster =  demo  \n",
					    "agent.conf", &cfg, err, sizeof(err)),
			 0);
	assert_string_equal(cfg.controller, "10.0.0.1:7443");
	assert_string_equal(cfg.node_id, "n-1");
	assert_string_equal(cfg.cluster, "demo");
	agent_config_done(&cfg);

	assert_int_equal(agent_config_parse("controller = a:1\n\nbogus = 1\n", "x.conf", &cfg, err,
					    sizeof(err)),
			 -RY_E_INVALID);
	assert_string_equal(err, "x.conf:3: unknown key 'bogus'");
	assert_int_equal(
		agent_config_parse("controller = a:1\nnode_id\n", "x.conf", &cfg, err, sizeof(err)),
		-RY_E_INVALID);
	assert_string_equal(err, "x.conf:2: expected 'key = value'");
	assert_int_equal(agent_config_parse("controller = a:1\n", "x.conf", &cfg, err, sizeof(err)),
			 -RY_E_INVALID);
	assert_non_null(strstr(err, "required"));

	/* reboot_command: the reboot step's command, words split on blanks (no shell). */
	assert_int_equal(agent_config_parse("controller = a:1\nnode_id = n\n"
					    "reboot_command = /usr/local/bin/fake-reboot  --now\n",
					    "x.conf", &cfg, err, sizeof(err)),
			 0);
	assert_string_equal(cfg.reboot_argv[0], "/usr/local/bin/fake-reboot");
	assert_string_equal(cfg.reboot_argv[1], "--now");
	assert_null(cfg.reboot_argv[2]);
	agent_config_done(&cfg);
	assert_int_equal(agent_config_parse("controller = a:1\nnode_id = n\n"
					    "reboot_command = bin/reboot\n",
					    "x.conf", &cfg, err, sizeof(err)),
			 -RY_E_INVALID);
	assert_non_null(strstr(err, "x.conf:3: reboot_command: expected a program"));
	assert_int_equal(agent_config_parse("controller = a:1\nnode_id = n\nreboot_command = "
					    "a b c d e f g h i j k l m n o p q\n",
					    "x.conf", &cfg, err, sizeof(err)),
			 -RY_E_INVALID);

	/* Collective runs: orted, mpirun and coll_program, absolute paths (NULL: the defaults). */
	assert_int_equal(
		agent_config_parse("controller = a:1\nnode_id = n\n"
				   "orted = /opt/ompi/bin/orted\nmpirun = /opt/ompi/bin/mpirun\n"
				   "coll_program = /usr/lib/railyard/railyard-coll\n",
				   "x.conf", &cfg, err, sizeof(err)),
		0);
	assert_string_equal(cfg.orted, "/opt/ompi/bin/orted");
	assert_string_equal(cfg.mpirun, "/opt/ompi/bin/mpirun");
	assert_string_equal(cfg.coll_program, "/usr/lib/railyard/railyard-coll");
	agent_config_done(&cfg);
	assert_int_equal(agent_config_parse("controller = a:1\nnode_id = n\n", "x.conf", &cfg, err,
					    sizeof(err)),
			 0);
	assert_null(cfg.orted);
	assert_null(cfg.coll_program);
	agent_config_done(&cfg);
	assert_int_equal(agent_config_parse("controller = a:1\nnode_id = n\norted = orted\n",
					    "x.conf", &cfg, err, sizeof(err)),
			 -RY_E_INVALID);
	assert_string_equal(err, "x.conf:3: 'orted' must be an absolute path");
}

static void test_durations_and_paths(void **state)
{
	int64_t ms;
	char *p;

	assert_int_equal(util_parse_duration_ms("250ms", &ms), 0);
	assert_int_equal(ms, 250);
	/* A monotonic deadline in ms as a condition variable's timespec. */
	assert_int_equal(util_mono_timespec(1234567).tv_sec, 1234);
	assert_int_equal(util_mono_timespec(1234567).tv_nsec, 567000000L);
	assert_int_equal(util_mono_timespec(999).tv_sec, 0);
	assert_int_equal(util_parse_duration_ms("90", &ms), 0);
	assert_int_equal(ms, 90000);
	assert_int_equal(util_parse_duration_ms("2h", &ms), 0);
	assert_int_equal(ms, 7200000);
	assert_int_equal(util_parse_duration_ms("-1s", &ms), -EINVAL);
	assert_int_equal(util_parse_duration_ms("5 s", &ms), -EINVAL);
	assert_int_equal(util_parse_duration_ms("1y", &ms), -EINVAL);
	assert_int_equal(util_parse_duration_ms("99999999999999999999d", &ms), -EINVAL);

	p = fs_path_join("/srv/root/", "/sys/class");
	assert_string_equal(p, "/srv/root/sys/class");
	free(p);
	p = fs_path_join("/", "proc/meminfo");
	assert_string_equal(p, "/proc/meminfo");
	free(p);
	p = fs_path_join(NULL, "/etc/os-release");
	assert_string_equal(p, "/etc/os-release");
	free(p);
}

static void test_hostport(void **state)
{
	char host[64];
	uint16_t port = 0;

	assert_int_equal(util_parse_hostport("127.0.0.1:7443", false, host, sizeof(host), &port),
			 0);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 7443);
	assert_int_equal(util_parse_hostport("[fd00::5]:65535", false, host, sizeof(host), &port),
			 0);
	assert_string_equal(host, "fd00::5");
	assert_int_equal(port, 65535);
	assert_int_equal(util_parse_hostport("ctl.example:0", true, host, sizeof(host), &port), 0);
	assert_int_equal(port, 0);
	/* What used to listen on 99999 - 65536 = 34463 and exit 0. */
	assert_int_equal(util_parse_hostport("127.0.0.1:99999", true, host, sizeof(host), &port),
			 -EINVAL);
	assert_int_equal(util_parse_hostport("127.0.0.1:0", false, host, sizeof(host), &port),
			 -EINVAL);
	assert_int_equal(util_parse_hostport("127.0.0.1", false, host, sizeof(host), &port),
			 -EINVAL);
	assert_int_equal(util_parse_hostport(":80", false, host, sizeof(host), &port), -EINVAL);
	assert_int_equal(util_parse_hostport("h:8x", false, host, sizeof(host), &port), -EINVAL);
	assert_int_equal(util_parse_hostport("h:-1", false, host, sizeof(host), &port), -EINVAL);
	assert_int_equal(util_parse_hostport("fd00::5:80", false, host, sizeof(host), &port),
			 -EINVAL);
	assert_int_equal(util_parse_hostport("a b:80", false, host, sizeof(host), &port), -EINVAL);
	assert_int_equal(util_parse_hostport("h:000080", false, host, sizeof(host), &port),
			 -EINVAL);
}

static void test_escape(void **state)
{
	char *e;

	e = util_escape("gpu-01 \xc3\xa9t\xc3\xa9 \xe2\x9c\x93", false); /* valid UTF-8 stays */
	assert_string_equal(e, "gpu-01 \xc3\xa9t\xc3\xa9 \xe2\x9c\x93");
	free(e);
	e = util_escape("a\n\x1b[31mred\r\t\x7f", false);
	assert_string_equal(e, "a\\n\\x1b[31mred\\r\\t\\x7f");
	free(e);
	e = util_escape("line1\nline2\x1b", true);
	assert_string_equal(e, "line1\nline2\\x1b");
	free(e);
	/* C1 controls (U+009B is CSI) and bytes that are not UTF-8. */
	e = util_escape("x\xc2\x9b"
			"2J y\xff z\xc3",
			false);
	assert_string_equal(e, "x\\xc2\\x9b2J y\\xff z\\xc3");
	free(e);
	assert_true(util_has_control("a\x1b"));
	assert_false(util_has_control("plain \xc3\xa9"));
}

static void test_crc32(void **state)
{
	/* The check value of CRC-32/ISO-HDLC. */
	assert_int_equal(util_crc32(0, "123456789", 9), 0xcbf43926u);
	assert_int_equal(util_crc32(util_crc32(0, "1234", 4), "56789", 5), 0xcbf43926u);
	assert_int_equal(util_crc32(0, "", 0), 0);
}

/* An atomic write killed half-way leaves its temporary file; the next write of the path
 * removes it. */
static void test_atomic_write_leftovers(void **state)
{
	char dir[] = "/tmp/ry-fs-XXXXXX", path[64], stale[96], other[96];
	char *text = NULL;
	int fd;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/nccl.conf", dir);
	snprintf(stale, sizeof(stale), "%s/.nccl.conf.ry-tmpAbC123", dir);
	snprintf(other, sizeof(other), "%s/.ucx.conf.ry-tmpAbC123", dir);
	fd = open(stale, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	fd = open(other, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(fs_write_file_atomic(path, "x=1\n", 4, 0644), 0);
	assert_int_equal(access(stale, F_OK), -1);
	assert_int_equal(access(other, F_OK), 0); /* another file's: not ours to remove */
	assert_int_equal(fs_read_file(path, 100, &text, NULL), 0);
	assert_string_equal(text, "x=1\n");
	free(text);
	unlink(other);
	unlink(path);
	rmdir(dir);
}

static void test_dir_lock(void **state)
{
	char dir[] = "/tmp/ry-lock-XXXXXX", path[64];
	long holder = 0;
	int fd = -1, fd2 = -1;
	pid_t child;
	int status;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(fs_lock_dir(dir, "x.lock", &fd, NULL), 0);
	/* Another process is refused and told who holds it (flock locks are per open file, so
	 * a second open in this process would be refused as well; a child shows it plainly). */
	child = fork();
	if (child == 0)
		_exit(fs_lock_dir(dir, "x.lock", &fd2, &holder) == -RY_E_LOCKED &&
				      holder == (long)getppid()
			      ? 0
			      : 1);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(fd);
	/* Released with the descriptor (and with the process, kill -9 included). */
	assert_int_equal(fs_lock_dir(dir, "x.lock", &fd, NULL), 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/x.lock", dir);
	unlink(path);
	assert_int_equal(fs_lock_dir("/nonexistent-ry", "x.lock", &fd, NULL), -ENOENT);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_agent_message_round_trip),
		cmocka_unit_test(test_controller_message_round_trip),
		cmocka_unit_test(test_undecodable_rejected),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_agent_config),
		cmocka_unit_test(test_durations_and_paths),
		cmocka_unit_test(test_hostport),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_crc32),
		cmocka_unit_test(test_atomic_write_leftovers),
		cmocka_unit_test(test_dir_lock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
