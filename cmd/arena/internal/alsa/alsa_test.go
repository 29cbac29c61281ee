//go:build linux && !android && cgo

package alsa

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProbeNoDevice points ALSA at a configuration whose default device
// is a card that does not exist: Probe must say so in one line.
func TestProbeNoDevice(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "asound.conf")
	if err := os.WriteFile(conf, []byte("pcm.!default { type hw card 77 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ALSA_CONFIG_PATH", conf)
	err := Probe()
	if err == nil {
		t.Fatal("Probe: nil with no card 77")
	}
	if !strings.HasPrefix(err.Error(), "ALSA cannot open its default device: ") {
		t.Errorf("Probe: %q", err)
	}
}

// TestProbeNull: ALSA's null device opens.
func TestProbeNull(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "asound.conf")
	if err := os.WriteFile(conf, []byte("pcm.!default { type null }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ALSA_CONFIG_PATH", conf)
	if err := Probe(); err != nil {
		t.Fatalf("Probe with the null device: %v", err)
	}
}
