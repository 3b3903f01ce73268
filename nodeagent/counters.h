/* Fabric port counters (SYSROOT/sys/class/infiniband/DEV/ports/N/{counters,hw_counters}/NAME):
 * a snapshot of every readable counter, and the per-port difference of two snapshots as JSON, so
 * that a benchmark result says what the fabric saw while it ran (symbol errors, link downs,
 * retransmissions, CNPs, ...). */
#ifndef RAILYARD_AGENT_COUNTERS_H
#define RAILYARD_AGENT_COUNTERS_H

#include <jansson.h>
#include <stdint.h>

/* Bounds of one snapshot. Beyond a bound the rest is left out: devices are taken in version
 * order (mlx5_2 before mlx5_10), ports in numeric order, counters in name order, so two
 * snapshots of an unchanged tree keep the same ones. */
#define COUNTERS_MAX_DEVICES  256
#define COUNTERS_MAX_PORTS    32    /* per device */
#define COUNTERS_MAX_PER_PORT 256   /* counters/ and hw_counters/ together */
#define COUNTERS_MAX_TOTAL    32768 /* counter files read per snapshot (about 2.4 MB kept) */
#define COUNTERS_NAME_MAX     63    /* [A-Za-z0-9_], bytes */
#define COUNTERS_FILE_MAX     64    /* bytes; a longer file is not a counter */
#define COUNTERS_DEVICE_MAX   63    /* device name, bytes */

struct counters_snap;

/* Read the counters of every port of device (NULL: of every device) under sysroot (borrowed;
 * NULL, "" or "/": the real root). A counter is a regular file of ports/N/counters/ or
 * ports/N/hw_counters/ named [A-Za-z0-9_]{1,63} whose content is an unsigned 64-bit decimal
 * integer, optionally followed by a newline; a name in both directories is counters/'s.
 * Anything else (unreadable, garbled, a link, hw_counters/lifespan, which is a setting) is
 * skipped silently, and a missing sys/class/infiniband is an empty snapshot: the only error is
 * -ENOMEM. Cost: one open and read per counter (on mlx5 a firmware query or a MAD each), so a
 * few hundred reads on a typical node; call it off latency-sensitive threads. *ret: caller frees
 * with counters_snap_free(). Thread-safe (no shared state). */
__attribute__((warn_unused_result)) int counters_snapshot(const char *sysroot, const char *device,
							  struct counters_snap **ret);
/* NULL is fine. */
void counters_snap_free(struct counters_snap *s);

/* Ports sampled and counters read in s (for logs and tests). */
void counters_snap_size(const struct counters_snap *s, size_t *ret_ports, size_t *ret_counters);

/* The difference after - before (both borrowed) for the ports of device (NULL: every device)
 * and port (0: every port of it):
 *   {"ports":[{"device":"mlx5_0","port":1,"delta":{"link_downed":0,"symbol_error":2,...}}],
 *    "sampled":true}
 * in after's order (devices in version order, ports numerically, counters by name). A port only
 * in one snapshot is left out, and so is a counter only in one of them; a port's every other
 * counter is there, zeros included (0 means "did not move", absence "not exposed"). A counter
 * that went down (reset, or a 32-bit counter that wrapped) or moved by more than 2^63 - 1 is
 * null: unknown, never a huge number. Deltas are raw (port_*_data counts 4-byte words on IB).
 * Returns a new reference, NULL when out of memory. */
json_t *counters_delta_json(const struct counters_snap *before, const struct counters_snap *after,
			    const char *device, uint32_t port);

#endif
