//go:build !linux

package main

import (
	"log/slog"
	"net"
)

// setReadBuffer asks for a receive buffer of n bytes, as much as the
// kernel gives.
func setReadBuffer(conn *net.UDPConn, n int, log *slog.Logger) {
	if err := conn.SetReadBuffer(n); err != nil {
		log.Warn("receive buffer", "err", err)
	}
}
