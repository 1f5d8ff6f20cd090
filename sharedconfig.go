package retry

import (
	"errors"
	"fmt"
	"io"
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
//
// Only a regular file of at most maxSharedConfigSize bytes is read, and it
// is parsed in one pass, in time and memory proportional to its size.
// Errors quote at most an excerpt of a line or value (see quoteExcerpt).

// maxSharedConfigSize is the size of the largest shared config file read:
// 16 MiB. A profile takes a few hundred bytes, so that is room for tens of
// thousands of them, as files generated with a profile for each account
// and role have; and it keeps a wrong AWS_CONFIG_FILE (a log, a disk
// image) from being read whole.
const maxSharedConfigSize = 16 << 20

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
// msg quotes at most an excerpt of the line.
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

// maxConfigPath is the longest AWS_CONFIG_FILE path accepted: PATH_MAX on
// Linux. A longer one names no file a system can open, and would make every
// error that names the file as long.
const maxConfigPath = 4096

// sharedConfigLocation returns the shared config file and the profile the
// environment selects. getenv looks up an environment variable (os.LookupEnv
// in production); homeDir returns the user's home directory
// (os.UserHomeDir).
//
// The file is $AWS_CONFIG_FILE, with a leading "~" or "~/" standing for the
// home directory, or else ~/.aws/config. If AWS_CONFIG_FILE is unset or
// empty and the home directory is unknown, path is "": there is no shared
// config file. The profile is $AWS_PROFILE, or "default" if that is unset
// or empty. The only errors are an AWS_CONFIG_FILE longer than
// maxConfigPath bytes and a "~" in it that cannot be expanded.
func sharedConfigLocation(getenv func(string) (string, bool), homeDir func() (string, error)) (path, profile string, err error) {
	profile = "default"
	if p, ok := getenv("AWS_PROFILE"); ok && p != "" {
		profile = p
	}
	if p, ok := getenv("AWS_CONFIG_FILE"); ok && p != "" {
		if len(p) > maxConfigPath {
			return "", profile, configError("AWS_CONFIG_FILE", quoteExcerpt(p), fmt.Sprintf("a path of at most %d bytes", maxConfigPath))
		}
		rest, tilde := strings.CutPrefix(p, "~")
		if !tilde || rest != "" && rest[0] != '/' && rest[0] != filepath.Separator {
			return p, profile, nil // no "~", or "~user", which is left as it is
		}
		home, err := homeDir()
		if err == nil && home == "" {
			err = errors.New("home directory unknown")
		}
		if err != nil {
			return "", profile, fmt.Errorf("%w: AWS_CONFIG_FILE = %s: cannot expand ~: %w", ErrInvalidConfig, quoteExcerpt(p), err)
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
// yields the zero sharedConfig, and so does the null device (os.DevNull,
// or a link to it), which users name to mean "no file". Any other file
// that is not a regular file (a directory, a named pipe, a device, a
// socket) is an error, and is neither opened nor read: a named pipe would
// block the read until something wrote to it. A file larger than
// maxSharedConfigSize, one that cannot be read, or one with a malformed
// line is an error too. Every error wraps ErrInvalidConfig and names the
// file; for a malformed line it is a *sharedConfigError naming the line.
func loadSharedConfig(path, profile string) (sharedConfig, error) {
	if path == "" {
		return sharedConfig{}, nil
	}
	data, err := readSharedConfig(path)
	if errors.Is(err, fs.ErrNotExist) {
		return sharedConfig{}, nil
	}
	if err != nil {
		return sharedConfig{}, err
	}
	return parseSharedConfig(path, data, profile)
}

// readSharedConfig returns the contents of the shared config file at path,
// as loadSharedConfig describes; its errors wrap ErrInvalidConfig, and the
// error of a missing file wraps fs.ErrNotExist.
func readSharedConfig(path string) (string, error) {
	fail := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("%w: shared config %s: "+format, append([]any{ErrInvalidConfig, path}, args...)...)
	}
	want := fmt.Sprintf("want a regular file of at most %d MiB", maxSharedConfigSize>>20)
	fi, err := os.Stat(path)
	if err != nil {
		return fail("%w", err)
	}
	if !fi.Mode().IsRegular() {
		if isDevNull(path, fi) {
			return "", nil
		}
		return fail("%s, %s", fileKind(fi.Mode()), want)
	}
	f, err := os.Open(path)
	if err != nil {
		return fail("%w", err)
	}
	defer f.Close()
	// What was opened may not be what was checked, if the file was
	// replaced in between: check again before reading. (A named pipe put
	// there in between would block in Open; doing that needs write access
	// to the file's directory.)
	if fi, err = f.Stat(); err != nil {
		return fail("%w", err)
	}
	if !fi.Mode().IsRegular() {
		return fail("%s, %s", fileKind(fi.Mode()), want)
	}
	// The size is read from the file rather than trusted from Stat: the
	// file may grow, and some report a size of 0 (Linux's /proc). One byte
	// more than the limit is read to tell a file that is too large.
	r := io.LimitReader(f, maxSharedConfigSize+1)
	buf := make([]byte, 0, min(max(fi.Size(), 0), maxSharedConfigSize)+1)
	for {
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > maxSharedConfigSize {
			return fail("larger than %d bytes, %s", maxSharedConfigSize, want)
		}
		if err == io.EOF {
			return string(buf), nil
		}
		if err != nil {
			return fail("%w", err)
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grow
		}
	}
}

// isDevNull reports whether fi, the FileInfo of the file at path, is the
// null device.
func isDevNull(path string, fi fs.FileInfo) bool {
	if path == os.DevNull {
		return true
	}
	null, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(fi, null)
}

// fileKind says what kind of file mode m, not a regular file's, is.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return fmt.Sprintf("not a regular file (mode %v)", m)
}

// parseSharedConfig reads the retry settings of profile from data, the
// contents of the shared config file named file.
func parseSharedConfig(file, data, profile string) (sharedConfig, error) {
	var (
		cfg       sharedConfig
		n         int            // the line number
		inSection bool           // a section header has been seen
		inProfile bool           // the current section is profile's
		keyIndent = -1           // indent of the current setting; -1: none
		keyEmpty  bool           // the current setting's value is empty
		current   *sharedSetting // the current setting, if it is one we keep
		continued strings.Builder
	)
	// endSetting ends the current setting. Its continuation lines were
	// gathered in continued, so that a value of many lines is built in
	// time proportional to its length.
	endSetting := func() {
		if current != nil && continued.Len() > 0 {
			current.value = continued.String()
			continued.Reset()
		}
		keyIndent, current = -1, nil
	}
	fail := func(format string, args ...any) (sharedConfig, error) {
		return sharedConfig{}, &sharedConfigError{file: file, line: n, msg: fmt.Sprintf(format, args...)}
	}
	data = strings.TrimPrefix(data, "\uFEFF")
	for line := range strings.Lines(data) {
		n++
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
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
					if continued.Len() == 0 {
						continued.WriteString(current.value)
					}
					continued.WriteByte('\n')
					continued.WriteString(v)
				}
			}
			continue
		}
		endSetting()

		if text[0] == '[' {
			end := strings.IndexByte(text, ']')
			if end < 0 {
				return fail("unterminated section header %s", quoteExcerpt(text))
			}
			if rest := strings.TrimLeft(text[end+1:], " \t"); rest != "" && rest[0] != '#' && rest[0] != ';' {
				return fail("unexpected %s after section header", quoteExcerpt(rest))
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
			return fail("want \"key = value\" or \"[section]\", got %s", quoteExcerpt(text))
		}
		key := strings.Trim(k, " \t")
		if key == "" {
			return fail("missing key before \"=\"")
		}
		if !inSection {
			return fail("setting %s before the first section header", quoteExcerpt(key))
		}
		value := sharedConfigValue(v)
		keyIndent, keyEmpty = indent, value == ""
		if !inProfile {
			continue
		}
		switch {
		case equalFoldASCII(key, "retry_mode"):
			current = &cfg.retryMode
		case equalFoldASCII(key, "max_attempts"):
			current = &cfg.maxAttempts
		default:
			continue
		}
		*current = sharedSetting{value: value, file: file, line: n}
	}
	endSetting()
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
