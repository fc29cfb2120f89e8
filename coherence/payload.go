package coherence

import (
	"encoding/json"
	"strconv"
	"time"
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
// A table named "#expired:schema.table" is not a table: its keys are those
// a sweep of schema.table deleted because they expired (expired.go). It is
// the first form above, so readers that do not know it fence those keys
// of a table no tier has, and report nothing.
//
// A fence payload may also carry "a", the commit-ish time of its fences
// by PostgreSQL's clock, in unix microseconds:
//
//	{"v":1,"t":"schema.table","k":[…],"a":1764621296123456}
//
// It is the earliest time any of the notification's fences can have
// committed, by what the relay knows: for each fence the later of
//   - the time the trigger logged it (the log's at column, clock_timestamp()
//     as the row was written), before that write's commit by as long as the
//     rest of its transaction took, its WAL flush included; and
//   - the start of the relay's previous drain, when that drain took all it
//     could see (it did not fill a batch): a fence committed before it would
//     have been in its snapshot, taken as its statement began.
//
// So a commit-to-push lag measured from it is never shorter than the true
// one, and it does not count a writer's own commit as the relay's delay.
// Fences logged without a time (a log or a C trigger from before the
// column, attach.go) get the time the relay took them from the log
// instead (the DELETE's statement_timestamp(), after their commit, by up
// to a relay interval plus the drain).
//
// And "d", the drain that published it (the relay's id and a count):
//
//	{"v":1,"t":"schema.table","k":[…],"a":1764621296123456,"d":"5f0c…:812"}
//
// The relay's own instance has applied the fences already, as soon as the
// drain took them (Relay.local); "d" makes every notification of a drain
// unique, so that instance knows the one coming back as its own echo and
// skips it instead of fencing the same keys twice.
//
// And "s", on the last fence notification of a drain that took all it
// could see: when the relay sent that drain, in unix microseconds by its
// clock. Every fence committed before then has been published once that
// notification is, so an instance whose own write returned before then
// knows its fence has come back (Fences.AwaitOwnWrite).
//
// All three are additions within version 1, not a new version: they only inform
// (CLIENT TRACKING's lag, backends.Outside.At), and every reader so far,
// before "v" and since, decodes the payload with encoding/json into a
// struct, which skips a field it does not know (TestPayloadTime); a reader
// that meets a payload without it (an older relay) has no time.
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
	At      int64             `json:"a"` // unix microseconds, 0: unknown
	Drain   string            `json:"d"` // the drain that published it, "" for older relays
	Through int64             `json:"s"` // unix microseconds by the relay's clock, 0: none
}

// at is the payload's time, zero when it has none.
func (p payload) at() time.Time {
	if p.At <= 0 {
		return time.Time{}
	}
	return time.UnixMicro(p.At)
}

// payloadHead opens a fence payload of table, taken from the log at at
// (unix microseconds; 0: left out) by drain (""; left out), to be closed
// by "}" (a table fence) or by `,"k":[keys…]}`.
func payloadHead(table string, at int64, drain string) string {
	name, _ := json.Marshal(table)
	head := `{"v":` + strconv.Itoa(PayloadVersion) + `,"t":` + string(name)
	if at > 0 {
		head += `,"a":` + strconv.FormatInt(at, 10)
	}
	if drain != "" {
		d, _ := json.Marshal(drain)
		head += `,"d":` + string(d)
	}
	return head
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
