package main

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rdmasuite/rdmasuite/reports"
)

// gateway is a fake Pushgateway that records every request and answers
// with code and answer.
type gateway struct {
	mu     sync.Mutex
	reqs   []pushed
	code   int
	answer string
	delay  time.Duration
}

type pushed struct {
	method, uri, contentType, auth string
	body                           []byte
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	user, pass, _ := r.BasicAuth()
	g.mu.Lock()
	g.reqs = append(g.reqs, pushed{r.Method, r.RequestURI, r.Header.Get("Content-Type"), user + ":" + pass, b})
	g.mu.Unlock()
	time.Sleep(g.delay)
	if g.code != 0 {
		w.WriteHeader(g.code)
	}
	io.WriteString(w, g.answer)
}

func (g *gateway) requests() []pushed {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]pushed(nil), g.reqs...)
}

func parseText(t *testing.T, b []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not the text exposition format: %v\n%s", err, b)
	}
	return fams
}

func gauge(t *testing.T, fams map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil || len(f.GetMetric()) != 1 {
		t.Fatalf("%s: want one series, have %v", name, f)
	}
	return f.GetMetric()[0].GetGauge().GetValue()
}

func TestPush(t *testing.T) {
	passed := results(t, bw("a", 190, reports.Pass))
	failed := results(t, bw("a", 150, reports.Fail))
	withNotRun := results(t, bw("a", 190, reports.Pass), notRun("gpudirect/write"))

	for _, c := range []struct {
		name    string
		args    []string // after --pushgateway URL
		code    int
		uri     string
		passedV float64
	}{
		{"passed", []string{passed}, reports.ExitPassed, "/metrics/job/rdmasuite", 1},
		{"failed is pushed, exit 1", []string{failed}, reports.ExitChecksFailed, "/metrics/job/rdmasuite", 0},
		{"unallowed not-run", []string{withNotRun}, reports.ExitChecksFailed, "/metrics/job/rdmasuite", 0},
		{"allowed not-run", []string{withNotRun, "--allow-not-run", "gpudirect/"}, reports.ExitPassed, "/metrics/job/rdmasuite", 1},
		{"job and grouping, escaped", []string{"--job", "nightly run", "--grouping", "cluster=prod,rack=r/1", "--grouping", "zone=", passed},
			reports.ExitPassed, "/metrics/job/nightly%20run/cluster/prod/rack@base64/ci8x/zone@base64/=", 1},
		{"job with a slash", []string{"--job", "a/b", passed}, reports.ExitPassed, "/metrics/job@base64/YS9i", 1},
	} {
		g := &gateway{}
		srv := httptest.NewServer(g)
		var out, errb bytes.Buffer
		code := run(append([]string{"push", "--pushgateway", srv.URL}, c.args...), &out, &errb)
		srv.Close()
		if code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s%s", c.name, code, c.code, out.String(), errb.String())
		}
		reqs := g.requests()
		if len(reqs) != 1 {
			t.Fatalf("%s: %d requests, want 1", c.name, len(reqs))
		}
		r := reqs[0]
		if r.method != http.MethodPut || r.uri != c.uri {
			t.Errorf("%s: %s %s, want PUT %s", c.name, r.method, r.uri, c.uri)
		}
		mt, params, err := mime.ParseMediaType(r.contentType)
		if err != nil || mt != "text/plain" || params["version"] != "0.0.4" {
			t.Errorf("%s: Content-Type %q, want text/plain; version=0.0.4", c.name, r.contentType)
		}
		fams := parseText(t, r.body)
		if v := gauge(t, fams, "rdmasuite_run_passed"); v != c.passedV {
			t.Errorf("%s: pushed rdmasuite_run_passed %g, want %g", c.name, v, c.passedV)
		}
		if fams["rdmasuite_check_status"] == nil || fams["rdmasuite_measurement"] == nil {
			t.Errorf("%s: pushed no check or measurement:\n%s", c.name, r.body)
		}
		if !strings.Contains(out.String(), "pushed ") || !strings.Contains(out.String(), srv.URL+c.uri) {
			t.Errorf("%s: stdout %q", c.name, out.String())
		}
	}
}

