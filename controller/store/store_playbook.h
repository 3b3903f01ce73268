/* The store's playbooks (store_playbook.c): texts kept once by SHA-256, and the uploads of a
 * playbook for a cluster. */
#ifndef RAILYARD_CONTROLLER_STORE_PLAYBOOK_H
#define RAILYARD_CONTROLLER_STORE_PLAYBOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/store/store.h"

/* ---- Playbooks uploaded for a cluster (schema v10) --------------------------------------------
 * The text is stored once by its SHA-256 (with deployments' and campaigns' playbooks); an upload
 * records the cluster, who uploaded it and when (again: the newest). */
struct store_playbook_upload {
	char *cluster, *name, *version, *sha256, *actor;
	size_t size; /* bytes of the text */
	int64_t created_at_ms;
};

/* Store text (name, version, sha256 its own) as uploaded for cluster by actor, with an audit
 * row, in one transaction. -RY_E_NOT_FOUND for an unknown cluster, -EINVAL for a bad field. */
STORE_WUR int store_playbook_upload(struct store *s, const char *cluster, const char *name,
				    const char *version, const char *sha256, const char *text,
				    const char *actor, int64_t now_ms);
/* The uploads of one playbook (sha256; every cluster it was uploaded for, by name), or the
 * newest uploads (sha256 NULL; limit 0: 50). An array of *ret_n (free with
 * store_playbook_uploads_free()). */
STORE_WUR int store_playbook_uploads(struct store *s, const char *sha256, size_t limit,
				     struct store_playbook_upload **ret, size_t *ret_n);
void store_playbook_uploads_free(struct store_playbook_upload *v, size_t n);

/* The text of a stored playbook by its SHA-256 (caller frees). -RY_E_NOT_FOUND. */
STORE_WUR int store_playbook_text_by_sha(struct store *s, const char *sha256, char **ret_text);

#endif
