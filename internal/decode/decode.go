// Package decode turns loosely typed option maps (YAML, environment, flags)
// into structs strictly: an unknown key is an error that names it, sizes are
// written like "256MiB" and durations like "30s".
package decode

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/go-viper/mapstructure/v2"
)

// ByteSize is a size in bytes written in config as a number or with a unit
// ("64KiB", "256MiB", "1GB").
type ByteSize int64

// String prints the size with a binary unit.
func (b ByteSize) String() string { return humanize.IBytes(uint64(b)) }

// ParseByteSize reads "256MiB", "1GB", "4096".
func ParseByteSize(s string) (ByteSize, error) {
	n, err := humanize.ParseBytes(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a size (like 64KiB or 256MiB)", s)
	}
	if n > 1<<62 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return ByteSize(n), nil
}

// Duration is a time.Duration written in config as "30s", "500ms".
type Duration time.Duration

// String prints the duration as Go does.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes the duration as config takes it ("30s"), so the JSON
// of a config reads as its YAML did and loads back the same.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Strict decodes input into out (a pointer to a struct with mapstructure
// tags). Unknown keys and values of the wrong kind are errors: Errors,
// each line naming the key by its path inside input.
func Strict(input any, out any) error {
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		ErrorUnused:      true,
		WeaklyTypedInput: true, // environment variables and flags arrive as strings
		Result:           out,
		TagName:          "mapstructure",
		DecodeHook:       Hook,
	})
	if err != nil {
		return err
	}
	if err := dec.Decode(input); err != nil {
		return cleanError(err, reflect.TypeOf(out).Elem().String())
	}
	return nil
}

// Clean is Strict's error report for a decode made elsewhere (koanf's
// unmarshal) into a value of type root (its Go name, like "conf.Config").
func Clean(err error, root string) error { return cleanError(err, root) }

// FileMode is a permission mode written in config as an octal string
// ("0660"). YAML reads an unquoted 0660 as octal already, so a number is
// taken as it is.
type FileMode uint32

// String prints the mode in octal, as chmod takes it.
func (m FileMode) String() string { return fmt.Sprintf("%#04o", uint32(m)) }

// MarshalText writes the mode in octal, so the JSON of a config reads as
// its YAML did and loads back the same.
func (m FileMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// ParseFileMode reads "0660" or "660" as octal.
func ParseFileMode(s string) (FileMode, error) {
	n, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(s), "0o"), 8, 32)
	if err != nil || n > 0o777 {
		return 0, fmt.Errorf("%q is not a permission mode (octal, like \"0660\")", s)
	}
	return FileMode(n), nil
}

// Hook converts strings and numbers into ByteSize, Duration and FileMode.
var Hook mapstructure.DecodeHookFunc = func(from, to reflect.Type, data any) (any, error) {
	switch to {
	case reflect.TypeFor[FileMode]():
		switch v := data.(type) {
		case string:
			return ParseFileMode(v)
		case int:
			if v < 0 || v > 0o777 {
				return nil, fmt.Errorf("%#o is not a permission mode (octal, like \"0660\")", v)
			}
			return FileMode(v), nil
		}
	case reflect.TypeFor[ByteSize]():
		switch v := data.(type) {
		case string:
			return ParseByteSize(v)
		case int, int64, uint64, float64:
			return data, nil
		}
	case reflect.TypeFor[Duration]():
		switch v := data.(type) {
		case string:
			d, err := time.ParseDuration(strings.TrimSpace(v))
			if err != nil {
				return nil, fmt.Errorf("%q is not a duration (like 500ms or 30s)", v)
			}
			return Duration(d), nil
		case int, int64, float64:
			return nil, fmt.Errorf("%v is not a duration: write it with a unit, like \"30s\"", v)
		}
	}
	return data, nil
}
