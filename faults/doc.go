// Package faults attacks a running pgcache with real servers and hostile
// clients, and checks that it stays up and loses nothing it acknowledged.
//
// The cases are tests (go test ./faults/, or `make test-faults`, which CI
// runs): PostgreSQL restarted, crashed, its LISTEN connection killed or
// left half-open, its NOTIFY queue full; Valkey killed and restarted;
// 10,000 clients, slowloris clients, clients that never read, malformed
// RESP and HTTP; SIGTERM, SIGHUP and SIGKILL of the pgcache binary. Each
// asserts what pgcache must do and logs what it measured on lines that
// start with "figure:"; docs/reliability.md lists them, one line a case.
//
// The package itself holds what the tests need that is more than a
// helper: Link, a TCP relay that can stop forwarding without closing.
package faults
