package decode

import (
	"strings"
	"testing"
)

type opts struct {
	Max   int32    `mapstructure:"max"`
	On    bool     `mapstructure:"on"`
	Size  ByteSize `mapstructure:"size"`
	Wait  Duration `mapstructure:"wait"`
	Hosts []string `mapstructure:"hosts"`
}

// Every problem comes out on a line of its own as `path: reason`, unknown
// keys like any other, and no Go type name is shown.
func TestStrictErrors(t *testing.T) {
	var o opts
	err := Strict(map[string]any{"maxx": 1, "max": "lots", "on": "perhaps", "size": "big", "wait": 5, "other": 2}, &o)
	if err == nil {
		t.Fatal("no error")
	}
	got := strings.Split(err.Error(), "\n")
	want := []string{
		"max: is not a whole number",
		"maxx: unknown key",
		"on: is not true or false",
		"other: unknown key",
		`size: "big" is not a size (like 64KiB or 256MiB)`,
		`wait: 5 is not a duration: write it with a unit, like "30s"`,
	}
	seen := map[string]bool{}
	for _, l := range got {
		seen[l] = true
		if strings.Contains(l, "decode.") || strings.Contains(l, "int32") || strings.Contains(l, "'") {
			t.Errorf("line %q names a Go type or quotes like mapstructure", l)
		}
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("missing %q in:\n%s", w, err)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d lines, want %d:\n%s", len(got), len(want), err)
	}
}
