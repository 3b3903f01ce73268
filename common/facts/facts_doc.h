/* Reading a facts document (the JSON an agent reports; docs/facts.md) without the collectors:
 * shared by the controller (tables, targeting, validation campaigns) and the agent. */
#ifndef RAILYARD_FACTS_DOC_H
#define RAILYARD_FACTS_DOC_H

#include <jansson.h>

/* One-line human summary of a facts document for tables, e.g.
 * "Debian 12 | 6.1.0-28-amd64 | 224 cpu/2 numa | 2015 GiB | 8 HCA 8/8 active IB 400G |
 *  8 GPU H200". Missing facts show as "?" (or "no HCA" / "no GPU" for empty lists).
 * facts is borrowed (any JSON value; non-objects give an all-"?" line). Returns a new string the
 * caller frees with free(), or NULL on allocation failure. Thread-safe. */
char *facts_summary(const json_t *facts);

#endif
