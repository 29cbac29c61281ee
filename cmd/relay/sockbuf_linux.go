package main

import (
	"log/slog"
	"net"
	"syscall"
)

// setReadBuffer asks for a receive buffer of n bytes: past
// net.core.rmem_max when the process may (SO_RCVBUFFORCE, CAP_NET_ADMIN),
// else as much as the kernel gives.
func setReadBuffer(conn *net.UDPConn, n int, log *slog.Logger) {
	if rc, err := conn.SyscallConn(); err == nil {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, n)
		}); err == nil && serr == nil {
			return
		}
	}
	if err := conn.SetReadBuffer(n); err != nil {
		log.Warn("receive buffer", "err", err)
	}
}
