package retry_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
)

// mapLookup returns a lookup function over env, like os.LookupEnv.
func mapLookup(env map[string]string) func(string) (string, bool) {
	return func(key string) (string, bool) {
		v, ok := env[key]
		return v, ok
	}
}

// writeConfig writes a shared config file with the given contents in a new
// temporary directory and returns its path.
func writeConfig(t testing.TB, contents string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(path, []byte(contents), 0o600))
	return path
}

// configured describes a strategy built from the environment.
type configured struct {
	Type        string // "standard" or "adaptive"
	MaxAttempts int
	Profile     string // "standard", "legacy" or "aws2026", told by the retry quota
}

// describe tells which strategy s is, from the outside: the legacy profile
// has no retry quota, and the aws2026 profile's retries cost 14 tokens
// where the standard profile's cost 5.
func describe(t *testing.T, s retry.RetryStrategy) configured {
	t.Helper()
	var c configured
	var quota *retry.TokenBucket
	switch s := s.(type) {
	case *retry.Standard:
		c.Type, c.MaxAttempts, quota = "standard", s.MaxAttempts(), s.RetryQuota()
	case *retry.Adaptive:
		c.Type, c.MaxAttempts, quota = "adaptive", s.MaxAttempts(), s.RetryQuota()
	default:
		t.Fatalf("strategy is %T, want *retry.Standard or *retry.Adaptive", s)
	}
	switch {
	case quota == nil:
		c.Profile = "legacy"
	case quota.RetryCost(retry.Classification{}) == 14:
		c.Profile = "aws2026"
	case quota.RetryCost(retry.Classification{}) == 5:
		c.Profile = "standard"
	default:
		t.Fatalf("retry cost %d matches no profile", quota.RetryCost(retry.Classification{}))
	}
	return c
}

