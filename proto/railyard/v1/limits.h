/* Limits of the control protocol (docs/protocol.md) shared by the agent, which keeps within them,
 * and the controller, which refuses what exceeds them. */
#ifndef RAILYARD_PROTO_LIMITS_H
#define RAILYARD_PROTO_LIMITS_H

/* Ids (deployment, bench): printable, at most this many bytes. */
#define RY_PROTO_ID_MAX 64
/* A step's name. */
#define RY_PROTO_STEP_NAME_MAX 255
/* Steps in one plan, and each of ApplyDone's counts. */
#define RY_PROTO_STEPS_MAX 10000
/* One step's diff: agents cut longer ones (at a line, with a note saying so). */
#define RY_PROTO_DIFF_MAX (256 * 1024)
/* One step's or ApplyDone's message: agents cut longer ones. */
#define RY_PROTO_MESSAGE_MAX (64 * 1024)
/* A benchmark's result document. */
#define RY_PROTO_BENCH_RESULT_MAX (1024 * 1024)
/* Diff and message bytes the controller stores per node and deployment; beyond it a step's
 * status and message are still stored, its diff is replaced by a note. */
#define RY_PROTO_RESULT_BYTES_MAX (16 * 1024 * 1024)

#endif
