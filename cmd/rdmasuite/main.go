// Command rdmasuite is the operator CLI: rendering reports, checking
// threshold files and running the doctor. The conformance features
// themselves run with `go test ./suites -args --kubeconfig=…`.
package main

import (
	"fmt"
	"os"

	"github.com/rdmasuite/rdmasuite/workloads/probeout"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: rdmasuite version")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "version":
		fmt.Println("rdmasuite", probeout.Version)
	default:
		fmt.Fprintf(os.Stderr, "rdmasuite: unknown command %q (try: rdmasuite version)\n", os.Args[1])
		os.Exit(2)
	}
}
