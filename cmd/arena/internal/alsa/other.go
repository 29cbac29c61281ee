//go:build !(linux && !android && cgo)

package alsa

// Probe returns nil: only ALSA (Linux) is probed; elsewhere Ebitengine's
// audio reports its own errors.
func Probe() error { return nil }
