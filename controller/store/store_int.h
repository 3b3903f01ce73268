/* Internals of the store shared by store.c, store_migrations.c and the unit tests: the
 * migration table and opening a database at an older schema version. */
#ifndef RAILYARD_CONTROLLER_STORE_INT_H
#define RAILYARD_CONTROLLER_STORE_INT_H

#include "controller/store/store.h"

/* One schema step: run sql (constant text, several statements) to go from version - 1 to
 * version. */
struct store_migration {
	int version;
	const char *sql;
};

/* Ordered migrations 1..STORE_SCHEMA_VERSION; store_migrations[i].version == i + 1. */
extern const struct store_migration store_migrations[];
extern const size_t store_migrations_count;

/* As store_open(), but migrate only up to version (0..STORE_SCHEMA_VERSION); a database already
 * newer than version gives -RY_E_SCHEMA. For tests of migrations. */
STORE_WUR int store_open_at_version(const char *path, int version, struct store **ret);

#endif
