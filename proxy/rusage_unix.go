//go:build unix

package proxy

import "syscall"

// cpuTimes are the process's and its children's system and user CPU
// seconds (getrusage), INFO's used_cpu_* fields.
func cpuTimes() (sys, user, childSys, childUser float64, ok bool) {
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil ||
		syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) != nil {
		return 0, 0, 0, 0, false
	}
	secs := func(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }
	return secs(self.Stime), secs(self.Utime), secs(children.Stime), secs(children.Utime), true
}
