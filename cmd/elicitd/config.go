package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcp-elicit/elicit/elicit"
	"github.com/mcp-elicit/elicit/store"
)

// config is elicitd's resolved configuration. Every field but now comes
// from one setting in settings (flag > ELICIT_* environment > --config
// file > default).
type config struct {
	configFile   string // --config; "" = none
	addr         string
	dataDir      string
	storeURL     string // "" = SQLite in dataDir; else a postgres:// URL
	masterKeyB64 string // ELICIT_MASTER_KEY; "" = the key file in dataDir
	stateKeys    string // ELICIT_STATE_KEYS; "" = one key derived from the master key
	publicURL    string
	// publicURLFromListener: --addr has port 0 and no --public-url was
	// given, so run sets publicURL from the bound address.
	publicURLFromListener bool
	insecureDemoAuth      bool
	logLevel              slog.Level
	auditLog              string    // "-" = stdout, "off", else a file path (appended)
	auditOut              io.Writer // tests: the audit sink, instead of auditLog
	metricsAddr           string    // "" = /metrics on addr; "off"; else its own listener
	allowedHosts          []string  // --allowed-hosts (hosts.go)
	keysRefresh           time.Duration
	readHeaderTimeout     time.Duration
	readTimeout           time.Duration
	idleTimeout           time.Duration
	shutdownTimeout       time.Duration
	shutdownGrace         time.Duration // on SIGTERM, /readyz not ready this long before the listeners close
	storeTimeout          time.Duration // deadline of every store call (storeops.go)
	storeMaxConns         int           // 0 = the driver's default
	sweepInterval         time.Duration
	retainFlows           time.Duration // kept this long past expiry
	retainOperations      time.Duration
	retainAttempts        time.Duration
	retainReports         time.Duration // 0 = kept
	taskTTL               time.Duration // tasks extension: ttlMs
	taskLease             time.Duration // tasks extension: a run's lease
	maxTasksPerUser       int           // tasks extension: live tasks per user; -1: no limit
	exportTime            time.Duration // export_and_send's simulated export
	maxOAuthAttempts      int
	auditMaxSizeMiB       int                           // rotate --audit-log FILE at this size; 0 = never
	auditMaxFiles         int                           // rotated files kept
	demoOAuthAddr         string                        // demo calendar provider; "" = none (calendar.go)
	urlWait               time.Duration                 // --url-wait; 0 = off (urlwait.go)
	auth                  authConfig                    // --auth and its settings (jwtauth.go)
	stdio                 bool                          // --stdio: MCP on stdin/stdout (stdio.go)
	stdioUser             string                        // the principal a --stdio server serves
	given                 map[string]bool               // settings given (flag, environment or file), by name
	now                   func() time.Time              // nil = time.Now; tests inject a clock
	wrapStore             func(store.Store) store.Store // tests: wraps the opened store (fault injection)
}

// setting is one configuration setting. Its flag is --name, its
// environment variable env (ELICIT_ + NAME in upper case with _ for -,
// unless given), its --config file key name. Settings with envOnly hold
// secrets: no flag (it would show in ps) and no file key.
type setting struct {
	name    string
	env     string // "" = ELICIT_<NAME>
	def     string // default, as it would be written on the command line
	defDoc  string // default as documented, when def is not self-explanatory
	usage   string // one line: --help and the docs/elicitd.md table
	isBool  bool
	envOnly bool
	noFile  bool // not a --config file key (only --config itself)
	apply   func(c *config, v string) error
}

func (s *setting) envName() string {
	if s.env != "" {
		return s.env
	}
	return "ELICIT_" + strings.ToUpper(strings.ReplaceAll(s.name, "-", "_"))
}

func (s *setting) defaultText() string {
	if s.defDoc != "" {
		return s.defDoc
	}
	return s.def
}

