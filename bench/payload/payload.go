// Package payload makes the values `pgcache bench` writes and checks the
// ones it reads back: the UserData record of the published comparison, as protobuf bytes
// (vtprotobuf, pooled structs) for kv engines and as a JSON object of the
// same fields for table engines.
//
// Record i is a pure function of i and its key, so a value read back can
// be checked without keeping what was written.
package payload

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pgcache/pgcache/bench/proto/benchpb"
)

// createdBase is record 0's created_at; record i was created i seconds later.
var createdBase = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// tagSets are the tags records cycle through: a few short strings, like
// the flags of a user profile.
var tagSets = [][]string{
	{"bench", "free"},
	{"bench", "pro", "beta"},
	{"bench", "team"},
	{"bench", "pro"},
}

// fill writes record i into u.
func fill(u *benchpb.UserData, i int, id string) {
	n := strconv.Itoa(i)
	u.Id = id
	u.Name = "user-" + n
	u.Email = "user" + n + "@example.com"
	u.Age = int32(18 + i%60)
	u.CreatedAt = createdBase.Add(time.Duration(i) * time.Second).UnixMilli()
	u.Tags = tagSets[i%len(tagSets)]
	u.Active = i%3 != 0
	u.Score = float64(i%1000) / 10
}

// Proto returns record i as protobuf bytes. The struct comes from
// vtprotobuf's pool and goes back to it, so making a payload allocates
// only the returned bytes.
func Proto(i int, id string) []byte {
	u := benchpb.UserDataFromVTPool()
	fill(u, i, id)
	b, err := u.MarshalVT()
	u.Tags = nil // shared with tagSets: ResetVT must not reuse it as scratch
	u.ReturnToVTPool()
	if err != nil {
		panic("payload: marshal: " + err.Error()) // cannot fail for a filled struct
	}
	return b
}

// row is a table engine's columns, as json_populate_record reads them and
// row_to_json writes them.
type row struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Email     string   `json:"email"`
	Age       int32    `json:"age"`
	CreatedAt string   `json:"created_at"`
	Tags      []string `json:"tags"`
	Active    bool     `json:"active"`
	Score     float64  `json:"score"`
}

// JSON returns record i as the JSON object of a table engine's columns.
func JSON(i int, id string) []byte {
	u := benchpb.UserDataFromVTPool()
	fill(u, i, id)
	r := row{
		ID: u.Id, Name: u.Name, Email: u.Email, Age: u.Age,
		CreatedAt: time.UnixMilli(u.CreatedAt).UTC().Format(time.RFC3339Nano),
		Tags:      u.Tags, Active: u.Active, Score: u.Score,
	}
	u.Tags = nil
	u.ReturnToVTPool()
	b, err := json.Marshal(r)
	if err != nil {
		panic("payload: json: " + err.Error()) // cannot fail for strings and numbers
	}
	return b
}

// CheckProto checks that b is record i under id, decoding it into a
// pooled struct.
func CheckProto(b []byte, i int, id string) error {
	got := benchpb.UserDataFromVTPool()
	defer got.ReturnToVTPool()
	if err := got.UnmarshalVT(b); err != nil {
		return fmt.Errorf("value of %s is not a UserData: %w", id, err)
	}
	want := &benchpb.UserData{}
	fill(want, i, id)
	if !got.EqualVT(want) {
		return fmt.Errorf("value of %s is %v, want %v", id, got, want)
	}
	return nil
}

// CheckJSON checks that b is the row of record i under id: the fields a
// row round trip keeps exactly (the key, name, email, age). The key comes
// back as a JSON string (uuid) or number (bigint), its text either way.
func CheckJSON(b []byte, i int, id string) error {
	var got struct {
		ID    json.RawMessage `json:"id"`
		Name  string          `json:"name"`
		Email string          `json:"email"`
		Age   int32           `json:"age"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		return fmt.Errorf("value of %s is not a JSON row: %w", id, err)
	}
	want := &benchpb.UserData{}
	fill(want, i, id)
	if strings.Trim(string(got.ID), `"`) != id || got.Name != want.Name || got.Email != want.Email || got.Age != want.Age {
		return fmt.Errorf("row of %s is %s, want id %s, name %s, email %s, age %d", id, b, id, want.Name, want.Email, want.Age)
	}
	return nil
}
