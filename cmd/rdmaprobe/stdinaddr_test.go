package main

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// HOST - takes the first line of standard input, and nothing that is not
// one address: an empty or closed input, or a line of words, is an error
// that says what HOST - expects, never a dial to "".
func TestAddressFromStandardInput(t *testing.T) {
	if got, err := readAddress(strings.NewReader(" 10.244.21.7 \nignored\n"), time.Second); err != nil || got != "10.244.21.7" {
		t.Fatalf("got %q, %v", got, err)
	}
	if got, err := readAddress(strings.NewReader("fd00::7"), time.Second); err != nil || got != "fd00::7" {
		t.Fatalf("a last line without newline: got %q, %v", got, err)
	}
	for name, in := range map[string]string{"empty": "", "blank line": "\n", "two words": "10.0.0.1 10.0.0.2\n"} {
		got, err := readAddress(strings.NewReader(in), time.Second)
		if err == nil || got != "" || !strings.Contains(err.Error(), `HOST "-"`) {
			t.Errorf("%s: got %q, %v", name, got, err)
		}
	}
}

// A client that never gets its address ends after the wait with a
// timeout naming who hands it over, not an endless read.
func TestAddressWaitEnds(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	_, err := readAddress(r, 50*time.Millisecond)
	if !errors.Is(err, errAddressWait) || !strings.Contains(err.Error(), "pods/attach") {
		t.Fatalf("got %v", err)
	}
}

// A literal HOST is used as given; the probe's error kinds follow the
// cause (no line: usage; no line in time: timeout).
func TestServerHostLiteralAndErrorKinds(t *testing.T) {
	if h, err := serverHost("10.1.2.3"); err != nil || h != "10.1.2.3" {
		t.Fatalf("got %q, %v", h, err)
	}
	_, closed := readAddress(strings.NewReader(""), time.Second)
	r, w := io.Pipe()
	defer w.Close()
	_, late := readAddress(r, 10*time.Millisecond)
	if k := addressError(closed).Kind; k != probeout.KindUsage {
		t.Errorf("closed input: kind %s", k)
	}
	if k := addressError(late).Kind; k != probeout.KindTimeout {
		t.Errorf("no line in time: kind %s", k)
	}
}