func TestFromEnvironmentLookup(t *testing.T) {
	t.Parallel()
	const (
		fileAdaptive7 = "[default]\nretry_mode = adaptive\nmax_attempts = 7\n"
		fileProfiles  = "[default]\nretry_mode = adaptive\nmax_attempts = 7\n\n[profile dev]\nmax_attempts = 2\n\n[profile legacy]\nretry_mode = legacy\n"
	)
	tests := []struct {
		name string
		env  map[string]string
		file string // contents of AWS_CONFIG_FILE, if not ""
		opts []retry.AdaptiveOption
		want configured
	}{
		{name: "nothing set", want: configured{"standard", 3, "standard"}},
		{name: "empty file", file: "\n", want: configured{"standard", 3, "standard"}},

		// Each setting from the environment.
		{name: "env standard", env: map[string]string{"AWS_RETRY_MODE": "standard"}, want: configured{"standard", 3, "standard"}},
		{name: "env adaptive", env: map[string]string{"AWS_RETRY_MODE": "adaptive"}, want: configured{"adaptive", 3, "standard"}},
		{name: "env legacy", env: map[string]string{"AWS_RETRY_MODE": "legacy"}, want: configured{"standard", 3, "legacy"}},
		{name: "env mode in any case", env: map[string]string{"AWS_RETRY_MODE": "ADAPTIVE"}, want: configured{"adaptive", 3, "standard"}},
		{name: "env mode mixed case", env: map[string]string{"AWS_RETRY_MODE": "Legacy"}, want: configured{"standard", 3, "legacy"}},
		{name: "env max attempts", env: map[string]string{"AWS_MAX_ATTEMPTS": "5"}, want: configured{"standard", 5, "standard"}},
		{name: "env max attempts 1", env: map[string]string{"AWS_MAX_ATTEMPTS": "1"}, want: configured{"standard", 1, "standard"}},
		{name: "env max attempts with plus sign", env: map[string]string{"AWS_MAX_ATTEMPTS": "+4"}, want: configured{"standard", 4, "standard"}},
		{name: "env max attempts large", env: map[string]string{"AWS_MAX_ATTEMPTS": "1000000"}, want: configured{"standard", 1000000, "standard"}},
		{name: "empty env values are unset", env: map[string]string{"AWS_RETRY_MODE": "", "AWS_MAX_ATTEMPTS": "", "AWS_NEW_RETRIES_2026": ""}, file: fileAdaptive7, want: configured{"adaptive", 7, "standard"}},

		// AWS_NEW_RETRIES_2026.
		{name: "new retries standard", env: map[string]string{"AWS_NEW_RETRIES_2026": "true"}, want: configured{"standard", 3, "aws2026"}},
		{name: "new retries adaptive", env: map[string]string{"AWS_NEW_RETRIES_2026": "TRUE", "AWS_RETRY_MODE": "adaptive"}, want: configured{"adaptive", 3, "aws2026"}},
		{name: "new retries from file mode", env: map[string]string{"AWS_NEW_RETRIES_2026": "True"}, file: fileAdaptive7, want: configured{"adaptive", 7, "aws2026"}},
		{name: "new retries leave legacy alone", env: map[string]string{"AWS_NEW_RETRIES_2026": "true", "AWS_RETRY_MODE": "legacy"}, want: configured{"standard", 3, "legacy"}},
		{name: "new retries false", env: map[string]string{"AWS_NEW_RETRIES_2026": "FALSE", "AWS_RETRY_MODE": "adaptive"}, want: configured{"adaptive", 3, "standard"}},

		// The file.
		{name: "file", file: fileAdaptive7, want: configured{"adaptive", 7, "standard"}},
		{name: "file profile default", env: map[string]string{"AWS_PROFILE": "default"}, file: fileProfiles, want: configured{"adaptive", 7, "standard"}},
		{name: "file profile dev, no inheritance from default", env: map[string]string{"AWS_PROFILE": "dev"}, file: fileProfiles, want: configured{"standard", 2, "standard"}},
		{name: "file profile legacy", env: map[string]string{"AWS_PROFILE": "legacy"}, file: fileProfiles, want: configured{"standard", 3, "legacy"}},
		{name: "file profile absent", env: map[string]string{"AWS_PROFILE": "nope"}, file: fileProfiles, want: configured{"standard", 3, "standard"}},
		{name: "file profile default section", file: "[profile default]\nmax_attempts = 4\n", want: configured{"standard", 4, "standard"}},
		{name: "file mode in any case", file: "[default]\nretry_mode = Adaptive\n", want: configured{"adaptive", 3, "standard"}},
		{name: "file inline comment", file: "[default]\nmax_attempts = 6 ; six\n", want: configured{"standard", 6, "standard"}},
		{name: "file max attempts with plus sign", file: "[default]\nmax_attempts = +5\n", want: configured{"standard", 5, "standard"}},
		{name: "file max attempts with leading zeros", file: "[default]\nmax_attempts = 007\n", want: configured{"standard", 7, "standard"}},
		{name: "file null device", env: map[string]string{"AWS_CONFIG_FILE": os.DevNull}, want: configured{"standard", 3, "standard"}},
		{name: "file bad values in other profiles are not read", file: "[profile other]\nmax_attempts = 0\nretry_mode = fast\n[default]\nmax_attempts = 2\n", want: configured{"standard", 2, "standard"}},
		{name: "file missing", env: map[string]string{"AWS_CONFIG_FILE": "/nonexistent/retrykit/config"}, want: configured{"standard", 3, "standard"}},

		// Precedence: opts > env > file > defaults.
		{name: "env mode over file", env: map[string]string{"AWS_RETRY_MODE": "standard"}, file: fileAdaptive7, want: configured{"standard", 7, "standard"}},
		{name: "env max attempts over file", env: map[string]string{"AWS_MAX_ATTEMPTS": "4"}, file: fileAdaptive7, want: configured{"adaptive", 4, "standard"}},
		{name: "env legacy over file adaptive", env: map[string]string{"AWS_RETRY_MODE": "legacy"}, file: fileAdaptive7, want: configured{"standard", 7, "legacy"}},
		{
			name: "opts max attempts over env and file",
			env:  map[string]string{"AWS_MAX_ATTEMPTS": "4"}, file: fileAdaptive7,
			opts: []retry.AdaptiveOption{retry.WithMaxAttempts(2)},
			want: configured{"adaptive", 2, "standard"},
		},
		{
			name: "opts max attempts over defaults",
			opts: []retry.AdaptiveOption{retry.WithMaxAttempts(9)},
			want: configured{"standard", 9, "standard"},
		},
		{
			name: "opts profile over env legacy",
			env:  map[string]string{"AWS_RETRY_MODE": "legacy"},
			opts: []retry.AdaptiveOption{retry.WithProfile(retry.ProfileStandard)},
			want: configured{"standard", 3, "standard"},
		},
		{
			name: "opts profile over file legacy",
			env:  map[string]string{"AWS_PROFILE": "legacy"}, file: fileProfiles,
			opts: []retry.AdaptiveOption{retry.WithProfile(retry.ProfileAWS2026)},
			want: configured{"standard", 3, "aws2026"},
		},
		{
			name: "opts profile over new retries",
			env:  map[string]string{"AWS_NEW_RETRIES_2026": "true"},
			opts: []retry.AdaptiveOption{retry.WithProfile(retry.ProfileStandard)},
			want: configured{"standard", 3, "standard"},
		},
		{
			name: "opts legacy profile in adaptive mode",
			env:  map[string]string{"AWS_RETRY_MODE": "adaptive", "AWS_MAX_ATTEMPTS": "5"},
			opts: []retry.AdaptiveOption{retry.WithProfile(retry.ProfileLegacy)},
			want: configured{"adaptive", 5, "legacy"},
		},
		{
			name: "clock option in standard mode",
			opts: []retry.AdaptiveOption{retry.WithClock(newManualClock())},
			want: configured{"standard", 3, "standard"},
		},
		{
			name: "rate limiter option in adaptive mode",
			env:  map[string]string{"AWS_RETRY_MODE": "adaptive"},
			opts: []retry.AdaptiveOption{retry.WithFailFast(true), retry.WithBeta(0.5)},
			want: configured{"adaptive", 3, "standard"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{}
			for k, v := range tt.env {
				env[k] = v
			}
			if tt.file != "" {
				env["AWS_CONFIG_FILE"] = writeConfig(t, tt.file)
			}
			s, err := retry.FromEnvironmentLookup(mapLookup(env), tt.opts...)
			require.NoError(t, err)
			require.Equal(t, tt.want, describe(t, s))
		})
	}
}

