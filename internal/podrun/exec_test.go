package podrun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Two streams written at once in odd chunks (as the executor's copy
// goroutines do) come out as whole lines: every line of each stream
// intact, each stream's lines in their order, a last line without a
// newline kept.
func TestLineMergerKeepsLinesWhole(t *testing.T) {
	m := &lineMerger{}
	out, errs := m.stream(), m.stream()
	var want []string
	write := func(s *lineStream, prefix string, wg *sync.WaitGroup) {
		defer wg.Done()
		var text strings.Builder
		for i := range 200 {
			text.WriteString(prefix + strings.Repeat("x", i%37) + "\n")
		}
		b := []byte(text.String())
		for len(b) > 0 {
			n := min(len(b), 7)
			if _, err := s.Write(b[:n]); err != nil {
				t.Error(err)
			}
			b = b[n:]
		}
	}
	for i := range 200 {
		want = append(want, "out"+strings.Repeat("x", i%37), "err"+strings.Repeat("x", i%37))
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go write(out, "out", &wg)
	go write(errs, "err", &wg)
	wg.Wait()
	if _, err := out.Write([]byte(`{"schema":2}`)); err != nil {
		t.Fatal(err)
	}
	out.flush()
	errs.flush()
	lines := strings.Split(strings.TrimSuffix(m.String(), "\n"), "\n")
	if len(lines) != 401 || lines[400] != `{"schema":2}` {
		t.Fatalf("%d lines, last %q; want 401, the unterminated envelope last", len(lines), lines[len(lines)-1])
	}
	var gotOut, gotErr []string
	for _, l := range lines[:400] {
		switch {
		case strings.HasPrefix(l, "out") && strings.Trim(l[3:], "x") == "":
			gotOut = append(gotOut, l)
		case strings.HasPrefix(l, "err") && strings.Trim(l[3:], "x") == "":
			gotErr = append(gotErr, l)
		default:
			t.Fatalf("a line cut or mixed: %q", l)
		}
	}
	for i := range 200 {
		if gotOut[i] != want[2*i] || gotErr[i] != want[2*i+1] {
			t.Fatalf("line %d out of order: %q %q", i, gotOut[i], gotErr[i])
		}
	}
}

// An API server that refuses connections (restarting) never started the
// command: Exec tries again through StartWindow, then says the command
// never started (ErrNotStarted), so the runner does not take the pod for
// busy; an API server that accepts again within the window gets the exec.
func TestExecWhileTheAPIServerRefusesSaysItNeverStarted(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: connection refused
	cfg := &rest.Config{Host: "http://" + addr}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	old := StartWindow
	StartWindow = 3 * time.Second
	defer func() { StartWindow = old }()
	start := time.Now()
	_, err = RemoteExec{Config: cfg, Kube: kube}.Exec(context.Background(), "ns", "p", "probe", []string{"true"})
	took := time.Since(start)
	if !errors.Is(err, ErrNotStarted) || !strings.Contains(err.Error(), "did not accept the exec") {
		t.Fatalf("err = %v", err)
	}
	if took < 2*time.Second {
		t.Errorf("gave up after %s, not the start window", took)
	}
	// Back within the window: the exec reaches the server (which here
	// answers 404: a result of the server's, not a refused connection).
	srv := &http.Server{Addr: addr, Handler: http.NotFoundHandler()}
	go func() {
		time.Sleep(2 * time.Second)
		_ = srv.ListenAndServe()
	}()
	defer srv.Close()
	_, err = RemoteExec{Config: cfg, Kube: kube}.Exec(context.Background(), "ns", "p", "probe", []string{"true"})
	if err == nil || errors.Is(err, ErrNotStarted) {
		t.Fatalf("an API server back within the window: err = %v", err)
	}
}

// The read error of a stream this process closed is not logged (the
// pair's row says what ended it); any other unhandled error still is.
func TestClosedStreamErrorsAreNotLogged(t *testing.T) {
	var got []error
	old := utilruntime.ErrorHandlers
	defer func() { utilruntime.ErrorHandlers = old }()
	// The filter this package installs, over a recorder standing in for
	// client-go's logger.
	utilruntime.ErrorHandlers = withoutClosedStreams([]utilruntime.ErrorHandler{
		func(_ context.Context, err error, _ string, _ ...interface{}) { got = append(got, err) }})
	utilruntime.HandleError(fmt.Errorf("next reader: read tcp 127.0.0.1:43054->127.0.0.1:16443: %w", net.ErrClosed))
	utilruntime.HandleError(errors.New("next reader: read tcp 127.0.0.1:1->127.0.0.1:2: use of closed network connection"))
	utilruntime.HandleError(errors.New("watch of pods: the server is unavailable"))
	if len(got) != 1 || !strings.Contains(got[0].Error(), "unavailable") {
		t.Errorf("handled %v, want only the other error", got)
	}
	if len(old) != 1 {
		t.Errorf("the package installs one filtering handler, found %d", len(old))
	}
}
