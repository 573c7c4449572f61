package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"flag"
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

// labelNameRE is a classic Prometheus label name.
var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// runPush sends a run's metrics (reports.Prometheus) to a Pushgateway with
// PUT, which replaces every metric of the group (job plus --grouping), so a
// check that is gone from this run is gone there too. A push that fails is
// ExitBroken whatever the run; else the run's verdict, as report gives it.
func runPush(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	gateway := fs.String("pushgateway", "", "the Pushgateway's base URL, e.g. http://pushgateway.monitoring:9091 (user:password@ for basic auth)")
	job := fs.String("job", "rdmasuite", "the job label of the group")
	timeout := fs.Duration("timeout", 30*time.Second, "how long the push may take")
	var grouping, allow listFlag
	fs.Var(&grouping, "grouping", "more grouping labels, NAME=VALUE, comma-separated, repeatable (e.g. cluster=prod): one group per distinct set")
	fs.Var(&allow, "allow-not-run", "check ids (or prefixes ending in /) allowed to be not-run, besides those the run allowed; comma-separated, repeatable")
	pos, err := splitArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return errors.New("give a results file: rdmasuite push --pushgateway URL RESULTS.json [MORE.json ...] (several are merged into one group)")
	}
	target, shown, err := pushTarget(*gateway, *job, grouping)
	if err != nil {
		return err
	}
	if *timeout <= 0 {
		return fmt.Errorf("--timeout %s: want a positive duration, e.g. 30s", *timeout)
	}
	run, err := readRun(pos, allow)
	if err != nil {
		return err
	}
	var body bytes.Buffer
	if err := reports.Prometheus(&body, run); err != nil {
		return err
	}
	series := bytes.Count(body.Bytes(), []byte("\n")) - 2*bytes.Count(body.Bytes(), []byte("# TYPE "))
	if err := push(target, shown, body.Bytes(), *timeout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pushed %d series of run %s to %s\n%s\n", series, run.RunID, shown, reports.SummaryText(run))
	return verdict(run)
}

// pushTarget is the group's URL, base/metrics/job/<job>{/<name>/<value>},
// and the same with any password hidden, for messages. A value with a "/"
// (or an empty one) goes base64url-encoded as <name>@base64/<value>, as the
// Pushgateway reads it; any other is path-escaped.
func pushTarget(gateway, job string, grouping []string) (target, shown string, err error) {
	if gateway == "" {
		return "", "", errors.New("give --pushgateway URL, the Pushgateway's base URL, e.g. http://pushgateway.monitoring:9091")
	}
	u, err := url.Parse(gateway)
	switch {
	case err != nil:
		return "", "", fmt.Errorf("--pushgateway %q: %v", gateway, err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return "", "", fmt.Errorf("--pushgateway %q: want an http:// or https:// URL with a host, e.g. http://pushgateway.monitoring:9091", gateway)
	case u.RawQuery != "" || u.Fragment != "":
		return "", "", fmt.Errorf("--pushgateway %q: a query or #fragment has no place in the base URL", u.Redacted())
	case strings.Contains(u.Path+"/", "/metrics/"):
		return "", "", fmt.Errorf("--pushgateway %q: give the base URL without /metrics/...: rdmasuite adds /metrics/job/<job> and the --grouping labels", u.Redacted())
	}
	if job == "" {
		return "", "", errors.New("--job must not be empty: the Pushgateway groups by job")
	}
	path := "/metrics/" + groupingPair("job", job)
	seen := map[string]bool{}
	for _, kv := range grouping {
		name, value, ok := strings.Cut(kv, "=")
		switch {
		case !ok:
			return "", "", fmt.Errorf("--grouping %q: want NAME=VALUE, e.g. cluster=prod", kv)
		case !labelNameRE.MatchString(name) || strings.HasPrefix(name, "__"):
			return "", "", fmt.Errorf("--grouping %q: %q is not a label name (letters, digits, _; not starting with a digit or __)", kv, name)
		case name == "job":
			return "", "", fmt.Errorf("--grouping %q: the job is --job", kv)
		case slices.Contains(reports.PrometheusLabels, name):
			return "", "", fmt.Errorf("--grouping %q: %s is a label of the metrics themselves (%s); pick another name, e.g. rdmasuite_%s",
				kv, name, strings.Join(reports.PrometheusLabels, ", "), name)
		case seen[name]:
			return "", "", fmt.Errorf("--grouping %q: %s given twice", kv, name)
		}
		seen[name] = true
		path += "/" + groupingPair(name, value)
	}
	base := strings.TrimRight(u.String(), "/")
	return base + path, strings.TrimRight(u.Redacted(), "/") + path, nil
}

func groupingPair(name, value string) string {
	switch {
	case value == "":
		return name + "@base64/="
	case strings.Contains(value, "/"):
		return name + "@base64/" + base64.RawURLEncoding.EncodeToString([]byte(value))
	}
	return name + "/" + url.PathEscape(value)
}

// push PUTs body to target. Its errors say what went wrong and what to
// check; shown is target without the password.
func push(target, shown string, body []byte, timeout time.Duration) error {
	req, err := http.NewRequest(http.MethodPut, target, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("push to %s: %v", shown, err)
	}
	req.Header.Set("Content-Type", reports.PrometheusContentType)
	resp, err := (&http.Client{Timeout: timeout}).Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its URL could hold the password
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return fmt.Errorf("push to %s: no answer within --timeout %s (%v): is the Pushgateway overloaded, or a firewall dropping the connection?", shown, timeout, err)
		}
		return fmt.Errorf("push to %s: the Pushgateway is unreachable (%v): check --pushgateway (its base URL, e.g. http://pushgateway.monitoring:9091), "+
			"that it runs and that this host reaches it", shown, err)
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
		hint = ": it wants credentials (user:password@ in --pushgateway for basic auth)"
	case code == http.StatusNotFound || code == http.StatusMethodNotAllowed:
		hint = ": is --pushgateway the Pushgateway's own base URL? rdmasuite adds /metrics/job/<job>; a proxy that does not pass PUT answers so too"
	case code >= 500:
		hint = ": the Pushgateway (or a proxy before it) failed; its log says why"
	}
	answer := strings.TrimSpace(string(msg))
	if answer == "" {
		answer = "(no body)"
	}
	return fmt.Errorf("push to %s: the Pushgateway answered %s: %s%s", shown, resp.Status, answer, hint)
}
