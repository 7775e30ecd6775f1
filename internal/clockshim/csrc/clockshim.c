/*
 * clockshim: an LD_PRELOAD library that moves a process's wall clock.
 *
 * It adds an offset (signed nanoseconds) to CLOCK_REALTIME and
 * CLOCK_REALTIME_COARSE in clock_gettime, and to gettimeofday, time and
 * timespec_get(TIME_UTC). Every other clock (CLOCK_MONOTONIC, CLOCK_BOOTTIME,
 * ...) is passed through untouched. Redis expires keys by wall-clock time
 * (mstime() -> gettimeofday) and times its own work on the monotonic clock,
 * so moving the offset moves only what a skewed clock would move.
 *
 * The offset lives in the file named by LOCKHARNESS_CLOCK_FILE: 8 bytes, an
 * int64 in native byte order (little-endian on amd64 and arm64). The file is
 * mapped read-only and shared once, at load time, and read on every call, so
 * the harness moves the clock by changing the 8 bytes in place (never by
 * replacing the file: the mapping would keep the old inode). The harness maps
 * the same page read-write and stores the value with one aligned 8-byte
 * atomic store; this side loads it with one aligned 8-byte atomic load, so a
 * reader sees the old or the new value, never a mix. Without the variable, or
 * when the file is missing or shorter than 8 bytes (mapping past the end
 * would raise SIGBUS), the offset is 0 for the life of the process.
 *
 * No recursion: libfaketime breaks jemalloc-built redis-server because its
 * hooks resolve the real functions lazily with dlsym, dlsym may malloc,
 * jemalloc's initialisation reads the clock, and the hook re-enters itself.
 * Here the hooks never call dlsym, malloc or anything that reads a clock.
 * The real clock_gettime (the vDSO-backed one in libc) is resolved once, in
 * the constructor; until then, and if it cannot be resolved, the hooks ask
 * the kernel directly with syscall(SYS_clock_gettime), which calls nothing.
 * gettimeofday, time and timespec_get are all computed from clock_gettime.
 *
 * Build: gcc -shared -fPIC -O2 -Wall -o libclockshim.so clockshim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define NSEC_PER_SEC 1000000000LL

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

/* Both are set once by the constructor and only read afterwards. */
static const int64_t *offset_ns;             /* NULL: offset 0 */
static clock_gettime_fn real_clock_gettime;  /* NULL: use the syscall */

static int64_t current_offset(void)
{
	const int64_t *p = __atomic_load_n(&offset_ns, __ATOMIC_ACQUIRE);
	return p ? __atomic_load_n(p, __ATOMIC_RELAXED) : 0;
}

static int real_now(clockid_t clk, struct timespec *ts)
{
	clock_gettime_fn f = __atomic_load_n(&real_clock_gettime, __ATOMIC_ACQUIRE);
	if (f)
		return f(clk, ts);
	return (int)syscall(SYS_clock_gettime, clk, ts);
}

static void shift(struct timespec *ts, int64_t off)
{
	if (off == 0)
		return;
	ts->tv_sec += off / NSEC_PER_SEC;
	ts->tv_nsec += off % NSEC_PER_SEC; /* in (-1s, 1s): normalise once */
	if (ts->tv_nsec >= NSEC_PER_SEC) {
		ts->tv_nsec -= NSEC_PER_SEC;
		ts->tv_sec++;
	} else if (ts->tv_nsec < 0) {
		ts->tv_nsec += NSEC_PER_SEC;
		ts->tv_sec--;
	}
}

/* The wall clock plus the offset. */
static int skewed_now(struct timespec *ts)
{
	if (real_now(CLOCK_REALTIME, ts) != 0)
		return -1;
	shift(ts, current_offset());
	return 0;
}

__attribute__((constructor)) static void clockshim_init(void)
{
	const char *path = getenv("LOCKHARNESS_CLOCK_FILE");
	if (path && *path) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			struct stat st;
			if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(int64_t)) {
				void *m = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
				if (m != MAP_FAILED)
					__atomic_store_n(&offset_ns, (const int64_t *)m, __ATOMIC_RELEASE);
			}
			close(fd); /* the mapping outlives the descriptor */
		}
	}
	/* dlsym may allocate, and the allocator may read the clock: that read
	 * reaches our hook with real_clock_gettime still NULL and takes the
	 * syscall path, so there is no recursion. */
	clock_gettime_fn f = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
	if (f)
		__atomic_store_n(&real_clock_gettime, f, __ATOMIC_RELEASE);
}

int clock_gettime(clockid_t clk, struct timespec *ts)
{
	int r = real_now(clk, ts);
	if (r == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE))
		shift(ts, current_offset());
	return r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	/* As glibc since 2.31: the time zone is obsolete and reads as zeros.
	 * glibc declares tv non-null, so it is not checked. */
	if (tz)
		memset(tz, 0, sizeof(struct timezone));
	struct timespec ts;
	if (skewed_now(&ts) != 0)
		return -1;
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t time(time_t *t)
{
	struct timespec ts;
	if (skewed_now(&ts) != 0)
		return (time_t)-1;
	if (t)
		*t = ts.tv_sec;
	return ts.tv_sec;
}

int timespec_get(struct timespec *ts, int base)
{
	if (base != TIME_UTC || skewed_now(ts) != 0)
		return 0;
	return base;
}