// The file is found in the home directory the lookup gives, and "~" in
// AWS_CONFIG_FILE is that directory too.
func TestFromEnvironmentLookupHome(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(home, ".aws"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".aws", "config"), []byte("[default]\nmax_attempts = 8\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(home, "other"), []byte("[profile x]\nmax_attempts = 9\n"), 0o600))
	homeEnv := map[string]string{"HOME": home, "USERPROFILE": home, "home": home}

	s, err := retry.FromEnvironmentLookup(mapLookup(homeEnv))
	require.NoError(t, err)
	require.Equal(t, configured{"standard", 8, "standard"}, describe(t, s))

	env := map[string]string{"AWS_CONFIG_FILE": "~/other", "AWS_PROFILE": "x"}
	for k, v := range homeEnv {
		env[k] = v
	}
	s, err = retry.FromEnvironmentLookup(mapLookup(env))
	require.NoError(t, err)
	require.Equal(t, configured{"standard", 9, "standard"}, describe(t, s))
}

// An adaptive strategy takes a shared rate limiter from opts.
func TestFromEnvironmentLookupSharedLimiter(t *testing.T) {
	t.Parallel()
	l, err := retry.NewRateLimiter()
	require.NoError(t, err)
	s, err := retry.FromEnvironmentLookup(mapLookup(map[string]string{"AWS_RETRY_MODE": "adaptive"}), retry.WithRateLimiter(l))
	require.NoError(t, err)
	a, ok := s.(*retry.Adaptive)
	require.True(t, ok, "strategy is %T", s)
	require.Same(t, l, a.RateLimiter())
}

// The strategy built works with Do.
func TestFromEnvironmentLookupDo(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"standard", "adaptive", "legacy"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"AWS_RETRY_MODE": mode, "AWS_MAX_ATTEMPTS": "2"}
			noWait := retry.WithBackoff(retry.BackoffFunc(func(int) time.Duration { return 0 }))
			s, err := retry.FromEnvironmentLookup(mapLookup(env), noWait)
			require.NoError(t, err)
			calls := 0
			err = retry.Run(context.Background(), func(context.Context) error {
				calls++
				return retry.Transient(errors.New("flaky"))
			}, retry.WithStrategy(s))
			require.ErrorIs(t, err, retry.ErrMaxAttemptsExceeded)
			require.Equal(t, 2, calls)
		})
	}
}

