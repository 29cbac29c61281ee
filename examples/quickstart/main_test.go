package main

import (
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQuickstart runs the README's quick start (ten seconds of real time
// over loopback UDP) and checks both machines end in the same state.
func TestQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("ten seconds of real time")
	}
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stdout := os.Stdout
	os.Stdout = w
	main()
	os.Stdout = stdout
	require.NoError(t, w.Close())
	out, err := io.ReadAll(r)
	require.NoError(t, err)
	m := regexp.MustCompile(`^frame 600 on both machines: ([0-9a-f]{16}) ([0-9a-f]{16})\n$`).FindStringSubmatch(string(out))
	require.NotNil(t, m, string(out))
	assert.Equal(t, m[1], m[2])
}

// TestReadmeQuickstart: the README shows this program verbatim.
func TestReadmeQuickstart(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(readme), "```go\n"+string(src)+"```\n"), "README.md's quick start differs from examples/quickstart/main.go")
}
