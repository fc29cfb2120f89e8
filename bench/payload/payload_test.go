package payload

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

func TestProtoRoundTrip(t *testing.T) {
	for i := range 50 {
		id := "01928d4e-7a1b-7c3d-9e8f-0123456789ab"
		b := Proto(i, id)
		if err := CheckProto(b, i, id); err != nil {
			t.Fatal(err)
		}
		if err := CheckProto(b, i+1, id); err == nil {
			t.Fatalf("record %d passes as record %d", i, i+1)
		}
		if err := CheckProto(b, i, "other"); err == nil {
			t.Fatal("a value passes under another key")
		}
	}
	if err := CheckProto([]byte{0xff, 0xff}, 0, "k"); err == nil || !strings.Contains(err.Error(), "not a UserData") {
		t.Fatalf("garbage: %v", err)
	}
	// The payload is about the size of the published comparison's rows (~130 bytes).
	if n := len(Proto(12345, "01928d4e-7a1b-7c3d-9e8f-0123456789ab")); n < 60 || n > 200 {
		t.Fatalf("payload is %d bytes", n)
	}
}

// Pooled structs are reused across goroutines without one's tags leaking
// into another's value.
func TestProtoPoolConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				k := g*10000 + i
				b := Proto(k, "key")
				if err := CheckProto(b, k, "key"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if tagSets[0][0] != "bench" || tagSets[1][2] != "beta" {
		t.Fatalf("shared tag sets were written to: %v", tagSets)
	}
}

func TestJSON(t *testing.T) {
	b := JSON(7, "42")
	var row map[string]any
	if err := json.Unmarshal(b, &row); err != nil {
		t.Fatal(err)
	}
	for _, col := range []string{"id", "name", "email", "age", "created_at", "tags", "active", "score"} {
		if _, ok := row[col]; !ok {
			t.Errorf("JSON row lacks %s: %s", col, b)
		}
	}
	// What PostgreSQL's row_to_json gives back: other number and time
	// formats, the same values.
	// A bigint key comes back as a number, a uuid key as a string.
	back := `{"id":51234567890123456,"name":"user-7","email":"user7@example.com","age":25,"created_at":"2025-01-01T00:00:07+00:00","tags":["bench","pro"],"active":true,"score":0.7}`
	if err := CheckJSON([]byte(back), 7, "51234567890123456"); err != nil {
		t.Fatal(err)
	}
	back = strings.Replace(back, `51234567890123456`, `"42"`, 1)
	if err := CheckJSON([]byte(back), 7, "42"); err != nil {
		t.Fatal(err)
	}
	if err := CheckJSON([]byte(back), 8, "42"); err == nil {
		t.Fatal("row 7 passes as row 8")
	}
	if err := CheckJSON([]byte(back), 7, "43"); err == nil {
		t.Fatal("row of key 42 passes as key 43")
	}
}
