// Package proxy is pgcache's RESP front: a Redis-compatible server whose
// keys live in the routes of a route.Router.
//
// Each client gets a goroutine running one loop (conn.go): read what has
// arrived, parse every complete request in it, run them in order with the
// route table acquired once for the batch, append the replies to one
// buffer, and write it with one call. Pipelining falls out of that.
//
// The parser (reader.go, inline.go) is pgcache's own rather than redcon's:
// it checks every length a client sends before it uses one, so a hostile
// frame costs an error reply rather than a panic or an unbounded buffer,
// and its arguments are slices of the read buffer, so the steady state
// allocates nothing. Replies are written with redcon's append helpers, plus
// the few RESP3 types (reply.go) a client gets after HELLO 3.
//
// Memory per connection is bounded by Config: a request by MaxQueryBytes
// (and each argument by MaxBulkBytes, each line by MaxInlineBytes), the
// replies a client has not read by OutputBufferLimit. A connection's
// buffers shrink back to 32KiB once a large request or reply is done.
//
// Commands live in a table (commands.go) of name, handler, kind and arity;
// the handlers are grouped by family (cmd_strings.go, cmd_keys.go,
// cmd_server.go, cmd_command.go, cmd_info.go) and answer with Redis 7's
// error texts (errors.go).
package proxy
