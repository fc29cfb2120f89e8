package script

import (
	"fmt"
	"reflect"

	lua "github.com/yuin/gopher-lua"
)

// EVAL's KEYS and ARGV tables are a vm's own, emptied after each run and
// filled again by the next: two tables and their arrays were a third of an
// EVALSHA's allocations.
//
// Why a script cannot keep them past its run: a table outlives a run only
// if something that outlives it refers to it, and an EVAL script can write
// to nothing that does. Every table it reaches through the globals is a
// read-only proxy (see vm), the functions it reaches keep their state in
// Go, and its own closure, which the vm keeps (see closure), has no
// upvalues and no setfenv to change. What it returns or raises is
// converted before the run ends. The one way out was the globals
// themselves: a function (FCALL) runs in the same Lua state with the same
// globals, and could read the last EVAL's KEYS and keep it in its
// library's upvalues; so FCALL removes KEYS and ARGV from the globals
// before it runs (hideArgTables), as Redis's functions see no KEYS either.
// Nothing else runs with these globals: FUNCTION LOAD's code runs with
// the load globals. FCALL's keys and arguments are always new tables: a
// function may keep those.
//
// Emptied completely: a script may change the tables (Redis's may too):
// set or remove items, add fields, set a metatable. A table whose array is
// emptied, with no hash part and no metatable, is as new; one that got a
// hash part or a metatable, or whose array grew past maxArgsKept, is
// dropped and the next run makes a new one. gopher-lua exports no way to
// see or clear a table's hash part, hence the look at its fields below.

// maxArgsKept bounds the array a kept table may hold on to.
const maxArgsKept = 64

// ltable are the indexes of the fields of gopher-lua's LTable that
// argTablesReusable reads: the array, and the three that exist once the
// table has had a hash part.
var ltable = func() (f struct{ array, dict, strdict, keys int }) {
	t := reflect.TypeFor[lua.LTable]()
	for _, fd := range []struct {
		name string
		kind reflect.Kind
		idx  *int
	}{
		{"array", reflect.Slice, &f.array},
		{"dict", reflect.Map, &f.dict},
		{"strdict", reflect.Map, &f.strdict},
		{"keys", reflect.Slice, &f.keys},
	} {
		sf, ok := t.FieldByName(fd.name)
		if !ok || sf.Type.Kind() != fd.kind || len(sf.Index) != 1 {
			panic(fmt.Sprintf("script: gopher-lua's LTable has no %s field %q: see argtables.go", fd.kind, fd.name))
		}
		*fd.idx = sf.Index[0]
	}
	return f
}()

// setArgTables sets the globals KEYS and ARGV for an EVAL run.
func (v *vm) setArgTables(keys, args [][]byte) {
	keysT, argvT := v.keys, v.argv
	all := luaStrings(keys, args)
	v.keys, all = fillStrings(v.L, v.keys, keys, all)
	v.argv, _ = fillStrings(v.L, v.argv, args, all)
	if !v.argsShown || v.keys != keysT || v.argv != argvT {
		v.runGlobals.RawSetString("KEYS", v.keys)
		v.runGlobals.RawSetString("ARGV", v.argv)
		v.argsShown = true
	}
}

// hideArgTables removes KEYS and ARGV from the globals before an FCALL.
func (v *vm) hideArgTables() {
	if v.argsShown {
		v.runGlobals.RawSetString("KEYS", lua.LNil)
		v.runGlobals.RawSetString("ARGV", lua.LNil)
		v.argsShown = false
	}
}

// clearArgTables empties KEYS and ARGV after an EVAL run for the next
// one, or drops them; the globals keep them until then (or an FCALL).
func (v *vm) clearArgTables() {
	v.keys = emptyArgTable(v.keys)
	v.argv = emptyArgTable(v.argv)
}

// emptyArgTable empties t and returns it, or returns nil when t cannot be
// made as new.
func emptyArgTable(t *lua.LTable) *lua.LTable {
	if t == nil || t.Metatable != lua.LNil {
		return nil
	}
	f := reflect.ValueOf(t).Elem()
	if !f.Field(ltable.dict).IsNil() || !f.Field(ltable.strdict).IsNil() || !f.Field(ltable.keys).IsNil() ||
		f.Field(ltable.array).Cap() > maxArgsKept {
		return nil
	}
	n := f.Field(ltable.array).Len()
	for i := 1; i <= n; i++ {
		t.RawSetInt(i, lua.LNil) // Remove leaves the items in the array's spare room
	}
	for range n {
		t.Remove(-1) // the last item, whatever it holds
	}
	return t
}
