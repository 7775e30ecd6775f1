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
 * The clock's state lives in the file named by LOCKHARNESS_CLOCK_FILE, four
 * int64s in native byte order (little-endian on amd64 and arm64):
 *
 *   offset  nanoseconds added to the wall clock at the anchor
 *   rate    parts per billion the offset grows by per nanosecond of
 *           CLOCK_MONOTONIC after the anchor (a clock running fast: +;
 *           slow: -; 0: a fixed offset)
 *   anchor  CLOCK_MONOTONIC (system-wide, the same in a container) at
 *           which the rate started
 *   seq     a sequence count, odd while the harness is writing
 *
 * so the wall clock reads real + offset + rate * (monotonic - anchor). The
 * file is mapped read-only and shared once, at load time, and read on every
 * call, so the harness changes the clock by writing the mapping in place
 * (never by replacing the file: the mapping would keep the old inode). The
 * harness is the only writer and brackets each change with seq (a seqlock):
 * a reader that saw seq odd, or changed across its reads, reads again, so it
 * never combines an old rate with a new anchor. A file of 8 to 31 bytes
 * holds the offset alone (the first format), read with one atomic load.
 * Without the variable, or when the file is missing or shorter than 8 bytes
 * (mapping past the end would raise SIGBUS), the offset is 0 for the life of
 * the process.
 *
 * Only the wall clock moves. Redis 7.0 decides a key's expiry from the wall
 * clock alone (keyIsExpired compares mstime(), from gettimeofday, with the
 * absolute expiry), and paces its timers on CLOCK_MONOTONIC, which a clock
 * fault here leaves true: a drifting wall clock is what expires a lock early
 * or late, and a monotonic clock that could run back when a drift heals
 * would break the promise its name makes.
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

struct clock_state {
	int64_t offset;
	int64_t rate;   /* parts per billion */
	int64_t anchor; /* CLOCK_MONOTONIC nanoseconds */
	uint64_t seq;
};

/* All three are set once by the constructor and only read afterwards. */
static const struct clock_state *state;     /* NULL: offset 0 */
static int state_has_rate;                  /* 0: the 8-byte format */
static clock_gettime_fn real_clock_gettime; /* NULL: use the syscall */

static int real_now(clockid_t clk, struct timespec *ts)
{
	clock_gettime_fn f = __atomic_load_n(&real_clock_gettime, __ATOMIC_ACQUIRE);
	if (f)
		return f(clk, ts);
	return (int)syscall(SYS_clock_gettime, clk, ts);
}

/* rate * elapsed / 1e9 without overflowing for any run's length. */
static int64_t drifted(int64_t rate, int64_t elapsed)
{
	return (elapsed / NSEC_PER_SEC) * rate + ((elapsed % NSEC_PER_SEC) * rate) / NSEC_PER_SEC;
}

static int64_t current_offset(void)
{
	const struct clock_state *s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);
	if (!s)
		return 0;
	if (!state_has_rate)
		return __atomic_load_n(&s->offset, __ATOMIC_RELAXED);
	int64_t offset, rate, anchor;
	/* A writer takes microseconds; a writer that died mid-change would
	 * leave seq odd for good, so after enough tries the values are taken
	 * as they are rather than hanging the process. */
	for (int tries = 0;; tries++) {
		uint64_t before = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		offset = __atomic_load_n(&s->offset, __ATOMIC_RELAXED);
		rate = __atomic_load_n(&s->rate, __ATOMIC_RELAXED);
		anchor = __atomic_load_n(&s->anchor, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		uint64_t after = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
		if ((before == after && !(before & 1)) || tries >= 100000)
			break;
	}
	if (rate == 0)
		return offset;
	struct timespec m;
	if (real_now(CLOCK_MONOTONIC, &m) != 0)
		return offset;
	int64_t elapsed = (int64_t)m.tv_sec * NSEC_PER_SEC + m.tv_nsec - anchor;
	if (elapsed < 0)
		elapsed = 0;
	return offset + drifted(rate, elapsed);
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
				int full = st.st_size >= (off_t)sizeof(struct clock_state);
				size_t len = full ? sizeof(struct clock_state) : sizeof(int64_t);
				void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
				if (m != MAP_FAILED) {
					state_has_rate = full;
					__atomic_store_n(&state, (const struct clock_state *)m, __ATOMIC_RELEASE);
				}
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
