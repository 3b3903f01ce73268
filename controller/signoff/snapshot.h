/* A node's configuration snapshot for sign-off reports (docs/signoff.md, SNAPSHOT), drawn from
 * its facts document (docs/facts.md), and the drift between two sets of snapshots: what changed,
 * on which nodes. Pure: no store, no clock, no I/O. */
#ifndef RAILYARD_SIGNOFF_SNAPSHOT_H
#define RAILYARD_SIGNOFF_SNAPSHOT_H

#include <jansson.h>
#include <stdbool.h>

/* The snapshot of a facts document (any JSON value; members it lacks are left out). New
 * reference, or NULL on allocation failure. */
json_t *so_snapshot(const json_t *facts);

/* A snapshot flattened to {FIELD: scalar}: "os", "kernel", "ofed.version", "gpudirect",
 * "software.nccl", "hca.mlx5_0.fw_ver", "hca.mlx5_0.mtu", "gpu.0000:18:00.0.pcie",
 * "topology_digest", ... (an HCA or GPU itself as "hca.mlx5_0": "present"). New reference, or
 * NULL on allocation failure. */
json_t *so_snapshot_flat(const json_t *snapshot);

/* The fields that differ between two snapshots: [{field, from, to}] sorted by field (from / to
 * null when the field is absent on that side). A version field whose two strings are the same
 * version (so_version_field(), so_version_same()) is not a difference: when same is not NULL it
 * is appended there as {field, from, to} instead. New reference, or NULL on allocation
 * failure. */
json_t *so_snapshot_diff_same(const json_t *from, const json_t *to, json_t *same);
json_t *so_snapshot_diff(const json_t *from, const json_t *to);

/* Drift between two node lists [{hostname, snapshot}] (matched by host name): {drift: [{field,
 * from, to, nodes: [hostname]}] grouped by field and change, sorted by field; same_version: the
 * same groups for version fields spelled two ways but judged the same version (not drift);
 * nodes_added; nodes_removed}. New reference, or NULL on allocation failure. */
json_t *so_drift(const json_t *baseline_nodes, const json_t *current_nodes);

/* Whether two spellings of a version are the same version: equal under the playbook's
 * comparison (dpkg rules, playbook_version_compare()) once trailing ".0" components are dropped
 * from each dash-separated part ("24.10-1.1.4.0" = "24.10-1.1.4", "550.127.05" = "550.127.5";
 * "24.10-1.1.4.1" differs). Both borrowed; NULL is the same as nothing but NULL. */
bool so_version_same(const char *a, const char *b);

/* Whether a flattened snapshot field holds a vendor version that so_version_same() may
 * compare: "ofed.version", "ofed.mlx5_core_version", "nvidia_driver", "software.*",
 * "hca.*.fw_ver". Not "kernel" (a release string names a build: "6.1.0-28" and "6.1-28" are
 * different kernels) nor "ofed.package" (a package name). */
bool so_version_field(const char *field);

/* One line per drift group: "ofed.version 24.10 -> 25.01 on 16 nodes" or "... on gpu-node-07"
 * (a single node is named). New string (free()), or NULL on allocation failure. */
char *so_drift_line(const json_t *group);

#endif
