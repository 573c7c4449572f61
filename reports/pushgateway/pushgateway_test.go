package pushgateway

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rdmasuite/rdmasuite/reports"
)

// gateway is a fake Pushgateway that records every request and answers
// with code and answer.
type gateway struct {
	mu     sync.Mutex
	reqs   []*http.Request
	bodies [][]byte
	code   int
	answer string
	delay  time.Duration
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	g.mu.Lock()
	g.reqs, g.bodies = append(g.reqs, r), append(g.bodies, b)
	g.mu.Unlock()
	time.Sleep(g.delay)
	if g.code != 0 {
		w.WriteHeader(g.code)
	}
	io.WriteString(w, g.answer)
}

func run(st reports.Status) reports.Run {
	return reports.Run{Schema: reports.Schema, RunID: "r1", Checks: []reports.Check{{ID: "bandwidth/write", Nodes: []string{"a", "b"}, Status: st,
		Measured: []reports.Measurement{{Name: "write_1MiB_avg", Node: "a", Port: "mlx5_0/1", Value: 190, Unit: "Gb/s",
			Threshold: &reports.Threshold{Op: ">=", Value: 180, Source: "sku"}}}}}}
}

// suiteFlags are the suite's names, to prove messages name the caller's.
var suiteFlags = Flags{Gateway: "--pushgateway", Job: "--pushgateway-job", Grouping: "--pushgateway-grouping"}

func TestPush(t *testing.T) {
	g := &gateway{}
	srv := httptest.NewServer(g)
	defer srv.Close()
	base := strings.Replace(srv.URL, "http://", "http://ops:s3cret@", 1) + "/pgw/"
	grp, err := New(Config{Gateway: base, Job: "rdmasuite", Grouping: []string{"cluster=prod", "rack=r/1", "zone="}, Timeout: time.Second, Flags: suiteFlags})
	if err != nil {
		t.Fatal(err)
	}
	wantPath := "/pgw/metrics/job/rdmasuite/cluster/prod/rack@base64/ci8x/zone@base64/="
	if grp.String() != strings.Replace(srv.URL, "http://", "http://ops:xxxxx@", 1)+wantPath {
		t.Errorf("String() = %s", grp)
	}
	series, err := grp.Push(run(reports.Fail))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.reqs) != 1 {
		t.Fatalf("%d requests", len(g.reqs))
	}
	r := g.reqs[0]
	user, pass, _ := r.BasicAuth()
	if r.Method != http.MethodPut || r.RequestURI != wantPath || user+":"+pass != "ops:s3cret" || r.Header.Get("Content-Type") != reports.PrometheusContentType {
		t.Errorf("%s %s (auth %s:%s, %s)", r.Method, r.RequestURI, user, pass, r.Header.Get("Content-Type"))
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(g.bodies[0]))
	if err != nil {
		t.Fatalf("%v\n%s", err, g.bodies[0])
	}
	n := 0
	for _, f := range fams {
		n += len(f.GetMetric())
	}
	if n != series || series == 0 {
		t.Errorf("Push said %d series, the body holds %d", series, n)
	}
	if p := fams["rdmasuite_run_passed"]; p == nil || p.GetMetric()[0].GetGauge().GetValue() != 0 {
		t.Errorf("a failed run pushed as passed: %v", p)
	}
}

func TestNewErrorsNameTheCallersFlags(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Job: "j", Timeout: time.Second}, "give --pushgateway URL"},
		{Config{Gateway: "pgw:9091", Job: "j", Timeout: time.Second}, "want an http:// or https:// URL"},
		{Config{Gateway: "http://ops:s3cret@pgw/metrics/job/x", Job: "j", Timeout: time.Second}, "without /metrics/...: rdmasuite adds /metrics/job/<job> and the --pushgateway-grouping labels"},
		{Config{Gateway: "http://pgw?x=1", Job: "j", Timeout: time.Second}, "a query or #fragment"},
		{Config{Gateway: "http://pgw", Timeout: time.Second}, "--pushgateway-job must not be empty"},
		{Config{Gateway: "http://pgw", Job: "j", Grouping: []string{"prod"}, Timeout: time.Second}, `--pushgateway-grouping "prod": want NAME=VALUE`},
		{Config{Gateway: "http://pgw", Job: "j", Grouping: []string{"job=x"}, Timeout: time.Second}, "the job is --pushgateway-job"},
		{Config{Gateway: "http://pgw", Job: "j", Grouping: []string{"node=a"}, Timeout: time.Second}, "rdmasuite_node"},
		{Config{Gateway: "http://pgw", Job: "j", Grouping: []string{"a=1", "a=2"}, Timeout: time.Second}, "a given twice"},
		{Config{Gateway: "http://pgw", Job: "j", Grouping: []string{"1a=1"}, Timeout: time.Second}, "is not a label name"},
		{Config{Gateway: "http://pgw", Job: "j"}, "want a positive duration"},
	} {
		c.cfg.Flags = suiteFlags
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
	// Without Flags, the CLI's names.
	if _, err := New(Config{Gateway: "http://pgw", Timeout: time.Second}); err == nil || !strings.Contains(err.Error(), "--job must not be empty") {
		t.Errorf("default flags: %v", err)
	}
}

func TestPushFails(t *testing.T) {
	broken := httptest.NewServer(&gateway{code: http.StatusInternalServerError, answer: "storage full\n"})
	defer broken.Close()
	auth := httptest.NewServer(&gateway{code: http.StatusUnauthorized})
	defer auth.Close()
	slow := httptest.NewServer(&gateway{delay: 300 * time.Millisecond})
	defer slow.Close()
	gone := httptest.NewServer(&gateway{})
	goneURL := strings.Replace(gone.URL, "http://", "http://ops:s3cret@", 1)
	gone.Close()
	for _, c := range []struct {
		url     string
		timeout time.Duration
		want    []string
	}{
		{broken.URL, time.Second, []string{"answered 500 Internal Server Error: storage full", "its log says why"}},
		{auth.URL, time.Second, []string{"answered 401", "(no body)", "user:password@ in --pushgateway"}},
		{slow.URL, 50 * time.Millisecond, []string{"no answer within 50ms"}},
		{goneURL, time.Second, []string{"the Pushgateway is unreachable", "check --pushgateway", "http://ops:xxxxx@"}},
	} {
		g, err := New(Config{Gateway: c.url, Job: "rdmasuite", Timeout: c.timeout, Flags: suiteFlags})
		if err != nil {
			t.Fatal(err)
		}
		_, err = g.Push(run(reports.Pass))
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want %q", c.url, err, w)
			}
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the password is in %v", err)
		}
	}
}
