/* The web portal's files as built into the program: the table that cmake/embed_dir.cmake
 * generates from portal/ (portal_files.c in the build directory). Read by portal.c and its
 * tests only. */
#ifndef RAILYARD_CONTROLLER_PORTAL_FILES_H
#define RAILYARD_CONTROLLER_PORTAL_FILES_H

#include <stddef.h>

struct ctl_portal_file {
	const char *path; /* the URL path: "/" (index.html) or CTL_PORTAL_BASE "/" name */
	const char *name; /* the file's path under portal/, e.g. "js/app.js" */
	const unsigned char *data;
	size_t len;
};

extern const struct ctl_portal_file ctl_portal_files[];
extern const size_t ctl_portal_files_count;
/* "/portal/VERSION": VERSION is the first 16 hex digits of the SHA-256 of every file's name and
 * content, so that a file's URL changes with the portal. */
extern const char ctl_portal_base[];

#endif
