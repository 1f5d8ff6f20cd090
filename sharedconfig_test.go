package retry

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestParseSharedConfig(t *testing.T) {
	t.Parallel()
	const file = "/home/u/.aws/config"
	at := func(value string, line int) sharedSetting {
		return sharedSetting{value: value, file: file, line: line}
	}
	tests := []struct {
		name        string
		profile     string // "" means "default"
		data        string
		found       bool
		retryMode   sharedSetting
		maxAttempts sharedSetting
	}{
		{name: "empty file"},
		{name: "only comments and blanks", data: "# c\n; c\n\n   \n\t# indented comment\n"},
		{
			name:        "default profile",
			data:        "[default]\nregion = us-east-1\nretry_mode = adaptive\nmax_attempts = 5\n",
			found:       true,
			retryMode:   at("adaptive", 3),
			maxAttempts: at("5", 4),
		},
		{
			name:      "named profile",
			profile:   "prod",
			data:      "[default]\nretry_mode = legacy\n\n[profile prod]\nretry_mode = standard\n",
			found:     true,
			retryMode: at("standard", 5),
		},
		{
			name:    "named profile absent",
			profile: "prod",
			data:    "[default]\nretry_mode = legacy\n[profile staging]\nretry_mode = standard\n",
		},
		{
			name:        "default profile untouched by others",
			data:        "[profile prod]\nretry_mode = standard\n[default]\nmax_attempts = 2\n[profile other]\nmax_attempts = 9\n",
			found:       true,
			maxAttempts: at("2", 4),
		},
		{
			name:    "bare name is not a profile in the config file",
			profile: "prod",
			data:    "[prod]\nretry_mode = standard\n",
		},
		{
			name:    "other kinds of section are ignored",
			profile: "x",
			data:    "[sso-session x]\nretry_mode = standard\n[services x]\nmax_attempts = 3\n",
		},
		{
			name:        "profile default is the default profile",
			data:        "[profile default]\nretry_mode = standard\nmax_attempts = 4\n",
			found:       true,
			retryMode:   at("standard", 2),
			maxAttempts: at("4", 3),
		},
		{
			name:        "default and profile default merge, later wins",
			data:        "[default]\nretry_mode = legacy\nmax_attempts = 2\n[profile default]\nretry_mode = adaptive\n",
			found:       true,
			retryMode:   at("adaptive", 5),
			maxAttempts: at("2", 3),
		},
		{
			name:        "repeated section merges",
			profile:     "p",
			data:        "[profile p]\nretry_mode = legacy\n[default]\n[profile p]\nmax_attempts = 7\n",
			found:       true,
			retryMode:   at("legacy", 2),
			maxAttempts: at("7", 5),
		},
		{
			name:      "repeated key, later wins",
			data:      "[default]\nretry_mode = legacy\nretry_mode = standard\n",
			found:     true,
			retryMode: at("standard", 3),
		},
		{
			name:      "profile names are case-sensitive",
			profile:   "Prod",
			data:      "[profile prod]\nretry_mode = legacy\n[profile Prod]\nretry_mode = standard\n",
			found:     true,
			retryMode: at("standard", 4),
		},
		{
			name:        "spacing in headers and settings",
			profile:     "my prof",
			data:        "  [ profile \t my prof ]  \n\tretry_mode=standard\nmax_attempts\t =  3  \n",
			found:       true,
			retryMode:   at("standard", 2),
			maxAttempts: at("3", 3),
		},
		{
			name:        "keys are case-insensitive",
			data:        "[default]\nRETRY_MODE = standard\nMax_Attempts = 3\n",
			found:       true,
			retryMode:   at("standard", 2),
			maxAttempts: at("3", 3),
		},
		{
			name:        "inline comments",
			data:        "[default] # the default\nretry_mode = standard # or adaptive\nmax_attempts = 3\t; three\n",
			found:       true,
			retryMode:   at("standard", 2),
			maxAttempts: at("3", 3),
		},
		{
			name:        "comment characters inside values are kept",
			data:        "[default]\nretry_mode = stan#dard\nmax_attempts =#3\n",
			found:       true,
			retryMode:   at("stan#dard", 2),
			maxAttempts: at("#3", 3),
		},
		{
			name:        "empty value",
			data:        "[default]\nretry_mode =\nmax_attempts = # none\n",
			found:       true,
			retryMode:   at("", 2),
			maxAttempts: at("", 3),
		},
		{
			name:      "equals sign in value",
			data:      "[default]\nretry_mode = a=b\n",
			found:     true,
			retryMode: at("a=b", 2),
		},
		{
			name:      "nested sub-section is skipped",
			data:      "[default]\ns3 =\n  max_attempts = 10\n  retry_mode = adaptive\n\n  # comment\n  addressing_style = path\nretry_mode = standard\n",
			found:     true,
			retryMode: at("standard", 8),
		},
		{
			name:        "nested sub-section with odd lines is skipped",
			data:        "[default]\nservices =\n\t[not a header\n\tno equals sign\nmax_attempts = 2\n",
			found:       true,
			maxAttempts: at("2", 5),
		},
		{
			name:        "indented settings at one depth are settings",
			data:        "[default]\n  region = us-west-2\n  max_attempts = 6\n",
			found:       true,
			maxAttempts: at("6", 3),
		},
		{
			name:        "deeper line continues a value",
			data:        "[default]\nretry_mode = standard\n    adaptive # comment\n\n    ; comment\nmax_attempts = 1\n",
			found:       true,
			retryMode:   at("standard\nadaptive", 2),
			maxAttempts: at("1", 6),
		},
		{
			name:        "CRLF and byte order mark",
			data:        "\uFEFF[default]\r\nretry_mode = standard\r\nmax_attempts = 3\r\n",
			found:       true,
			retryMode:   at("standard", 2),
			maxAttempts: at("3", 3),
		},
		{
			name:      "no newline at end of file",
			data:      "[default]\nretry_mode = standard",
			found:     true,
			retryMode: at("standard", 2),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			profile := tt.profile
			if profile == "" {
				profile = "default"
			}
			got, err := parseSharedConfig(file, tt.data, profile)
			if err != nil {
				t.Fatalf("parseSharedConfig: %v", err)
			}
			want := sharedConfig{profileFound: tt.found, retryMode: tt.retryMode, maxAttempts: tt.maxAttempts}
			if got != want {
				t.Errorf("parseSharedConfig(%q, %q) =\n%+v\nwant\n%+v", tt.data, profile, got, want)
			}
		})
	}
}

