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
