package script

import (
	"encoding/binary"
	"hash/crc64"
	"sort"
)

// FUNCTION DUMP writes Redis's payload format, so a dump moves between
// pgcache and Redis 7 both ways: for each library the RDB opcode
// FUNCTION2 (245) and its code as an RDB string, then the RDB version
// (2 bytes, little endian) and a CRC-64/Jones of everything before (8
// bytes, little endian). pgcache writes strings uncompressed and reads
// Redis's LZF-compressed ones.
const (
	rdbOpFunction2 = 245
	rdbVersion     = 10 // Redis 7.0's
)

// crcTable is CRC-64/Jones (polynomial 0xad93d23594c935a9, reflected),
// Redis's crc64. Go's crc64 inverts the crc before and after; Redis does
// not, which jonesCRC undoes.
var crcTable = crc64.MakeTable(0x95ac9329ac4bc9b5)

func jonesCRC(b []byte) uint64 { return ^crc64.Update(^uint64(0), crcTable, b) }

func (e *Engine) dump() []byte {
	e.fmu.RLock()
	libs := make([]*library, 0, len(e.libs))
	for _, l := range e.libs {
		libs = append(libs, l)
	}
	e.fmu.RUnlock()
	sort.Slice(libs, func(i, j int) bool { return libs[i].name < libs[j].name })
	var out []byte
	for _, l := range libs {
		out = append(out, rdbOpFunction2)
		out = appendRDBLen(out, uint64(len(l.code)))
		out = append(out, l.code...)
	}
	out = binary.LittleEndian.AppendUint16(out, rdbVersion)
	return binary.LittleEndian.AppendUint64(out, jonesCRC(out))
}

func appendRDBLen(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, byte(n>>8)|0x40, byte(n))
	case n <= 0xffffffff:
		b = append(b, 0x80)
		return binary.BigEndian.AppendUint32(b, uint32(n))
	}
	b = append(b, 0x81)
	return binary.BigEndian.AppendUint64(b, n)
}

// readRDBLen reads a length; enc reports the special encodings (11xxxxxx).
func readRDBLen(b []byte) (n uint64, enc int, used int, ok bool) {
	if len(b) == 0 {
		return 0, 0, 0, false
	}
	switch b[0] >> 6 {
	case 0:
		return uint64(b[0] & 0x3f), -1, 1, true
	case 1:
		if len(b) < 2 {
			return 0, 0, 0, false
		}
		return uint64(b[0]&0x3f)<<8 | uint64(b[1]), -1, 2, true
	case 2:
		switch b[0] {
		case 0x80:
			if len(b) < 5 {
				return 0, 0, 0, false
			}
			return uint64(binary.BigEndian.Uint32(b[1:])), -1, 5, true
		case 0x81:
			if len(b) < 9 {
				return 0, 0, 0, false
			}
			return binary.BigEndian.Uint64(b[1:]), -1, 9, true
		}
		return 0, 0, 0, false
	}
	return 0, int(b[0] & 0x3f), 1, true
}

// readRDBString reads an RDB string: plain, an encoded integer, or LZF.
func readRDBString(b []byte) ([]byte, int, bool) {
	n, enc, used, ok := readRDBLen(b)
	if !ok {
		return nil, 0, false
	}
	switch enc {
	case -1:
		if uint64(len(b)-used) < n {
			return nil, 0, false
		}
		return b[used : used+int(n)], used + int(n), true
	case 3: // LZF
		clen, _, u1, ok1 := readRDBLen(b[used:])
		if !ok1 {
			return nil, 0, false
		}
		used += u1
		ulen, _, u2, ok2 := readRDBLen(b[used:])
		if !ok2 || ulen > 512<<20 {
			return nil, 0, false
		}
		used += u2
		if uint64(len(b)-used) < clen {
			return nil, 0, false
		}
		out, ok := lzfDecompress(b[used:used+int(clen)], int(ulen))
		return out, used + int(clen), ok
	}
	return nil, 0, false // integer encodings never hold library code
}

// lzfDecompress is LibLZF's decoder (the format Redis compresses RDB
// strings with).
func lzfDecompress(in []byte, outLen int) ([]byte, bool) {
	out := make([]byte, 0, outLen)
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 { // literal run of ctrl+1 bytes
			n := ctrl + 1
			if i+n > len(in) || len(out)+n > outLen {
				return nil, false
			}
			out = append(out, in[i:i+n]...)
			i += n
			continue
		}
		n := ctrl >> 5
		if n == 7 {
			if i >= len(in) {
				return nil, false
			}
			n += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, false
		}
		ref := len(out) - ((ctrl&0x1f)<<8 | int(in[i])) - 1
		i++
		n += 2
		if ref < 0 || len(out)+n > outLen {
			return nil, false
		}
		for k := 0; k < n; k++ {
			out = append(out, out[ref+k])
		}
	}
	if len(out) != outLen {
		return nil, false
	}
	return out, true
}

// restore is FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE].
func (e *Engine) restore(payload []byte, policy string) Value {
	if len(payload) < 10 {
		return Error(errBadPayload)
	}
	body := payload[:len(payload)-10]
	ver := binary.LittleEndian.Uint16(payload[len(payload)-10:])
	crc := binary.LittleEndian.Uint64(payload[len(payload)-8:])
	if ver > rdbVersion || (crc != 0 && crc != jonesCRC(payload[:len(payload)-8])) {
		return Error(errBadPayload)
	}
	var codes [][]byte
	for i := 0; i < len(body); {
		if body[i] != rdbOpFunction2 {
			return Error("ERR given type is not a function")
		}
		s, n, ok := readRDBString(body[i+1:])
		if !ok {
			return Error("ERR payload is not a valid functions dump")
		}
		codes = append(codes, s)
		i += 1 + n
	}
	// Build every library first, then install them together, so a
	// failing restore changes nothing.
	built := make([]*library, 0, len(codes))
	v := e.getVM()
	defer e.putVM(v)
	for _, code := range codes {
		lib, msg := parseLibraryCode(clone(code))
		if msg != "" {
			return Error(msg)
		}
		b, msg := v.instantiate(lib)
		if msg != "" {
			return Error(msg)
		}
		lib.funcs = b.funcs
		built = append(built, lib)
	}
	e.fmu.Lock()
	defer e.fmu.Unlock()
	libs := e.libs
	if policy == "flush" {
		libs = map[string]*library{}
	}
	names := make(map[string]string) // function -> library, after the restore
	for _, l := range libs {
		for _, f := range l.funcs {
			names[f.name] = l.name
		}
	}
	incoming := make(map[string]bool)
	for _, lib := range built {
		if incoming[lib.name] {
			return Error("ERR Library '" + lib.name + "' already exists")
		}
		incoming[lib.name] = true
		if old, ok := libs[lib.name]; ok {
			if policy != "replace" {
				return Error("ERR Library " + lib.name + " already exists")
			}
			for _, f := range old.funcs {
				delete(names, f.name)
			}
		}
	}
	for _, lib := range built {
		for _, f := range lib.funcs {
			if owner, ok := names[f.name]; ok && owner != lib.name {
				return Error("ERR Function " + f.name + " already exists")
			}
			names[f.name] = lib.name
		}
	}
	if policy == "flush" {
		e.libs = make(map[string]*library)
		e.funcs = make(map[string]*function)
	}
	for _, lib := range built {
		e.installLocked(lib)
	}
	return Status("OK")
}
