/* Fuzz target: every message an agent can send the controller, through the session's order
 * checks and the engine's handlers into a real SQLite store (fuzz_ctl.h): Hello, Heartbeat,
 * FactsUpdate, Error, StepEvent, ApplyDone, BenchReady, BenchResult on Connect, and Enroll.
 * The database is the same at the start of every input: two enrolled nodes, a deployment sent
 * to both, benchmark runs waiting for results (placeholders such as "@D" name them, see
 * fuzz_ctl_subst()).
 *
 * Input: records, one per message, on a session of node A (a record can reconnect, as node A
 * or B):
 *   u8 kind, u8 flags, then the kind's fields; strings are NUL-terminated.
 *   flags & 3: seq = last + 1 | the same again | last + u16 | 0;  flags & 4: ack = u8
 *   kind % 11: 0 raw AgentMessage bytes (u16 length), 1 Hello, 2 Heartbeat, 3 FactsUpdate,
 *   4 Error, 5 StepEvent, 6 ApplyDone, 7 BenchReady, 8 BenchResult, 9 Enroll (flags & 8: raw
 *   EnrollRequest bytes), 10 reconnect (flags & 8: as node B; flags & 16: cancelled).
 * Invariants besides memory safety: every held message is answered or ends the session, once;
 * what the controller sends packs, decodes and keeps seq and ack in order; an Enroll answers
 * with a certificate or a status and message; the database passes quick_check. */
#include "tests/fuzz/fuzz_ctl.h"
#include "tests/fuzz/fuzz_util.h"
#include "controller/store/store.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#define STR_MAX (2 * 1024 * 1024)

static struct fuzz_ctl *ctl;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet_logs();
	ctl = fuzz_ctl_setup(false);
	return 0;
}

/* A string field: the input's, or what its placeholder names. */
static char *field(struct fuzz_in *in)
{
	char *s = fuzz_str(in, STR_MAX);
	const char *v = fuzz_ctl_subst(ctl, s);
	char *out;

	if (v == s)
		return s;
	out = strdup(v);
	free(s);
	if (!out)
		abort();
	return out;
}

static void *zalloc(size_t n)
{
	void *p = calloc(1, n);

	if (!p)
		abort();
	return p;
}

/* The record's message, built as protobuf-c would decode it (every field malloc'd). */
static ProtobufCMessage *build(struct fuzz_in *in, unsigned kind)
{
	Railyard__V1__AgentMessage *m = zalloc(sizeof(*m));

	railyard__v1__agent_message__init(m);
	switch (kind) {
	case 1: {
		Railyard__V1__Hello *h = zalloc(sizeof(*h));

		railyard__v1__hello__init(h);
		h->agent_version = field(in);
		h->boot_id = field(in);
		h->facts_json = field(in);
		h->resume_ack = fuzz_u64(in);
		m->body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_HELLO;
		m->hello = h;
		break;
	}
	case 2: {
		Railyard__V1__Heartbeat *h = zalloc(sizeof(*h));

		railyard__v1__heartbeat__init(h);
		h->sent_unix_ms = (int64_t)fuzz_u64(in);
		m->body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_HEARTBEAT;
		m->heartbeat = h;
		break;
	}
	case 3: {
		Railyard__V1__FactsUpdate *f = zalloc(sizeof(*f));

		railyard__v1__facts_update__init(f);
		f->facts_json = field(in);
		f->in_reply_to = fuzz_u64(in);
		m->body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_FACTS_UPDATE;
		m->facts_update = f;
		break;
	}
	case 4: {
		Railyard__V1__Error *e = zalloc(sizeof(*e));

		railyard__v1__error__init(e);
		e->code = field(in);
		e->message = field(in);
		e->in_reply_to = fuzz_u64(in);
		m->body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_ERROR;
		m->error = e;
		break;
	}
	case 5: {
		Railyard__V1__StepEvent *e = zalloc(sizeof(*e));

		railyard__v1__step_event__init(e);
		e->deployment_id = field(in);
		e->index = fuzz_u32(in);
		e->name = field(in);
		e->status = field(in);
		e->diff = field(in);
		e->message = field(in);
		e->duration_ms = (int64_t)fuzz_u64(in);
		m->body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_STEP_EVENT;
		m->step_event = e;
		break;
	}
	case 6: {
		Railyard__V1__ApplyDone *d = zalloc(sizeof(*d));

		railyard__v1__apply_done__init(d);
		d->deployment_id = field(in);
		d->status = field(in);
		d->ok = fuzz_u32(in);
		d->changed = fuzz_u32(in);
		d->failed = fuzz_u32(in);
		d->skipped = fuzz_u32(in);
		d->message = field(in);
		m->body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_APPLY_DONE;
		m->apply_done = d;
		break;
	}
	case 7: {
		Railyard__V1__BenchReady *b = zalloc(sizeof(*b));

		railyard__v1__bench_ready__init(b);
		b->bench_id = field(in);
		b->port = fuzz_u32(in);
		m->body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_READY;
		m->bench_ready = b;
		break;
	}
	default: {
		Railyard__V1__BenchResult *b = zalloc(sizeof(*b));

		railyard__v1__bench_result__init(b);
		b->bench_id = field(in);
		b->ok = fuzz_u8(in) & 1;
		b->role = field(in);
		b->result_json = field(in);
		m->body_case = RAILYARD__V1__AGENT_MESSAGE__BODY_BENCH_RESULT;
		m->bench_result = b;
		break;
	}
	}
	return &m->base;
}

