package retry

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"unicode/utf8"
)

// The environment variables FromEnvironment reads. The shared config file
// keys are retry_mode and max_attempts (see sharedconfig.go).
const (
	envRetryMode   = "AWS_RETRY_MODE"
	envMaxAttempts = "AWS_MAX_ATTEMPTS"
	envNewRetries  = "AWS_NEW_RETRIES_2026"
)

// retryMode is a value of AWS_RETRY_MODE or retry_mode.
type retryMode int

const (
	modeStandard retryMode = iota // the default
	modeAdaptive
	modeLegacy
)

func (m retryMode) String() string {
	switch m {
	case modeAdaptive:
		return "adaptive"
	case modeLegacy:
		return "legacy"
	}
	return "standard"
}

// validModes describes the values a retry mode may take, for errors.
const validModes = "standard, adaptive or legacy (in any case)"

// validMaxAttempts describes the values max attempts may take, for errors.
var validMaxAttempts = fmt.Sprintf("a decimal integer from 1 to %d (1 means no retries), without spaces", math.MaxInt)

// environment is what the environment and the shared config file select.
type environment struct {
	mode        retryMode
	modeSource  string // where mode came from, for errors; "" for the default
	maxAttempts int    // 0: not set
	newRetries  bool   // AWS_NEW_RETRIES_2026=true
}

// FromEnvironment builds the strategy that AWS_RETRY_MODE,
// AWS_MAX_ATTEMPTS, AWS_NEW_RETRIES_2026 and the shared config file select:
// a *Standard for standard and legacy mode, an *Adaptive for adaptive mode;
// nothing set means standard mode with its defaults. opts win over the
// environment, which wins over the file.
//
// The settings, and what they do:
//
//   - AWS_RETRY_MODE, or retry_mode in the shared config file: "standard"
//     builds a *Standard with ProfileStandard, "legacy" a *Standard with
//     ProfileLegacy, "adaptive" an *Adaptive with ProfileStandard. Values
//     are matched in any case ("Adaptive" is adaptive), as the AWS SDK for
//     Java does; the AWS SDK for Go v2 and botocore accept only lower case,
//     so a file shared with them should use lower case.
//   - AWS_MAX_ATTEMPTS, or max_attempts in the file: the number of
//     attempts, the first included, as WithMaxAttempts. A decimal integer
//     of 1 or more; there is no other upper bound than the int range.
//     Unset, it is DefaultMaxAttempts in every mode, legacy included. The
//     syntax is that of the AWS SDKs for Go and Java (strconv.ParseInt in
//     base 10, Integer.parseInt), in both places: ASCII digits, with an
//     optional leading '+' ("+3" is 3, as botocore reads it too), and no
//     spaces, underscores, fraction or base prefix (" 3" and "0x10" are
//     errors). The file's format drops the blanks around a value, so
//     "max_attempts = 3 " is 3; the environment's values are taken as
//     they are (botocore alone would also accept " 3").
//   - AWS_NEW_RETRIES_2026: "true" selects ProfileAWS2026 for standard and
//     adaptive mode; "false" changes nothing. Either in any case. It does
//     not apply to legacy mode, which keeps ProfileLegacy: legacy is the
//     mode that predates both generations of standard mode, and a flag that
//     opts in to the new standard mode is not a reason to leave it (nor an
//     error, so that the flag can be set for a whole fleet). It has no
//     shared config file key.
//
// The shared config file is $AWS_CONFIG_FILE, or ~/.aws/config when that is
// unset or empty ("~" is expanded in AWS_CONFIG_FILE too); the profile is
// $AWS_PROFILE, or "default" when that is unset or empty, read from the
// "[default]" or "[profile NAME]" section. A missing file, a file without
// the profile's section, and a profile without these keys are not errors:
// the profile may live in the credentials file only, and the settings have
// defaults. The null device (AWS_CONFIG_FILE=/dev/null) counts as an empty
// file. Only a regular file of at most 16 MiB is read: anything else (a
// directory, a named pipe, a device) or a larger file is an error, and a
// named pipe is not opened, so FromEnvironment never blocks on one. The
// file is read at each call, in time proportional to its size; build the
// strategy once and share it.
//
// Precedence, for each setting: opts over the environment, the environment
// over the file, the file over the defaults. The strategy's type comes only
// from the retry mode, as no option selects it; WithProfile in opts
// replaces the profile the mode and AWS_NEW_RETRIES_2026 select, and
// WithMaxAttempts in opts replaces AWS_MAX_ATTEMPTS and max_attempts.
// Adaptive-only options (WithRateLimiter and the RateLimiterOptions such
// as WithFailFast; WithClock is not one) need adaptive mode: with standard
// or legacy mode they are an error naming the option and where the mode
// came from, rather than options silently ignored.
//
// An environment variable set to "" counts as unset, as in the AWS SDKs;
// a key with an empty value in the file is a bad value. Values in the
// environment are taken as they are, without trimming spaces.
//
// Every setting found is checked, even one that a higher-precedence source
// overrides, so a mistake surfaces where it is made rather than when the
// override goes away. Errors wrap ErrInvalidConfig and name where the bad
// value came from: the variable (`AWS_MAX_ATTEMPTS = "three", want ...`),
// or the file and line (`shared config /home/u/.aws/config:7: max_attempts
// = "0", want ...`), as do malformed lines of the file. A value or line
// longer than 64 bytes is quoted cut to its first 48, followed by its
// length (`"3\n4\n4..."... (100001 bytes)`). A bad option in opts is reported as
// NewStandard and NewAdaptive report it, and a nil option is an error.
//
// FromEnvironment reads the process environment with os.LookupEnv and the
// home directory with os.UserHomeDir. FromEnvironmentLookup reads the same
// settings from any source.
func FromEnvironment(opts ...AdaptiveOption) (RetryStrategy, error) {
	return fromEnvironment(os.LookupEnv, os.UserHomeDir, opts)
}

