package retry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The AWS shared config file (~/.aws/config) is an INI-like file. This file
// reads the two retry settings of one profile from it, retry_mode and
// max_attempts, and remembers where each came from so that the layer that
// validates them can say "bad max_attempts at /home/u/.aws/config:12".
//
// The format, as the AWS CLI and SDKs read it, and as parseSharedConfig
// reads it:
//
//   - A section starts with a header line "[NAME]". "[default]" and
//     "[profile NAME]" (one or more spaces or tabs after "profile") hold
//     profiles; "[profile default]" is the default profile too, and when a
//     file has both, or repeats a section, their settings merge with the
//     later line winning. Other sections ("[sso-session x]",
//     "[services x]", a bare "[x]", which is a profile only in the
//     credentials file) are read but their settings ignored. Profile names
//     are case-sensitive. Text after the closing "]" must be a comment.
//   - A setting is "key = value"; spaces and tabs around the key and the
//     value are ignored, and keys are matched case-insensitively. A later
//     setting of a key wins over an earlier one.
//   - A line whose first non-blank character is '#' or ';' is a comment,
//     and so is the rest of a value from a '#' or ';' that follows a space
//     or tab ("max_attempts = 5 # five" sets "5").
//   - A line indented deeper than the setting before it belongs to that
//     setting: after an empty value ("s3 =") it is a line of a nested
//     sub-section, which is skipped; after a non-empty value it continues
//     the value, which then holds a newline (so the validating layer
//     rejects it, at the setting's line).
//   - Blank lines are ignored; lines may end in CRLF; a leading UTF-8 byte
//     order mark is ignored.
//
// Anything else is malformed: a line that is neither a section header nor
// a setting, an unterminated or empty section header, a setting with no
// key, or one before the first section header. Malformed lines are errors
// wherever they are, even in sections that are not read, as they are for
// the AWS tools. The values themselves are not checked here.

// sharedSetting is one value read from the shared config file, with where
// it came from. The zero value means the setting is absent.
type sharedSetting struct {
	value string
	file  string
	line  int // 1-based; 0 if the setting is absent
}

// isSet reports whether the setting was present in the file.
func (s sharedSetting) isSet() bool { return s.line > 0 }

// location returns "file:line", the place the setting was read from.
func (s sharedSetting) location() string { return fmt.Sprintf("%s:%d", s.file, s.line) }

// sharedConfig holds the retry settings of one profile of a shared config
// file. The zero value means no file, or no settings in it.
type sharedConfig struct {
	profileFound bool // the file has a section for the profile
	retryMode    sharedSetting
	maxAttempts  sharedSetting
}

// sharedConfigError reports a malformed line of a shared config file.
type sharedConfigError struct {
	file string
	line int // 1-based
	msg  string
}

func (e *sharedConfigError) Error() string {
	return fmt.Sprintf("%v: shared config %s:%d: %s", ErrInvalidConfig, e.file, e.line, e.msg)
}

// Unwrap returns ErrInvalidConfig.
func (e *sharedConfigError) Unwrap() error { return ErrInvalidConfig }

// sharedConfigLocation returns the shared config file and the profile the
// environment selects. getenv looks up an environment variable (os.LookupEnv
// in production); homeDir returns the user's home directory
// (os.UserHomeDir).
//
// The file is $AWS_CONFIG_FILE, with a leading "~" or "~/" standing for the
// home directory, or else ~/.aws/config. If AWS_CONFIG_FILE is unset or
// empty and the home directory is unknown, path is "": there is no shared
// config file. The profile is $AWS_PROFILE, or "default" if that is unset
// or empty. The only error is a "~" in AWS_CONFIG_FILE that cannot be
// expanded.
func sharedConfigLocation(getenv func(string) (string, bool), homeDir func() (string, error)) (path, profile string, err error) {
	profile = "default"
	if p, ok := getenv("AWS_PROFILE"); ok && p != "" {
		profile = p
	}
	if p, ok := getenv("AWS_CONFIG_FILE"); ok && p != "" {
		rest, tilde := strings.CutPrefix(p, "~")
		if !tilde || rest != "" && rest[0] != '/' && rest[0] != filepath.Separator {
			return p, profile, nil // no "~", or "~user", which is left as it is
		}
		home, err := homeDir()
		if err == nil && home == "" {
			err = errors.New("home directory unknown")
		}
		if err != nil {
			return "", profile, fmt.Errorf("%w: AWS_CONFIG_FILE = %q: cannot expand ~: %w", ErrInvalidConfig, p, err)
		}
		return filepath.Join(home, rest), profile, nil
	}
	home, err := homeDir()
	if err != nil || home == "" {
		return "", profile, nil
	}
	return filepath.Join(home, ".aws", "config"), profile, nil
}

