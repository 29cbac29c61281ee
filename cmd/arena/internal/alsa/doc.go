// Package alsa asks ALSA whether its default playback device opens, before
// Ebitengine's audio (oto) tries and fails after two dozen lines of
// ALSA's complaints: without a device, the arena plays muted instead.
// Elsewhere (no ALSA, or no cgo) Probe always succeeds.
package alsa
