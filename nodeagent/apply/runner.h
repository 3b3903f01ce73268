/* Command runner of the apply engine: every program the agent starts (modprobe, systemctl,
 * apt-get, mlnx_qos, a playbook's `command` step) goes through runner_run(): fork/exec of an
 * argv (never a shell), a timeout that kills the process group, bounded captured output. */
#ifndef RAILYARD_APPLY_RUNNER_H
#define RAILYARD_APPLY_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RUNNER_DEFAULT_TIMEOUT_MS 60000
#define RUNNER_DEFAULT_GRACE_MS	  2000
#define RUNNER_DEFAULT_OUTPUT_MAX (64 * 1024)
/* PATH given to every program when the sysroot is "/" (a real node). */
#define RUNNER_SYSTEM_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* What to run. Every pointer is borrowed for the duration of runner_run().
 *
 * THE SYSROOT PATH SEAM: when sysroot is NULL or "/" (a real node) programs are looked up in
 * RUNNER_SYSTEM_PATH, i.e. the real modprobe, systemctl, apt-get... When sysroot is any other
 * directory (a fixture copy in tests), "<sysroot>/usr/local/sbin:<sysroot>/usr/local/bin" is put
 * in front of RUNNER_SYSTEM_PATH, so test doubles installed INSIDE the sysroot copy shadow the
 * host programs. In both cases the child gets RAILYARD_SYSROOT=<sysroot> ("/" on a real node) so
 * that a double knows where to keep its state. The environment is otherwise minimal: PATH,
 * RAILYARD_SYSROOT, LC_ALL=C, LANG=C, plus env_extra. */
struct runner_cmd {
	const char *const *argv;      /* NULL-terminated; argv[0] a program name (searched in PATH)
					 or a path containing '/' */
	const char *sysroot;	      /* NULL or "/" for the real system */
	int64_t timeout_ms;	      /* <= 0: RUNNER_DEFAULT_TIMEOUT_MS */
	int64_t grace_ms;	      /* SIGTERM -> SIGKILL delay; <= 0: RUNNER_DEFAULT_GRACE_MS */
	size_t output_max;	      /* bytes kept per stream; 0: RUNNER_DEFAULT_OUTPUT_MAX */
	const char *const *env_extra; /* NULL-terminated "KEY=VALUE" list, or NULL */
	/* A system tool (modprobe, systemctl, apt-get, mlnx_qos): with a sysroot other than "/",
	 * argv[0] (a bare name) is looked up ONLY in the sysroot's usr/local/sbin and
	 * usr/local/bin, so that the host's own tool never acts on the host on behalf of a
	 * fixture; not found there: -ENOENT. No effect when the sysroot is "/". */
	bool sysroot_only;
};

/* Outcome of a program that was started. out/err are NUL-terminated (caller-embedded; release
 * with runner_result_done()). */
struct runner_result {
	int exit_code;	 /* exit status, or -1 when killed by a signal */
	int term_signal; /* the signal that ended it, else 0 */
	bool timed_out;	 /* killed by runner_run() because the timeout passed */
	char *out;	 /* captured stdout (at most output_max bytes) */
	size_t out_len;
	bool out_truncated; /* stdout had more than output_max bytes (the rest was discarded) */
	char *err;	    /* captured stderr, same bounds */
	size_t err_len;
	bool err_truncated;
	int64_t duration_ms;
};

/* Start argv in its own process group with stdin on /dev/null, stdout and stderr captured, and
 * wait for it; after timeout_ms the group gets SIGTERM, then SIGKILL after grace_ms.
 * Returns 0 when the program ran (whatever its exit status: look at *ret); -ENOENT when argv[0]
 * is not found in PATH, -EINVAL on an empty argv, -ENOMEM, or -errno from pipe/spawn. *ret is
 * written only on success (release with runner_result_done()).
 * Thread-safe (no global state; uses posix_spawn, pipes with O_CLOEXEC). */
__attribute__((warn_unused_result)) int runner_run(const struct runner_cmd *c,
						   struct runner_result *ret);

/* Free the buffers of a result; NULL and already-done results are fine. */
void runner_result_done(struct runner_result *r);

/* Short human description of a result: "exit 0", "exit 3", "killed by signal 9",
 * "timed out after 1000 ms (killed)". Writes at most len bytes into buf; returns buf. */
const char *runner_result_describe(const struct runner_result *r, char *buf, size_t len);

#endif