func TestFromEnvironmentLookupErrors(t *testing.T) {
	t.Parallel()
	limiter, err := retry.NewRateLimiter()
	require.NoError(t, err)
	const filePath = "\x00FILE\x00" // replaced by the config file's path
	tests := []struct {
		name string
		env  map[string]string
		file string
		opts []retry.AdaptiveOption
		want []string // substrings of the error message
	}{
		// Environment values; the message names the variable and quotes the value.
		{name: "mode unknown", env: map[string]string{"AWS_RETRY_MODE": "fast"}, want: []string{`AWS_RETRY_MODE = "fast"`, "standard, adaptive or legacy"}},
		{name: "mode with spaces", env: map[string]string{"AWS_RETRY_MODE": " standard"}, want: []string{`AWS_RETRY_MODE = " standard"`}},
		{name: "mode with unicode folding", env: map[string]string{"AWS_RETRY_MODE": "\u017ftandard"}, want: []string{"AWS_RETRY_MODE"}},
		{name: "max attempts 0", env: map[string]string{"AWS_MAX_ATTEMPTS": "0"}, want: []string{`AWS_MAX_ATTEMPTS = "0"`, "from 1 to " + strconv.Itoa(math.MaxInt)}},
		{name: "max attempts word", env: map[string]string{"AWS_MAX_ATTEMPTS": "three"}, want: []string{`AWS_MAX_ATTEMPTS = "three"`}},
		{name: "max attempts negative", env: map[string]string{"AWS_MAX_ATTEMPTS": "-1"}, want: []string{`AWS_MAX_ATTEMPTS = "-1"`}},
		{name: "max attempts overflow", env: map[string]string{"AWS_MAX_ATTEMPTS": "99999999999999999999"}, want: []string{`AWS_MAX_ATTEMPTS = "99999999999999999999"`}},
		{name: "max attempts fraction", env: map[string]string{"AWS_MAX_ATTEMPTS": "3.0"}, want: []string{`AWS_MAX_ATTEMPTS = "3.0"`}},
		{name: "max attempts hex", env: map[string]string{"AWS_MAX_ATTEMPTS": "0x10"}, want: []string{`AWS_MAX_ATTEMPTS = "0x10"`}},
		{name: "max attempts with spaces", env: map[string]string{"AWS_MAX_ATTEMPTS": "3 "}, want: []string{`AWS_MAX_ATTEMPTS = "3 "`, "without spaces"}},
		{name: "max attempts with a leading space", env: map[string]string{"AWS_MAX_ATTEMPTS": " 3"}, want: []string{`AWS_MAX_ATTEMPTS = " 3"`, "without spaces"}},
		{name: "max attempts with a space after the sign", env: map[string]string{"AWS_MAX_ATTEMPTS": "+ 3"}, want: []string{`AWS_MAX_ATTEMPTS = "+ 3"`}},
		{name: "max attempts +0", env: map[string]string{"AWS_MAX_ATTEMPTS": "+0"}, want: []string{`AWS_MAX_ATTEMPTS = "+0"`}},
		{name: "max attempts with underscores", env: map[string]string{"AWS_MAX_ATTEMPTS": "1_0"}, want: []string{`AWS_MAX_ATTEMPTS = "1_0"`}},
		{name: "max attempts long", env: map[string]string{"AWS_MAX_ATTEMPTS": strings.Repeat("9", 100_000)}, want: []string{`AWS_MAX_ATTEMPTS = "999`, "... (100000 bytes)"}},
		{name: "new retries yes", env: map[string]string{"AWS_NEW_RETRIES_2026": "yes"}, want: []string{`AWS_NEW_RETRIES_2026 = "yes"`, "true or false"}},
		{name: "new retries 1", env: map[string]string{"AWS_NEW_RETRIES_2026": "1"}, want: []string{`AWS_NEW_RETRIES_2026 = "1"`}},
		{name: "new retries with legacy", env: map[string]string{"AWS_NEW_RETRIES_2026": "on", "AWS_RETRY_MODE": "legacy"}, want: []string{`AWS_NEW_RETRIES_2026 = "on"`}},

		// File values; the message names the file and line.
		{name: "file max attempts 0", file: "[default]\nregion = x\nmax_attempts = 0\n", want: []string{"shared config " + filePath + ":3: max_attempts", `"0"`}},
		{name: "file max attempts word", file: "[default]\nmax_attempts = three\n", want: []string{filePath + ":2: max_attempts", `"three"`}},
		{name: "file max attempts empty", file: "[default]\nmax_attempts =\n", want: []string{filePath + ":2: max_attempts", `""`}},
		{name: "file max attempts continued", file: "[default]\nmax_attempts = 3\n  4\n", want: []string{filePath + ":2: max_attempts", `"3\n4"`}},
		{name: "file max attempts continued long", file: "[default]\nmax_attempts = 3\n" + strings.Repeat("  4\n", 50_000), want: []string{filePath + ":2: max_attempts", `"3\n4\n4`, "... (100001 bytes)"}},
		{name: "file max attempts 0x10", file: "[default]\nmax_attempts = 0x10\n", want: []string{filePath + ":2: max_attempts", `"0x10"`}},
		{name: "file mode unknown", file: "[default]\nretry_mode = fast\n", want: []string{filePath + ":2: retry_mode", `"fast"`}},
		{name: "file profile dev", env: map[string]string{"AWS_PROFILE": "dev"}, file: "[default]\n[profile dev]\nretry_mode = nope\n", want: []string{filePath + ":3: retry_mode"}},
		{name: "file malformed", file: "[default]\nmax_attempts = 3\nthis is not a setting\n", want: []string{filePath + ":3"}},
		{name: "file malformed in another profile", file: "[profile x]\n[broken\n[default]\n", want: []string{filePath + ":2"}},
		{name: "file is a directory", env: map[string]string{"AWS_CONFIG_FILE": "/"}, want: []string{"shared config"}},
		{name: "file tilde without home", env: map[string]string{"AWS_CONFIG_FILE": "~/config"}, want: []string{"AWS_CONFIG_FILE", "~"}},

		// Bad values are errors even where a higher-precedence source overrides them.
		{name: "file bad under env", env: map[string]string{"AWS_MAX_ATTEMPTS": "5"}, file: "[default]\nmax_attempts = 0\n", want: []string{filePath + ":2: max_attempts"}},
		{name: "file mode bad under env", env: map[string]string{"AWS_RETRY_MODE": "standard"}, file: "[default]\nretry_mode = turbo\n", want: []string{filePath + ":2: retry_mode"}},
		{name: "env bad under opts", env: map[string]string{"AWS_MAX_ATTEMPTS": "three"}, opts: []retry.AdaptiveOption{retry.WithMaxAttempts(2)}, want: []string{"AWS_MAX_ATTEMPTS"}},

		// Options.
		{name: "bad option", opts: []retry.AdaptiveOption{retry.WithMaxAttempts(0)}, want: []string{"WithMaxAttempts"}},
		{name: "bad option adaptive", env: map[string]string{"AWS_RETRY_MODE": "adaptive"}, opts: []retry.AdaptiveOption{retry.WithBeta(2)}, want: []string{"WithBeta"}},
		{name: "nil option", opts: []retry.AdaptiveOption{retry.WithMaxAttempts(2), nil}, want: []string{"opts[1]", "nil"}},
		{
			name: "rate limiter by default",
			opts: []retry.AdaptiveOption{retry.WithMaxAttempts(2), retry.WithRateLimiter(limiter)},
			want: []string{"opts[1] is WithRateLimiter", "standard mode is selected by default", "AWS_RETRY_MODE=adaptive"},
		},
		{
			name: "send wait by default",
			opts: []retry.AdaptiveOption{retry.WithMaxSendWait(0)},
			want: []string{"opts[0] is WithMaxSendWait", "standard mode is selected by default"},
		},
		{
			name: "rate limiter option with env legacy",
			env:  map[string]string{"AWS_RETRY_MODE": "legacy", "AWS_MAX_ATTEMPTS": "4"},
			opts: []retry.AdaptiveOption{retry.WithFailFast(true)},
			want: []string{"opts[0] is a RateLimiterOption", "legacy mode is selected by AWS_RETRY_MODE"},
		},
		{
			name: "rate limiter option with file standard",
			file: "[default]\nretry_mode = standard\n",
			opts: []retry.AdaptiveOption{retry.WithClock(newManualClock()), retry.WithBeta(0.5)},
			want: []string{"opts[1] is a RateLimiterOption", "standard mode is selected by retry_mode at " + filePath + ":2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{}
			for k, v := range tt.env {
				env[k] = v
			}
			path := ""
			if tt.file != "" {
				path = writeConfig(t, tt.file)
				env["AWS_CONFIG_FILE"] = path
			}
			s, err := retry.FromEnvironmentLookup(mapLookup(env), tt.opts...)
			require.True(t, s == nil, "strategy %#v returned with error", s)
			require.ErrorIs(t, err, retry.ErrInvalidConfig)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), strings.ReplaceAll(w, filePath, path))
			}
			require.LessOrEqual(t, len(err.Error()), 400+len(path), "error message length")
		})
	}
}

