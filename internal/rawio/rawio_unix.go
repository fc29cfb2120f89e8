//go:build unix

package rawio

import (
	"syscall"
	"unsafe"
)

const supported = true

// Read is read(2) of a non-blocking descriptor. n is 0 when err is set.
func Read(fd uintptr, p []byte) (n int, err error) { return call(syscall.SYS_READ, fd, p) }

// Write is write(2) to a non-blocking descriptor. n is 0 when err is set.
func Write(fd uintptr, p []byte) (n int, err error) { return call(syscall.SYS_WRITE, fd, p) }

func call(trap, fd uintptr, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r, _, errno := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}
