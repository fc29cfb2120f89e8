// Package sdnotify tells systemd about the service's state (sd_notify(3))
// for units with Type=notify: READY=1 once pgcache serves, RELOADING=1
// and READY=1 around a reload, STOPPING=1 when it drains. Outside systemd
// (no NOTIFY_SOCKET) every call does nothing.
//
// It is the protocol's few lines rather than a dependency: one datagram
// of newline-separated assignments to the socket systemd names.
package sdnotify

import (
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Notify sends state lines ("READY=1", "STATUS=…") to systemd. It returns
// nil when not run by systemd.
func Notify(lines ...string) error {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return nil
	}
	// An abstract socket is named with a leading '@' in the variable and
	// a NUL on the wire; Go's net package takes the '@' form.
	addr := &net.UnixAddr{Name: path, Net: "unixgram"}
	conn, err := net.DialUnix("unixgram", nil, addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.Write([]byte(strings.Join(lines, "\n") + "\n"))
	return err
}

// Ready says the service serves.
func Ready(status string) error { return Notify("READY=1", "STATUS="+status) }

// Reloading says a reload began. systemd (253+, Type=notify-reload) wants
// the monotonic clock with it to match the reload to its request; older
// versions ignore the field.
func Reloading() error {
	return Notify("RELOADING=1", "MONOTONIC_USEC="+strconv.FormatInt(monotonicUsec(), 10), "STATUS=reloading")
}

// Stopping says the service is shutting down.
func Stopping() error { return Notify("STOPPING=1", "STATUS=draining") }

// Status sets the line `systemctl status` shows.
func Status(status string) error { return Notify("STATUS=" + status) }

func monotonicUsec() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Sec*1e6 + ts.Nsec/1e3
}
