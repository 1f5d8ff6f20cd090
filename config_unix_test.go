//go:build unix

package retry_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
)

// TestFromEnvironmentFIFO: AWS_CONFIG_FILE naming a named pipe is refused
// at once. Reading it would block until something writes to it.
func TestFromEnvironmentFIFO(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config")
	require.NoError(t, syscall.Mkfifo(path, 0o600))

	// The pipe is held open for writing, so that a FromEnvironmentLookup that
	// opens and reads it blocks in the read, and closing it ends that read
	// with EOF: the test then fails instead of hanging. The timer only
	// bounds how long a broken FromEnvironmentLookup can block.
	w, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	timer := time.AfterFunc(10*time.Second, func() { w.Close() })
	defer func() {
		if timer.Stop() {
			w.Close()
		}
	}()

	s, err := retry.FromEnvironmentLookup(mapLookup(map[string]string{"AWS_CONFIG_FILE": path}))
	require.True(t, s == nil, "strategy %#v returned with error", s)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	require.ErrorContains(t, err, path)
	require.ErrorContains(t, err, "a named pipe, want a regular file")
}
