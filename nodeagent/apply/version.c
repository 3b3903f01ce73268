/* Version constraints ("OP VERSION") used by the package executor, over the dpkg version
 * comparison that conditions use too (playbook_version_compare). */
#include "nodeagent/apply/apply.h"
#include "common/playbook/playbook.h"

#include "common/util/error.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int apply_version_satisfies(const char *version, const char *constraint)
{
	static const struct {
		const char *op;
		int lt, eq, gt; /* accepted outcomes */
	} ops[] = {
		{">=", 0, 1, 1}, {"<=", 1, 1, 0}, {">>", 0, 0, 1}, {"<<", 1, 0, 0}, {"==", 0, 1, 0},
		{"!=", 1, 0, 1}, {">", 0, 0, 1},  {"<", 1, 0, 0},  {"=", 0, 1, 0},
	};
	const char *p = constraint;
	int c;

	while (isspace((unsigned char)*p))
		p++;
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		size_t n = strlen(ops[k].op);

		if (strncmp(p, ops[k].op, n) != 0)
			continue;
		p += n;
		while (isspace((unsigned char)*p))
			p++;
		if (!*p || strchr(p, ' '))
			return -RY_E_INVALID;
		c = playbook_version_compare(version, p);
		return c < 0 ? ops[k].lt : c == 0 ? ops[k].eq : ops[k].gt;
	}
	if (!*p || strchr(p, ' ') || !isalnum((unsigned char)*p))
		return -RY_E_INVALID;
	return playbook_version_compare(version, p) == 0;
}