func TestFromEnvironmentLookupNil(t *testing.T) {
	t.Parallel()
	s, err := retry.FromEnvironmentLookup(nil)
	require.True(t, s == nil)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	require.Contains(t, err.Error(), "lookup")
}

// FromEnvironment reads the process environment; not parallel, as it sets
// variables.
func TestFromEnvironment(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(home, ".aws"), 0o700))
	config := "[default]\nmax_attempts = 9\n\n[profile ci]\nretry_mode = adaptive\nmax_attempts = 4\n"
	require.NoError(t, os.WriteFile(filepath.Join(home, ".aws", "config"), []byte(config), 0o600))
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)
	t.Setenv("AWS_CONFIG_FILE", "") // empty: the default location
	t.Setenv("AWS_PROFILE", "ci")
	t.Setenv("AWS_RETRY_MODE", "")
	t.Setenv("AWS_MAX_ATTEMPTS", "6")
	t.Setenv("AWS_NEW_RETRIES_2026", "true")

	s, err := retry.FromEnvironment()
	require.NoError(t, err)
	require.Equal(t, configured{"adaptive", 6, "aws2026"}, describe(t, s))

	s, err = retry.FromEnvironment(retry.WithMaxAttempts(2))
	require.NoError(t, err)
	require.Equal(t, configured{"adaptive", 2, "aws2026"}, describe(t, s))

	t.Setenv("AWS_MAX_ATTEMPTS", "zero")
	s, err = retry.FromEnvironment()
	require.True(t, s == nil)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	require.Contains(t, err.Error(), `AWS_MAX_ATTEMPTS = "zero"`)
}

