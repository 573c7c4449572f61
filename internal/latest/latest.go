// Package latest keeps a suite run's outcome in a ConfigMap of the run's
// namespace (--results-configmap NAME), replaced at the end of every run,
// for whoever cannot read the suite pod's files: a CronJob's owner, a
// dashboard, `kubectl get cm`. It holds the summary (text and Markdown),
// the exit code, the run id, when the run finished and the gzipped results
// JSON, kept under the 1 MiB a ConfigMap may hold.
//
// The ConfigMap carries app.kubernetes.io/managed-by=rdmasuite and
// rdmasuite.io/latest=true but never the run label (rdmasuite.io/run), so
// the run's own cleanup (which deletes by the run label) leaves it.
package latest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/rdmasuite/rdmasuite/internal/cluster"
	"github.com/rdmasuite/rdmasuite/reports"
)

// LatestLabel marks the ConfigMap that holds the latest run.
const LatestLabel = "rdmasuite.io/latest"

// The ConfigMap's keys.
const (
	KeySummaryText = "summary.txt"
	KeySummaryMD   = "summary.md"
	KeyExitCode    = "exit-code"
	KeyRunID       = "run-id"
	KeyFinished    = "finished"
	// KeyResults (binaryData) is the results JSON, gzipped; when it would
	// not fit, KeyResultsOmitted (data) says so and where the file is.
	KeyResults        = "results.json.gz"
	KeyResultsOmitted = "results.json.gz-omitted"
)

// Sizes, in bytes of keys and values of data and binaryData together (what
// the API server counts against a ConfigMap's limit).
const (
	// MaxBytes is the API server's limit on a ConfigMap.
	MaxBytes = 1 << 20
	// Budget is what Build fills at most, MaxBytes less room to spare.
	Budget = MaxBytes - 24<<10
	// MaxResults is the largest results.json.gz stored; a larger one is
	// left out with a note.
	MaxResults = 900 << 10
	// MaxSummaryText and MaxSummaryMD cap the summaries (and whatever is
	// left of Budget caps them further).
	MaxSummaryText = 48 << 10
	MaxSummaryMD   = 256 << 10
)

// ValidName checks name (--results-configmap) is a ConfigMap name.
func ValidName(name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("--results-configmap %q is not a ConfigMap name: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// Build is the ConfigMap name in ns holding run, which exits code;
// resultsPath is where its results file was written ("" when it could not
// be), named where the ConfigMap holds less than the whole run.
func Build(ns, name string, run reports.Run, code int, resultsPath string) (*corev1.ConfigMap, error) {
	finished := run.Finished
	if finished.IsZero() {
		finished = time.Now()
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: Labels()},
		Data: map[string]string{
			KeyExitCode: strconv.Itoa(code),
			KeyRunID:    run.RunID,
			KeyFinished: finished.UTC().Format(time.RFC3339),
		},
	}
	where := "the suite could not write the results file (its log says why)"
	if resultsPath != "" {
		where = "the full results are " + resultsPath + " in the suite's pod (--report-dir; mount a volume there to keep them)"
	}
	gz, raw, err := gzipResults(run)
	if err != nil {
		return nil, err
	}
	if len(KeyResults)+len(gz) <= MaxResults {
		cm.BinaryData = map[string][]byte{KeyResults: gz}
	} else {
		cm.Data[KeyResultsOmitted] = fmt.Sprintf("results.json.gz left out: %d KiB gzipped (%d KiB of JSON) is more than the %d KiB this ConfigMap keeps for it "+
			"(a ConfigMap holds at most 1 MiB); %s; render them with: rdmasuite report RESULTS.json\n", len(gz)>>10, len(raw)>>10, MaxResults>>10, where)
	}
	full := "the whole report: rdmasuite report RESULTS.json, from the results.json.gz key of this ConfigMap, or " + where
	if cm.BinaryData == nil {
		full = "the whole report: rdmasuite report RESULTS.json, " + where
	}
	var text, md bytes.Buffer
	fmt.Fprintf(&text, "rdmasuite: %s, exit %d\n\n", reports.SummaryText(run), code)
	if err := reports.Table(&text, run); err != nil {
		return nil, err
	}
	if err := reports.Markdown(&md, run); err != nil {
		return nil, err
	}
	left := Budget - Size(cm) - len(KeySummaryText) - len(KeySummaryMD)
	cm.Data[KeySummaryText] = clip(text.String(), min(MaxSummaryText, left/2), full, false)
	left -= len(cm.Data[KeySummaryText])
	cm.Data[KeySummaryMD] = clip(md.String(), min(MaxSummaryMD, left), full, true)
	return cm, nil
}

// Labels are the ConfigMap's: the suite's and the latest marker, never
// the run label.
func Labels() map[string]string {
	return map[string]string{cluster.ManagedByLabel: cluster.ManagedBy, LatestLabel: "true"}
}

// gzipResults is the results JSON as reports.Write writes it, gzipped.
func gzipResults(run reports.Run) (gz, raw []byte, err error) {
	run.Schema = reports.Schema
	run.Sort()
	if raw, err = json.MarshalIndent(run, "", "  "); err != nil {
		return nil, nil, err
	}
	raw = append(raw, '\n')
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	w.Name, w.ModTime = "results-"+run.RunID+".json", run.Finished
	if _, err := w.Write(raw); err != nil {
		return nil, nil, err
	}
	if err := w.Close(); err != nil {
		return nil, nil, err
	}
	return b.Bytes(), raw, nil
}

// Size is what the API server counts of cm against MaxBytes: the keys and
// values of data and binaryData.
func Size(cm *corev1.ConfigMap) int {
	n := 0
	for k, v := range cm.Data {
		n += len(k) + len(v)
	}
	for k, v := range cm.BinaryData {
		n += len(k) + len(v)
	}
	return n
}

// clip cuts s to at most max bytes at a line end (a rune end if a line is
// longer), closing an open Markdown code fence, and says what was cut and
// where the whole is.
func clip(s string, max int, full string, markdown bool) string {
	if len(s) <= max {
		return s
	}
	note := func(shown int) string {
		return fmt.Sprintf("\n… truncated: %d of %d bytes shown (a ConfigMap holds at most 1 MiB); %s\n", shown, len(s), full)
	}
	keep := max - len(note(len(s))) - len("\n```\n")
	if keep <= 0 {
		return ""
	}
	cut := keep
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if nl := strings.LastIndexByte(s[:cut], '\n'); nl >= keep/2 {
		cut = nl + 1
	}
	out := s[:cut]
	if markdown && openFence(out) {
		if !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += "```\n"
	}
	return out + note(cut)
}

// openFence says a Markdown text ends inside a ``` code block.
func openFence(s string) bool {
	open := false
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			open = !open
		}
	}
	return open
}

