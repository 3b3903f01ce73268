/* The agent's health watchers (nodeagent/health_event.h): the shared names. */
#include "nodeagent/health_event.h"

const char *health_severity_name(enum health_severity s)
{
	switch (s) {
	case HEALTH_INFO:
		return "info";
	case HEALTH_WARNING:
		return "warning";
	case HEALTH_CRITICAL:
		return "critical";
	}
	return "unknown";
}
