package failover

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// runAs is the unprivileged user a server runs as when the harness runs as root
// (PostgreSQL refuses to run as root); the zero value means the current user.
type runAs struct {
	uid, gid uint32
	set      bool
}

// lookupRunAs returns name's ids when the process runs as root, else the zero runAs.
func lookupRunAs(name string) (runAs, error) {
	if os.Geteuid() != 0 {
		return runAs{}, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return runAs{}, fmt.Errorf("failover: running as root needs the user %q to run the server as: %w", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return runAs{}, fmt.Errorf("failover: user %q: %w", name, err)
	}
	return runAs{uid: uint32(uid), gid: uint32(gid), set: true}, nil
}

// mkdir creates dir (and its parents) owned by the user.
func (r runAs) mkdir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if r.set {
		return os.Chown(dir, int(r.uid), int(r.gid))
	}
	return nil
}

// attr puts the command in its own process group, run as the user.
func (r runAs) attr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if r.set {
		a.Credential = &syscall.Credential{Uid: r.uid, Gid: r.gid, NoSetGroups: true}
	}
	return a
}

// run runs a command to completion as the user, its output appended to logFile; the
// error carries the log's tail.
func (r runAs) run(ctx context.Context, logFile, name string, args ...string) error {
	out, err := os.OpenFile(logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = filepath.Dir(logFile)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = r.attr()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("failover: %s: %w%s", filepath.Base(name), err, logTail(logFile))
	}
	return nil
}

// server is a running database server process (and, through its process group, every
// process it forks).
type server struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	log  string
}

// start starts a long-running server as the user in its own process group.
func (r runAs) start(logFile, name string, args ...string) (*server, error) {
	out, err := os.OpenFile(logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	if r.set {
		_ = out.Chown(int(r.uid), int(r.gid))
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = filepath.Dir(logFile)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = r.attr()
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("failover: starting %s: %w", filepath.Base(name), err)
	}
	s := &server{cmd: cmd, done: make(chan struct{}), log: logFile}
	go func() {
		_ = cmd.Wait()
		out.Close()
		close(s.done)
	}()
	return s, nil
}

// exited reports whether the server process is gone.
func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL to the server's whole process group (a crash: nothing is flushed,
// no connection is closed cleanly, a walsender sends nothing more) and waits until the
// server process has exited.
func (s *server) kill() error {
	if s == nil || s.exited() {
		return nil
	}
	if err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("failover: kill: %w", err)
	}
	select {
	case <-s.done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("failover: pid %d still running 30s after SIGKILL", s.cmd.Process.Pid)
	}
}

// logTail returns the last lines of a log file, for error messages.
func logTail(file string) string {
	b, err := os.ReadFile(file)
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return "\n--- " + file + ":\n" + string(b)
}

// waitFor polls f every 20ms until it returns nil, ctx ends or the server exits; the
// error is f's last.
func waitFor(ctx context.Context, what string, s *server, f func(context.Context) error) error {
	var last error
	for {
		if s != nil && s.exited() {
			return fmt.Errorf("failover: %s: the server exited%s", what, logTail(s.log))
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		last = f(pctx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			logs := ""
			if s != nil {
				logs = logTail(s.log)
			}
			return fmt.Errorf("failover: %s: %w (last error: %v)%s", what, ctx.Err(), last, logs)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop asks the server to shut down cleanly (SIGTERM to the server process only) and
// waits for it.
func (s *server) stop() error {
	if s == nil || s.exited() {
		return nil
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("failover: stop: %w", err)
	}
	select {
	case <-s.done:
		return nil
	case <-time.After(60 * time.Second):
		return s.kill()
	}
}
