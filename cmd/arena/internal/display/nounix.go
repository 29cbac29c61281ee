//go:build !(linux || freebsd || netbsd || openbsd || dragonfly)

package display

// Missing returns "": only X11 systems are checked.
func Missing() string { return "" }
