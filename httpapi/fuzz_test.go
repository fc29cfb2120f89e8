package httpapi

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pgcache/pgcache/internal/auth"
)

// FuzzHTTP serves any bytes, as one connection's worth of requests, with
// the data API's fasthttp server and handlers, over memory routes. It never
// panics, and what it writes back is HTTP/1.1 responses with the statuses
// the API documents, errors on one line. With a bearer token configured,
// no request that does not carry it is answered 2xx.
func FuzzHTTP(f *testing.F) {
	for _, seed := range []string{
		"GET /mem/get?id=a HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /mem/set?id=a&ttl=10 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
		"PUT /small/set?id=b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"GET /mem/mget?id=a&id=b&id=a HTTP/1.1\r\nHost: x\r\n\r\nDELETE /mem/del?id=a HTTP/1.1\r\nHost: x\r\n\r\n",
		"HEAD /mem/get?id=a HTTP/1.1\r\nHost: x\r\n\r\nGET /nosuch/get?id=a HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /mem/get?id=a HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer fuzz-token\r\n\r\n",
		"POST /mem/set?id=s HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"POST /mem/set?id=s HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 99999999\r\n\r\n",
		"GET /mem/get?id=" + strings.Repeat("k", 3000) + " HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /%2e%2e/mem/get?id=%00 HTTP/1.0\r\n\r\n",
		"POST /mem/del HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
		"\x00\xff garbage\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	cfg := overDefaults(Config{MaxBodyBytes: 1 << 10, ReadBufferSize: 2 << 10, ReadTimeout: time.Second, WriteTimeout: time.Second})
	routes := []testRoute{{name: "mem"}, {name: "small", maxValue: 8}}
	open := NewData(newRouter(f, nil, routes...), cfg, nil, nil)
	guarded := NewData(newRouter(f, nil, routes...), cfg, nil, nil)
	guarded.SetUsers(auth.New("", nil, "fuzz-token"))
	f.Fuzz(func(t *testing.T, in []byte) {
		methods := requestMethods(in, cfg.MaxBodyBytes)
		for _, d := range []*Data{open, guarded} {
			c := &fuzzConn{r: bytes.NewReader(in)}
			d.srv.ServeConn(c) // an error is a request it could not read, answered
			out := bufio.NewReader(bytes.NewReader(c.w.Bytes()))
			for n := 0; ; {
				// A HEAD's answer has no body: the next one starts at once.
				req := &http.Request{Method: "GET"}
				if n < len(methods) {
					req.Method = methods[n]
				}
				if _, err := out.Peek(1); err != nil {
					break // all read
				}
				resp, err := http.ReadResponse(out, req)
				if err != nil {
					t.Fatalf("response %d is not HTTP (%v): %.300q", n, err, c.w.Bytes())
				}
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode == http.StatusContinue {
					continue // then the final answer (fasthttp sends 100 before looking at Content-Length)
				}
				n++
				if resp.Close {
					// The last answer. One to a HEAD that fasthttp could
					// not read carries a body all the same: ignore it.
					out.Reset(bytes.NewReader(nil))
				}
				switch {
				case !documented[resp.StatusCode]:
					t.Fatalf("status %d %q for %.300q", resp.StatusCode, body, in)
				case resp.StatusCode >= 400 && len(body) > 0 && (bytes.Count(body, []byte("\n")) != 1 || body[len(body)-1] != '\n'):
					t.Fatalf("an error body that is not one line: %q", body)
				case d == guarded && resp.StatusCode < 300 && !bytes.Contains(bytes.ToLower(in), []byte("bearer")):
					t.Fatalf("answered %d without the token: %.300q", resp.StatusCode, in)
				}
			}
		}
	})
}

// requestMethods lists the methods of the requests in, as the server's
// parser reads them, up to the first it cannot read.
func requestMethods(in []byte, maxBody int64) []string {
	br := bufio.NewReader(bytes.NewReader(in))
	var methods []string
	for {
		var req fasthttp.Request
		if err := req.ReadLimitBody(br, int(maxBody)); err != nil {
			return methods
		}
		methods = append(methods, string(req.Header.Method()))
	}
}

// documented are the statuses the data API answers with: the actions',
// and fasthttp's for requests it cannot read (handleError).
var documented = map[int]bool{
	200: true, 204: true, 400: true, 401: true, 404: true, 405: true,
	408: true, 413: true, 431: true, 501: true,
}

// fuzzConn is a connection whose client sent in, and closed.
type fuzzConn struct {
	r *bytes.Reader
	w bytes.Buffer
}

func (c *fuzzConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *fuzzConn) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c *fuzzConn) Close() error                { return nil }
func (c *fuzzConn) LocalAddr() net.Addr         { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080} }
func (c *fuzzConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}
}
func (c *fuzzConn) SetDeadline(time.Time) error      { return nil }
func (c *fuzzConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fuzzConn) SetWriteDeadline(time.Time) error { return nil }
