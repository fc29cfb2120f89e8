package coll

// Journal records what changes to a value touched, for a store that
// writes back only those (PostgreSQL's generic path): the fields, members
// a change added, changed or removed, or All when the change cannot be
// said member by member (a list's elements moved).
type Journal struct {
	Members map[string]struct{}
	All     bool
}

// touch records a change of member m.
func (j *Journal) touch(m string) {
	if j == nil || j.All {
		return
	}
	if j.Members == nil {
		j.Members = make(map[string]struct{})
	}
	j.Members[m] = struct{}{}
}

// all records a change of the whole value.
func (j *Journal) all() {
	if j != nil {
		j.All, j.Members = true, nil
	}
}
