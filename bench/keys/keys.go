// Package keys makes and stores the keys `pgcache bench` reads and writes:
// UUIDv7 (github.com/google/uuid), ULID (github.com/oklog/ulid/v2) and
// 64-bit TSID, all time-sorted, as the published comparison used them.
//
// The keys file (gen/keys.txt by default, written by `pgcache bench
// gen-targets`) holds one key per line in its three encodings, separated by
// tabs, after comment lines starting with '#':
//
//	# pgcache bench keys: one key per line as uuidv7, ulid and tsid, tab-separated
//	01928d4e-7a1b-7c3d-9e8f-0123456789ab	01JA6MWYGV3HWRB7RZ0J7MQ0X1	51234567890123456
//
// Row i of each column was made at about the same moment; an engine takes
// the column its key type needs (see bench.Engines).
package keys

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/oklog/ulid/v2"
)

// Kind names one encoding, a column of the keys file.
type Kind string

const (
	UUIDv7 Kind = "uuidv7" // 36-character RFC 9562 text; 16 bytes in a uuid column
	ULID   Kind = "ulid"   // 26-character Crockford base32
	TSID   Kind = "tsid"   // decimal int64 for a bigint column
)

// Kinds are the columns of the keys file, in order.
var Kinds = []Kind{UUIDv7, ULID, TSID}

// DefaultFile is where gen-targets writes and the bench reads.
const DefaultFile = "gen/keys.txt"

// header is the first line of a keys file.
const header = "# pgcache bench keys: one key per line as uuidv7, ulid and tsid, tab-separated"

// Set is N keys in each encoding.
type Set struct {
	UUIDv7, ULID, TSID []string
}

// Len is the number of keys.
func (s *Set) Len() int { return len(s.UUIDv7) }

// Of returns the keys of one encoding.
func (s *Set) Of(k Kind) []string {
	switch k {
	case UUIDv7:
		return s.UUIDv7
	case ULID:
		return s.ULID
	case TSID:
		return s.TSID
	}
	panic("keys: unknown kind " + string(k))
}

// Head returns the first n keys (all of them when there are fewer).
func (s *Set) Head(n int) *Set {
	n = min(n, s.Len())
	return &Set{UUIDv7: s.UUIDv7[:n], ULID: s.ULID[:n], TSID: s.TSID[:n]}
}

// Generate makes n new keys of each kind, each column strictly increasing.
func Generate(n int) (*Set, error) {
	s := &Set{UUIDv7: make([]string, n), ULID: make([]string, n), TSID: make([]string, n)}
	tsids := NewTSIDGen()
	for i := range n {
		u, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("uuidv7: %w", err)
		}
		s.UUIDv7[i] = u.String()
		s.ULID[i] = ulid.Make().String()
		s.TSID[i] = FormatTSID(tsids.Next())
	}
	return s, nil
}

// Write writes s to path, creating its directory; the file is replaced as
// a whole (written aside, then renamed), so a reader never sees half of it.
func Write(path string, s *Set) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("keys file: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".keys-*")
	if err != nil {
		return fmt.Errorf("keys file: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename there is nothing to remove
	w := bufio.NewWriterSize(tmp, 1<<20)
	fmt.Fprintln(w, header)
	for i := range s.Len() {
		w.WriteString(s.UUIDv7[i])
		w.WriteByte('\t')
		w.WriteString(s.ULID[i])
		w.WriteByte('\t')
		w.WriteString(s.TSID[i])
		w.WriteByte('\n')
	}
	err = w.Flush()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("keys file %s: %w", path, err)
	}
	return nil
}

// Read reads a keys file, checking every key's format, up to max keys
// (0: all of them).
func Read(path string, max int) (*Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("keys file: %w", err)
	}
	defer f.Close()
	s, err := read(f, max)
	if err != nil {
		return nil, fmt.Errorf("keys file %s: %w", path, err)
	}
	return s, nil
}

func read(r io.Reader, max int) (*Set, error) {
	s := &Set{}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() && (max == 0 || s.Len() < max) {
		line++
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		cols := strings.Split(text, "\t")
		if len(cols) != len(Kinds) {
			return nil, fmt.Errorf("line %d: %d columns, want %d (uuidv7, ulid, tsid)", line, len(cols), len(Kinds))
		}
		if err := check(cols); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		s.UUIDv7 = append(s.UUIDv7, cols[0])
		s.ULID = append(s.ULID, cols[1])
		s.TSID = append(s.TSID, cols[2])
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

// check refuses a row whose keys are not of their column's kind.
func check(cols []string) error {
	u, err := uuid.Parse(cols[0])
	if err != nil || u.Version() != 7 || len(cols[0]) != 36 {
		return fmt.Errorf("%q is not a UUIDv7", cols[0])
	}
	if _, err := ulid.ParseStrict(cols[1]); err != nil {
		return fmt.Errorf("%q is not a ULID: %v", cols[1], err)
	}
	if n, err := strconv.ParseInt(cols[2], 10, 64); err != nil || n <= 0 {
		return fmt.Errorf("%q is not a TSID (a positive decimal int64)", cols[2])
	}
	return nil
}

// Load returns the first n keys of the file at path. When the file is
// absent, or holds fewer than n keys, it generates n keys and writes them
// there first (generated is then true).
func Load(path string, n int) (s *Set, generated bool, err error) {
	if n < 1 {
		return nil, false, fmt.Errorf("keys: %d keys asked for; at least 1", n)
	}
	s, err = Read(path, n)
	switch {
	case err == nil && s.Len() >= n:
		return s, false, nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, false, err
	}
	if s, err = Generate(n); err != nil {
		return nil, false, err
	}
	if err := Write(path, s); err != nil {
		return nil, false, err
	}
	return s, true, nil
}