// FromEnvironmentLookup is FromEnvironment with the environment read
// through lookup, which has the signature and meaning of os.LookupEnv: a
// map in a test, a configuration store, or os.LookupEnv filtered. All
// variables come from lookup, including AWS_CONFIG_FILE, AWS_PROFILE and
// the home directory used for ~/.aws/config and "~" in AWS_CONFIG_FILE
// (HOME; USERPROFILE on Windows; home on Plan 9). When lookup gives no home
// directory and no AWS_CONFIG_FILE, no file is read, so a lookup over a
// plain map never reads the real user's configuration. A nil lookup is an
// error wrapping ErrInvalidConfig.
func FromEnvironmentLookup(lookup func(key string) (value string, ok bool), opts ...AdaptiveOption) (RetryStrategy, error) {
	if lookup == nil {
		return nil, configError("FromEnvironmentLookup lookup", "nil", "a non-nil function such as os.LookupEnv")
	}
	return fromEnvironment(lookup, lookupHomeDir(lookup), opts)
}

// lookupHomeDir returns a function that finds the home directory in lookup
// as os.UserHomeDir finds it in the process environment.
func lookupHomeDir(lookup func(string) (string, bool)) func() (string, error) {
	return func() (string, error) {
		key := "HOME"
		switch runtime.GOOS {
		case "windows":
			key = "USERPROFILE"
		case "plan9":
			key = "home"
		}
		if home, ok := lookup(key); ok && home != "" {
			return home, nil
		}
		return "", fmt.Errorf("$%s is not defined", key)
	}
}

