package auth

import "testing"

func TestUsers(t *testing.T) {
	if New("", nil, "") != nil {
		t.Fatal("no credentials must be auth off (nil)")
	}
	var off *Users
	if off.RESP() || off.HTTP() || off.Check([]byte("default"), nil) || off.Bearer([]byte("x")) {
		t.Fatal("a nil Users must be off and accept nothing")
	}
	u := New("rp", map[string]string{"alice": "apw"}, "tok")
	for _, tc := range []struct {
		user, pass string
		want       bool
	}{
		{"default", "rp", true},
		{"alice", "apw", true},
		{"alice", "rp", false},
		{"default", "apw", false},
		{"nobody", "rp", false},
		{"alice", "", false},
		{"alice", "apw ", false},
	} {
		if got := u.Check([]byte(tc.user), []byte(tc.pass)); got != tc.want {
			t.Errorf("Check(%q, %q) = %v, want %v", tc.user, tc.pass, got, tc.want)
		}
	}
	for _, tc := range []struct {
		token string
		want  bool
	}{{"rp", true}, {"apw", true}, {"tok", true}, {"tok2", false}, {"", false}} {
		if got := u.Bearer([]byte(tc.token)); got != tc.want {
			t.Errorf("Bearer(%q) = %v, want %v", tc.token, got, tc.want)
		}
	}
	if !u.RESP() || !u.HTTP() {
		t.Error("auth with passwords must be on for RESP and HTTP")
	}
	if tokenOnly := New("", nil, "tok"); tokenOnly.RESP() || !tokenOnly.HTTP() {
		t.Error("an HTTP token alone leaves RESP open and closes HTTP")
	}
	// With users only, the default user is disabled.
	if New("", map[string]string{"alice": "apw"}, "").Check([]byte("default"), nil) {
		t.Error("the default user took an empty password")
	}
}