func TestParseSharedConfigMalformed(t *testing.T) {
	t.Parallel()
	const file = "/home/u/.aws/config"
	tests := []struct {
		name string
		data string
		line int
		msg  string
	}{
		{"unterminated header", "[default]\nretry_mode = standard\n[profile prod\n", 3, "unterminated section header"},
		{"text after header", "[default] junk\n", 1, "after section header"},
		{"empty header", "[default]\n[]\n", 2, "empty section name"},
		{"blank header", "[ \t]\n", 1, "empty section name"},
		{"no equals sign", "[default]\nretry_mode standard\n", 2, `want "key = value"`},
		{"no key", "[default]\n = standard\n", 2, "missing key"},
		{"setting before any section", "# config\nretry_mode = standard\n[default]\n", 2, "before the first section header"},
		{"malformed in an ignored section", "[default]\n[sso-session s]\nbroken\n", 3, `want "key = value"`},
		{"indented after header is not a sub-section", "[default]\n  oops\n", 2, `want "key = value"`},
		{"sub-section ends at same indent", "[default]\ns3 =\n  a = 1\nb\n", 4, `want "key = value"`},
		{"line numbers count CRLF lines", "[default]\r\n\r\nx\r\n", 3, `want "key = value"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseSharedConfig(file, tt.data, "default")
			var se *sharedConfigError
			if !errors.As(err, &se) {
				t.Fatalf("parseSharedConfig error = %v, want a *sharedConfigError", err)
			}
			if se.line != tt.line || se.file != file {
				t.Errorf("error at %s:%d, want %s:%d", se.file, se.line, file, tt.line)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("error %v does not wrap ErrInvalidConfig", err)
			}
			for _, want := range []string{tt.msg, fmt.Sprintf("%s:%d: ", file, tt.line)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q, want it to contain %q", err, want)
				}
			}
		})
	}
}

func TestLoadSharedConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	t.Run("file", func(t *testing.T) {
		t.Parallel()
		path := write("config", "[profile ci]\nmax_attempts = 10\n")
		got, err := loadSharedConfig(path, "ci")
		if err != nil {
			t.Fatal(err)
		}
		if !got.profileFound || got.maxAttempts.value != "10" || got.retryMode.isSet() {
			t.Errorf("loadSharedConfig = %+v", got)
		}
		if loc, want := got.maxAttempts.location(), path+":2"; loc != want {
			t.Errorf("location() = %q, want %q", loc, want)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		t.Parallel()
		got, err := loadSharedConfig(filepath.Join(dir, "nope", "config"), "default")
		if err != nil || got != (sharedConfig{}) {
			t.Errorf("loadSharedConfig = %+v, %v; want zero, nil", got, err)
		}
	})
	t.Run("no path", func(t *testing.T) {
		t.Parallel()
		got, err := loadSharedConfig("", "default")
		if err != nil || got != (sharedConfig{}) {
			t.Errorf("loadSharedConfig = %+v, %v; want zero, nil", got, err)
		}
	})
	t.Run("directory", func(t *testing.T) {
		t.Parallel()
		_, err := loadSharedConfig(dir, "default")
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "a directory, want a regular file") {
			t.Errorf("loadSharedConfig(dir) error = %v, want ErrInvalidConfig naming %s, a directory", err, dir)
		}
	})
	t.Run("null device", func(t *testing.T) {
		t.Parallel()
		got, err := loadSharedConfig(os.DevNull, "default")
		if err != nil || got != (sharedConfig{}) {
			t.Errorf("loadSharedConfig(%s) = %+v, %v; want zero, nil", os.DevNull, got, err)
		}
	})
	t.Run("malformed names file and line", func(t *testing.T) {
		t.Parallel()
		path := write("bad", "[default]\nmax_attempts = 3\n[profile x\n")
		_, err := loadSharedConfig(path, "default")
		if err == nil || !strings.Contains(err.Error(), path+":3:") {
			t.Errorf("loadSharedConfig error = %v, want it to name %s:3", err, path)
		}
	})
}

// allocated returns the bytes f allocates: the least of a few runs, as
// the runtime allocates a little of its own now and then.
func allocated(f func()) uint64 {
	least := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// TestParseSharedConfigLinear: parsing allocates in proportion to the
// input, however many lines continue a value (they once made it
// quadratic: each line copied the whole value so far). Not parallel:
// allocated reads process-wide counters.
func TestParseSharedConfigLinear(t *testing.T) {
	for _, lines := range []int{1 << 10, 1 << 12, 1 << 14} {
		data := "[default]\nretry_mode = s\n" + strings.Repeat("  x\n", lines) +
			"max_attempts = 3\n" + strings.Repeat("  x ; comment\n", lines)
		var cfg sharedConfig
		var err error
		bytes := allocated(func() { cfg, err = parseSharedConfig("config", data, "default") })
		if err != nil {
			t.Fatal(err)
		}
		if want := 1 + 2*lines; len(cfg.retryMode.value) != want || len(cfg.maxAttempts.value) != want {
			t.Fatalf("%d lines: values of %d and %d bytes, want %d", lines, len(cfg.retryMode.value), len(cfg.maxAttempts.value), want)
		}
		if limit := 4*uint64(len(data)) + 4096; bytes > limit {
			t.Errorf("%d continuation lines (%d bytes): parsing allocated %d bytes, want at most %d", 2*lines, len(data), bytes, limit)
		}
	}
}

// TestSharedConfigErrorExcerpt: an error quotes at most an excerpt of a
// long line, and says how long it is.
func TestSharedConfigErrorExcerpt(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("\xffa\u00e9", 40_000)
	for _, data := range []string{
		"[default]\n" + long + "\n",                 // no "="
		"[" + long + "\n",                           // no "]"
		"[default] " + long + "\n",                  // text after the header
		"max_attempts" + long + " = 3\n[default]\n", // setting before a header
	} {
		_, err := parseSharedConfig("config", data, "default")
		if err == nil {
			t.Fatalf("no error for %q...", data[:20])
		}
		if msg := err.Error(); len(msg) > 300 || !strings.Contains(msg, "bytes)") {
			t.Errorf("error of %d bytes, want at most 300 that give the length: %.400q", len(msg), msg)
		}
	}
}

// TestLoadSharedConfigSize: a file of maxSharedConfigSize bytes is read; a
// larger one is refused, with an error that gives the limit.
func TestLoadSharedConfigSize(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	head := "[default]\nmax_attempts = 4\n"
	for _, size := range []int{maxSharedConfigSize, maxSharedConfigSize + 1} {
		data := head + strings.Repeat("#", size-len(head)-1) + "\n"
		path := filepath.Join(dir, fmt.Sprint(size))
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := loadSharedConfig(path, "default")
		if size <= maxSharedConfigSize {
			if err != nil || cfg.maxAttempts.value != "4" {
				t.Errorf("%d bytes: loadSharedConfig = %+v, %v; want max_attempts 4", size, cfg, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "16 MiB") {
			t.Errorf("%d bytes: loadSharedConfig error = %v, want ErrInvalidConfig naming %s and the limit, 16 MiB", size, err, path)
		}
	}
}

func TestSharedConfigLocation(t *testing.T) {
	t.Parallel()
	home := filepath.Join("/home", "u")
	homeOK := func() (string, error) { return home, nil }
	homeErr := func() (string, error) { return "", errors.New("$HOME is not defined") }
	homeEmpty := func() (string, error) { return "", nil }
	tests := []struct {
		name    string
		env     map[string]string
		homeDir func() (string, error)
		path    string
		profile string
		wantErr bool
	}{
		{name: "defaults", homeDir: homeOK, path: filepath.Join(home, ".aws", "config"), profile: "default"},
		{name: "AWS_PROFILE", env: map[string]string{"AWS_PROFILE": "prod"}, homeDir: homeOK, path: filepath.Join(home, ".aws", "config"), profile: "prod"},
		{name: "empty AWS_PROFILE", env: map[string]string{"AWS_PROFILE": ""}, homeDir: homeOK, path: filepath.Join(home, ".aws", "config"), profile: "default"},
		{name: "AWS_CONFIG_FILE", env: map[string]string{"AWS_CONFIG_FILE": "/etc/aws/config"}, homeDir: homeErr, path: "/etc/aws/config", profile: "default"},
		{name: "empty AWS_CONFIG_FILE", env: map[string]string{"AWS_CONFIG_FILE": ""}, homeDir: homeOK, path: filepath.Join(home, ".aws", "config"), profile: "default"},
		{name: "tilde slash", env: map[string]string{"AWS_CONFIG_FILE": "~/cfg/aws"}, homeDir: homeOK, path: filepath.Join(home, "cfg", "aws"), profile: "default"},
		{name: "tilde alone", env: map[string]string{"AWS_CONFIG_FILE": "~"}, homeDir: homeOK, path: home, profile: "default"},
		{name: "tilde user is left alone", env: map[string]string{"AWS_CONFIG_FILE": "~bob/config"}, homeDir: homeErr, path: "~bob/config", profile: "default"},
		{name: "tilde inside is left alone", env: map[string]string{"AWS_CONFIG_FILE": "/x/~/config"}, homeDir: homeErr, path: "/x/~/config", profile: "default"},
		{name: "tilde without home", env: map[string]string{"AWS_CONFIG_FILE": "~/config"}, homeDir: homeErr, profile: "default", wantErr: true},
		{name: "tilde with empty home", env: map[string]string{"AWS_CONFIG_FILE": "~/config"}, homeDir: homeEmpty, profile: "default", wantErr: true},
		{name: "no home: no file", homeDir: homeErr, path: "", profile: "default"},
		{name: "empty home: no file", homeDir: homeEmpty, path: "", profile: "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			getenv := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			path, profile, err := sharedConfigLocation(getenv, tt.homeDir)
			if (err != nil) != tt.wantErr {
				t.Fatalf("sharedConfigLocation error = %v, want error: %t", err, tt.wantErr)
			}
			if err != nil && (!errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "AWS_CONFIG_FILE")) {
				t.Errorf("error %v, want ErrInvalidConfig naming AWS_CONFIG_FILE", err)
			}
			if path != tt.path || profile != tt.profile {
				t.Errorf("sharedConfigLocation = %q, %q; want %q, %q", path, profile, tt.path, tt.profile)
			}
		})
	}
}

func FuzzSharedConfig(f *testing.F) {
	for _, seed := range []string{
		"",
		"[default]\nretry_mode = standard\nmax_attempts = 3\n",
		"[profile p]\r\ns3 =\r\n  max_attempts = 10\r\nretry_mode = adaptive # c\r\n",
		"\uFEFF; c\n[default] ; c\nretry_mode =\n    standard\n",
		"[default\n",
		"x\n",
		"[profile default]\nmax_attempts=1\n[]\n",
	} {
		f.Add(seed, "default")
		f.Add(seed, "p")
	}
	f.Fuzz(func(t *testing.T, data, profile string) {
		const file = "config"
		lines := strings.Count(data, "\n") + 1
		cfg, err := parseSharedConfig(file, data, profile)
		if err != nil {
			var se *sharedConfigError
			if !errors.As(err, &se) || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v (%T) is not a *sharedConfigError wrapping ErrInvalidConfig", err, err)
			}
			if se.file != file || se.line < 1 || se.line > lines {
				t.Fatalf("error at %s:%d, want %s with a line in [1, %d]", se.file, se.line, file, lines)
			}
			if cfg != (sharedConfig{}) {
				t.Fatalf("error with a non-zero result %+v", cfg)
			}
			return
		}
		for _, s := range []sharedSetting{cfg.retryMode, cfg.maxAttempts} {
			if !s.isSet() {
				if s != (sharedSetting{}) {
					t.Fatalf("unset setting %+v is not zero", s)
				}
				continue
			}
			if !cfg.profileFound {
				t.Fatalf("setting %+v without the profile found", s)
			}
			if s.file != file || s.line > lines {
				t.Fatalf("setting at %s, want %s with a line in [1, %d]", s.location(), file, lines)
			}
			if s.value != strings.Trim(s.value, " \t") {
				t.Fatalf("value %q has surrounding blanks", s.value)
			}
		}
	})
}

// An AWS_CONFIG_FILE path longer than any a system opens is refused with a
// short error, not quoted whole (a 1-MiB path made a 2-MiB message).
func TestSharedConfigLocationLongPath(t *testing.T) {
	long := "/" + strings.Repeat("a", 1<<20)
	for _, p := range []string{long, "~" + long} {
		getenv := func(k string) (string, bool) { return p, k == "AWS_CONFIG_FILE" }
		_, _, err := sharedConfigLocation(getenv, func() (string, error) { return "/home/u", nil })
		if !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("err = %v, want ErrInvalidConfig", err)
		}
		msg := err.Error()
		if len(msg) > 512 {
			t.Errorf("error of %d bytes, want an excerpt of the path", len(msg))
		}
		for _, want := range []string{"AWS_CONFIG_FILE", "at most 4096 bytes", fmt.Sprintf("(%d bytes)", len(p))} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q does not say %q", msg, want)
			}
		}
	}
	ok := "/" + strings.Repeat("a", maxConfigPath-1)
	path, _, err := sharedConfigLocation(func(k string) (string, bool) { return ok, k == "AWS_CONFIG_FILE" }, nil)
	if err != nil || path != ok {
		t.Errorf("a path of %d bytes: %v", maxConfigPath, err)
	}

	// Through the public entry point, the same.
	_, err = FromEnvironmentLookup(func(k string) (string, bool) { return long, k == "AWS_CONFIG_FILE" })
	if !errors.Is(err, ErrInvalidConfig) || len(err.Error()) > 1024 {
		t.Errorf("FromEnvironmentLookup: error of %d bytes: %.200v", len(err.Error()), err)
	}
}
