package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgcache/pgcache/backends"
	"github.com/pgcache/pgcache/backends/coll"
	"github.com/pgcache/pgcache/backends/snapshot"
)

// Do runs op on its keys. The commands that have statements of their own
// (collnative.go) run as those; every other one runs on the keys' values
// read whole: a read from one snapshot of the table, a write as an atomic
// run (atomic.go), which locks the keys and writes back what Run changed.
func (s *KV) Do(ctx context.Context, keys []string, op backends.Op) error {
	backends.ClearMarks(op)
	if done, err := s.native(ctx, keys, op); done {
		return err
	}
	if op.Writes() == backends.ReadOnly {
		return s.readRun(ctx, keys, op)
	}
	return s.Atomically(ctx, keys, func(tx backends.Backend) error {
		return tx.Do(ctx, keys, op)
	})
}

// LoadColl reads key whole with its remaining lifetime, for an L1 tier
// (backends.CollLoader): a collection of at most max members, or its type
// alone when it has more.
func (s *KV) LoadColl(ctx context.Context, key string, max int) (backends.Expiring, error) {
	k, err := s.key.param(key)
	if err != nil {
		return backends.Expiring{}, err
	}
	var state []backends.Expiring
	err = s.do(ctx, "load", func(ctx context.Context) error {
		state, err = s.loadRows(ctx, s.pool, []string{key}, s.coll.loadOne, k, max+1)
		return err
	})
	if err != nil {
		return backends.Expiring{}, err
	}
	e := state[0]
	if e.Coll != nil && e.Coll.Len() > max {
		e.Coll = nil
	}
	return e, nil
}

// readRun runs a read-only op on its keys as one statement reads them.
// The statement reads each key once (unique); the Op runs on keys as they
// came, which its View indexes (SDIFF b a is not SDIFF a b).
func (s *KV) readRun(ctx context.Context, keys []string, op backends.Op) error {
	unique := snapshot.Unique(keys)
	params := make([]any, len(unique))
	for i, k := range unique {
		p, err := s.key.param(k)
		if err != nil {
			return opError(ctx, s.where, op.Name(), err)
		}
		params[i] = p
	}
	arr := s.key.array(params)
	var state []backends.Expiring
	start := time.Now()
	err := s.do(ctx, op.Name(), func(ctx context.Context) error {
		var err error
		state, err = s.load(ctx, s.pool, s.coll.load, arr, unique)
		return err
	})
	if err != nil {
		return err
	}
	_, err = snapshot.Run(s.d.enc, unique, state, start, func(tx backends.Backend) error {
		return tx.Do(ctx, keys, op)
	})
	return err
}

// load reads the live rows of keys (as Unique returns them) with sql
// (loadSQL, locked or not), collections whole: one Expiring per key.
func (s *KV) load(ctx context.Context, q querier, sql string, params any, keys []string) ([]backends.Expiring, error) {
	return s.loadRows(ctx, q, keys, sql, params)
}

// loadRows is load with sql's arguments.
func (s *KV) loadRows(ctx context.Context, q querier, keys []string, sql string, args ...any) ([]backends.Expiring, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	found := make(map[string]backends.Expiring, len(keys))
	var (
		k         string
		kind      byte
		val       []byte
		us        int64
		member    []byte
		score     *float64
		itemValue []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&k, &kind, &val, &us, &member, &score, &itemValue}, func() error {
		e, seen := found[k]
		if !seen {
			e = backends.Expiring{TTL: backends.TTLPersistent}
			if us >= 0 {
				e.TTL = time.Duration(us) * time.Microsecond
			}
			if kind == kindString {
				e.Val = value(val)
			} else {
				e.Type = typeOf(kind)
				e.Coll = coll.New(e.Type)
			}
		}
		if e.Coll != nil && member != nil {
			m := coll.Member{Member: member, Value: itemValue}
			if score != nil {
				m.Score = *score
			}
			coll.Add(e.Coll, m)
		}
		found[k] = e
		return nil
	})
	if err != nil {
		return nil, err
	}
	state := make([]backends.Expiring, len(keys))
	for i, k := range keys {
		e := found[k]
		if e.Coll != nil && e.Coll.Len() == 0 { // a row without items: no collection
			e = backends.Expiring{}
		}
		state[i] = e
	}
	return state, nil
}

