/* A cluster scope, as API tokens keep it: NULL (every cluster) or a JSON array of cluster
 * names. Pure; below the REST API's authorization (controller/api/authz.h) and the event
 * stream (controller/events.h), which both filter by it. */
#ifndef RAILYARD_CONTROLLER_SCOPE_H
#define RAILYARD_CONTROLLER_SCOPE_H

#include <stdbool.h>

/* Longest scope text looked at; a longer one is no scope at all. */
#define SCOPE_JSON_MAX (16 * 1024)

/* Is cluster within the scope clusters_json? clusters_json: NULL (every cluster: always true)
 * or a JSON array of cluster names. cluster: the object's cluster (borrowed); NULL (an object
 * of no cluster, such as an API token) is in scope only for an unscoped token. Anything but an
 * array of strings (malformed JSON, over SCOPE_JSON_MAX, a non-string element) is no scope at
 * all: false (fails closed). Cost: parses the scope, O(its length). Thread-safe. */
bool ctl_scope_contains(const char *clusters_json, const char *cluster);

#endif
