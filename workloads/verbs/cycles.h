// Shared by the cgo preambles of package verbs (verbs.go, loop.go).
#ifndef RDMASUITE_CYCLES_H
#define RDMASUITE_CYCLES_H
#include <stdint.h>
#include <time.h>

// rs_cycles reads the CPU's cycle counter, as perftest's get_cycles does: a
// timestamp per post must not cost a clock_gettime syscall (it does when the
// kernel's clocksource is not the TSC, e.g. hpet in VMs).
static inline uint64_t rs_cycles(void) {
#if defined(__x86_64__)
	unsigned hi, lo;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
#endif
}

// rs_clock_pair reads CLOCK_MONOTONIC between two counter reads, n times,
// and keeps the read with the narrowest bracket: its counter value is the
// bracket's middle. A calibration from two such pairs is off by at most a
// bracket (hundreds of cycles) over its whole window, where Go's
// time.Now() beside a separate cgo call could be off by whatever ran
// between the two (a preemption, the call's own entry).
static inline void rs_clock_pair(int n, uint64_t *cycles, int64_t *ns, uint64_t *bracket) {
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < n; i++) {
		struct timespec ts;
		uint64_t c0 = rs_cycles();
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t c1 = rs_cycles();
		if (c1 - c0 < best) {
			best = c1 - c0;
			*cycles = c0 + (c1 - c0) / 2;
			*ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
		}
	}
	*bracket = best;
}

#endif
