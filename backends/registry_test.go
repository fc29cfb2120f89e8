package backends

import (
	"context"
	"errors"
	"slices"
	"testing"
)

func TestRegistryRefusesMistakes(t *testing.T) {
	r := newRegistry[RouteCheck]("RegisterRouteCheck", "check")
	check := func(map[string]any, []RouteSpec) []error { return nil }
	r.add("b", check, false)
	r.add("a", check, false)
	for _, tc := range []struct {
		name, typ string
		isNil     bool
		want      string
	}{
		{"empty name", "", false, "backends: RegisterRouteCheck with an empty type name"},
		{"nil", "c", true, "backends: RegisterRouteCheck c with a nil check"},
		{"twice", "a", false, "backends: RegisterRouteCheck called twice for type a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if got := recover(); got != tc.want {
					t.Fatalf("panic %v, want %q", got, tc.want)
				}
			}()
			r.add(tc.typ, check, tc.isNil)
		})
	}
	if got, want := r.names(), []string{"a", "b"}; !slices.Equal(got, want) {
		t.Fatalf("names %q, want %q", got, want)
	}
	if _, ok := r.get("c"); ok {
		t.Fatal("a refused registration was kept")
	}
}

type testDriver struct{ Driver }

func TestDecoded(t *testing.T) {
	type options struct {
		Size int `mapstructure:"size"`
	}
	refused := errors.New("refused")
	f := Decoded(func(name string, o options, _ Env) (*testDriver, error) {
		if o.Size < 0 {
			return nil, refused
		}
		return &testDriver{}, nil
	})
	ctx := context.Background()
	if d, err := f(ctx, "x", map[string]any{"size": 1}, Env{}); err != nil || d == nil {
		t.Fatalf("valid options: %v, %v", d, err)
	}
	if _, err := f(ctx, "x", map[string]any{"sise": 1}, Env{}); err == nil {
		t.Fatal("an unknown option was accepted")
	}
	// A build's failure is a nil Driver, not a nil *testDriver in one.
	if d, err := f(ctx, "x", map[string]any{"size": -1}, Env{}); !errors.Is(err, refused) || d != nil {
		t.Fatalf("refused build: %#v, %v", d, err)
	}
}
