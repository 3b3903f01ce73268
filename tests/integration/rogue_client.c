/* A misbehaving agent for the integration tests: opens Controller.Connect with the given
 * certificate (or none) and sends what a broken or hostile client would, then checks the status
 * the controller ends the stream with.
 *   rogue_client --target H:P --ca CA.pem [--cert C --key K] --mode M --expect STATUS
 * modes: hello (a well-formed Hello), garbage, no-hello, bad-seq, no-body, huge-facts,
 * bad-facts. Exit 0 when the final status name equals --expect. */
#include "common/rpc/rpc.h"
#include "common/util/error.h"
#include "common/util/fs.h"
#include "common/util/util.h"
#include "railyard/v1/railyard.pb-c.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path)
{
	char *buf = NULL;

	if (path && fs_read_file(path, 1024 * 1024, &buf, NULL) < 0) {
		fprintf(stderr, "rogue_client: cannot read %s\n", path);
		exit(2);
	}
	return buf;
}

static int send_agent(struct rpc_client_stream *cs, uint64_t seq, int body, const char *facts)
{
	Railyard__V1__AgentMessage m = RAILYARD__V1__AGENT_MESSAGE__INIT;
	Railyard__V1__Hello h = RAILYARD__V1__HELLO__INIT;
	Railyard__V1__Heartbeat hb = RAILYARD__V1__HEARTBEAT__INIT;

	m.seq = seq;
	if (body == RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO) {
		h.agent_version = (char *)"rogue-1";
		h.facts_json = (char *)facts;
		m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO;
		m.hello = &h;
	} else if (body == RAILYARD__V1__AGENT_MESSAGE__BODY_HEARTBEAT) {
		m.body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_HEARTBEAT;
		m.heartbeat = &hb;
	}
	return rpc_client_stream_send(cs, &m.base);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"target", required_argument, NULL, 't'},
		{"ca", required_argument, NULL, 'a'},
		{"cert", required_argument, NULL, 'c'},
		{"key", required_argument, NULL, 'k'},
		{"mode", required_argument, NULL, 'm'},
		{"expect", required_argument, NULL, 'e'},
		{NULL, 0, NULL, 0},
	};
	const char *target = NULL, *ca = NULL, *cert = NULL, *key = NULL, *mode = "hello";
	const char *expect = NULL, *got;
	struct rpc_channel_config cc = {0};
	struct rpc_channel *ch = NULL;
	struct rpc_client_stream *cs = NULL;
	char *huge = NULL;
	int c, r = 0, welcomed = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			target = optarg;
			break;
		case 'a':
			ca = optarg;
			break;
		case 'c':
			cert = optarg;
			break;
		case 'k':
			key = optarg;
			break;
		case 'm':
			mode = optarg;
			break;
		case 'e':
			expect = optarg;
			break;
		default:
			return 2;
		}
	}
	if (!target || !ca || !expect)
		return 2;
	rpc_init();
	cc.target = target;
	cc.tls.ca_pem = slurp(ca);
	cc.tls.cert_pem = slurp(cert);
	cc.tls.key_pem = slurp(key);
	cc.server_name = "railyard-controller";
	if (rpc_channel_new(&cc, &ch) < 0) {
		fprintf(stderr, "rogue_client: cannot create the channel\n");
		return 2;
	}
	/* A refused TLS handshake leaves the channel failing to connect: what a fail-fast
	 * client sees then is UNAVAILABLE. */
	if (rpc_channel_wait_ready(ch, util_now_mono_ms() + 5000) < 0) {
		printf("rogue_client: mode %s -> UNAVAILABLE (channel never became ready)\n", mode);
		got = "UNAVAILABLE";
		goto out;
	}
	if (rpc_client_stream_open(ch, "/railyard.v1.Controller/Connect",
				   &railyard__v1__controller_message__descriptor, &cs) < 0) {
		fprintf(stderr, "rogue_client: cannot open the stream\n");
		return 2;
	}

	if (strcmp(mode, "hello") == 0) {
		r = send_agent(cs, 1, RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO, "{}");
	} else if (strcmp(mode, "garbage") == 0) {
		static const unsigned char junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x08, 0x96};

		r = rpc_client_stream_send_raw(cs, junk, sizeof(junk));
	} else if (strcmp(mode, "no-hello") == 0) {
		r = send_agent(cs, 1, RAILYARD__V1__AGENT_MESSAGE__BODY_HEARTBEAT, NULL);
	} else if (strcmp(mode, "bad-seq") == 0) {
		r = send_agent(cs, 5, RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO, "{}");
		if (r >= 0)
			r = send_agent(cs, 5, RAILYARD__V1__AGENT_MESSAGE__BODY_HEARTBEAT, NULL);
	} else if (strcmp(mode, "no-body") == 0) {
		r = send_agent(cs, 1, 0, NULL);
	} else if (strcmp(mode, "bad-facts") == 0) {
		r = send_agent(cs, 1, RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO, "[1, 2");
	} else if (strcmp(mode, "huge-facts") == 0) {
		size_t n = 2 * 1024 * 1024;

		huge = malloc(n + 1);
		memset(huge, ' ', n);
		huge[0] = '{';
		huge[n - 1] = '}';
		huge[n] = '\0';
		r = send_agent(cs, 1, RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO, huge);
	} else {
		fprintf(stderr, "rogue_client: unknown mode %s\n", mode);
		return 2;
	}
	if (r < 0) {
		fprintf(stderr, "rogue_client: send failed: %s\n", ry_strerror(r));
		return 2;
	}

	/* Read until the controller ends the stream; a Welcome in "hello" mode means accepted,
	 * and the client then half-closes by cancelling. */
	for (;;) {
		ProtobufCMessage *msg = NULL;

		r = rpc_client_stream_next(cs, util_now_mono_ms() + 10000, &msg);
		if (r == 1) {
			Railyard__V1__ControllerMessage *m = (Railyard__V1__ControllerMessage *)msg;

			if (m->body_case == RAILYARD__V1__CONTROLLER_MESSAGE__BODY_WELCOME)
				welcomed = 1;
			protobuf_c_message_free_unpacked(msg, NULL);
			if (welcomed && strcmp(mode, "hello") == 0)
				break;
			continue;
		}
		break;
	}
	got = welcomed && r == 1 ? "WELCOME"
	      : r == 0		 ? "TIMEOUT"
				 : rpc_status_name(rpc_client_stream_status(cs)->code);
	printf("rogue_client: mode %s -> %s (%s)\n", mode, got,
	       r == 1 || r == 0 ? "" : rpc_client_stream_status(cs)->details);
out:
	rpc_client_stream_free(cs);
	rpc_channel_free(ch);
	free(huge);
	free((char *)cc.tls.ca_pem);
	free((char *)cc.tls.cert_pem);
	free((char *)cc.tls.key_pem);
	rpc_shutdown();
	return strcmp(got, expect) == 0 ? 0 : 1;
}
