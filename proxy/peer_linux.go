package proxy

import "golang.org/x/sys/unix"

// peerClosed reports whether the peer of the socket fd has closed or shut
// down its end, or reset it: Linux says so (POLLRDHUP) even while data it
// sent before is unread.
func peerClosed(fd int) bool {
	fds := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
	n, err := unix.Poll(fds[:], 0)
	return err == nil && n > 0 && fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
}
