package ncclrt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ebitengine/purego"

	"github.com/rdmasuite/rdmasuite/workloads/cfake"
)

// The binding tests load real shared objects: testdata/fakenccl.c compiled with gcc
// (or $CC). No GPU, no NCCL: the fake has nccl.h's C signatures, checks what arrives
// and records each collective's arguments.

// fakes builds testdata/fakenccl.c into shared objects, one per set of -D flags.
var fakes = &cfake.Builder{Source: filepath.Join("testdata", "fakenccl.c")}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fakenccl-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakes.Dir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildFake compiles testdata/fakenccl.c with the -D flags into <name>.so.
func buildFake(t *testing.T, name string, defines ...string) string {
	t.Helper()
	return fakes.Build(t, name, defines...)
}

// fakeCall mirrors struct call in fakenccl.c.
type fakeCall struct {
	Name                  [32]byte
	Send, Recv, Count     uint64
	DType, Op, Root, Peer int32
	Comm, Stream          uint64
}

func (c fakeCall) name() string {
	n := string(c.Name[:])
	if i := strings.IndexByte(n, 0); i >= 0 {
		n = n[:i]
	}
	return n
}

type fake struct {
	reset         func()
	lastCall      func() *fakeCall
	setAsyncError func(r int32)
	destroyed     func() int32
}

func loadFake(t *testing.T, name string, defines ...string) (*Lib, *fake) {
	t.Helper()
	path := buildFake(t, name, defines...)
	l, err := LoadFrom(path)
	if err != nil {
		t.Fatalf("LoadFrom(%s): %v", path, err)
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	f := &fake{}
	purego.RegisterLibFunc(&f.reset, h, "fake_reset")
	purego.RegisterLibFunc(&f.lastCall, h, "fake_last_call")
	purego.RegisterLibFunc(&f.setAsyncError, h, "fake_set_async_error")
	purego.RegisterLibFunc(&f.destroyed, h, "fake_destroyed")
	f.reset()
	return l, f
}

// newComm makes a communicator of world ranks as rank.
func newComm(t *testing.T, l *Lib, world, rank int) *Comm {
	t.Helper()
	id, err := l.GetUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.CommInitRank(world, rank, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Destroy() })
	return c
}

