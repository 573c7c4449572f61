/*
 * A stand-in for libnccl.so.2 for the binding tests (built by ncclrt_test.go with
 * gcc -shared -fPIC). Every entry point has the C signature of NCCL's nccl.h; the
 * handle types are typedef'd here. The checks make the tests meaningful:
 *   - ncclGetUniqueId fills a position-dependent pattern and ncclCommInitRank compares
 *     the 128 bytes it received BY VALUE with it, checks nranks/rank and records them
 *     (ncclCommCount/ncclCommUserRank report them back);
 *   - every collective validates the communicator, datatype and op, and records its
 *     arguments (fake_last_call) so the test sees each one arrive in its own slot;
 *   - a failed call sets the text ncclGetLastError returns; destroying a communicator
 *     twice is an error.
 * Build with -DOLD_NCCL for a 2.6.4-like library: no ncclGetLastError, ncclSend or
 * ncclRecv, old version code. -DNO_INITRANK leaves out ncclCommInitRank.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
	ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclSystemError = 2, ncclInternalError = 3,
	ncclInvalidArgument = 4, ncclInvalidUsage = 5, ncclRemoteError = 6, ncclInProgress = 7,
	ncclNumResults = 8
} ncclResult_t;
typedef int ncclDataType_t; /* 0..11 */
typedef int ncclRedOp_t;    /* 0..4 */
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct { char internal[NCCL_UNIQUE_ID_BYTES]; } ncclUniqueId;
typedef struct ncclComm *ncclComm_t;
typedef struct CUstream_st *cudaStream_t;

#define COMM_MAGIC 0xC0FFEE11u
struct ncclComm { unsigned magic; int nranks, rank, destroyed; };

/* What the last collective received, for the test to read (fake_last_call). */
struct call {
	char name[32];
	uint64_t send, recv, count;
	int32_t dtype, op, root, peer;
	uint64_t comm, stream;
};
static struct call last;
static char last_error[256];
static unsigned char issued[NCCL_UNIQUE_ID_BYTES];
static int id_seed = 1;
static int group_depth;
static ncclResult_t async_result = ncclSuccess;
static int destroyed_count;

static ncclResult_t fail(ncclResult_t r, const char *msg) {
	snprintf(last_error, sizeof last_error, "%s", msg);
	return r;
}

/* --- steering and inspection for the tests --- */
void fake_reset(void) {
	memset(&last, 0, sizeof last);
	last_error[0] = 0;
	group_depth = 0;
	async_result = ncclSuccess;
	destroyed_count = 0;
}
const struct call *fake_last_call(void) { return &last; }
void fake_set_async_error(int r) { async_result = (ncclResult_t)r; }
int fake_destroyed(void) { return destroyed_count; }

/* --- the NCCL API --- */
ncclResult_t ncclGetVersion(int *version) {
	if (!version) return fail(ncclInvalidArgument, "ncclGetVersion: NULL version");
#ifdef OLD_NCCL
	*version = 2604; /* NCCL_VERSION(2,6,4), old encoding */
#else
	*version = 22105; /* NCCL_VERSION(2,21,5) */
#endif
	return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
	if (!id) return fail(ncclInvalidArgument, "ncclGetUniqueId: NULL id");
	for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++) issued[i] = (unsigned char)(i * 37 + id_seed * 101 + 1);
	id_seed++;
	memcpy(id->internal, issued, NCCL_UNIQUE_ID_BYTES);
	return ncclSuccess;
}

#ifndef NO_INITRANK
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
	if (!comm) return fail(ncclInvalidArgument, "ncclCommInitRank: NULL comm pointer");
	if (nranks < 1 || nranks > 4096) {
		snprintf(last_error, sizeof last_error, "ncclCommInitRank: invalid nranks %d", nranks);
		return ncclInvalidArgument;
	}
	if (rank < 0 || rank >= nranks) {
		snprintf(last_error, sizeof last_error, "ncclCommInitRank: invalid rank %d of %d", rank, nranks);
		return ncclInvalidArgument;
	}
	for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++) {
		if ((unsigned char)commId.internal[i] != issued[i]) {
			snprintf(last_error, sizeof last_error,
			         "ncclCommInitRank: unique id byte %d is 0x%02x, ncclGetUniqueId made 0x%02x",
			         i, (unsigned char)commId.internal[i], issued[i]);
			return ncclInvalidArgument;
		}
	}
	struct ncclComm *c = calloc(1, sizeof *c);
	c->magic = COMM_MAGIC;
	c->nranks = nranks;
	c->rank = rank;
	*comm = c;
	return ncclSuccess;
}
#endif

