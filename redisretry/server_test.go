package redisretry

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is a real redis-server on a loopback port, which a test
// starts, stops, pauses and restarts empty.
type redisServer struct {
	t    testing.TB
	port int
	cmd  *exec.Cmd
}

// startRedis starts a redis-server with nothing saved to disk, on a free
// loopback port, and stops it when the test ends. Without redis-server
// installed the test is skipped, unless REDISRETRY_REQUIRE_SERVER is set
// (as .ci/run sets it): then it fails.
func startRedis(t testing.TB) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("REDISRETRY_REQUIRE_SERVER") != "" {
			t.Fatalf("redis-server is not installed (apt-get install redis-server): %v", err)
		}
		t.Skip("redis-server is not installed (apt-get install redis-server); .ci/run installs it")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s := &redisServer{t: t, port: port}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

func (s *redisServer) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// start starts the server, empty, and waits until it answers.
func (s *redisServer) start() {
	s.t.Helper()
	s.cmd = exec.Command("redis-server", "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.t.TempDir())
	dieWithParent(s.cmd)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("starting redis-server: %v", err)
	}
	c := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c.Ping(context.Background()).Err() == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on port %d did not answer within 10 s", s.port)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop stops the server, if it runs.
func (s *redisServer) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a paused server must run to stop
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart starts the server again, empty, on the same port.
func (s *redisServer) Restart() {
	s.Stop()
	s.start()
}

// Pause stops the server's process (SIGSTOP): connections stay open and
// nothing answers. Resume continues it.
func (s *redisServer) Pause()  { s.signal(syscall.SIGSTOP) }
func (s *redisServer) Resume() { s.signal(syscall.SIGCONT) }

func (s *redisServer) signal(sig syscall.Signal) {
	s.t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("signal %v: %v", sig, err)
	}
}

// client returns a client of the server that applies contexts' deadlines
// to its connections, closed when the test ends. The tests that need a
// call to fail soon give it a context with a deadline; its own timeouts
// are long, so that a machine that stalls for a moment (two shared cores,
// the race detector) fails no test.
func (s *redisServer) client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr:                  s.addr(),
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialTimeout:           5 * time.Second,
		ReadTimeout:           10 * time.Second,
		WriteTimeout:          10 * time.Second,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// commandCalls returns how many times Redis ran command (INFO
// commandstats), e.g. "evalsha".
func commandCalls(t testing.TB, c *redis.Client, command string) int64 {
	t.Helper()
	_, calls := commandUsec(t, c, command)
	return calls
}

// commandUsec returns the microseconds Redis spent running command, and
// how many times it ran it (INFO commandstats).
func commandUsec(t testing.TB, c *redis.Client, command string) (usec, calls int64) {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	key := "cmdstat_" + command + ":"
	if i := strings.Index(info, key); i >= 0 {
		_, _ = fmt.Sscanf(info[i+len(key):], "calls=%d,usec=%d", &calls, &usec)
	}
	return usec, calls
}
