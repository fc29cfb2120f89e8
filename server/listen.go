package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/pgcache/pgcache/conf"
	"github.com/pgcache/pgcache/internal/certs"
)

// front is one listener and what serves it.
type front struct {
	name, addr string
	tls        bool
	serve      func(net.Listener) error
}

// Start listens on every configured address and serves in the background.
// An address with port 0 gets a free port: Addr tells which. Listeners
// outlive reloads: their addresses cannot change without a restart.
func (s *Server) Start() error {
	s.gen.Load().coords.start()
	cfg := s.Config()
	fronts := []front{
		{"resp", cfg.Listen.RESP, cfg.TLS.Serves(conf.FrontRESP), s.resp.Serve},
		{"resp_unix", cfg.Listen.RESPUnix, false, s.resp.Serve},
		{"http", cfg.Listen.HTTP, cfg.TLS.Serves(conf.FrontHTTP), s.data.Serve},
		{"admin", cfg.Listen.Admin, cfg.TLS.Serves(conf.FrontAdmin), s.admin.Serve},
	}
	for _, f := range fronts {
		if f.addr == "" {
			continue
		}
		ln, err := s.listen(f, cfg)
		if err != nil {
			s.closeListeners()
			return fmt.Errorf("listen.%s: %w", f.name, err)
		}
		s.mu.Lock()
		s.listeners[f.name] = ln
		s.mu.Unlock()
	}
	for _, f := range fronts {
		ln := s.listener(f.name)
		if ln == nil {
			continue
		}
		s.log.Info("listening", zap.String("front", f.name), zap.String("addr", ln.Addr().String()), zap.Bool("tls", f.tls))
		s.serving.Add(1)
		go func() {
			defer s.serving.Done()
			if err := f.serve(ln); err != nil {
				s.serveErr <- fmt.Errorf("%s: %w", f.name, err)
			}
		}()
	}
	return nil
}

func (s *Server) listen(f front, cfg *conf.Config) (net.Listener, error) {
	if f.name == "resp_unix" {
		return listenUnix(f.addr, fs.FileMode(cfg.Listen.RESPUnixMode))
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", f.addr)
	if err != nil {
		return nil, err
	}
	if f.tls {
		// The handshake runs on the connection's first read, in its own
		// goroutine, so a client that stalls it holds no accept loop.
		ln = tls.NewListener(ln, s.tls.Config())
	}
	return ln, nil
}

// listenUnix creates the socket at path with the given mode. A socket file
// left by a process that was killed is replaced; one a live server answers
// on, or a file that is not a socket, is an error. Closing the listener
// removes the file.
//
// The socket is created with the process's umask and then given mode:
// under systemd (UMask=0077) no one else can connect in between.
func listenUnix(path string, mode fs.FileMode) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: another server is listening on it", path)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, mode); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

func (s *Server) listener(name string) net.Listener {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listeners[name]
}

func (s *Server) closeListeners() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, ln := range s.listeners {
		ln.Close()
		delete(s.listeners, name)
	}
}

// loadCerts reads the certificate files of cfg, nil when TLS is off.
func loadCerts(cfg *conf.Config) (*tls.Config, error) {
	if !cfg.TLS.On() {
		return nil, nil
	}
	return certs.Load(certs.Files{CertFile: cfg.TLS.CertFile, KeyFile: cfg.TLS.KeyFile, ClientCAFile: cfg.TLS.ClientCAFile})
}