// loadSharedConfig reads the retry settings of profile from the shared
// config file at path. A missing file, or path "", is not an error: it
// yields the zero sharedConfig. A file that cannot be read, or has a
// malformed line, is an error wrapping ErrInvalidConfig; for a malformed
// line it is a *sharedConfigError naming the file and line.
func loadSharedConfig(path, profile string) (sharedConfig, error) {
	if path == "" {
		return sharedConfig{}, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return sharedConfig{}, nil
	}
	if err != nil {
		return sharedConfig{}, fmt.Errorf("%w: reading shared config: %w", ErrInvalidConfig, err)
	}
	return parseSharedConfig(path, string(data), profile)
}

// parseSharedConfig reads the retry settings of profile from data, the
// contents of the shared config file named file.
func parseSharedConfig(file, data, profile string) (sharedConfig, error) {
	var (
		cfg       sharedConfig
		inSection bool           // a section header has been seen
		inProfile bool           // the current section is profile's
		keyIndent = -1           // indent of the current setting; -1: none
		keyEmpty  bool           // the current setting's value is empty
		current   *sharedSetting // the current setting, if it is one we keep
	)
	data = strings.TrimPrefix(data, "\uFEFF")
	for i, line := range strings.Split(data, "\n") {
		n := i + 1
		fail := func(format string, args ...any) (sharedConfig, error) {
			return sharedConfig{}, &sharedConfigError{file: file, line: n, msg: fmt.Sprintf(format, args...)}
		}
		line = strings.TrimSuffix(line, "\r")
		text := strings.TrimLeft(line, " \t")
		if text == "" || text[0] == '#' || text[0] == ';' {
			continue
		}
		indent := len(line) - len(text)
		if keyIndent >= 0 && indent > keyIndent {
			// A line of the current setting: a sub-section line after an
			// empty value, else a continuation of the value.
			if !keyEmpty && current != nil {
				if v := sharedConfigValue(text); v != "" {
					current.value += "\n" + v
				}
			}
			continue
		}
		keyIndent, current = -1, nil

		if text[0] == '[' {
			end := strings.IndexByte(text, ']')
			if end < 0 {
				return fail("unterminated section header %q", text)
			}
			if rest := strings.TrimLeft(text[end+1:], " \t"); rest != "" && rest[0] != '#' && rest[0] != ';' {
				return fail("unexpected %q after section header", rest)
			}
			name := strings.Trim(text[1:end], " \t")
			if name == "" {
				return fail("empty section name")
			}
			p, ok := sharedConfigProfile(name)
			inSection, inProfile = true, ok && p == profile
			cfg.profileFound = cfg.profileFound || inProfile
			continue
		}

		k, v, ok := strings.Cut(text, "=")
		if !ok {
			return fail("want \"key = value\" or \"[section]\", got %q", text)
		}
		key := strings.ToLower(strings.Trim(k, " \t"))
		if key == "" {
			return fail("missing key before \"=\"")
		}
		if !inSection {
			return fail("setting %q before the first section header", key)
		}
		value := sharedConfigValue(v)
		keyIndent, keyEmpty = indent, value == ""
		if !inProfile {
			continue
		}
		switch key {
		case "retry_mode":
			current = &cfg.retryMode
		case "max_attempts":
			current = &cfg.maxAttempts
		default:
			continue
		}
		*current = sharedSetting{value: value, file: file, line: n}
	}
	return cfg, nil
}

// sharedConfigProfile returns the profile a config-file section holds:
// "default" for "default" and "profile default", NAME for "profile NAME".
// It reports false for any other section.
func sharedConfigProfile(section string) (string, bool) {
	if section == "default" {
		return section, true
	}
	rest, ok := strings.CutPrefix(section, "profile")
	if !ok || rest == "" || rest[0] != ' ' && rest[0] != '\t' {
		return "", false
	}
	name := strings.Trim(rest, " \t")
	return name, name != ""
}

// sharedConfigValue returns s without an inline comment (a '#' or ';'
// after a space or tab) and without surrounding spaces and tabs.
func sharedConfigValue(s string) string {
	for i := 1; i < len(s); i++ {
		if (s[i] == '#' || s[i] == ';') && (s[i-1] == ' ' || s[i-1] == '\t') {
			s = s[:i]
			break
		}
	}
	return strings.Trim(s, " \t")
}