// queueCollWrite queues the statements that make w's key hold w.Coll, in a
// transaction that read (and locked) the key at the load. createAt is the
// index of the batch's result that says whether a new row was created
// (createRowSQL), -1 when none is queued.
func (s *KV) queueCollWrite(b *pgx.Batch, k any, w snapshot.Write) (createAt int, err error) {
	createAt = -1
	kind := kindOf(w.Coll.Type())
	us := int64(-1)
	if w.TTL != backends.TTLPersistent {
		us = w.TTL.Microseconds()
	}
	switch {
	case !w.Existed:
		createAt = b.Len()
		b.Queue(s.coll.createRow, k, kind, us)
	default:
		b.Queue(s.coll.updateRow, k, kind, us, w.TTLKept)
	}
	if w.TTLOnly {
		return createAt, nil
	}
	if w.Journal == nil || w.Journal.All {
		if w.Existed {
			b.Queue(s.coll.delAll, k)
		}
		members, scores, values := rowsOf(w.Coll)
		b.Queue(s.coll.putItems, k, members, scores, values)
		return createAt, nil
	}
	var gone, members, values [][]byte
	var scores []*float64
	if hash, ok := w.Coll.(*coll.Hash); ok {
		// In the hash's order, so new fields are numbered as they came.
		coll.Each(hash, func(m coll.Member) bool {
			if _, touched := w.Journal.Members[string(m.Member)]; touched {
				members, values = append(members, m.Member), append(values, m.Value)
			}
			return true
		})
		for m := range w.Journal.Members {
			if _, ok := hash.Get(m); !ok {
				gone = append(gone, []byte(m))
			}
		}
	} else {
		for m := range w.Journal.Members {
			it, ok := coll.Lookup(w.Coll, m)
			if !ok {
				gone = append(gone, []byte(m))
				continue
			}
			members = append(members, it.Member)
			scores = append(scores, scoreOf(w.Coll, it, 0))
			values = append(values, it.Value)
		}
	}
	if len(gone) > 0 {
		b.Queue(s.coll.delItems, k, gone)
	}
	switch {
	case len(members) == 0:
	case scores == nil:
		b.Queue(s.coll.putFields, k, members, values)
	default:
		b.Queue(s.coll.putItems, k, members, scores, values)
	}
	return createAt, nil
}

// rowsOf is a collection's items as putItemsSQL's arrays; a list's
// members are its positions from 0.
func rowsOf(v backends.Value) (members [][]byte, scores []*float64, values [][]byte) {
	n := v.Len()
	members, scores, values = make([][]byte, 0, n), make([]*float64, 0, n), make([][]byte, 0, n)
	i := 0
	coll.Each(v, func(m coll.Member) bool {
		if v.Type() == backends.TypeList {
			m.Member = listPosition(int64(i))
		}
		members = append(members, m.Member)
		scores = append(scores, scoreOf(v, m, i))
		values = append(values, m.Value)
		i++
		return true
	})
	return members, scores, values
}

// scoreOf is the score column of the i-th member of v: a sorted set's
// score, a hash field's number in its sequence (from 1), NULL for the
// other types.
func scoreOf(v backends.Value, m coll.Member, i int) *float64 {
	switch v.Type() {
	case backends.TypeZSet:
		return &m.Score
	case backends.TypeHash:
		seq := float64(i + 1)
		return &seq
	}
	return nil
}

// listPosition is a list element's member: its position, big-endian, with
// the sign bit flipped so that bytea order is position order.
func listPosition(pos int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(pos)^(1<<63))
}

// errNotNative says an Op has no statement of its own here.
var errNotNative = errors.New("no native statement")

var _ backends.CollLoader = (*KV)(nil)
