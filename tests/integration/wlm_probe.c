/* wlm_probe BINDING.json CLUSTER NODE [drain REASON | resume]: the workload-manager interface
 * (controller/wlm/wlm.h) against a real WLM, for test_wlm.sh: the binding parsed as the
 * controller does, then one query of NODE with its running jobs printed as JSON {name, state,
 * drained, reason, ours, jobs: [{id, user}]}, or a drain / resume-if-ours with what it did.
 * Exit 0, or 1 with the error on stderr. */
#include "controller/service.h"
#include "controller/wlm/wlm.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct wlm_binding *b = NULL;
	struct wlm_node_state s = {0};
	struct ctl_error err;
	char why[512] = "";
	json_t *doc;
	int r = 1;

	if (argc < 4) {
		fprintf(stderr,
			"usage: wlm_probe BINDING.json CLUSTER NODE [drain REASON | resume]\n");
		return 2;
	}
	ctl_error_init(&err);
	doc = json_load_file(argv[1], 0, NULL);
	if (!doc || wlm_binding_parse(doc, argv[2], &b, &err) < 0) {
		fprintf(stderr, "wlm_probe: binding: %s\n", doc ? err.message : "not JSON");
		goto out;
	}
	if (argc >= 6 && strcmp(argv[4], "drain") == 0) {
		if (wlm_drain(b, argv[3], argv[5], why, sizeof(why)) < 0)
			goto fail;
		printf("drained\n");
	} else if (argc >= 5 && strcmp(argv[4], "resume") == 0) {
		enum wlm_resume how;

		if (wlm_resume_if_ours(b, argv[3], &how, why, sizeof(why)) < 0)
			goto fail;
		printf("%s%s%s\n",
		       how == WLM_RESUMED    ? "resumed"
		       : how == WLM_NOT_OURS ? "not_ours"
					     : "not_drained",
		       how == WLM_NOT_OURS ? ": " : "", how == WLM_NOT_OURS ? why : "");
	} else {
		json_t *o, *jobs = json_array();

		if (wlm_query(b, argv[3], true, &s, why, sizeof(why)) < 0) {
			json_decref(jobs);
			goto fail;
		}
		for (size_t i = 0; i < s.njobs; i++)
			json_array_append_new(jobs, json_pack("{s:s, s:s}", "id", s.jobs[i].id,
							      "user", s.jobs[i].user));
		o = json_pack("{s:s, s:s, s:b, s:s, s:b, s:o}", "name", s.name, "state", s.state,
			      "drained", s.drained, "reason", s.reason, "ours", s.ours, "jobs",
			      jobs);
		json_dumpf(o, stdout, JSON_COMPACT);
		printf("\n");
		json_decref(o);
	}
	r = 0;
	goto out;
fail:
	fprintf(stderr, "wlm_probe: %s\n", why);
out:
	wlm_node_state_done(&s);
	wlm_binding_free(b);
	json_decref(doc);
	ctl_error_done(&err);
	return r;
}
