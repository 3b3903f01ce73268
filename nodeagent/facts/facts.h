/* Node facts: what the agent reports about its node (OS, kernel, CPU, memory, RDMA devices and
 * ports, NVIDIA/Mellanox PCI functions, kernel modules, OFED, GPUs, NCCL/UCX/Open MPI versions),
 * read from sysfs/procfs and installed files under an injectable sysroot. The JSON schema is
 * documented in docs/facts.md. */
#ifndef RAILYARD_FACTS_H
#define RAILYARD_FACTS_H

#include <jansson.h>

/* Version of the JSON document produced by facts_collect() ("schema" member). */
#define FACTS_SCHEMA_VERSION 1

/* Gather all facts of the node whose root file system is sysroot (NULL or "/" for the running
 * system; borrowed) into a new JSON object (schema in docs/facts.md).
 * Never fails because a file is missing or malformed: that fact is left out and a human-readable
 * warning naming the path (as seen on the node, i.e. relative to sysroot: "/proc/meminfo: ...")
 * is appended to facts["warnings"] (always present, an array of strings). Sources that are
 * legitimately absent (no RDMA stack, no NVIDIA driver, no OFED, no NCCL/UCX/Open MPI) give
 * empty lists or absent objects without a warning.
 * On success *ret_facts is a new reference the caller releases with json_decref().
 * Errors: -ENOMEM only (allocation failure). Thread-safe: no global state; concurrent calls on
 * the same or different sysroots are fine. */
__attribute__((warn_unused_result)) int facts_collect(const char *sysroot, json_t **ret_facts);

/* The GPUDirect RDMA method of the node under sysroot (NULL or "/": the running system;
 * borrowed) alone, by the rule facts_collect() applies (docs/facts.md, "gpudirect"): from the
 * kernel release and the NVIDIA driver's version and flavour, without the rest of the facts.
 * *ret_gpudirect: a new object {method: "dma-buf"|"peermem", dmabuf, reason}, or NULL when no
 * NVIDIA driver is loaded. -ENOMEM, or 0. */
__attribute__((warn_unused_result)) int facts_gpudirect_read(const char *sysroot,
							     json_t **ret_gpudirect);

/* facts_summary() and the other readers of a facts document are in common/facts. */
#include "common/facts/facts_doc.h"

#endif
