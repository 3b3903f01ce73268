/* The maintenance pass's seam to controller/wlm/ (maint_wlm.h). */
#include "controller/maint/maint_wlm.h"

#include <string.h>

int maint_wlm_jobs(struct ctl_server *srv, const char *cluster, const char *hostname, char *ids,
		   size_t len, size_t *ret_n, char *why, size_t len_why)
{
	(void)srv;
	(void)cluster;
	(void)hostname;
	(void)why;
	(void)len_why;
	if (len)
		ids[0] = '\0';
	*ret_n = 0;
	return 0;
}
