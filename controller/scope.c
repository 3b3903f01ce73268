/* Cluster scopes: is a cluster within a JSON array of cluster names? Below both the REST API
 * (authorization) and the event stream (what a subscriber may see). */
#include "controller/scope.h"

#include <jansson.h>
#include <string.h>

bool ctl_scope_contains(const char *clusters_json, const char *cluster)
{
	size_t len, n, i;
	bool found = false;
	json_t *root;

	if (!clusters_json)
		return true;
	if (!cluster)
		return false;
	len = strnlen(clusters_json, SCOPE_JSON_MAX + 1);
	if (len > SCOPE_JSON_MAX)
		return false;
	root = json_loadb(clusters_json, len, 0, NULL);
	if (!json_is_array(root)) {
		json_decref(root);
		return false;
	}
	n = json_array_size(root);
	for (i = 0; i < n; i++) {
		const char *name = json_string_value(json_array_get(root, i));

		if (!name) {
			found = false; /* a malformed scope grants nothing */
			break;
		}
		found = found || strcmp(name, cluster) == 0;
	}
	json_decref(root);
	return found;
}