// ours says the ConfigMap is the suite's to replace.
func ours(cm *corev1.ConfigMap) bool {
	return cm.Labels[cluster.ManagedByLabel] == cluster.ManagedBy
}

func notOurs(ns, name string) error {
	return fmt.Errorf("configmap %s/%s exists and is not rdmasuite's (it lacks the label %s=%s): pick another --results-configmap, "+
		"or label it (kubectl label configmap -n %s %s %s=%s) to let the suite replace its data",
		ns, name, cluster.ManagedByLabel, cluster.ManagedBy, ns, name, cluster.ManagedByLabel, cluster.ManagedBy)
}

func rbacFix(ns, name string) string {
	return fmt.Sprintf("grant the suite's ServiceAccount, with a Role in %s, get and update on configmaps named %s and create on configmaps (README: in-cluster runs)", ns, name)
}

// Write creates cm, or replaces the data, binary data and labels of the
// existing ConfigMap of its name (other labels and annotations stay). A
// ConfigMap of that name that is not the suite's is never touched.
func Write(ctx context.Context, cs kubernetes.Interface, cm *corev1.ConfigMap) error {
	ns, name := cm.Namespace, cm.Name
	api := cs.CoreV1().ConfigMaps(ns)
	retriable := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	err := retry.OnError(retry.DefaultRetry, retriable, func() error {
		cur, err := api.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = api.Create(ctx, cm, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		if !ours(cur) {
			return notOurs(ns, name)
		}
		upd := cur.DeepCopy()
		if upd.Labels == nil {
			upd.Labels = map[string]string{}
		}
		for k, v := range cm.Labels {
			upd.Labels[k] = v
		}
		upd.Data, upd.BinaryData = cm.Data, cm.BinaryData
		_, err = api.Update(ctx, upd, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("configmap %s/%s: %v: %s", ns, name, err, rbacFix(ns, name))
	}
	if err != nil {
		return fmt.Errorf("configmap %s/%s: %w", ns, name, err)
	}
	return nil
}

// Check is the start of a run with --results-configmap: that the suite may
// write the ConfigMap at its end (get; update when it exists, create and
// update when not: the next run updates it), and that a ConfigMap of that
// name is the suite's. A question the API server would not answer (self
// subject access reviews forbidden) is passed to warn, not failed.
func Check(ctx context.Context, cs kubernetes.Interface, ns, name string, warn func(string)) error {
	cur, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	verbs := []string{"update"}
	switch {
	case apierrors.IsNotFound(err):
		verbs = []string{"create", "update"}
	case apierrors.IsForbidden(err):
		return fmt.Errorf("--results-configmap %s: not allowed to read configmap %s/%s (%v): %s", name, ns, name, err, rbacFix(ns, name))
	case err != nil:
		return fmt.Errorf("--results-configmap %s: reading configmap %s/%s: %w", name, ns, name, err)
	case !ours(cur):
		return notOurs(ns, name)
	}
	var denied []string
	for _, verb := range verbs {
		attr := &authv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "configmaps", Name: name}
		if verb == "create" {
			attr.Name = "" // a create is authorized before its object has a name
		}
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attr}}, metav1.CreateOptions{})
		if err != nil {
			warn(fmt.Sprintf("--results-configmap %s: could not ask the API server whether the suite may %s configmaps in %s (%v); the run's end will tell",
				name, verb, ns, err))
			continue
		}
		if !r.Status.Allowed {
			denied = append(denied, verb)
		}
	}
	if len(denied) > 0 {
		return fmt.Errorf("--results-configmap %s: the suite may not %s configmap %s/%s, so the run's end could not record it: %s",
			name, strings.Join(denied, " or "), ns, name, rbacFix(ns, name))
	}
	return nil
}

// ErrNoNamespace is --results-configmap without --namespace: the run
// namespace the suite creates is deleted at the run's end, ConfigMap and all.
var ErrNoNamespace = errors.New("--results-configmap needs --namespace NS: without it the run lives in a namespace the suite creates " +
	"and deletes at the end, which would take the ConfigMap with it; run in an existing namespace (--namespace) to keep it there")
