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

#endif
