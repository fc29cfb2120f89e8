//go:build unix && !linux

package proxy

import "syscall"

// peerClosed reports whether the peer of the socket fd has closed its end
// (or reset it): a peek finds the end of the stream. Where there is no
// POLLRDHUP, data sent before the close and not read yet hides it.
func peerClosed(fd int) bool {
	var b [1]byte
	n, _, err := syscall.Recvfrom(fd, b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return (n == 0 && err == nil) || (err != nil && err != syscall.EAGAIN && err != syscall.EINTR)
}