/* Bytes as gRPC hands them to the layer: undecodable ends the stream (the layer's error()). */
static ProtobufCMessage *raw(struct fuzz_in *in, const ProtobufCMessageDescriptor *desc)
{
	ProtobufCMessage *msg = NULL;
	size_t n;
	const uint8_t *p = fuzz_bytes(in, fuzz_u16(in), &n);

	return rpc_unpack(desc, p, n, &msg) == 0 ? msg : NULL;
}

/* The strings of a decoded Enroll are never NULL (protobuf-c gives "" for absent ones). */
static void do_enroll(struct fuzz_in *in, unsigned flags)
{
	Railyard__V1__EnrollRequest *rq;
	ProtobufCMessage *req, *resp = NULL;
	struct rpc_peer peer = {0};
	char *msg = NULL;
	grpc_status_code code;

	if (flags & 8) {
		req = raw(in, &railyard__v1__enroll_request__descriptor);
		if (!req)
			return;
	} else {
		rq = zalloc(sizeof(*rq));
		railyard__v1__enroll_request__init(rq);
		rq->token = field(in);
		rq->csr_pem = field(in);
		rq->hostname = field(in);
		rq->agent_version = field(in);
		req = &rq->base;
	}
	snprintf(peer.address, sizeof(peer.address), "ipv4:10.0.0.%u:5000", fuzz_u8(in));
	code = ctl_enroll(ctl->srv, &peer, req, &resp, &msg);
	if (code == GRPC_STATUS_OK) {
		Railyard__V1__EnrollResponse *r = (Railyard__V1__EnrollResponse *)resp;

		FUZZ_CHECK(resp && r->node_id[0] && strstr(r->cert_pem, "BEGIN CERTIFICATE"),
			   "an enrollment without a certificate");
		protobuf_c_message_free_unpacked(resp, NULL);
	} else {
		FUZZ_CHECK(resp == NULL, "a refused enrollment with a response");
	}
	free(msg);
	protobuf_c_message_free_unpacked(req, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned runs;
	struct fuzz_in in = {data, size};
	struct rpc_stream *st;
	uint64_t seq = 0;
	bool open = true;

	fuzz_ctl_reset(ctl);
	st = fuzz_ctl_open(ctl, 0);
	FUZZ_CHECK(st != NULL, "node A's session refused");
	while (in.left > 0) {
		unsigned kind = fuzz_u8(&in) % 11, flags = fuzz_u8(&in);
		ProtobufCMessage *msg;
		uint64_t ack = flags & 4 ? fuzz_u8(&in) : 0;

		if (kind == 9) {
			do_enroll(&in, flags);
			continue;
		}
		if (kind == 10) {
			fuzz_ctl_close(ctl, st, flags & 16);
			st = fuzz_ctl_open(ctl, flags & 8 ? 1 : 0);
			FUZZ_CHECK(st != NULL, "a session refused");
			seq = 0;
			open = true;
			continue;
		}
		if (!open)
			continue;
		switch (flags & 3) {
		case 0:
			seq++;
			break;
		case 2:
			seq += fuzz_u16(&in);
			break;
		case 3:
			seq = 0;
			break;
		}
		if (kind == 0) {
			msg = raw(&in, &railyard__v1__agent_message__descriptor);
			if (!msg) {
				/* The layer ends a stream that sent an undecodable message. */
				ctl_session_ops.error(ctl->srv, st, "undecodable message");
				open = false;
				continue;
			}
		} else {
			msg = build(&in, kind);
			((Railyard__V1__AgentMessage *)msg)->seq = seq;
			((Railyard__V1__AgentMessage *)msg)->ack = ack;
		}
		open = fuzz_ctl_deliver(ctl, st, msg);
	}
	fuzz_ctl_close(ctl, st, false);
	if (++runs % 256 == 0) {
		sqlite3 *db;
		sqlite3_stmt *q;
		bool ok = false;

		FUZZ_CHECK(sqlite3_open_v2(store_path(ctl->state->store), &db, SQLITE_OPEN_READONLY,
					   NULL) == SQLITE_OK,
			   "database unreadable");
		if (sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &q, NULL) == SQLITE_OK &&
		    sqlite3_step(q) == SQLITE_ROW)
			ok = strcmp((const char *)sqlite3_column_text(q, 0), "ok") == 0;
		sqlite3_finalize(q);
		sqlite3_close(db);
		FUZZ_CHECK(ok, "PRAGMA quick_check failed");
	}
	return 0;
}
