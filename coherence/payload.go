package coherence

import (
	"encoding/json"
	"strconv"
)

// PayloadVersion is the version of the fence payload this build publishes
// (as "v") and the newest it reads.
//
// Version 1, the only one so far, is what the relay publishes on Channel:
//
//	{"v":1,"t":"schema.table","k":[key, …]}   a fence on each key (as logged: fence.KeyOf reads them)
//	{"v":1,"t":"schema.table"}                a fence on the whole table
//	{"v":1,"c":"token"}                       a canary: every fence logged before it was published before it
//
// A payload without "v" is version 1: relays from before the field
// published it so.
//
// A reader meets a version newer than its own while instances of two
// builds share a database: the relay is whichever instance holds the relay
// lock. It cannot know what such a payload invalidates, so it fences its
// whole cache; coherence holds, and only the older reader's hit ratio
// suffers until it is upgraded. A canary is read whatever the version: the
// fences before it were received, if only as whole-cache fences. So a later
// version may add fields and change "t" and "k", but keeps "v" and "c" as
// they are; and since builds from before "v" ignore it, it must not give
// "t" or "k" a meaning those builds would misread (a new kind of fence
// needs a new field, which they take for a bad payload and fence all).
const PayloadVersion = 1

// payload is a notification on Channel: a table and keys, a table alone,
// or a canary.
type payload struct {
	Version int               `json:"v"`
	Table   string            `json:"t"`
	Keys    []json.RawMessage `json:"k"`
	Canary  string            `json:"c"`
}

// payloadHead opens a fence payload of table, to be closed by "}" (a
// table fence) or by `,"k":[keys…]}`.
func payloadHead(table string) string {
	name, _ := json.Marshal(table)
	return `{"v":` + strconv.Itoa(PayloadVersion) + `,"t":` + string(name)
}

// canaryPayload is the payload of a canary.
func canaryPayload(token string) string {
	tok, _ := json.Marshal(token)
	return `{"v":` + strconv.Itoa(PayloadVersion) + `,"c":` + string(tok) + `}`
}

// readPayload decodes a notification. known is false for a version newer
// than PayloadVersion: its fences must be taken as a whole-cache fence.
func readPayload(s string) (p payload, known bool, err error) {
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return p, false, err
	}
	return p, p.Version <= PayloadVersion, nil
}
