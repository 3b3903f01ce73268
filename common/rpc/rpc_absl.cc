/* The one C++ file: an Abseil setting that has no C interface.
 *
 * gRPC 1.51's locks are absl::Mutex. Debian 12 builds Abseil without NDEBUG, which leaves
 * Abseil's mutex deadlock detection on: every Lock() looks the mutex up in a global graph of
 * lock orders, under a global lock of its own (GraphCycles::GetId, InsertEdge). In a perf
 * profile of a controller holding 2,000 idle sessions that was 12 % of its CPU. Detection
 * only reports lock-order cycles (gRPC's own, never ours: our locks are pthread mutexes), so
 * the controller, the agent and the tools turn it off before gRPC starts. */
#include <absl/synchronization/mutex.h>

extern "C" void rpc_absl_quiet(void);

extern "C" void rpc_absl_quiet(void)
{
	absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}
