/* The playbook service: check a playbook (and render it with a node's facts) without storing
 * anything, upload one for a cluster, list and read uploads. Returns data; never prints. */
#ifndef RAILYARD_CONTROLLER_PLAYBOOKS_H
#define RAILYARD_CONTROLLER_PLAYBOOKS_H

#include <jansson.h>
#include <stddef.h>

#include "controller/service.h"
#include "controller/store/store.h"

/* Parse text (file: its name in diagnostics) for cluster (NULL: any; a playbook whose target
 * names another cluster is refused) and, with node (id or host name, whose facts are used),
 * render it. Nothing is stored. *ret: {valid: true, name, version, description, sha256,
 * target_cluster, steps: [{name, type}], validation_tests: N, plan?: {node, hostname, steps:
 * [{name, type, continue_on_error}]}}. Errors: CTL_ERR_PLAYBOOK with every FILE:LINE:COL (also
 * for a render that fails), CTL_ERR_INVALID (cluster), CTL_ERR_NOT_FOUND (node), the store.
 * ret_node_cluster (may be NULL): the node's cluster (caller frees), for a scope check. */
__attribute__((warn_unused_result)) int ctl_playbook_check(struct store *st, const char *text,
							   size_t len, const char *file,
							   const char *cluster, const char *node,
							   json_t **ret, char **ret_node_cluster,
							   struct ctl_error *err);
/* Check text for cluster as above, then store it as uploaded for cluster by actor (audited).
 * *ret: {cluster, name, version, sha256, size, actor, uploaded_at_ms}. */
__attribute__((warn_unused_result)) int ctl_playbook_upload(struct store *st, const char *cluster,
							    const char *text, size_t len,
							    const char *actor, json_t **ret,
							    struct ctl_error *err);
/* The newest uploads (limit 0: 50), as upload() describes each. New reference (an array). */
__attribute__((warn_unused_result)) int ctl_playbook_list(struct store *st, size_t limit,
							  json_t **ret, struct ctl_error *err);
/* One uploaded playbook by SHA-256: {name, version, sha256, size, text, uploads: [{cluster,
 * actor, uploaded_at_ms}]}; CTL_ERR_NOT_FOUND when it was never uploaded. */
__attribute__((warn_unused_result)) int ctl_playbook_get(struct store *st, const char *sha256,
							 json_t **ret, struct ctl_error *err);

#endif
