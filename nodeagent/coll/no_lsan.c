/* Linked into every MPI program of the project (railyard-coll, the tests' mpi_hello and
 * mpi-allreduce). In a sanitized build (CI's second pass) LeakSanitizer reports Open MPI's own
 * allocations at exit (it cannot even unwind their stacks, so no suppression names them), and
 * its exit status would fail the job under mpirun, where no ASAN_OPTIONS reach the ranks (an
 * agent starts its daemons with a minimal environment). ASan and UBSan stay on. The programs'
 * own leaks are checked under valgrind (integration_coll_valgrind). */
#ifdef __SANITIZE_ADDRESS__
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}
#else
typedef int ry_no_lsan_unused; /* an empty translation unit is not ISO C */
#endif
