/* Logging to stderr with a timestamp; a mutex keeps lines from interleaving across threads. */
#include "common/log/log.h"
#include "common/util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *log_ident = "railyard";
static int log_level = -1;
static FILE *log_stream;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_set_ident(const char *ident)
{
	log_ident = ident;
}

void log_set_level(enum log_level level)
{
	log_level = (int)level;
}

int log_level_parse(const char *s, enum log_level *ret_level)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (s && strcmp(s, level_names[i]) == 0) {
			*ret_level = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

enum log_level log_get_level(void)
{
	if (log_level < 0) {
		enum log_level l = LOG_LEVEL_INFO;

		(void)log_level_parse(getenv("RAILYARD_LOG_LEVEL"), &l);
		log_level = (int)l;
	}
	return (enum log_level)log_level;
}

void log_set_stream(FILE *f)
{
	pthread_mutex_lock(&log_lock);
	log_stream = f;
	pthread_mutex_unlock(&log_lock);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	char line[2048], *safe;
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n, saved = errno;

	if ((int)level > (int)log_get_level())
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line),
		     "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s[%d] %s: ", tm.tm_year + 1900,
		     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		     ts.tv_nsec / 1000000, log_ident, (int)getpid(), level_names[level]);
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(line))
		vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* One record per line, whatever a node put into the values: control characters (a
	 * newline that would forge a record, an escape sequence for the terminal) are escaped. */
	safe = util_escape(line, false);

	pthread_mutex_lock(&log_lock);
	fprintf(log_stream ? log_stream : stderr, "%s\n", safe ? safe : line);
	fflush(log_stream ? log_stream : stderr);
	pthread_mutex_unlock(&log_lock);
	free(safe);
	errno = saved;
}
