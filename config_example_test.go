package retry_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/retrykit/retry"
)

// Build the strategy the deployment configures, once, and share it. Here
// the settings come from a map through FromEnvironmentLookup, so that the
// output does not depend on the machine; FromEnvironment reads the same
// variables from the process environment.
func ExampleFromEnvironment() {
	env := map[string]string{
		"AWS_RETRY_MODE":   "adaptive",
		"AWS_MAX_ATTEMPTS": "5",
	}
	lookup := func(key string) (string, bool) { v, ok := env[key]; return v, ok }

	s, err := retry.FromEnvironmentLookup(lookup)
	if err != nil {
		fmt.Println(err)
		return
	}
	a := s.(*retry.Adaptive)
	fmt.Printf("%T, %d attempts\n", s, a.MaxAttempts())

	// Options given in code win over the environment.
	s, err = retry.FromEnvironmentLookup(lookup, retry.WithMaxAttempts(2))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%T, %d attempts\n", s, s.(*retry.Adaptive).MaxAttempts())

	// A bad value is an error that names where it came from.
	env["AWS_RETRY_MODE"] = "fast"
	_, err = retry.FromEnvironmentLookup(lookup)
	fmt.Println(errors.Is(err, retry.ErrInvalidConfig))
	fmt.Println(err)
	// Output:
	// *retry.Adaptive, 5 attempts
	// *retry.Adaptive, 2 attempts
	// true
	// retry: invalid configuration: AWS_RETRY_MODE = "fast", want standard, adaptive or legacy (in any case)
}

// The shared config file's profiles hold retry settings too; the
// environment wins over the file.
func ExampleFromEnvironmentLookup() {
	dir, err := os.MkdirTemp("", "retrykit-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	config := `[default]
retry_mode = adaptive

[profile batch]
retry_mode = legacy
max_attempts = 10
`
	path := filepath.Join(dir, "config")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		fmt.Println(err)
		return
	}

	for _, env := range []map[string]string{
		{"AWS_CONFIG_FILE": path},
		{"AWS_CONFIG_FILE": path, "AWS_PROFILE": "batch"},
		{"AWS_CONFIG_FILE": path, "AWS_PROFILE": "batch", "AWS_MAX_ATTEMPTS": "4"},
	} {
		s, err := retry.FromEnvironmentLookup(func(key string) (string, bool) {
			v, ok := env[key]
			return v, ok
		})
		if err != nil {
			fmt.Println(err)
			continue
		}
		switch s := s.(type) {
		case *retry.Standard:
			fmt.Println("standard strategy,", s.MaxAttempts(), "attempts")
		case *retry.Adaptive:
			fmt.Println("adaptive strategy,", s.MaxAttempts(), "attempts")
		}
	}
	// Output:
	// adaptive strategy, 3 attempts
	// standard strategy, 10 attempts
	// standard strategy, 4 attempts
}
