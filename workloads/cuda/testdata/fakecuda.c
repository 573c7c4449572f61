/*
 * A stand-in for libcuda.so.1 for the binding tests (built by cuda_test.go with
 * gcc -shared -fPIC). Every entry point has the C signature of CUDA 12.6's cuda.h;
 * the handle types are typedef'd here. Each function checks its arguments the way the
 * real driver would reject them, so a binding that passes arguments in the wrong order
 * or with the wrong width gets an error, not a silent pass:
 *   - CUdevice handles are ordinal+10, so passing an ordinal where a handle belongs
 *     (or a length where a device belongs) is CUDA_ERROR_INVALID_DEVICE;
 *   - device memory is host memory from malloc, tracked; copies and memsets must stay
 *     inside an allocation (so swapped src/dst fail) and the data really moves;
 *   - contexts are reference counted, so a double release is an error.
 * Build with -DNO_DMABUF to leave out cuMemGetHandleForAddressRange (a pre-11.7
 * driver) and -DNO_INIT to leave out cuInit (not a CUDA driver at all).
 * fake_* functions let the test steer and inspect the fake.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef int CUdevice_attribute;
typedef int CUmemRangeHandleType;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_INVALID_HANDLE 400
#define CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 124
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 1

#define HANDLE_BASE 10
#define MAX_DEV 4
#define MAX_ALLOC 64
#define FAKE_MAX_ALLOC_BYTES (1ULL << 30)

struct CUctx_st { int dev; int refs; };
struct CUstream_st { unsigned magic; int syncs; };
#define STREAM_MAGIC 0x57a3e4u

static int inited;
static int ndev = 2;
static int init_result = CUDA_SUCCESS;
static int driver_version = 12040;
static struct CUctx_st ctxs[MAX_DEV];
static CUcontext current;
static struct { void *p; size_t n; } allocs[MAX_ALLOC];
static int nstreams_live;
static unsigned long long alloc_limit = FAKE_MAX_ALLOC_BYTES;

/* --- steering and inspection for the tests --- */
void fake_reset(void) {
	inited = 0;
	ndev = 2;
	init_result = CUDA_SUCCESS;
	driver_version = 12040;
	current = NULL;
	for (int i = 0; i < MAX_DEV; i++) { ctxs[i].dev = i; ctxs[i].refs = 0; }
	for (int i = 0; i < MAX_ALLOC; i++) { free(allocs[i].p); allocs[i].p = NULL; allocs[i].n = 0; }
	nstreams_live = 0;
	alloc_limit = FAKE_MAX_ALLOC_BYTES;
}
void fake_set_device_count(int n) { ndev = n; }
void fake_set_init_result(int r) { init_result = r; }
void fake_set_driver_version(int v) { driver_version = v; }
void fake_set_alloc_limit(unsigned long long n) { alloc_limit = n; }
int fake_ctx_refs(int ordinal) { return ctxs[ordinal].refs; }
int fake_current_ordinal(void) { return current ? current->dev : -1; }
int fake_live_allocs(void) {
	int n = 0;
	for (int i = 0; i < MAX_ALLOC; i++) n += allocs[i].p != NULL;
	return n;
}
int fake_live_streams(void) { return nstreams_live; }

static int valid_dev(CUdevice d) { return d >= HANDLE_BASE && d < HANDLE_BASE + ndev; }

/* the allocation containing [p, p+n), or -1 */
static int find_range(CUdeviceptr p, size_t n) {
	for (int i = 0; i < MAX_ALLOC; i++) {
		char *b = allocs[i].p;
		if (b && (char *)(uintptr_t)p >= b && (char *)(uintptr_t)p + n <= b + allocs[i].n) return i;
	}
	return -1;
}

/* --- the driver API --- */
#ifndef NO_INIT
CUresult cuInit(unsigned int flags) {
	/* FAKE_STDOUT_LINES=N: print N log lines through C's stdout, as NCCL
	 * prints its NCCL_DEBUG lines (the probe must keep them off the
	 * stdout its envelope is on). */
	const char *lines = getenv("FAKE_STDOUT_LINES");
	for (int i = 0; lines && i < atoi(lines); i++)
		printf("fake:1:1 [0] NCCL INFO stand-in line %03d of a C library's log, long enough to fill C's buffer\n", i);
	if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
	if (init_result != CUDA_SUCCESS) return init_result;
	inited = 1;
	return CUDA_SUCCESS;
}
#endif

