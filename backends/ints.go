package backends

// ParseInt reads a decimal int64 as Redis's string2ll does: an optional
// minus sign, no plus sign, no leading zeros, no spaces, at most 20 bytes.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if u > (1<<64-1-d)/10 {
			return 0, false
		}
		u = u*10 + d
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// ExpireAllowed applies EXPIRE's NX/XX/GT/LT to a key whose current deadline
// is oldExp (0 for none) and whose new one would be newExp, in the same unit.
func ExpireAllowed(cond ExpireCond, oldExp, newExp int64) bool {
	switch cond {
	case ExpireIfNone:
		return oldExp == 0
	case ExpireIfSet:
		return oldExp != 0
	case ExpireIfGreater:
		return oldExp != 0 && newExp > oldExp
	case ExpireIfLess:
		return oldExp == 0 || newExp < oldExp
	}
	return true
}