// settings lists every setting in --help and docs/elicitd.md order. Another file
// adds its own with addSettings in an init func, so a new feature's
// settings live next to its code.
var settings = []setting{
	{name: "config", def: "", usage: "JSON file of settings (keys are flag names; unknown keys are refused; a regular file of at most 1 MiB)", noFile: true,
		apply: func(c *config, v string) error { c.configFile = v; return nil }},
	{name: "addr", def: "127.0.0.1:3000", usage: "listen address host:port (with --stdio, of the pages alone; then 127.0.0.1:0 unless given)",
		apply: func(c *config, v string) error { c.addr = v; return nil }},
	{name: "data", def: "./elicitd-data", usage: "data directory (SQLite store, master.key); with --stdio, elicitd in the user's config directory unless given",
		apply: func(c *config, v string) error { c.dataDir = v; return nil }},
	{name: "store", def: "", defDoc: "SQLite in --data", usage: "PostgreSQL URL postgres://user@host/db shared by several instances",
		apply: func(c *config, v string) error { c.storeURL = v; return nil }},
	{name: "public-url", def: "", defDoc: "http://<addr>", usage: "origin users' browsers reach this server at",
		apply: func(c *config, v string) error { c.publicURL = v; return nil }},
	{name: "insecure-demo-auth", def: "false", isBool: true, usage: "allow demo bearer auth (token = user name) on a non-loopback --addr or --public-url",
		apply: func(c *config, v string) (err error) { c.insecureDemoAuth, err = parseBool(v); return err }},
	{name: "log-level", def: "info", usage: "operational log level: debug, info, warn, error",
		apply: func(c *config, v string) error {
			if c.logLevel.UnmarshalText([]byte(v)) != nil {
				return fmt.Errorf("want debug, info, warn or error, not %q", v)
			}
			return nil
		}},
	{name: "audit-log", def: "-", usage: "audit records (JSON lines): - for stdout (stderr with --stdio: stdout carries MCP), off, or a file to append to",
		apply: func(c *config, v string) error { c.auditLog = offOr(v); return nil }},
	{name: "metrics-addr", def: "", defDoc: "on --addr", usage: "host:port of a separate listener for /metrics, /healthz and /readyz, or off (no /metrics)",
		apply: func(c *config, v string) error { c.metricsAddr = offOr(v); return nil }},
	{name: "allowed-hosts", def: "", usage: "more host names accepted in Host and Origin on both listeners, comma-separated (loopback names, the public URL's host and the listener's own are always accepted; IP addresses too on /healthz, /readyz and /metrics); * accepts any (only behind a proxy that checks Host)",
		apply: applyAllowedHosts},
	{name: "state-keys-refresh", def: "30s", usage: "how often the store's requestState key ring is re-read; must be shorter than keys rotate --activate-after",
		apply: durationSetter(func(c *config) *time.Duration { return &c.keysRefresh })},
	{name: "read-header-timeout", def: "10s", usage: "time to read a request's headers",
		apply: durationSetter(func(c *config) *time.Duration { return &c.readHeaderTimeout })},
	{name: "read-timeout", def: "30s", usage: "time to read a whole request, body included",
		apply: durationSetter(func(c *config) *time.Duration { return &c.readTimeout })},
	{name: "idle-timeout", def: "2m", usage: "how long an idle keep-alive connection stays open",
		apply: durationSetter(func(c *config) *time.Duration { return &c.idleTimeout })},
	{name: "shutdown-timeout", def: "10s", usage: "on SIGTERM/SIGINT, how long in-flight requests get to finish, and then interrupted task runs to return",
		apply: durationSetter(func(c *config) *time.Duration { return &c.shutdownTimeout })},
	{name: "master-key", env: masterKeyEnv, envOnly: true, def: "", defDoc: "master.key in --data", usage: "vault master key, 32 bytes in standard base64; same on every instance",
		apply: func(c *config, v string) error { c.masterKeyB64 = v; return nil }},
	{name: "state-keys", env: stateKeysEnv, envOnly: true, def: "", defDoc: "the store's ring", usage: "requestState key ring id:base64,... (the first seals, all open), instead of the store's (elicitd keys)",
		apply: func(c *config, v string) error { c.stateKeys = v; return nil }},
}

// isOff reports whether v is the special value off, in any case.
func isOff(v string) bool { return strings.EqualFold(v, "off") }