// FuzzFromEnvironment checks that any environment and file give either a
// usable strategy or an error wrapping ErrInvalidConfig, never a panic, and
// that the strategy matches the settings.
func FuzzFromEnvironment(f *testing.F) {
	f.Add("", "", "", "")
	f.Add("adaptive", "5", "true", "[default]\nretry_mode = legacy\nmax_attempts = 2\n")
	f.Add("Legacy", "0", "TRUE", "")
	f.Add("fast", "99999999999999999999", "yes", "[default\n")
	f.Add("", "", "false", "[profile default]\nmax_attempts = 3 # x\n  continued\n")
	f.Add("", "-1", "", "\uFEFF[default]\r\nretry_mode = adaptive\r\n")
	// One file, rewritten for each input: the inputs of one process run
	// one at a time.
	path := filepath.Join(f.TempDir(), "config")
	f.Fuzz(func(t *testing.T, mode, maxAttempts, newRetries, file string) {
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{
			"AWS_RETRY_MODE":       mode,
			"AWS_MAX_ATTEMPTS":     maxAttempts,
			"AWS_NEW_RETRIES_2026": newRetries,
			"AWS_CONFIG_FILE":      path,
		}
		s, err := retry.FromEnvironmentLookup(mapLookup(env))
		if err != nil {
			if s != nil {
				t.Fatalf("strategy %#v returned with error %v", s, err)
			}
			if !errors.Is(err, retry.ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
			}
			return
		}
		got := describe(t, s)
		if got.MaxAttempts < 1 {
			t.Fatalf("MaxAttempts() = %d", got.MaxAttempts)
		}
		if n, err := strconv.Atoi(maxAttempts); err == nil && got.MaxAttempts != n {
			t.Fatalf("AWS_MAX_ATTEMPTS = %q gave MaxAttempts() = %d", maxAttempts, got.MaxAttempts)
		}
		wantType := map[string]string{"standard": "standard", "legacy": "standard", "adaptive": "adaptive"}[strings.ToLower(mode)]
		if wantType != "" && got.Type != wantType {
			t.Fatalf("AWS_RETRY_MODE = %q built a %s strategy", mode, got.Type)
		}
	})
}

