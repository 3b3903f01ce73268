/* Process-wide logging: one line per event on stderr (or a file), with time, level and ident.
 * Thread-safe. Library code logs at debug only; callers that handle errors log them once. */
#ifndef RAILYARD_LOG_H
#define RAILYARD_LOG_H

#include <stdio.h>

enum log_level { LOG_LEVEL_ERROR = 0, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

/* Set the program name shown on each line (borrowed; must outlive logging). */
void log_set_ident(const char *ident);
/* Lines above this level are dropped. Default: info, or $RAILYARD_LOG_LEVEL. */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* Parse "error", "warn", "info", "debug"; -EINVAL if unknown. */
int log_level_parse(const char *s, enum log_level *ret_level);
/* Redirect output to an already open stream (borrowed); NULL restores stderr. */
void log_set_stream(FILE *f);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