// fromEnvironment is FromEnvironment with its sources given.
func fromEnvironment(lookup func(string) (string, bool), homeDir func() (string, error), opts []AdaptiveOption) (RetryStrategy, error) {
	for i, o := range opts {
		if o == nil {
			return nil, configError(fmt.Sprintf("opts[%d]", i), "nil", "a non-nil option")
		}
	}
	env, err := readEnvironment(lookup, homeDir)
	if err != nil {
		return nil, err
	}

	// The environment's settings go first, so that opts, applied after
	// them, win: options only record values, and the last one counts.
	all := make([]AdaptiveOption, 0, len(opts)+2)
	switch {
	case env.mode == modeLegacy:
		all = append(all, WithProfile(ProfileLegacy))
	case env.newRetries:
		all = append(all, WithProfile(ProfileAWS2026))
	}
	if env.maxAttempts > 0 {
		all = append(all, WithMaxAttempts(env.maxAttempts))
	}
	all = append(all, opts...)

	if env.mode == modeAdaptive {
		a, err := NewAdaptive(all...)
		if err != nil {
			return nil, err
		}
		return a, nil
	}
	std := make([]StandardOption, len(all))
	for i, o := range all {
		so, ok := o.(StandardOption)
		if !ok {
			return nil, adaptiveOnlyError(i-(len(all)-len(opts)), o, env)
		}
		std[i] = so
	}
	s, err := NewStandard(std...)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// adaptiveOnlyError reports opts[i], o, an option only NewAdaptive takes,
// given when env selects a *Standard.
func adaptiveOnlyError(i int, o AdaptiveOption, env environment) error {
	c := adaptiveConfig{maxSendWait: -1} // a value no option sets: WithMaxSendWait(-1) is an error anyway
	o.applyAdaptive(&c)
	name := "an adaptive-only option"
	switch {
	case c.sharedSet:
		name = "WithRateLimiter"
	case c.maxSendWait != -1:
		name = "WithMaxSendWait"
	case c.limiterOptions:
		name = "a RateLimiterOption"
	}
	source := "by default"
	if env.modeSource != "" {
		source = "by " + env.modeSource
	}
	return fmt.Errorf("%w: opts[%d] is %s, which needs adaptive mode, but %s mode is selected %s; want adaptive mode (%s=adaptive) or no adaptive-only options",
		ErrInvalidConfig, i, name, env.mode, source, envRetryMode)
}

// readEnvironment reads and checks the settings of the environment and of
// the shared config file it selects.
func readEnvironment(lookup func(string) (string, bool), homeDir func() (string, error)) (environment, error) {
	var env environment
	path, profile, err := sharedConfigLocation(lookup, homeDir)
	if err != nil {
		return env, err
	}
	file, err := loadSharedConfig(path, profile)
	if err != nil {
		return env, err
	}

	// The file first, then the environment over it; every value found is
	// checked.
	if s := file.retryMode; s.isSet() {
		m, ok := parseRetryMode(s.value)
		if !ok {
			return env, fileValueError(s, "retry_mode", validModes)
		}
		env.mode, env.modeSource = m, fmt.Sprintf("retry_mode at %s", s.location())
	}
	if s := file.maxAttempts; s.isSet() {
		n, ok := parseMaxAttempts(s.value)
		if !ok {
			return env, fileValueError(s, "max_attempts", validMaxAttempts)
		}
		env.maxAttempts = n
	}
	if v, ok := lookup(envRetryMode); ok && v != "" {
		m, ok := parseRetryMode(v)
		if !ok {
			return env, configError(envRetryMode, quoteExcerpt(v), validModes)
		}
		env.mode, env.modeSource = m, envRetryMode
	}
	if v, ok := lookup(envMaxAttempts); ok && v != "" {
		n, ok := parseMaxAttempts(v)
		if !ok {
			return env, configError(envMaxAttempts, quoteExcerpt(v), validMaxAttempts)
		}
		env.maxAttempts = n
	}
	if v, ok := lookup(envNewRetries); ok && v != "" {
		switch {
		case equalFoldASCII(v, "true"):
			env.newRetries = true
		case equalFoldASCII(v, "false"):
		default:
			return env, configError(envNewRetries, quoteExcerpt(v), "true or false (in any case)")
		}
	}
	return env, nil
}

// fileValueError reports a bad value of key read from the shared config
// file at s.
func fileValueError(s sharedSetting, key, valid string) error {
	return configError(fmt.Sprintf("shared config %s: %s", s.location(), key), quoteExcerpt(s.value), valid)
}

// excerptBytes is how much of a long value or line errors quote; one at
// most excerptSlack bytes longer is quoted whole, as cutting it would save
// little.
const (
	excerptBytes = 48
	excerptSlack = 16
)

// quoteExcerpt returns s quoted as strconv.Quote quotes it if it is short.
// A longer s is cut, at a character boundary, to its first excerptBytes
// bytes or less, quoted, and followed by "..." and its length in bytes,
// so that an error message stays short whatever the value.
func quoteExcerpt(s string) string {
	if len(s) <= excerptBytes+excerptSlack {
		return strconv.Quote(s)
	}
	cut := excerptBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// parseRetryMode returns the mode v names, in any case.
func parseRetryMode(v string) (retryMode, bool) {
	for _, m := range []retryMode{modeStandard, modeAdaptive, modeLegacy} {
		if equalFoldASCII(v, m.String()) {
			return m, true
		}
	}
	return 0, false
}

// parseMaxAttempts returns the number of attempts v gives, a decimal
// integer of 1 or more, in the syntax of strconv.Atoi: an optional sign,
// then ASCII digits.
func parseMaxAttempts(v string) (int, bool) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// equalFoldASCII reports whether s is lower, a lower-case ASCII word, in
// any case. Unlike strings.EqualFold it folds only ASCII letters, so that
// "\u017ftandard" (with a long s) is not "standard".
func equalFoldASCII(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
