//go:build linux || freebsd || netbsd || openbsd || dragonfly

package display

import "syscall"

// Missing returns why there is no usable X display, in one line, or "".
func Missing() string {
	d, _ := syscall.Getenv("DISPLAY")
	if d == "" {
		return "arena needs a display: set DISPLAY (or run it under Xvfb: xvfb-run arena ...)"
	}
	if n, ok := localNumber(d); ok && !reachable(n) {
		return "arena needs a display: DISPLAY is " + d + ", but no X server listens there (is it running? or run under Xvfb: xvfb-run arena ...)"
	}
	return ""
}

// localNumber returns the display number of a local display (":0",
// ":1.0", "unix:2"); ok is false for remote ones (host:10.0, as ssh
// forwards), which are not checked.
func localNumber(d string) (n string, ok bool) {
	switch {
	case len(d) > 5 && d[:5] == "unix:":
		d = d[5:]
	case len(d) > 1 && d[0] == ':':
		d = d[1:]
	default:
		return "", false
	}
	i := 0
	for i < len(d) && d[i] >= '0' && d[i] <= '9' {
		i++
	}
	if i == 0 || (i < len(d) && d[i] != '.') {
		return "", false
	}
	return d[:i], true
}

// reachable says whether an X server accepts a connection on display n's
// Unix socket (on Linux its abstract socket counts too).
func reachable(n string) bool {
	for _, path := range []string{"/tmp/.X11-unix/X" + n, "@/tmp/.X11-unix/X" + n} {
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return true // cannot tell: let Ebitengine try
		}
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		_ = syscall.Close(fd)
		if err == nil {
			return true
		}
	}
	return false
}
