/* docs/openapi.yaml as built into the program (generated at build time by
 * cmake/embed.cmake into openapi_doc.c in the build directory). */
#ifndef RAILYARD_CONTROLLER_OPENAPI_DOC_H
#define RAILYARD_CONTROLLER_OPENAPI_DOC_H

#include <stddef.h>

extern const char ctl_openapi_yaml[];
extern const size_t ctl_openapi_yaml_len;

#endif
