package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rdmasuite/rdmasuite/workloads/bw"
	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

// stdinAddressWait bounds the wait for that line: longer than a slow pod
// start of the server (seconds on most nodes, a minute on a slow one); the
// suite's own pod budget ends a client sooner if the server never starts.
const stdinAddressWait = 5 * time.Minute

// stdinAddress reads the address once per process: every run of a
// multi-run client (--then) that says HOST - gets the same one.
var stdinAddress = sync.OnceValues(func() (string, error) {
	return readAddress(os.Stdin, stdinAddressWait)
})

// serverHost is the client's HOST argument, read from standard input when
// it is "-".
func serverHost(arg string) (string, *probeout.Error) {
	if arg != bw.AddressFromStdin {
		return arg, nil
	}
	host, err := stdinAddress()
	if err != nil {
		return "", addressError(err)
	}
	return host, nil
}

// addressError is the probe's error for an address that did not come: a
// timeout when none came in time, a usage error when the input had none.
func addressError(err error) *probeout.Error {
	if errors.Is(err, errAddressWait) {
		return probeout.Errorf(probeout.KindTimeout, "%v", err)
	}
	return probeout.Errorf(probeout.KindUsage, "%v", err)
}

var errAddressWait = errors.New("no server address on standard input")

// readAddress returns the first line of r, trimmed: one address, nothing
// else on it.
func readAddress(r io.Reader, wait time.Duration) (string, error) {
	type line struct {
		text string
		err  error
	}
	got := make(chan line, 1)
	go func() {
		text, err := bufio.NewReader(r).ReadString('\n')
		got <- line{text, err}
	}()
	select {
	case l := <-got:
		text := strings.TrimSpace(l.text)
		switch {
		case text == "" && l.err != nil:
			return "", fmt.Errorf("HOST %q reads the server's address from standard input, which ended without one (%v): give it one line, e.g. `rdmaprobe bw client … - <<< 10.0.0.7`, or the address itself", bw.AddressFromStdin, l.err)
		case text == "" || strings.ContainsAny(text, " \t"):
			return "", fmt.Errorf("HOST %q: standard input's first line %q is not one address", bw.AddressFromStdin, text)
		}
		return text, nil
	case <-time.After(wait):
		return "", fmt.Errorf("%w within %s (HOST %q: the suite hands a client pod its server's address over pods/attach once the server pod runs)", errAddressWait, wait, bw.AddressFromStdin)
	}
}