CUresult cuDriverGetVersion(int *v) {
	if (!v) return CUDA_ERROR_INVALID_VALUE;
	*v = driver_version;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
	if (!inited) return CUDA_ERROR_NOT_INITIALIZED;
	if (!count) return CUDA_ERROR_INVALID_VALUE;
	*count = ndev;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
	if (!inited) return CUDA_ERROR_NOT_INITIALIZED;
	if (!dev) return CUDA_ERROR_INVALID_VALUE;
	if (ordinal < 0 || ordinal >= ndev) return CUDA_ERROR_INVALID_DEVICE;
	*dev = HANDLE_BASE + ordinal;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
	if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
	if (!name || len < 32) return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, len, "Fake H100 80GB HBM3 #%d", dev - HANDLE_BASE);
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *busid, int len, CUdevice dev) {
	static const char *ids[MAX_DEV] = {"0000:3B:00.0", "0000:AF:00.0", "0000:18:00.0", "0000:DB:00.0"};
	if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
	if (!busid || len < 13) return CUDA_ERROR_INVALID_VALUE;
	snprintf(busid, len, "%s", ids[dev - HANDLE_BASE]);
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
	if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
	if (!pi) return CUDA_ERROR_INVALID_VALUE;
	if (attrib != CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED) return CUDA_ERROR_INVALID_VALUE;
	*pi = dev == HANDLE_BASE; /* device 0 supports dma-buf, device 1 does not */
	return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
	if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
	if (!bytes) return CUDA_ERROR_INVALID_VALUE;
	/* above 4 GiB, so a 32-bit read is caught */
	*bytes = (size_t)(80 - 40 * (dev - HANDLE_BASE)) << 30 | 12345;
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
	if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
	if (!pctx) return CUDA_ERROR_INVALID_VALUE;
	ctxs[dev - HANDLE_BASE].refs++;
	*pctx = &ctxs[dev - HANDLE_BASE];
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
	if (!valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
	if (ctxs[dev - HANDLE_BASE].refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
	ctxs[dev - HANDLE_BASE].refs--;
	return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
	if (ctx != NULL && (ctx < &ctxs[0] || ctx >= &ctxs[MAX_DEV] || ctx->refs <= 0)) return CUDA_ERROR_INVALID_CONTEXT;
	current = ctx;
	return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
	if (!current) return CUDA_ERROR_INVALID_CONTEXT;
	if (!dptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
	if (bytesize > alloc_limit) return CUDA_ERROR_OUT_OF_MEMORY;
	for (int i = 0; i < MAX_ALLOC; i++) {
		if (allocs[i].p) continue;
		/* page aligned, like device allocations (dma-buf export needs it) */
		if (posix_memalign(&allocs[i].p, 4096, bytesize) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
		memset(allocs[i].p, 0xEE, bytesize);
		allocs[i].n = bytesize;
		*dptr = (CUdeviceptr)(uintptr_t)allocs[i].p;
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
	if (!current) return CUDA_ERROR_INVALID_CONTEXT;
	for (int i = 0; i < MAX_ALLOC; i++) {
		if (allocs[i].p && (CUdeviceptr)(uintptr_t)allocs[i].p == dptr) {
			free(allocs[i].p);
			allocs[i].p = NULL;
			allocs[i].n = 0;
			return CUDA_SUCCESS;
		}
	}
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
	if (!current) return CUDA_ERROR_INVALID_CONTEXT;
	if (!src || find_range(dst, n) < 0) return CUDA_ERROR_INVALID_VALUE;
	memcpy((void *)(uintptr_t)dst, src, n);
	return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
	if (!current) return CUDA_ERROR_INVALID_CONTEXT;
	if (!dst || find_range(src, n) < 0) return CUDA_ERROR_INVALID_VALUE;
	memcpy(dst, (const void *)(uintptr_t)src, n);
	return CUDA_SUCCESS;
}

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char uc, size_t n) {
	if (!current) return CUDA_ERROR_INVALID_CONTEXT;
	if (find_range(dst, n) < 0) return CUDA_ERROR_INVALID_VALUE;
	memset((void *)(uintptr_t)dst, uc, n);
	return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *ph, unsigned int flags) {
	if (!current) return CUDA_ERROR_INVALID_CONTEXT;
	if (!ph || flags != 0) return CUDA_ERROR_INVALID_VALUE;
	struct CUstream_st *s = calloc(1, sizeof *s);
	s->magic = STREAM_MAGIC;
	*ph = s;
	nstreams_live++;
	return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream h) {
	if (!h || h->magic != STREAM_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
	h->syncs++;
	return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream h) {
	if (!h || h->magic != STREAM_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
	h->magic = 0;
	free(h);
	nstreams_live--;
	return CUDA_SUCCESS;
}

#ifndef NO_DMABUF
/* The fd is a memfd of the range's size, so the test can fstat it. */
CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr, size_t size,
                                       CUmemRangeHandleType handleType, unsigned long long flags) {
	if (!current) return CUDA_ERROR_INVALID_CONTEXT;
	if (!handle || handleType != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || flags != 0) return CUDA_ERROR_INVALID_VALUE;
	if (dptr % 4096 != 0 || size % 4096 != 0 || find_range(dptr, size) < 0) return CUDA_ERROR_INVALID_VALUE;
	int fd = memfd_create("fake-dmabuf", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)size) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
	*(int *)handle = fd;
	return CUDA_SUCCESS;
}
#endif

static const struct { int code; const char *name, *text; } errs[] = {
	{CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
	{CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	{CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	{CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	{CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	{CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
};

CUresult cuGetErrorName(CUresult error, const char **pStr) {
	if (!pStr) return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
		if (errs[i].code == error) { *pStr = errs[i].name; return CUDA_SUCCESS; }
	}
	*pStr = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char **pStr) {
	if (!pStr) return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
		if (errs[i].code == error) { *pStr = errs[i].text; return CUDA_SUCCESS; }
	}
	*pStr = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}
