package httpapi

import (
	"testing"

	"github.com/pgcache/pgcache/internal/auth"
)

func TestAuthorized(t *testing.T) {
	users := auth.New("", nil, "tok")
	for _, tc := range []struct {
		header string
		want   bool
	}{
		{"Bearer tok", true},
		{"bearer tok", true},
		{"BEARER  tok ", true},
		{"Bearer", false},
		{"Bearer ", false},
		{"Bearertok", false},
		{"Basic dG9r", false},
		{"tok", false},
		{"", false},
		{"Bearer tok2", false},
	} {
		if got := authorized(users, []byte(tc.header)); got != tc.want {
			t.Errorf("authorized(%q) = %v, want %v", tc.header, got, tc.want)
		}
	}
	if !authorized(nil, nil) {
		t.Error("with auth off every request is authorized")
	}
}