func TestLoadMissingLibraryNamesLibraryAndFix(t *testing.T) {
	_, err := LoadFrom("/nonexistent/libnccl.so.2")
	if !errors.Is(err, ErrNoNCCL) {
		t.Fatalf("err = %v, want errors.Is ErrNoNCCL", err)
	}
	var le *LoadError
	if !errors.As(err, &le) || le.Library != "/nonexistent/libnccl.so.2" {
		t.Fatalf("err = %#v", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"NCCL library /nonexistent/libnccl.so.2 could not be loaded (",
		"No such file",
		"use an image that ships NCCL (e.g. an NGC PyTorch image) or set RDMASUITE_LIBNCCL to its path",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

func TestLoadHonoursEnvOverride(t *testing.T) {
	t.Setenv(EnvLibrary, "/nonexistent/override/libnccl.so.2")
	if _, err := Load(); !errors.Is(err, ErrNoNCCL) || !strings.Contains(err.Error(), "/nonexistent/override/libnccl.so.2") {
		t.Fatalf("Load with %s set: %v", EnvLibrary, err)
	}
	t.Setenv(EnvLibrary, buildFake(t, "libfakenccl"))
	l, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if l.Path() != os.Getenv(EnvLibrary) {
		t.Fatalf("Path = %s", l.Path())
	}
}

func TestLoadRejectsLibraryWithoutCommInitRank(t *testing.T) {
	_, err := LoadFrom(buildFake(t, "libnoinitrank", "NO_INITRANK"))
	var se *SymbolError
	if !errors.Is(err, ErrNoNCCL) || !errors.As(err, &se) || se.Symbol != "ncclCommInitRank" {
		t.Fatalf("err = %v", err)
	}
}

func TestVersion(t *testing.T) {
	l, _ := loadFake(t, "libfakenccl")
	v, err := l.Version()
	if err != nil || v != 22105 || VersionString(v) != "2.21.5" {
		t.Fatalf("Version = %d (%s), %v", v, VersionString(v), err)
	}
	for code, want := range map[int]string{22105: "2.21.5", 2708: "2.7.8", 2804: "2.8.4", 20901: "2.9.1", 22304: "2.23.4", 21813: "2.18.13", 30000: "3.0.0"} {
		if got := VersionString(code); got != want {
			t.Errorf("VersionString(%d) = %s, want %s", code, got, want)
		}
	}
}

func TestCommInitRankPassesUniqueIDByValue(t *testing.T) {
	l, _ := loadFake(t, "libfakenccl")
	id, err := l.GetUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	if id[0] == id[1] || id == (UniqueID{}) {
		t.Fatalf("GetUniqueID returned %x", id[:8])
	}
	c, err := l.CommInitRank(3, 2, id)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	if n, err := c.Count(); err != nil || n != 3 {
		t.Fatalf("Count = %d, %v; want 3 (nranks must arrive as the 2nd argument)", n, err)
	}
	if r, err := c.UserRank(); err != nil || r != 2 {
		t.Fatalf("UserRank = %d, %v; want 2 (rank must arrive as the 4th argument)", r, err)
	}
	if d, err := c.CuDevice(); err != nil || d != 3 {
		t.Fatalf("CuDevice = %d, %v", d, err)
	}

	// Every byte matters: flip the last and the first.
	for _, i := range []int{127, 0} {
		bad := id
		bad[i] ^= 0xFF
		_, err = l.CommInitRank(3, 2, bad)
		var ne *Error
		if !errors.As(err, &ne) || ne.Code != InvalidArgument {
			t.Fatalf("CommInitRank with byte %d changed: %#v", i, err)
		}
		want := fmt.Sprintf("ncclCommInitRank(nranks 3, rank 2): ncclInvalidArgument (invalid argument (run with NCCL_DEBUG=WARN for details)): ncclCommInitRank: unique id byte %d is 0x%02x, ncclGetUniqueId made 0x%02x", i, bad[i], id[i])
		if err.Error() != want {
			t.Fatalf("message\n %q\nwant\n %q", err, want)
		}
	}
	if _, err := l.CommInitRank(2, 2, id); err == nil {
		t.Fatal("rank 2 of 2 accepted")
	}
}

func TestCollectivesPassEveryArgument(t *testing.T) {
	l, f := loadFake(t, "libfakenccl")
	c := newComm(t, l, 4, 1)
	const big = 1<<33 + 5 // a count that needs 64 bits
	type want struct {
		name                  string
		send, recv, count     uint64
		dtype, op, root, peer int32
		stream                uint64
	}
	for _, tc := range []struct {
		run  func() error
		want want
	}{
		{func() error { return c.AllReduce(0x1000, 0x2000, big, Float32, Avg, 0xABC0) },
			want{"ncclAllReduce", 0x1000, 0x2000, big, 7, 4, -1, -1, 0xABC0}},
		{func() error { return c.AllGather(0x1100, 0x2100, 77, Bfloat16, 0xABC1) },
			want{"ncclAllGather", 0x1100, 0x2100, 77, 9, -1, -1, -1, 0xABC1}},
		{func() error { return c.ReduceScatter(0x1200, 0x2200, 1<<20, Int64, Max, 0xABC2) },
			want{"ncclReduceScatter", 0x1200, 0x2200, 1 << 20, 4, 2, -1, -1, 0xABC2}},
		{func() error { return c.Broadcast(0x1300, 0x2300, 55, Uint8, 3, 0xABC3) },
			want{"ncclBroadcast", 0x1300, 0x2300, 55, 1, -1, 3, -1, 0xABC3}},
		{func() error { return c.Send(0x1400, 66, Float16, 2, 0xABC4) },
			want{"ncclSend", 0x1400, 0, 66, 6, -1, -1, 2, 0xABC4}},
		{func() error { return c.Recv(0x2500, 88, Float64, 3, 0xABC5) },
			want{"ncclRecv", 0, 0x2500, 88, 8, -1, -1, 3, 0xABC5}},
	} {
		if err := tc.run(); err != nil {
			t.Fatalf("%s: %v", tc.want.name, err)
		}
		g := *f.lastCall()
		got := want{g.name(), g.Send, g.Recv, g.Count, g.DType, g.Op, g.Root, g.Peer, g.Stream}
		if got != tc.want {
			t.Errorf("C received\n %+v\nwant\n %+v", got, tc.want)
		}
		if uintptr(g.Comm) != c.h {
			t.Errorf("%s: comm %#x, want %#x", tc.want.name, g.Comm, c.h)
		}
	}
}

func TestCollectiveErrorCarriesTextAndLastError(t *testing.T) {
	l, _ := loadFake(t, "libfakenccl")
	c := newComm(t, l, 2, 0)
	err := c.AllReduce(1, 2, 8, DataType(42), Sum, 0)
	want := "ncclAllReduce(count 8, ncclDataType(42), ncclSum): ncclInvalidArgument (invalid argument (run with NCCL_DEBUG=WARN for details)): ncclAllReduce: invalid datatype 42"
	if err == nil || err.Error() != want {
		t.Fatalf("err %q\nwant %q", err, want)
	}
	err = c.Broadcast(1, 2, 8, Int8, 5, 0)
	var ne *Error
	if !errors.As(err, &ne) || ne.Code != InvalidArgument || !strings.Contains(ne.Last, "root 5") {
		t.Fatalf("Broadcast root 5 of 2: %#v", err)
	}
}

func TestGroup(t *testing.T) {
	l, _ := loadFake(t, "libfakenccl")
	if err := l.GroupStart(); err != nil {
		t.Fatal(err)
	}
	if err := l.GroupEnd(); err != nil {
		t.Fatal(err)
	}
	err := l.GroupEnd()
	want := "ncclGroupEnd: ncclInvalidUsage (invalid usage (run with NCCL_DEBUG=WARN for details)): ncclGroupEnd: not in a group call"
	if err == nil || err.Error() != want {
		t.Fatalf("unmatched GroupEnd: %v", err)
	}
}

func TestAsyncError(t *testing.T) {
	l, f := loadFake(t, "libfakenccl")
	c := newComm(t, l, 2, 1)
	if err := c.AsyncError(); err != nil {
		t.Fatalf("healthy communicator: %v", err)
	}
	f.setAsyncError(RemoteError)
	err := c.AsyncError()
	var ne *Error
	if !errors.As(err, &ne) || ne.Code != RemoteError ||
		!strings.HasPrefix(err.Error(), "ncclCommGetAsyncError: ncclRemoteError (remote process exited or there was a network error): NET/IB : Got completion") {
		t.Fatalf("AsyncError = %v", err)
	}
}

func TestDestroyAndAbortAreIdempotent(t *testing.T) {
	l, f := loadFake(t, "libfakenccl")
	c := newComm(t, l, 2, 0)
	if err := c.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := c.Destroy(); err != nil {
		t.Fatalf("second Destroy: %v", err)
	}
	if err := c.Abort(); err != nil {
		t.Fatalf("Abort after Destroy: %v", err)
	}
	if n := f.destroyed(); n != 1 {
		t.Fatalf("NCCL saw %d destroys, want 1", n)
	}
	if err := c.AllReduce(1, 2, 3, Int32, Sum, 0); !errors.Is(err, ErrDestroyed) {
		t.Fatalf("AllReduce after Destroy = %v", err)
	}
	c2 := newComm(t, l, 2, 1)
	if err := c2.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := c2.Abort(); err != nil {
		t.Fatal(err)
	}
	if n := f.destroyed(); n != 2 {
		t.Fatalf("NCCL saw %d destroys/aborts, want 2", n)
	}
}

func TestOldNCCLLacksSendRecvAndLastError(t *testing.T) {
	l, _ := loadFake(t, "libnccl264", "OLD_NCCL")
	v, err := l.Version()
	if err != nil || VersionString(v) != "2.6.4" {
		t.Fatalf("Version = %d (%s), %v", v, VersionString(v), err)
	}
	m := l.Missing()
	sort.Strings(m)
	if strings.Join(m, ",") != "ncclGetLastError,ncclRecv,ncclSend" {
		t.Fatalf("Missing = %v", m)
	}
	c := newComm(t, l, 2, 0)
	err = c.Send(1, 2, Int8, 1, 0)
	var se *SymbolError
	if !errors.As(err, &se) || se.Symbol != "ncclSend" {
		t.Fatalf("Send on NCCL 2.6 = %#v", err)
	}
	for _, want := range []string{"ncclSend is not exported by", "(NCCL 2.6.4)", "needs NCCL 2.7 or newer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	// Without ncclGetLastError an error still has name and text.
	if err := l.GroupEnd(); err == nil || err.Error() != "ncclGroupEnd: ncclInvalidUsage (invalid usage (run with NCCL_DEBUG=WARN for details))" {
		t.Fatalf("GroupEnd = %v", err)
	}
}

func TestNames(t *testing.T) {
	if Float32.String() != "ncclFloat32" || Float32.Size() != 4 || Bfloat16.Size() != 2 || DataType(99).Size() != 0 {
		t.Error("DataType names/sizes")
	}
	if Avg.String() != "ncclAvg" || RedOp(9).String() != "ncclRedOp(9)" {
		t.Error("RedOp names")
	}
	if ResultName(InProgress) != "ncclInProgress" || ResultName(42) != "ncclResult 42" {
		t.Error("result names")
	}
}
