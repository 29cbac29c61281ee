//go:build !rewind_adversary

package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAdversaryNeedsItsBuild: a soak built without the adversary refuses
// -adversary at once, in one line that says how to run it with it.
func TestAdversaryNeedsItsBuild(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"-adversary", "stall-ack", "-matches", "1"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "go run -tags rewind_adversary ./cmd/soak -adversary stall-ack")
	assert.Equal(t, 1, bytes.Count(errOut.Bytes(), []byte("\n")), "one line: %q", errOut.String())
}
