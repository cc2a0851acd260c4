package mcpbridge

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Environment variables read by LoadConfig.
const (
	EnvTimeout    = "MCP_BRIDGE_TIMEOUT"
	EnvMaxTimeout = "MCP_BRIDGE_MAX_TIMEOUT"
	EnvOutputMode = "MCP_BRIDGE_OUTPUT_MODE"
)

// Output modes of the tool's text content.
const (
	OutputCompact = "compact"
	OutputTOON    = "toon"
)

// Defaults of Config.
const (
	DefaultTimeout    = 30 * time.Second
	DefaultMaxTimeout = 120 * time.Second
)

// Config is the bridge's own configuration, read from the environment.
type Config struct {
	// DefaultTimeout applies when a call gives none.
	DefaultTimeout time.Duration
	// MaxTimeout caps every call's timeout; DefaultTimeout is capped too.
	MaxTimeout time.Duration
	// OutputMode is OutputCompact or OutputTOON.
	OutputMode string
}

// LoadConfig reads the configuration from getenv (os.Getenv when nil);
// every invalid variable is named in the one error.
func LoadConfig(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	c := Config{DefaultTimeout: DefaultTimeout, MaxTimeout: DefaultMaxTimeout, OutputMode: OutputCompact}
	var errs []error
	seconds := func(name string, dst *time.Duration) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 24*3600 {
			errs = append(errs, fmt.Errorf("%s=%q: want whole seconds from 1 to 86400", name, v))
			return
		}
		*dst = time.Duration(n) * time.Second
	}
	seconds(EnvTimeout, &c.DefaultTimeout)
	seconds(EnvMaxTimeout, &c.MaxTimeout)
	switch v := strings.ToLower(strings.TrimSpace(getenv(EnvOutputMode))); v {
	case "", OutputCompact:
	case OutputTOON:
		c.OutputMode = OutputTOON
	default:
		errs = append(errs, fmt.Errorf("%s=%q: want compact or toon", EnvOutputMode, v))
	}
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("invalid settings: %w", errors.Join(errs...))
	}
	c.DefaultTimeout = min(c.DefaultTimeout, c.MaxTimeout)
	return c, nil
}
