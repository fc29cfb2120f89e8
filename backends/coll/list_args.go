package coll

// End is a list's end: LEFT (the head, index 0) or RIGHT (the tail).
type End uint8

const (
	Left  End = iota // the head: LPUSH, LPOP, LEFT
	Right            // the tail: RPUSH, RPOP, RIGHT
)

// String is the end's name as LMOVE takes it.
func (e End) String() string { return either(e == Left, "left", "right") }

// endArg reads LEFT or RIGHT, any case.
func endArg(b []byte) (End, error) {
	switch {
	case is(b, "left"):
		return Left, nil
	case is(b, "right"):
		return Right, nil
	}
	return 0, errSyntax
}