// offOr returns "off" for any spelling of off, else v.
func offOr(v string) string {
	if isOff(v) {
		return "off"
	}
	return v
}

// parseBool is strconv.ParseBool with an error that says what is wanted.
func parseBool(v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("want true or false, not %q", v)
	}
	return b, nil
}

// addSettings appends settings (from another file's init func).
func addSettings(s ...setting) { settings = append(settings, s...) }

func durationSetter(field func(*config) *time.Duration) func(*config, string) error {
	return func(c *config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		if d <= 0 {
			return errors.New("must be positive")
		}
		*field(c) = d
		return nil
	}
}

// minDurationSetter is durationSetter for durations of at least min (0
// allowed when min is 0), with why in the error.
func minDurationSetter(min time.Duration, why string, field func(*config) *time.Duration) func(*config, string) error {
	return func(c *config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		if d < min || d < 0 {
			if min == 0 {
				return errors.New("must not be negative")
			}
			return fmt.Errorf("must be at least %v: %s", min, why)
		}
		*field(c) = d
		return nil
	}
}

// intSetter parses a whole number of at least min.
func intSetter(min int, field func(*config) *int) func(*config, string) error {
	return func(c *config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("want a whole number, not %q", v)
		}
		if n < min {
			return fmt.Errorf("must be at least %d", min)
		}
		*field(c) = n
		return nil
	}
}

// flagValue records a flag's text and whether it was given.
type flagValue struct {
	set    bool
	value  string
	isBool bool
}

func (f *flagValue) String() string   { return f.value }
func (f *flagValue) IsBoolFlag() bool { return f.isBool }
func (f *flagValue) Set(v string) error {
	if f.isBool {
		if _, err := parseBool(v); err != nil {
			return err
		}
	}
	f.set, f.value = true, v
	return nil
}

// parseFlags resolves the configuration from args, the process
// environment and the --config file.
func parseFlags(args []string, helpOut io.Writer) (*config, error) {
	return loadConfig(args, os.Getenv, helpOut)
}

// loadConfig resolves every setting: flag, else a non-empty environment
// variable, else the --config file, else the default; then checks the
// whole.
func loadConfig(args []string, getenv func(string) string, helpOut io.Writer) (*config, error) {
	return loadConfigFor("elicitd", args, getenv, helpOut)
}

