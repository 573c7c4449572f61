// Command pause is the bed's sandbox ("pause") container: it holds the pod's
// namespaces open until it is told to stop. The bed has no registry to pull
// registry.k8s.io/pause from, so it builds this one.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	<-sigs
}
