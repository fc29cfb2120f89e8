package memory

import (
	"bytes"
	"runtime"
	"strconv"
	"testing"
)

// An item holds a copy of its value and its deadline, stays intact through
// collections when only the item is referenced, and an empty value is
// present (not nil).
func TestItem(t *testing.T) {
	in := []byte("value")
	it := newItem(in, 42)
	in[0] = 'X'
	if string(it.val()) != "value" || it.exp != 42 {
		t.Fatalf("item = %q exp %d, want \"value\" exp 42: not a copy", it.val(), it.exp)
	}
	if v := newItem(nil, 0).val(); v == nil || len(v) != 0 {
		t.Fatalf("empty item's value = %#v, want empty and non-nil", v)
	}

	items := make([]*item, 10000)
	for i := range items {
		items[i] = newItem(bytes.Repeat([]byte(strconv.Itoa(i)), i%300), int64(i))
	}
	for range 3 {
		runtime.GC()
		garbage := make([][]byte, 10000) // reuse of anything freed wrongly
		for i := range garbage {
			garbage[i] = bytes.Repeat([]byte{0xff}, i%300+16)
		}
		runtime.KeepAlive(garbage)
	}
	for i, it := range items {
		if want := bytes.Repeat([]byte(strconv.Itoa(i)), i%300); !bytes.Equal(it.val(), want) || it.exp != int64(i) {
			t.Fatalf("item %d after collections = %.40q exp %d", i, it.val(), it.exp)
		}
	}
}