// loadConfigFor is loadConfig for the command cmd ("elicitd" or "elicitd
// keys"): --help prints cmd's usage to helpOut (stdout: it was asked
// for); a flag error is returned once, with a hint to see cmd --help, and
// no usage.
func loadConfigFor(cmd string, args []string, getenv func(string) string, helpOut io.Writer) (*config, error) {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	values := make([]*flagValue, len(settings))
	for i := range settings {
		s := &settings[i]
		values[i] = &flagValue{isBool: s.isBool, value: s.def}
		if !s.envOnly {
			fs.Var(values[i], s.name, s.usage)
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if cmd == "elicitd" {
				writeUsage(helpOut)
			} else {
				_, _ = io.WriteString(helpOut, keysUsage)
			}
			return nil, err
		}
		return nil, usageError{fmt.Errorf("%w (see %s --help)", err, cmd)}
	}
	if fs.NArg() > 0 {
		return nil, usageError{fmt.Errorf("unexpected arguments: %s (see %s --help)", strings.Join(fs.Args(), " "), cmd)}
	}
	// --config first: the file is the lowest layer but names itself.
	ci := slices.IndexFunc(settings, func(s setting) bool { return s.name == "config" })
	configFile := getenv(settings[ci].envName())
	if values[ci].set {
		configFile = values[ci].value
	}
	var file map[string]string
	if configFile != "" {
		data, err := readConfigFile(configFile)
		if err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		if file, err = parseConfigFile(data); err != nil {
			return nil, fmt.Errorf("--config %s: %w", configFile, err)
		}
	}
	cfg := &config{given: map[string]bool{}}
	for i := range settings {
		s := &settings[i]
		v, from := s.def, "default"
		if fv, ok := file[s.name]; ok {
			v, from = fv, "--config "+configFile
		}
		if ev := getenv(s.envName()); ev != "" {
			v, from = ev, s.envName()
		}
		if values[i].set {
			v, from = values[i].value, "--"+s.name
		}
		cfg.given[s.name] = from != "default"
		if err := s.apply(cfg, v); err != nil {
			if s.envOnly || from == s.envName() {
				return nil, fmt.Errorf("%s: %w", s.envName(), err)
			}
			if from == "--"+s.name {
				return nil, fmt.Errorf("--%s: %w", s.name, err)
			}
			return nil, fmt.Errorf("--%s (from %s): %w", s.name, from, err)
		}
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// check validates the settings together and fills derived defaults.
func (cfg *config) check() error {
	if err := cfg.checkStdio(); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(cfg.addr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	if err := cfg.checkDemoAuth(host); err != nil {
		return err
	}
	if cfg.storeURL != "" && !isPostgresURL(cfg.storeURL) {
		return fmt.Errorf("--store must be a postgres:// or postgresql:// URL (or empty for SQLite in --data)")
	}
	if err := cfg.checkMetrics(); err != nil {
		return err
	}
	if cfg.auditLog == "" {
		return fmt.Errorf("--audit-log: want -, off or a file path")
	}
	if _, err := parseStateKeys(cfg.stateKeys); err != nil {
		return err
	}
	if err := cfg.checkPublicURL(host); err != nil {
		return err
	}
	return cfg.auth.check(cfg.publicURL)
}

// checkDemoAuth: demo auth (anyone can claim any user) listens beyond
// loopback (host is --addr's) only with --insecure-demo-auth, and --auth
// jwt is not given that flag.
func (cfg *config) checkDemoAuth(host string) error {
	if cfg.auth.mode != "jwt" && !isLoopback(host) && !cfg.insecureDemoAuth {
		return fmt.Errorf("--addr %s is not a loopback address: demo auth lets anyone claim any user; pass --insecure-demo-auth to accept that", cfg.addr)
	}
	if cfg.auth.mode == "jwt" && cfg.insecureDemoAuth {
		// The mirror of demo mode refusing JWT settings: the operator
		// expects something --auth jwt does not do.
		return errors.New("--auth jwt does not use --insecure-demo-auth (tokens are checked, no demo sign-in): remove it")
	}
	return nil
}

// checkMetrics: --metrics-addr is off, empty (served on --addr) or a
// listener of its own.
func (cfg *config) checkMetrics() error {
	if cfg.metricsAddr == "" || cfg.metricsAddr == "off" {
		return nil
	}
	if _, _, err := net.SplitHostPort(cfg.metricsAddr); err != nil {
		return fmt.Errorf("--metrics-addr: %w", err)
	}
	if sameListener(cfg.addr, cfg.metricsAddr) {
		return fmt.Errorf("--metrics-addr %s is --addr's listener: give it another port, or leave it empty to serve /metrics on --addr", cfg.metricsAddr)
	}
	return nil
}

// checkPublicURL fills --public-url from --addr when empty and checks it
// is an origin; host is --addr's host.
func (cfg *config) checkPublicURL(host string) error {
	fromListener, derived := false, cfg.publicURL == ""
	if derived {
		cfg.publicURL = "http://" + cfg.addr
		if _, port, _ := net.SplitHostPort(cfg.addr); port == "0" {
			// A free port is only known once bound: run sets the origin
			// from the listener; a placeholder port passes the checks.
			if cfg.auth.mode == "jwt" {
				return fmt.Errorf("--addr %s picks a free port: --auth jwt needs --public-url (tokens' audience is derived from it)", cfg.addr)
			}
			fromListener = true
			cfg.publicURL = "http://" + net.JoinHostPort(host, "1")
		}
	}
	u, err := url.Parse(cfg.publicURL)
	if err != nil || !isOrigin(u) {
		return fmt.Errorf("--public-url must be an http(s) origin with an ASCII host (punycode for IDNs) and a valid port, such as https://mcp.example.com")
	}
	// Browsers reach the pages at this origin, and demo sign-in takes any
	// user name: behind a public origin anyone could be anyone.
	if cfg.auth.mode != "jwt" && !isLoopback(u.Hostname()) && !cfg.insecureDemoAuth {
		return fmt.Errorf("--public-url %s is not a loopback origin: demo auth lets anyone claim any user; use --auth jwt, or pass --insecure-demo-auth to accept that", cfg.publicURL)
	}
	cfg.publicURL = canonicalOrigin(u)
	// The flows' links are built on this origin; one the URL-mode rules
	// refuse (plain http off loopback, SEC-U-S-04) would fail every URL
	// tool after its flow was made.
	if err := elicit.CheckURL(cfg.publicURL + "/ui/"); err != nil {
		if derived {
			return fmt.Errorf("--addr %s is not a loopback address: set --public-url to the https origin users' browsers reach this server at (URL-mode links may be plain http only on loopback)", cfg.addr)
		}
		return fmt.Errorf("--public-url %s: URL-mode links may be plain http only on a loopback host (localhost, *.localhost, 127.0.0.1, [::1]); use an https origin, e.g. a TLS proxy in front of elicitd", cfg.publicURL)
	}
	cfg.publicURLFromListener = fromListener
	return nil
}

// isOrigin reports whether u is an http(s) origin: scheme and host, at
// most a "/" path, nothing else.
func isOrigin(u *url.URL) bool {
	return (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && (u.Path == "" || u.Path == "/") &&
		u.User == nil && u.RawQuery == "" && u.Fragment == "" && validOriginHost(u)
}

// demoAuthExposed reports whether demo auth (anyone can claim any user)
// is reachable beyond loopback: --insecure-demo-auth with a non-loopback
// --addr or --public-url. elicitd logs a warning at start then.
func (cfg *config) demoAuthExposed() bool {
	if cfg.auth.mode == "jwt" || !cfg.insecureDemoAuth {
		return false
	}
	host, _, _ := net.SplitHostPort(cfg.addr)
	u, err := url.Parse(cfg.publicURL)
	return !isLoopback(host) || err != nil || !isLoopback(u.Hostname())
}

// sameListener reports whether listening on a and b would take the same
// port: the same non-zero port on the same host, or on any host when
// either is a wildcard ("", 0.0.0.0, ::).
func sameListener(a, b string) bool {
	ha, pa, err1 := net.SplitHostPort(a)
	hb, pb, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || pa != pb || pa == "0" {
		return false
	}
	wild := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return strings.EqualFold(ha, hb) || wild(ha) || wild(hb)
}

// canonicalOrigin spells u's origin the way browsers send it in Origin
// (RFC 6454 serialization), which the pages compare as text: lower-case
// scheme and host, no default port (80 for http, 443 for https), the port
// in plain decimal (no leading zeros), no trailing slash. u has passed
// validOriginHost.
func canonicalOrigin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // IPv6 literal
	}
	if p := u.Port(); p != "" {
		n, _ := strconv.Atoi(p)
		if !(scheme == "http" && n == 80) && !(scheme == "https" && n == 443) {
			host += ":" + strconv.Itoa(n)
		}
	}
	return scheme + "://" + host
}

// validOriginHost reports whether u's host is plain ASCII (an IDN must be
// given in punycode, so the origin compares the way browsers send it) and
// its port, if any, is 1-65535.
func validOriginHost(u *url.URL) bool {
	for _, r := range u.Host {
		if r > 0x7e || r <= 0x20 {
			return false
		}
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		return err == nil && n >= 1 && n <= 65535
	}
	return !strings.HasSuffix(u.Host, ":")
}

// maxConfigFile bounds the --config file, in bytes: settings take a few
// KiB, and a device or a runaway file must not exhaust memory.
const maxConfigFile = 1 << 20

// readConfigFile reads the --config file, refusing anything but a regular
// file (a device such as /dev/zero, a FIFO, a directory) and a file over
// maxConfigFile bytes. It checks the type before opening (opening a FIFO
// would wait for a writer), opens without blocking in case the path was
// swapped meanwhile, and checks the opened file again.
func readConfigFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := openNonblocking(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxConfigFile {
		return nil, fmt.Errorf("%s is larger than %d KiB", path, maxConfigFile>>10)
	}
	return data, nil
}

// parseConfigFile decodes a --config file: one JSON object whose keys are
// setting names (flag names without --) and whose values are strings, or
// booleans for on/off settings. Unknown or repeated keys, other value
// types, and env-only settings (secrets) are refused.
func parseConfigFile(data []byte) (map[string]string, error) {
	var raw map[string]jsontext.Value
	if err := json.Unmarshal(data, &raw); err != nil {
		if se := (*jsontext.SyntacticError)(nil); errors.As(err, &se) && errors.Is(se.Err, jsontext.ErrDuplicateName) {
			return nil, fmt.Errorf("setting %q given twice", se.JSONPointer.LastToken())
		}
		return nil, err
	}
	if raw == nil {
		return nil, errors.New("want a JSON object")
	}
	out := make(map[string]string, len(raw))
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		i := slices.IndexFunc(settings, func(s setting) bool { return s.name == k })
		if i < 0 {
			return nil, fmt.Errorf("unknown setting %q", k)
		}
		s := &settings[i]
		if s.envOnly || s.noFile {
			return nil, fmt.Errorf("setting %q cannot be set in a config file (use %s)", k, s.envName())
		}
		v := raw[k]
		switch v.Kind() {
		case '"':
			var str string
			if err := json.Unmarshal(v, &str); err != nil {
				return nil, fmt.Errorf("%q: %w", k, err)
			}
			out[k] = str
		case 't', 'f':
			if !s.isBool {
				return nil, fmt.Errorf("%q: want a string", k)
			}
			out[k] = strconv.FormatBool(v.Kind() == 't')
		default:
			if s.isBool {
				return nil, fmt.Errorf("%q: want true or false", k)
			}
			return nil, fmt.Errorf("%q: want a string", k)
		}
	}
	return out, nil
}

// writeUsage prints elicitd --help: the commands, then every setting with
// its flag, environment variable and default.
func writeUsage(w io.Writer) {
	var b bytes.Buffer
	b.WriteString(`Usage:
  elicitd [flags]                 serve MCP on --addr until SIGTERM or SIGINT
  elicitd keys list [flags]       list the store's requestState keys (ids, created, seals from, role)
  elicitd keys rotate [--activate-after D] [flags]
                                  add a requestState key that seals from now + D (default 2m;
                                  D must exceed every instance's --state-keys-refresh)
  elicitd keys retire ID [--force] [flags]
                                  remove a key that no longer seals (states it sealed stop opening)
  elicitd keys --help             the keys command in detail

Exit status: 0 done (and --help), 1 failed, 2 usage error (unknown command
or flag, missing or extra arguments).

Each setting is a flag, an environment variable, or a key of the --config
JSON file; a flag wins over the environment, which wins over the file.

`)
	for i := range settings {
		s := &settings[i]
		if s.envOnly {
			fmt.Fprintf(&b, "  (environment only)\n")
		} else if s.isBool {
			fmt.Fprintf(&b, "  --%s\n", s.name)
		} else {
			fmt.Fprintf(&b, "  --%s VALUE\n", s.name)
		}
		fmt.Fprintf(&b, "        %s\n        env %s", s.usage, s.envName())
		if d := s.defaultText(); d != "" {
			fmt.Fprintf(&b, "; default %s", d)
		}
		b.WriteString("\n")
	}
	_, _ = w.Write(b.Bytes())
}

// settingsTable is the configuration table of docs/elicitd.md, generated
// from settings (a test keeps the page equal to it).
func settingsTable() string {
	var b strings.Builder
	b.WriteString("| Flag | Environment | Default | Meaning |\n|---|---|---|---|\n")
	for i := range settings {
		s := &settings[i]
		flagCol := "—"
		if !s.envOnly {
			flagCol = "`--" + s.name + "`"
		}
		def := s.defaultText()
		switch {
		case def == "":
			def = "none"
		case !strings.Contains(def, " "):
			def = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", flagCol, s.envName(), def, s.usage)
	}
	return b.String()
}
