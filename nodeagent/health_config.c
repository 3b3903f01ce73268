/* The health section's JSON on the agent (health_config.h): checked key by key, every watcher's
 * part handed to the parser that owns it. */
#include "nodeagent/health_config.h"
#include "nodeagent/gpuwatch.h"
#include "nodeagent/readiness.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The playbook's version of the section this agent reads. */
#define HEALTH_CONFIG_VERSION 1

static int rule_rate(const json_t *v, const char *counter, const char *level, double *ret,
		     char *err, size_t len)
{
	json_t *x = json_object_get(v, level);
	double d = json_number_value(x);

	if (!x)
		return 0;
	if (!json_is_number(x) || !(d >= 0 && d <= 1e12)) {
		snprintf(err, len, "health.ports.%s.%s: expected a number of errors a minute >= 0",
			 counter, level);
		return -EINVAL;
	}
	*ret = d;
	return 0;
}

static int parse_ports(const json_t *ports, struct health_config *c, char *err, size_t len)
{
	const char *counter, *k;
	size_t n = 0;
	json_t *v, *x;

	for (; portwatch_default_rules[n].counter && n < HEALTH_CONFIG_MAX_RULES; n++) {
		snprintf(c->names[n], sizeof(c->names[n]), "%s",
			 portwatch_default_rules[n].counter);
		c->rules[n] = portwatch_default_rules[n];
		c->rules[n].counter = c->names[n];
	}
	if (ports && !json_is_object(ports)) {
		snprintf(err, len, "health.ports: expected an object");
		return -EINVAL;
	}
	json_object_foreach((json_t *)ports, counter, v)
	{
		size_t i;

		if (!counter[0] || strlen(counter) >= sizeof(c->names[0]) ||
		    strspn(counter, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(counter)) {
			snprintf(err, len, "health.ports.%.64s: expected a counter name", counter);
			return -EINVAL;
		}
		if (!json_is_object(v)) {
			snprintf(err, len, "health.ports.%s: expected {warning, critical}",
				 counter);
			return -EINVAL;
		}
		json_object_foreach(v, k, x)
		{
			if (strcmp(k, "warning") != 0 && strcmp(k, "critical") != 0) {
				snprintf(err, len, "health.ports.%s.%.32s: unknown key", counter,
					 k);
				return -EINVAL;
			}
		}
		for (i = 0; i < n && strcmp(c->names[i], counter) != 0; i++)
			;
		if (i == n) {
			if (n == HEALTH_CONFIG_MAX_RULES) {
				snprintf(err, len, "health.ports: more than %d rules",
					 HEALTH_CONFIG_MAX_RULES);
				return -EINVAL;
			}
			snprintf(c->names[n], sizeof(c->names[n]), "%s", counter);
			c->rules[n] = (struct portwatch_rule){c->names[n], 0, 0};
			n++;
		}
		/* the playbook's rule replaces the default one whole */
		c->rules[i].warn_per_min = c->rules[i].crit_per_min = 0;
		if (rule_rate(v, counter, "warning", &c->rules[i].warn_per_min, err, len) < 0 ||
		    rule_rate(v, counter, "critical", &c->rules[i].crit_per_min, err, len) < 0)
			return -EINVAL;
	}
	c->rules[n] = (struct portwatch_rule){NULL, 0, 0};
	return 0;
}

static int parse_xid(const json_t *xid, struct health_config *c, char *err, size_t len)
{
	static const struct {
		const char *key;
		int sev;
	} lists[] = {{"critical", HEALTH_CRITICAL},
		     {"warning", HEALTH_WARNING},
		     {"ignore", HEALTH_CONFIG_IGNORE}};
	const char *key;
	json_t *v, *x;
	size_t i;

	if (!xid)
		return 0;
	if (!json_is_object(xid)) {
		snprintf(err, len, "health.xid: expected an object");
		return -EINVAL;
	}
	json_object_foreach((json_t *)xid, key, v)
	{
		size_t l = 0;

		while (l < 3 && strcmp(key, lists[l].key) != 0)
			l++;
		if (l == 3) {
			snprintf(err, len,
				 "health.xid.%.32s: unknown key (critical, warning, ignore)", key);
			return -EINVAL;
		}
		if (!json_is_array(v)) {
			snprintf(err, len, "health.xid.%s: expected a list of Xid numbers", key);
			return -EINVAL;
		}
		json_array_foreach(v, i, x)
		{
			json_int_t n = json_integer_value(x);

			if (!json_is_integer(x) || n < 1 || n > 100000) {
				snprintf(err, len, "health.xid.%s[%zu]: expected an Xid number",
					 key, i);
				return -EINVAL;
			}
			for (size_t k = 0; k < c->n_xid; k++)
				if (c->xid[k].xid == n) {
					snprintf(err, len,
						 "health.xid.%s[%zu]: Xid %d listed twice", key, i,
						 (int)n);
					return -EINVAL;
				}
			if (c->n_xid == HEALTH_CONFIG_MAX_XIDS) {
				snprintf(err, len, "health.xid: more than %d Xid numbers",
					 HEALTH_CONFIG_MAX_XIDS);
				return -EINVAL;
			}
			c->xid[c->n_xid++] = (struct health_xid_override){(int)n, lists[l].sev};
		}
	}
	return 0;
}

int health_config_parse(const json_t *health, struct health_config *ret, char *err, size_t errlen)
{
	static const char *const keys[] = {"version", "interval_s", "ports", "xid",
					   "gpu",     "readiness",  NULL};
	struct health_config c;
	struct gpuwatch_config gc;
	const char *key;
	json_t *v;

	memset(&c, 0, sizeof(c));
	c.interval_ms = HEALTH_CONFIG_INTERVAL_MS;
	if (health && !json_is_object(health)) {
		snprintf(err, errlen, "health: expected an object");
		return -EINVAL;
	}
	json_object_foreach((json_t *)health, key, v)
	{
		size_t k = 0;

		while (keys[k] && strcmp(keys[k], key) != 0)
			k++;
		if (!keys[k]) {
			snprintf(err, errlen,
				 "health.%.32s: unknown key (version, interval_s, ports, xid, gpu, "
				 "readiness)",
				 key);
			return -EINVAL;
		}
	}
	v = json_object_get(health, "version");
	if (health && (!json_is_integer(v) || json_integer_value(v) != HEALTH_CONFIG_VERSION)) {
		snprintf(err, errlen, "health.version: expected %d", HEALTH_CONFIG_VERSION);
		return -EINVAL;
	}
	if ((v = json_object_get(health, "interval_s"))) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > 3600) {
			snprintf(err, errlen,
				 "health.interval_s: expected an integer from 1 to 3600");
			return -EINVAL;
		}
		c.interval_ms = json_integer_value(v) * 1000;
	}
	if (parse_ports(json_object_get(health, "ports"), &c, err, errlen) < 0 ||
	    parse_xid(json_object_get(health, "xid"), &c, err, errlen) < 0)
		return -EINVAL;
	gpuwatch_config_init(&gc);
	if (gpuwatch_config_parse(json_object_get(health, "gpu"), &gc, err, errlen) < 0 ||
	    readiness_config_check(json_object_get(health, "readiness"), err, errlen) < 0)
		return -EINVAL; /* their messages name gpu.* and readiness.* */
	c.gpu = json_incref(json_object_get(health, "gpu"));
	c.readiness = json_incref(json_object_get(health, "readiness"));
	*ret = c;
	/* the rules point into the caller's copy of names */
	for (size_t i = 0; ret->rules[i].counter; i++)
		ret->rules[i].counter = ret->names[i];
	return 0;
}

void health_config_done(struct health_config *c)
{
	if (!c)
		return;
	json_decref(c->gpu);
	json_decref(c->readiness);
	c->gpu = c->readiness = NULL;
}

bool health_config_xid(const struct health_config *c, int xid, enum health_severity *sev)
{
	for (size_t i = 0; i < c->n_xid; i++)
		if (c->xid[i].xid == xid) {
			if (c->xid[i].severity == HEALTH_CONFIG_IGNORE)
				return false;
			*sev = (enum health_severity)c->xid[i].severity;
			return true;
		}
	return true;
}
