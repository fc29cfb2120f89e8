//go:build !unix

package proxy

// cpuTimes is not available without getrusage: INFO leaves the cpu
// section empty.
func cpuTimes() (sys, user, childSys, childUser float64, ok bool) { return 0, 0, 0, 0, false }