func TestPushBasePathAndAuth(t *testing.T) {
	g := &gateway{}
	srv := httptest.NewServer(g)
	defer srv.Close()
	base := strings.Replace(srv.URL, "http://", "http://ops:s3cret@", 1) + "/pgw/"
	var out, errb bytes.Buffer
	if code := run([]string{"push", results(t, bw("a", 190, reports.Pass)), "--pushgateway", base}, &out, &errb); code != reports.ExitPassed {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if r := g.requests()[0]; r.uri != "/pgw/metrics/job/rdmasuite" || r.auth != "ops:s3cret" {
		t.Errorf("%s with auth %q", r.uri, r.auth)
	}
	if strings.Contains(out.String(), "s3cret") {
		t.Errorf("the password is printed: %s", out.String())
	}
}

func TestPushFails(t *testing.T) {
	passed := results(t, bw("a", 190, reports.Pass))
	failed := results(t, bw("a", 150, reports.Fail))

	g := &gateway{code: http.StatusInternalServerError, answer: "storage full\n"}
	srv := httptest.NewServer(g)
	defer srv.Close()
	slow := &gateway{delay: 500 * time.Millisecond}
	slowSrv := httptest.NewServer(slow)
	defer slowSrv.Close()
	bad := &gateway{code: http.StatusBadRequest, answer: "pushed metrics are invalid or inconsistent with existing metrics"}
	badSrv := httptest.NewServer(bad)
	defer badSrv.Close()
	gone := httptest.NewServer(&gateway{})
	goneURL := strings.Replace(gone.URL, "http://", "http://ops:s3cret@", 1)
	gone.Close()

	for _, c := range []struct {
		name string
		args []string
		want []string // in stderr
	}{
		{"500, the body is said", []string{"--pushgateway", srv.URL, passed}, []string{"answered 500 Internal Server Error: storage full", "its log says why"}},
		{"a failed push of a failed run is broken", []string{"--pushgateway", srv.URL, failed}, []string{"answered 500"}},
		{"400", []string{"--pushgateway", badSrv.URL, passed}, []string{"answered 400 Bad Request: pushed metrics are invalid", "refused the metrics"}},
		{"unreachable", []string{"--pushgateway", goneURL, passed}, []string{"the Pushgateway is unreachable", "check --pushgateway", "http://ops:xxxxx@"}},
		{"timeout", []string{"--pushgateway", slowSrv.URL, "--timeout", "100ms", passed}, []string{"no answer within --timeout 100ms"}},
		{"no gateway", []string{passed}, []string{"give --pushgateway URL"}},
		{"not a URL", []string{"--pushgateway", "pushgateway:9091", passed}, []string{"want an http:// or https:// URL"}},
		{"full path", []string{"--pushgateway", srv.URL + "/metrics/job/x", passed}, []string{"without /metrics/"}},
		{"grouping without =", []string{"--pushgateway", srv.URL, "--grouping", "prod", passed}, []string{"want NAME=VALUE"}},
		{"grouping bad name", []string{"--pushgateway", srv.URL, "--grouping", "my-cluster=prod", passed}, []string{"is not a label name"}},
		{"grouping job", []string{"--pushgateway", srv.URL, "--grouping", "job=x", passed}, []string{"the job is --job"}},
		{"grouping a metric label", []string{"--pushgateway", srv.URL, "--grouping", "node=a", passed}, []string{"label of the metrics themselves", "rdmasuite_node"}},
		{"grouping twice", []string{"--pushgateway", srv.URL, "--grouping", "c=a,c=b", passed}, []string{"c given twice"}},
		{"empty job", []string{"--pushgateway", srv.URL, "--job", "", passed}, []string{"--job must not be empty"}},
		{"no results", []string{"--pushgateway", srv.URL}, []string{"give a results file"}},
		{"unreadable results", []string{"--pushgateway", srv.URL, "/nonexistent/results.json"}, []string{"no such file"}},
		{"bad flag", []string{"--pushgateway", srv.URL, "--colour", passed}, []string{"-colour"}},
	} {
		before := len(g.requests())
		var out, errb bytes.Buffer
		if code := run(append([]string{"push"}, c.args...), &out, &errb); code != reports.ExitBroken {
			t.Errorf("%s: exit %d, want %d (broken)\n%s%s", c.name, code, reports.ExitBroken, out.String(), errb.String())
		}
		for _, w := range c.want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("%s: stderr lacks %q:\n%s", c.name, w, errb.String())
			}
		}
		if strings.Contains(errb.String(), "s3cret") {
			t.Errorf("%s: the password is printed: %s", c.name, errb.String())
		}
		if !strings.HasPrefix(c.name, "500") && !strings.HasPrefix(c.name, "a failed push") && len(g.requests()) != before {
			t.Errorf("%s: a request was sent", c.name)
		}
	}
}