// TestWithMaxScopesBound: WithMaxScopes takes 1 to MaxMaxScopes; beyond
// that, memory would grow with every scope string a caller sends.
func TestWithMaxScopesBound(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, retry.DefaultMaxScopes, retry.MaxMaxScopes} {
		_, err := retry.NewStandard(retry.WithMaxScopes(n))
		require.NoError(t, err, "WithMaxScopes(%d)", n)
		_, err = retry.NewAdaptive(retry.WithMaxScopes(n))
		require.NoError(t, err, "WithMaxScopes(%d)", n)
	}
	for _, n := range []int{math.MinInt, -1, 0, retry.MaxMaxScopes + 1, 1 << 30, math.MaxInt} {
		s, err := retry.NewStandard(retry.WithMaxScopes(n))
		require.True(t, s == nil)
		require.ErrorIs(t, err, retry.ErrInvalidConfig)
		require.ErrorContains(t, err, "WithMaxScopes = "+strconv.Itoa(n))
		require.ErrorContains(t, err, "from 1 to "+strconv.Itoa(retry.MaxMaxScopes))
		a, err := retry.NewAdaptive(retry.WithMaxScopes(n))
		require.True(t, a == nil)
		require.ErrorIs(t, err, retry.ErrInvalidConfig)
	}
}
