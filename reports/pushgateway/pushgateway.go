// Package pushgateway sends a run's metrics (reports.Prometheus) to a
// Prometheus Pushgateway with PUT, which replaces every metric of the group
// (job plus grouping labels), so a check that is gone from this run is gone
// there too. `rdmasuite push` and the suite's --pushgateway both use it.
package pushgateway

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rdmasuite/rdmasuite/reports"
)

// Flags are the names of the options a caller takes, for messages.
type Flags struct {
	Gateway, Job, Grouping, Timeout string
}

// CLIFlags are `rdmasuite push`'s.
var CLIFlags = Flags{Gateway: "--pushgateway", Job: "--job", Grouping: "--grouping", Timeout: "--timeout"}

// Config is one group to push to.
type Config struct {
	// Gateway is the Pushgateway's base URL, e.g.
	// http://pushgateway.monitoring:9091 (user:password@ for basic auth).
	Gateway string
	// Job is the group's job label.
	Job string
	// Grouping are more grouping labels, NAME=VALUE.
	Grouping []string
	// Timeout bounds one push.
	Timeout time.Duration
	// Flags name the options in messages (zero: CLIFlags).
	Flags Flags
}

// Group is a checked Config: where its metrics go.
type Group struct {
	target, shown string
	timeout       time.Duration
	flags         Flags
}

// labelNameRE is a classic Prometheus label name.
var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// New checks c: the URL, the job, the grouping labels and the timeout.
// The group's URL is base/metrics/job/<job>{/<name>/<value>}; a value with
// a "/" (or an empty one) goes base64url-encoded as <name>@base64/<value>,
// as the Pushgateway reads it; any other is path-escaped.
func New(c Config) (*Group, error) {
	f := c.Flags
	if f == (Flags{}) {
		f = CLIFlags
	}
	if c.Gateway == "" {
		return nil, fmt.Errorf("give %s URL, the Pushgateway's base URL, e.g. http://pushgateway.monitoring:9091", f.Gateway)
	}
	u, err := url.Parse(c.Gateway)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s %q: %v", f.Gateway, c.Gateway, err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return nil, fmt.Errorf("%s %q: want an http:// or https:// URL with a host, e.g. http://pushgateway.monitoring:9091", f.Gateway, c.Gateway)
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("%s %q: a query or #fragment has no place in the base URL", f.Gateway, u.Redacted())
	case strings.Contains(u.Path+"/", "/metrics/"):
		return nil, fmt.Errorf("%s %q: give the base URL without /metrics/...: rdmasuite adds /metrics/job/<job> and the %s labels", f.Gateway, u.Redacted(), f.Grouping)
	}
	if c.Job == "" {
		return nil, fmt.Errorf("%s must not be empty: the Pushgateway groups by job", f.Job)
	}
	if c.Timeout <= 0 {
		return nil, fmt.Errorf("%s %s: want a positive duration, e.g. 30s", f.Timeout, c.Timeout)
	}
	path := "/metrics/" + pair("job", c.Job)
	seen := map[string]bool{}
	for _, kv := range c.Grouping {
		name, value, ok := strings.Cut(kv, "=")
		switch {
		case !ok:
			return nil, fmt.Errorf("%s %q: want NAME=VALUE, e.g. cluster=prod", f.Grouping, kv)
		case !labelNameRE.MatchString(name) || strings.HasPrefix(name, "__"):
			return nil, fmt.Errorf("%s %q: %q is not a label name (letters, digits, _; not starting with a digit or __)", f.Grouping, kv, name)
		case name == "job":
			return nil, fmt.Errorf("%s %q: the job is %s", f.Grouping, kv, f.Job)
		case slices.Contains(reports.PrometheusLabels, name):
			return nil, fmt.Errorf("%s %q: %s is a label of the metrics themselves (%s); pick another name, e.g. rdmasuite_%s",
				f.Grouping, kv, name, strings.Join(reports.PrometheusLabels, ", "), name)
		case seen[name]:
			return nil, fmt.Errorf("%s %q: %s given twice", f.Grouping, kv, name)
		}
		seen[name] = true
		path += "/" + pair(name, value)
	}
	return &Group{target: strings.TrimRight(u.String(), "/") + path, shown: strings.TrimRight(u.Redacted(), "/") + path,
		timeout: c.Timeout, flags: f}, nil
}

func pair(name, value string) string {
	switch {
	case value == "":
		return name + "@base64/="
	case strings.Contains(value, "/"):
		return name + "@base64/" + base64.RawURLEncoding.EncodeToString([]byte(value))
	}
	return name + "/" + url.PathEscape(value)
}

// String is the group's URL without any password.
func (g *Group) String() string { return g.shown }

// Push renders run as metrics and PUTs them to the group, replacing what it
// held; it returns how many series it sent. Its errors say what went wrong
// and what to check, and never hold the password.
func (g *Group) Push(run reports.Run) (series int, err error) {
	var body bytes.Buffer
	if err := reports.Prometheus(&body, run); err != nil {
		return 0, err
	}
	b := body.Bytes()
	series = bytes.Count(b, []byte("\n")) - 2*bytes.Count(b, []byte("# TYPE "))
	return series, g.put(b)
}

func (g *Group) put(body []byte) error {
	req, err := http.NewRequest(http.MethodPut, g.target, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("push to %s: %v", g.shown, err)
	}
	req.Header.Set("Content-Type", reports.PrometheusContentType)
	resp, err := (&http.Client{Timeout: g.timeout}).Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its URL could hold the password
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return fmt.Errorf("push to %s: no answer within %s (%v): is the Pushgateway overloaded, or a firewall dropping the connection?",
				g.shown, strings.TrimSpace(g.flags.Timeout+" "+g.timeout.String()), err)
		}
		return fmt.Errorf("push to %s: the Pushgateway is unreachable (%v): check %s (its base URL, e.g. http://pushgateway.monitoring:9091), "+
			"that it runs and that this host reaches it", g.shown, err, g.flags.Gateway)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	hint := ""
	switch code := resp.StatusCode; {
	case code == http.StatusBadRequest:
		hint = ": the Pushgateway refused the metrics (its answer says why: invalid, or inconsistent with what another group of this job holds)"
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		hint = fmt.Sprintf(": it wants credentials (user:password@ in %s for basic auth)", g.flags.Gateway)
	case code == http.StatusNotFound || code == http.StatusMethodNotAllowed:
		hint = fmt.Sprintf(": is %s the Pushgateway's own base URL? rdmasuite adds /metrics/job/<job>; a proxy that does not pass PUT answers so too", g.flags.Gateway)
	case code >= 500:
		hint = ": the Pushgateway (or a proxy before it) failed; its log says why"
	}
	answer := strings.TrimSpace(string(msg))
	if answer == "" {
		answer = "(no body)"
	}
	return fmt.Errorf("push to %s: the Pushgateway answered %s: %s%s", g.shown, resp.Status, answer, hint)
}
