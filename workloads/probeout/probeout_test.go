package probeout

import (
	"bytes"
	"strings"
	"testing"
)

type sample struct {
	N int `json:"n"`
}

func TestWriteParseRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, "env", sample{N: 7}); err != nil {
		t.Fatal(err)
	}
	logs := "libibverbs: Warning: couldn't load driver\n" + buf.String()
	var got sample
	if err := Parse(logs, "env", &got); err != nil {
		t.Fatal(err)
	}
	if got.N != 7 {
		t.Fatalf("got %+v", got)
	}
}

func TestParseRejectsOtherProbeAndSchema(t *testing.T) {
	var buf bytes.Buffer
	_ = Write(&buf, "mr", sample{N: 1})
	var got sample
	if err := Parse(buf.String(), "env", &got); err == nil || !strings.Contains(err.Error(), `no "env" result`) {
		t.Fatalf("err = %v", err)
	}
	old := `{"schema":0,"probe":"env","version":"x","result":{"n":1}}`
	if err := Parse(old, "env", &got); err == nil || !strings.Contains(err.Error(), "schema 0") {
		t.Fatalf("err = %v", err)
	}
}

// The last envelope must be whole: a cut final line (the pod was killed
// mid-write, the log was truncated) is refused even when a whole envelope
// of the same probe came before it; the earlier one is never judged in its
// place. A cut line of another probe, or a JSON line that is no envelope,
// does not hide the whole one.
func TestParseRefusesATruncatedLastEnvelope(t *testing.T) {
	var whole bytes.Buffer
	_ = Write(&whole, "env", sample{N: 1})
	line := strings.TrimSpace(whole.String())
	for _, tc := range []struct {
		name, logs string
		wantErr    string // "" : parses to N=1
	}{
		{"whole", whole.String(), ""},
		{"cut after a whole one", whole.String() + line[:len(line)-7] + "\n", "truncated"},
		{"cut before the probe name", whole.String() + `{"schema":2,"pro`, "truncated"},
		{"cut alone", line[:20], "truncated"},
		{"cut line of another probe", whole.String() + `{"schema":2,"probe":"mr","version":"x","res`, ""},
		{"library JSON after it", whole.String() + `{"level":"warn","msg":"x"}`, ""},
	} {
		var got sample
		err := Parse(tc.logs, "env", &got)
		switch {
		case tc.wantErr == "" && (err != nil || got.N != 1):
			t.Errorf("%s: err %v, got %+v", tc.name, err, got)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}