static int bad_comm(ncclComm_t c) { return !c || c->magic != COMM_MAGIC || c->destroyed; }

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
	if (bad_comm(comm) || !count) return fail(ncclInvalidArgument, "ncclCommCount: bad argument");
	*count = comm->nranks;
	return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
	if (bad_comm(comm) || !rank) return fail(ncclInvalidArgument, "ncclCommUserRank: bad argument");
	*rank = comm->rank;
	return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device) {
	if (bad_comm(comm) || !device) return fail(ncclInvalidArgument, "ncclCommCuDevice: bad argument");
	*device = 3;
	return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
	if (bad_comm(comm) || !asyncError) return fail(ncclInvalidArgument, "ncclCommGetAsyncError: bad argument");
	*asyncError = async_result;
	if (async_result != ncclSuccess) snprintf(last_error, sizeof last_error, "NET/IB : Got completion from peer 10.0.0.2<42> with status=12 opcode=0 len=0 vendor err 129 (Recv)");
	return ncclSuccess;
}

static ncclResult_t finish(ncclComm_t comm, const char *what) {
	if (!comm || comm->magic != COMM_MAGIC) return fail(ncclInvalidArgument, "bad communicator");
	if (comm->destroyed) {
		snprintf(last_error, sizeof last_error, "%s: communicator already destroyed", what);
		return ncclInvalidUsage;
	}
	comm->destroyed = 1; /* kept allocated so a second call is detected */
	destroyed_count++;
	return ncclSuccess;
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) { return finish(comm, "ncclCommDestroy"); }
ncclResult_t ncclCommAbort(ncclComm_t comm) { return finish(comm, "ncclCommAbort"); }

const char *ncclGetErrorString(ncclResult_t code) {
	switch (code) {
	case ncclSuccess: return "no error";
	case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
	case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
	case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
	case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	case ncclRemoteError: return "remote process exited or there was a network error";
	case ncclInProgress: return "NCCL operation in progress";
	default: return "unknown result code";
	}
}

#ifndef OLD_NCCL
const char *ncclGetLastError(ncclComm_t comm) {
	(void)comm;
	return last_error;
}
#endif

ncclResult_t ncclGroupStart(void) {
	group_depth++;
	return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
	if (group_depth <= 0) return fail(ncclInvalidUsage, "ncclGroupEnd: not in a group call");
	group_depth--;
	return ncclSuccess;
}

static ncclResult_t record(const char *name, const void *send, const void *recv, size_t count,
                           ncclDataType_t dt, ncclRedOp_t op, int root, int peer,
                           ncclComm_t comm, cudaStream_t stream) {
	if (bad_comm(comm)) return fail(ncclInvalidArgument, "invalid communicator");
	if (dt < 0 || dt > 11) {
		snprintf(last_error, sizeof last_error, "%s: invalid datatype %d", name, dt);
		return ncclInvalidArgument;
	}
	if (op < -1 || op > 4) {
		snprintf(last_error, sizeof last_error, "%s: invalid reduction op %d", name, op);
		return ncclInvalidArgument;
	}
	if (root < -1 || root >= comm->nranks || peer < -1 || peer >= comm->nranks) {
		snprintf(last_error, sizeof last_error, "%s: root %d / peer %d out of range for %d ranks", name, root, peer, comm->nranks);
		return ncclInvalidArgument;
	}
	snprintf(last.name, sizeof last.name, "%s", name);
	last.send = (uint64_t)(uintptr_t)send;
	last.recv = (uint64_t)(uintptr_t)recv;
	last.count = count;
	last.dtype = dt;
	last.op = op;
	last.root = root;
	last.peer = peer;
	last.comm = (uint64_t)(uintptr_t)comm;
	last.stream = (uint64_t)(uintptr_t)stream;
	return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
	return record("ncclAllReduce", sendbuff, recvbuff, count, datatype, op, -1, -1, comm, stream);
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream) {
	return record("ncclAllGather", sendbuff, recvbuff, sendcount, datatype, -1, -1, -1, comm, stream);
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
	return record("ncclReduceScatter", sendbuff, recvbuff, recvcount, datatype, op, -1, -1, comm, stream);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
	return record("ncclBroadcast", sendbuff, recvbuff, count, datatype, -1, root, -1, comm, stream);
}

#ifndef OLD_NCCL
ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
	return record("ncclSend", sendbuff, NULL, count, datatype, -1, -1, peer, comm, stream);
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
	return record("ncclRecv", NULL, recvbuff, count, datatype, -1, -1, peer, comm, stream);
}
#endif
