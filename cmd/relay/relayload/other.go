//go:build !linux

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "relayload: Linux only (network namespaces, IP_PKTINFO, /proc)")
	os.Exit(2)
}
