package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// recorder counts the runner's API requests and attributes each to the
// round whose pod it names; requests naming no scheduled pod (the node
// list, discovery) go to other.
type recorder struct {
	mu       sync.Mutex
	podRound map[string]int
	rounds   []roundStats
	other    roundStats
	throttle []throttleEvent
	// roundOf, when set, attributes a request to a round by something
	// other than its pod's name (the default path's exec requests name
	// the node's pod, which takes part in every round): -1 is other.
	roundOf func(kind, pod string) int
	// execSetup is each exec request's time from sent to answered: the
	// stream's setup through the API server to the kubelet (kwok), not
	// the command's run.
	execSetup []time.Duration
}

type roundStats struct {
	pairs     int
	calls     int
	byKind    map[string]int // "verb resource" → calls
	first     time.Time      // first request of the round (sent)
	last      time.Time      // last request of the round (answered)
	cpuFirst  time.Duration  // process CPU at first
	cpu       time.Duration  // process CPU from first to last
	throttled time.Duration  // time requests waited in client-go's rate limiter
}

type throttleEvent struct {
	at   time.Time
	wait time.Duration
}

func newRecorder() *recorder {
	return &recorder{podRound: map[string]int{}, other: roundStats{byKind: map[string]int{}}}
}

// instrument wraps cfg's transport (counting) and sets its rate limiter to
// client-go's default (QPS 5, burst 10: what the suite's client gets, as it
// sets neither) wrapped to measure the time spent waiting in it.
func (r *recorder) instrument(cfg *rest.Config) {
	qps, burst := cfg.QPS, cfg.Burst
	if qps == 0 {
		qps = rest.DefaultQPS
	}
	if burst == 0 {
		burst = rest.DefaultBurst
	}
	cfg.RateLimiter = &timedLimiter{RateLimiter: flowcontrol.NewTokenBucketRateLimiter(qps, burst), rec: r}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &countingRT{next: rt, rec: r} })
}

type countingRT struct {
	next http.RoundTripper
	rec  *recorder
}

func (c *countingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	kind, pod := classify(req)
	if kind == "create pods" {
		pod = podNameFromBody(req)
	}
	sent, cpuSent := time.Now(), cpuTime()
	resp, err := c.next.RoundTrip(req)
	c.rec.add(kind, pod, sent, cpuSent, time.Now(), cpuTime())
	return resp, err
}

// classify returns "verb resource" and the pod name a request names.
func classify(req *http.Request) (kind, pod string) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	// /api/v1/namespaces/NS/pods[/NAME[/SUB]] or /api/v1/nodes …
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		rest = rest[2:]
	}
	var res, name, sub string
	if len(rest) > 0 {
		res = rest[0]
	}
	if len(rest) > 1 {
		name = rest[1]
	}
	if len(rest) > 2 {
		sub = rest[2]
	}
	if res == "" {
		res = "discovery"
	}
	verb := map[string]string{http.MethodGet: "get", http.MethodPost: "create", http.MethodDelete: "delete",
		http.MethodPut: "update", http.MethodPatch: "patch"}[req.Method]
	if verb == "get" && name == "" {
		verb = "list"
	}
	if sub == "exec" || sub == "attach" {
		// A WebSocket exec is a GET, its SPDY fallback a POST: both are
		// the create of the subresource the API server authorizes.
		verb = "create"
	}
	if sub != "" {
		res += "/" + sub
	}
	if res == "pods" || strings.HasPrefix(res, "pods/") {
		pod = name
	}
	return verb + " " + res, pod
}

func (r *recorder) add(kind, pod string, sent time.Time, cpuSent time.Duration, done time.Time, cpuDone time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := &r.other
	if r.roundOf != nil {
		if i := r.roundOf(kind, pod); i >= 0 && i < len(r.rounds) {
			st = &r.rounds[i]
		}
	} else if i, ok := r.podRound[pod]; ok {
		st = &r.rounds[i]
	}
	if strings.HasSuffix(kind, " pods/exec") {
		r.execSetup = append(r.execSetup, done.Sub(sent))
	}
	st.calls++
	st.byKind[kind]++
	if st.first.IsZero() || sent.Before(st.first) {
		st.first, st.cpuFirst = sent, cpuSent
	}
	if done.After(st.last) {
		st.last = done
		st.cpu = cpuDone - st.cpuFirst
	}
}

// podNameFromBody reads a created pod's name from the request body (JSON,
// client-go's default content type) and puts the body back.
func podNameFromBody(req *http.Request) string {
	if req.Body == nil {
		return ""
	}
	b, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	req.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return ""
	}
	// JSON or protobuf (client-go may send either): the suite's pod
	// names all start with the feature's prefix, "bw-".
	i := bytes.Index(b, []byte(`bw-`))
	if i < 0 {
		return ""
	}
	j := i
	for j < len(b) && (b[j] >= 'a' && b[j] <= 'z' || b[j] >= '0' && b[j] <= '9' || b[j] == '-' || b[j] == '.') {
		j++
	}
	return string(b[i:j])
}

// timedLimiter measures the time requests wait in the client-side rate
// limiter; finish assigns each wait to the round running at that moment.
type timedLimiter struct {
	flowcontrol.RateLimiter
	rec *recorder
}

func (t *timedLimiter) Wait(ctx context.Context) error {
	start := time.Now()
	err := t.RateLimiter.Wait(ctx)
	if d := time.Since(start); d > time.Millisecond {
		t.rec.mu.Lock()
		t.rec.throttle = append(t.rec.throttle, throttleEvent{at: time.Now(), wait: d})
		t.rec.mu.Unlock()
	}
	return err
}

// finish assigns the rate limiter's waits to rounds by time (rounds run
// one after another).
func (r *recorder) finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.throttle {
		assigned := false
		for i := range r.rounds {
			rd := &r.rounds[i]
			if !e.at.Before(rd.first) && !e.at.After(rd.last) {
				rd.throttled += e.wait
				assigned = true
				break
			}
		}
		if !assigned {
			r.other.throttled += e.wait
		}
	}
}

// cpuTime is this process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
