package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// The lock server of process mode (-procs with -locks mem): memlock cannot be shared
// across processes, so the coordinator hosts one memlock.Service and serves its Backend
// interface over HTTP on loopback; every worker process reaches it through a proxy of
// its own (remoteLocks below). Expiry is judged by the memlock in the coordinator, on the
// coordinator's clock, exactly as a remote lock service would.
//
// One POST per Session call, JSON in and out:
//
//	/open    {"owner","ttl_ms"}            -> {"session"}
//	/try     {"session","key"}             -> {"token"} | {"err":"held"}
//	/wait    {"session","key"}             -> {}  (long poll, ends with the request)
//	/renew   {"session","key","token"}     -> {}  | {"err":"lost"|"notowner"}
//	/release {"session","key","token"}     -> {}  | {"err":"lost"|"notowner"}
//	/close   {"session"}                   -> {}
type lockServer struct {
	svc  *memlock.Service
	ln   net.Listener
	srv  *http.Server
	done chan struct{}

	mu       sync.Mutex
	sessions map[uint64]lockclient.Session
	next     atomic.Uint64
}

type lockRequest struct {
	Session uint64 `json:"session,omitempty"`
	Owner   string `json:"owner,omitempty"`
	TTLMS   int64  `json:"ttl_ms,omitempty"`
	Key     string `json:"key,omitempty"`
	Token   uint64 `json:"token,omitempty"`
}

type lockResponse struct {
	Session uint64 `json:"session,omitempty"`
	Token   uint64 `json:"token,omitempty"`
	Err     string `json:"err,omitempty"` // held, lost, notowner, or another message
}

// startLockServer serves a fresh memlock.Service on 127.0.0.1:0.
func startLockServer() (*lockServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("lock server: %w", err)
	}
	s := &lockServer{svc: memlock.New(), ln: ln, done: make(chan struct{}), sessions: map[uint64]lockclient.Session{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /{op}", s.handle)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Addr is the host:port the workers' proxies forward to.
func (s *lockServer) Addr() string { return s.ln.Addr().String() }

func (s *lockServer) lastToken() uint64 {
	t, _ := s.svc.LastToken(context.Background()) // in memory: never fails
	return t
}

// worker is not used: in process mode each worker process connects itself (remoteLocks).
func (s *lockServer) worker(int, string) (workerLocks, error) {
	return workerLocks{}, errors.New("the lock server is for worker processes")
}

func (s *lockServer) close(context.Context) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close() // long polls still open
	}
	<-s.done
	return nil
}

func (s *lockServer) handle(w http.ResponseWriter, r *http.Request) {
	var req lockRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	var resp lockResponse
	var err error
	op := r.PathValue("op")
	if op == "open" {
		var sess lockclient.Session
		sess, err = s.svc.Open(ctx, req.Owner, time.Duration(req.TTLMS)*time.Millisecond)
		if err == nil {
			id := s.next.Add(1)
			s.mu.Lock()
			s.sessions[id] = sess
			s.mu.Unlock()
			resp.Session = id
		}
	} else {
		s.mu.Lock()
		sess := s.sessions[req.Session]
		s.mu.Unlock()
		if sess == nil {
			http.Error(w, "no such session", http.StatusNotFound)
			return
		}
		g := lockclient.Grant{Key: req.Key, Token: req.Token}
		switch op {
		case "try":
			g, err = sess.TryAcquire(ctx, req.Key)
			resp.Token = g.Token
		case "wait":
			err = sess.Wait(ctx, req.Key)
		case "renew":
			err = sess.Renew(ctx, g)
		case "release":
			err = sess.Release(ctx, g)
		case "close":
			err = sess.Close(ctx)
			s.mu.Lock()
			delete(s.sessions, req.Session)
			s.mu.Unlock()
		default:
			http.Error(w, "unknown operation", http.StatusNotFound)
			return
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, lockclient.ErrHeld):
		resp.Err = "held"
	case errors.Is(err, lockclient.ErrNotOwner):
		resp.Err = "notowner"
	case errors.Is(err, lockclient.ErrLeaseLost):
		resp.Err = "lost"
	default:
		resp.Err = err.Error()
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// remoteLocks is a worker's lockclient.Backend on the coordinator's lock server, at
// addr (the worker's proxy). Anything but an answer from the server is ErrUnavailable.
type remoteLocks struct {
	base string
	hc   *http.Client
}

func newRemoteLocks(addr string) *remoteLocks {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     30 * time.Second,
	}
	return &remoteLocks{base: "http://" + addr + "/", hc: &http.Client{Transport: tr}}
}

func (rl *remoteLocks) close() { rl.hc.CloseIdleConnections() }

func (rl *remoteLocks) call(ctx context.Context, op string, req lockRequest) (lockResponse, error) {
	var resp lockResponse
	body, _ := json.Marshal(req)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, rl.base+op, bytes.NewReader(body))
	if err != nil {
		return resp, err
	}
	hr.Header.Set("Content-Type", "application/json")
	res, err := rl.hc.Do(hr)
	if err != nil {
		return resp, fmt.Errorf("lock server: %w: %w", lockclient.ErrUnavailable, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return resp, fmt.Errorf("lock server: %w: %s", lockclient.ErrUnavailable, res.Status)
	}
	if err := json.NewDecoder(res.Body).Decode(&resp); err != nil {
		return resp, fmt.Errorf("lock server: %w: %w", lockclient.ErrUnavailable, err)
	}
	switch resp.Err {
	case "":
		return resp, nil
	case "held":
		return resp, lockclient.ErrHeld
	case "lost":
		return resp, lockclient.ErrLeaseLost
	case "notowner":
		return resp, lockclient.ErrNotOwner
	}
	return resp, fmt.Errorf("lock server: %w: %s", lockclient.ErrUnavailable, resp.Err)
}

// Open implements lockclient.Backend.
func (rl *remoteLocks) Open(ctx context.Context, owner string, ttl time.Duration) (lockclient.Session, error) {
	resp, err := rl.call(ctx, "open", lockRequest{Owner: owner, TTLMS: ttl.Milliseconds()})
	if err != nil {
		return nil, err
	}
	return &remoteSession{rl: rl, id: resp.Session}, nil
}

type remoteSession struct {
	rl *remoteLocks
	id uint64
}

func (rs *remoteSession) TryAcquire(ctx context.Context, key string) (lockclient.Grant, error) {
	resp, err := rs.rl.call(ctx, "try", lockRequest{Session: rs.id, Key: key})
	if err != nil {
		return lockclient.Grant{}, err
	}
	return lockclient.Grant{Key: key, Token: resp.Token}, nil
}

func (rs *remoteSession) Wait(ctx context.Context, key string) error {
	// Bounded, so that a long poll cut by a partition ends and is retried.
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := rs.rl.call(wctx, "wait", lockRequest{Session: rs.id, Key: key})
	if err != nil && ctx.Err() == nil && wctx.Err() != nil {
		return nil // a spurious return: the caller retries TryAcquire
	}
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func (rs *remoteSession) Renew(ctx context.Context, g lockclient.Grant) error {
	_, err := rs.rl.call(ctx, "renew", lockRequest{Session: rs.id, Key: g.Key, Token: g.Token})
	return err
}

func (rs *remoteSession) Release(ctx context.Context, g lockclient.Grant) error {
	_, err := rs.rl.call(ctx, "release", lockRequest{Session: rs.id, Key: g.Key, Token: g.Token})
	return err
}

func (rs *remoteSession) Close(ctx context.Context) error {
	_, err := rs.rl.call(ctx, "close", lockRequest{Session: rs.id})
	return err
}
