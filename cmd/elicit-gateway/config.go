package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-elicit/elicit/auth"
	"github.com/mcp-elicit/elicit/auth/jwtauth"
	"github.com/mcp-elicit/elicit/gateway"
	"github.com/mcp-elicit/elicit/internal/ctxtime"
	"github.com/mcp-elicit/elicit/reqstate"
	"github.com/mcp-elicit/elicit/reqstate/keyring"
	"github.com/mcp-elicit/elicit/store"
	"github.com/mcp-elicit/elicit/store/postgres"
	"github.com/mcp-elicit/elicit/store/sqlite"
)

// Environment variables holding secrets (no flag: it would show in ps).
const (
	envMasterKey  = "ELICIT_GATEWAY_MASTER_KEY"
	envPeerSecret = "ELICIT_GATEWAY_PEER_SECRET"
)

var errHelp = errors.New("help shown")

// config is the resolved configuration.
type config struct {
	addr            string
	dataDir         string
	storeURL        string
	upstreams       []gateway.Upstream
	prefixAll       bool
	authMode        string
	insecureDemo    bool
	jwt             jwtauth.JWTOptions
	allowedHosts    []string
	logLevel        slog.Level
	auditLog        string
	peerURL         string
	shutdownTimeout time.Duration
	maxProcesses    int
	processIdle     time.Duration
	stderr          io.Writer // a cmd: upstream's processes' standard error
	getenv          func(string) string
}

// setting is one flag, its environment variable and its config file key.
type setting struct {
	name, def, usage string
	repeated, isBool bool
}

var settings = []setting{
	{name: "config", usage: "JSON file of settings: keys are flag names, values strings (arrays of strings for repeated settings)"},
	{name: "addr", def: "127.0.0.1:3100", usage: "listen address host:port"},
	{name: "data", def: "./elicit-gateway-data", usage: "data directory: the SQLite store of the requestState keys and master.key"},
	{name: "store", usage: "PostgreSQL URL postgres://user@host/db shared by several gateway instances (instead of SQLite in --data)"},
	{name: "upstream", repeated: true, usage: "NAME=URL of an upstream MCP server, or NAME=cmd:PROGRAM ARGS for a local one over stdio, one process per user ({user} in ARGS is the user as one path element, bytes other than A-Za-z0-9_- as %XX; ELICIT_UPSTREAM_USER the id as is) (repeat for several); NAME is 1-32 of a-z, 0-9 and -, starting with a letter"},
	{name: "upstream-tokens", repeated: true, usage: "NAME=FILE: the upstream's token per user, \"principal token\" lines (@gateway: the gateway's own, for listing); without it the upstream gets no Authorization header"},
	{name: "upstream-revision", repeated: true, usage: "NAME=REVISION: 2026-07-28 or 2025-11-25 instead of finding out"},
	{name: "stdio-max-processes", def: "16", usage: "the most processes one cmd: upstream runs at once (one per user)"},
	{name: "stdio-idle", def: "5m", usage: "a cmd: upstream's process unused this long is closed"},
	{name: "prefix-all", def: "false", isBool: true, usage: "prefix every tool and prompt name with its upstream's name and _, not only colliding ones"},
	{name: "auth", def: "demo", usage: "client authentication: demo (bearer token = user name; loopback only), none (every client is one anonymous user; loopback only) or jwt (bearer JWTs from --jwt-issuer)"},
	{name: "insecure-demo-auth", def: "false", isBool: true, usage: "allow demo auth on a non-loopback --addr"},
	{name: "jwt-issuer", usage: "--auth jwt: issuer URL (its metadata gives the JWKS)"},
	{name: "jwt-resource", usage: "--auth jwt: this gateway's resource identifier; tokens' aud must contain it"},
	{name: "jwt-scopes", usage: "--auth jwt: scopes every token must grant, comma-separated"},
	{name: "allowed-hosts", usage: "more host names accepted in Host and Origin, comma-separated"},
	{name: "log-level", def: "info", usage: "debug, info, warn or error"},
	{name: "audit-log", def: "-", usage: "audit records as JSON lines: - for stdout, off, or a file to append to"},
	{name: "peer-url", usage: "this instance's /mcp URL as other instances reach it, to take retries of the 2025 calls it holds (needs ELICIT_GATEWAY_PEER_SECRET, the same on every instance)"},
	{name: "shutdown-timeout", def: "10s", usage: "on SIGTERM/SIGINT, how long in-flight requests get to finish"},
}

func envName(name string) string {
	return "ELICIT_GATEWAY_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// multi collects a repeated flag.
type multi struct{ vals []string }

func (m *multi) String() string     { return strings.Join(m.vals, ",") }
func (m *multi) Set(v string) error { m.vals = append(m.vals, v); return nil }

// loadConfig resolves the settings: flag, then environment, then the
// --config file, then the default. The processes of cmd: upstreams write
// their standard error to stderr.
func loadConfig(args []string, getenv func(string) string, helpOut, stderr io.Writer) (*config, error) {
	fl, err := parseFlags(args, helpOut)
	if err != nil {
		return nil, err
	}
	path := *fl.single["config"]
	if !fl.set["config"] {
		path = getenv(envName("config"))
	}
	file, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	vals := map[string][]string{}
	for _, s := range settings {
		v, err := fl.value(s, getenv, file, path)
		if err != nil {
			return nil, err
		}
		vals[s.name] = v
	}
	return resolve(vals, getenv, stderr)
}

// flagValues are the command line's settings.
type flagValues struct {
	single   map[string]*string
	repeated map[string]*multi
	bools    map[string]*bool
	set      map[string]bool // given on the command line
}

// parseFlags reads the command line; -h is errHelp.
func parseFlags(args []string, helpOut io.Writer) (*flagValues, error) {
	fs := flag.NewFlagSet("elicit-gateway", flag.ContinueOnError)
	fs.SetOutput(helpOut)
	fl := &flagValues{single: map[string]*string{}, repeated: map[string]*multi{}, bools: map[string]*bool{}, set: map[string]bool{}}
	for _, s := range settings {
		usage := s.usage + " [" + envName(s.name) + "]"
		switch {
		case s.repeated:
			fl.repeated[s.name] = &multi{}
			fs.Var(fl.repeated[s.name], s.name, usage)
		case s.isBool:
			fl.bools[s.name] = fs.Bool(s.name, false, usage)
		default:
			fl.single[s.name] = fs.String(s.name, s.def, usage)
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, errHelp
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	fs.Visit(func(f *flag.Flag) { fl.set[f.Name] = true })
	return fl, nil
}

// readConfigFile reads the --config file ("" is none): an object whose
// keys are setting names.
func readConfigFile(path string) (map[string]json.RawMessage, error) {
	file := map[string]json.RawMessage{}
	if path == "" {
		return file, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for k := range file {
		if !slices.ContainsFunc(settings, func(s setting) bool { return s.name == k }) || k == "config" {
			return nil, fmt.Errorf("%s: unknown setting %q", path, k)
		}
	}
	return file, nil
}

// value is one setting's values: from the command line, else the
// environment, else the file (at path), else the default.
func (fl *flagValues) value(s setting, getenv func(string) string, file map[string]json.RawMessage, path string) ([]string, error) {
	switch {
	case fl.set[s.name] && s.repeated:
		return fl.repeated[s.name].vals, nil
	case fl.set[s.name] && s.isBool:
		return []string{fmt.Sprint(*fl.bools[s.name])}, nil
	case fl.set[s.name]:
		return []string{*fl.single[s.name]}, nil
	}
	if v := getenv(envName(s.name)); v != "" {
		if s.repeated {
			return strings.Split(v, ","), nil
		}
		return []string{v}, nil
	}
	if raw, ok := file[s.name]; ok {
		return fileValue(s, raw, path)
	}
	if s.def == "" {
		return nil, nil
	}
	return []string{s.def}, nil
}

// fileValue reads a setting's value in the --config file: a string, an
// array of strings for a repeated setting, or a boolean for a bool one.
func fileValue(s setting, raw json.RawMessage, path string) ([]string, error) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if s.repeated && json.Unmarshal(raw, &many) == nil {
		return many, nil
	}
	var b bool
	if s.isBool && json.Unmarshal(raw, &b) == nil {
		return []string{fmt.Sprint(b)}, nil
	}
	want := "a string"
	if s.repeated {
		want += " or an array of strings"
	}
	return nil, fmt.Errorf("%s: setting %q: want %s", path, s.name, want)
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// resolve checks the settings' values and builds the config.
func resolve(v map[string][]string, getenv func(string) string, stderr io.Writer) (*config, error) {
	cfg := &config{stderr: stderr, addr: first(v["addr"]), dataDir: first(v["data"]), storeURL: first(v["store"]), authMode: first(v["auth"]),
		auditLog: first(v["audit-log"]), peerURL: first(v["peer-url"]), getenv: getenv}
	var err error
	if cfg.shutdownTimeout, err = time.ParseDuration(first(v["shutdown-timeout"])); err != nil || cfg.shutdownTimeout < 0 {
		return nil, fmt.Errorf("--shutdown-timeout %q: want a duration like 10s", first(v["shutdown-timeout"]))
	}
	if cfg.processIdle, err = time.ParseDuration(first(v["stdio-idle"])); err != nil || cfg.processIdle <= 0 {
		return nil, fmt.Errorf("--stdio-idle %q: want a duration like 5m", first(v["stdio-idle"]))
	}
	if cfg.maxProcesses, err = strconv.Atoi(first(v["stdio-max-processes"])); err != nil || cfg.maxProcesses < 1 {
		return nil, fmt.Errorf("--stdio-max-processes %q: want a number of at least 1", first(v["stdio-max-processes"]))
	}
	cfg.prefixAll = first(v["prefix-all"]) == "true"
	cfg.insecureDemo = first(v["insecure-demo-auth"]) == "true"
	if err := cfg.logLevel.UnmarshalText([]byte(first(v["log-level"]))); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	if h := first(v["allowed-hosts"]); h != "" {
		cfg.allowedHosts = strings.Split(h, ",")
	}
	if err := cfg.readUpstreams(v); err != nil {
		return nil, err
	}
	switch cfg.authMode {
	case "demo", "none":
		if !cfg.insecureDemo && !loopback(cfg.addr) {
			return nil, fmt.Errorf("--auth %s does not authenticate anyone: only on a loopback --addr (not %q) unless --insecure-demo-auth", cfg.authMode, cfg.addr)
		}
	case "jwt":
		cfg.jwt = jwtauth.JWTOptions{Issuer: first(v["jwt-issuer"]), Resource: first(v["jwt-resource"])}
		if s := first(v["jwt-scopes"]); s != "" {
			cfg.jwt.Scopes = strings.Split(s, ",")
		}
		if cfg.jwt.Issuer == "" || cfg.jwt.Resource == "" {
			return nil, errors.New("--auth jwt needs --jwt-issuer and --jwt-resource")
		}
	default:
		return nil, fmt.Errorf("--auth %q: want demo, none or jwt", cfg.authMode)
	}
	if cfg.peerURL != "" && len(getenv(envPeerSecret)) < 32 {
		return nil, fmt.Errorf("--peer-url needs %s, at least 32 bytes, the same on every instance", envPeerSecret)
	}
	return cfg, nil
}

// readUpstreams reads --upstream, --upstream-tokens and
// --upstream-revision.
func (cfg *config) readUpstreams(v map[string][]string) error {
	index := map[string]int{}
	for _, s := range v["upstream"] {
		u, err := cfg.upstream(s)
		if err != nil {
			return err
		}
		if _, dup := index[u.Name]; dup {
			return fmt.Errorf("--upstream %q given twice", u.Name)
		}
		index[u.Name] = len(cfg.upstreams)
		cfg.upstreams = append(cfg.upstreams, u)
	}
	if len(cfg.upstreams) == 0 {
		return errors.New("no --upstream NAME=URL given")
	}
	lookup := func(flagName, s string) (*gateway.Upstream, string, error) {
		name, val, ok := strings.Cut(s, "=")
		i, known := index[name]
		if !ok || !known {
			return nil, "", fmt.Errorf("--%s %q: want NAME=VALUE for a NAME given with --upstream", flagName, s)
		}
		return &cfg.upstreams[i], val, nil
	}
	for _, s := range v["upstream-tokens"] {
		u, path, err := lookup("upstream-tokens", s)
		if err != nil {
			return err
		}
		toks, err := gateway.LoadTokenFile(path)
		if err != nil {
			return fmt.Errorf("--upstream-tokens %s: %w", u.Name, err)
		}
		u.Credentials = toks
	}
	for _, s := range v["upstream-revision"] {
		u, rev, err := lookup("upstream-revision", s)
		if err != nil {
			return err
		}
		u.Revision = rev
	}
	return nil
}

// upstream reads one --upstream: NAME=URL, or NAME=cmd:PROGRAM ARGS
// (separated by white space).
func (cfg *config) upstream(s string) (gateway.Upstream, error) {
	name, where, ok := strings.Cut(s, "=")
	if !ok {
		return gateway.Upstream{}, fmt.Errorf("--upstream %q: want NAME=URL or NAME=cmd:PROGRAM ARGS", s)
	}
	line, isCmd := strings.CutPrefix(where, "cmd:")
	if !isCmd {
		return gateway.Upstream{Name: name, URL: where}, nil
	}
	argv := strings.Fields(line)
	if len(argv) == 0 {
		return gateway.Upstream{}, fmt.Errorf("--upstream %s=cmd: names no program", name)
	}
	return gateway.Upstream{Name: name, Command: gateway.CommandLine(argv[0], argv[1:], cfg.stderr),
		MaxProcesses: cfg.maxProcesses, ProcessIdle: cfg.processIdle}, nil
}

func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// built is a configured gateway, not started.
type built struct {
	g           *gateway.Gateway
	handlerOpts *gateway.HandlerOptions
	ring        *keyring.Ring
	sealer      *reqstate.Sealer
}

// build opens the store, loads the requestState keys and configures the
// gateway and its front's authentication.
func (cfg *config) build(ctx context.Context, log *slog.Logger, stdout io.Writer) (*built, func(), error) {
	st, master, err := cfg.openKeys(ctx)
	if err != nil {
		return nil, nil, err
	}
	closeStore := func() { _ = st.Close() }
	fail := func(err error) (*built, func(), error) { closeStore(); return nil, nil, err }
	ring, err := keyring.New(st, master, nil)
	if err != nil {
		return fail(err)
	}
	keys, err := ring.Load(ctx)
	if err != nil {
		return fail(fmt.Errorf("loading the requestState keys: %w", err))
	}
	sealer, err := reqstate.New(keys, nil)
	if err != nil {
		return fail(err)
	}
	var authn auth.Authenticator = auth.DemoBearer{}
	switch cfg.authMode {
	case "none":
		authn = auth.Anonymous{}
	case "jwt":
		j, err := jwtauth.NewJWT(ctx, cfg.jwt)
		if err != nil {
			return fail(err)
		}
		authn = j
	}
	opts := gateway.Options{Upstreams: cfg.upstreams, PrefixAll: cfg.prefixAll, Sealer: sealer, Logger: log, PeerURL: cfg.peerURL}
	if cfg.peerURL != "" {
		opts.PeerSecret = []byte(cfg.getenv(envPeerSecret))
	}
	if opts.Audit, err = cfg.auditSink(stdout); err != nil {
		return fail(err)
	}
	g, err := gateway.New(opts)
	if err != nil {
		return fail(err)
	}
	return &built{g: g, ring: ring, sealer: sealer, handlerOpts: &gateway.HandlerOptions{Auth: authn, AllowedHosts: cfg.allowedHosts, Logger: log}}, closeStore, nil
}

// keyStore is what the gateway uses of a store: the key ring.
type keyStore interface {
	store.KeyRing
	Close() error
}

// openKeys opens the store and reads the master key: from the
// environment, else master.key in --data (created on first use).
func (cfg *config) openKeys(ctx context.Context) (keyStore, []byte, error) {
	var master []byte
	if b64 := cfg.getenv(envMasterKey); b64 != "" {
		m, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(m) != keyring.MasterKeySize {
			return nil, nil, fmt.Errorf("%s: want %d bytes in standard base64", envMasterKey, keyring.MasterKeySize)
		}
		master = m
	}
	if cfg.storeURL != "" {
		if master == nil {
			return nil, nil, fmt.Errorf("--store needs %s, the same on every instance", envMasterKey)
		}
		st, err := postgres.Open(ctx, cfg.storeURL)
		if err != nil {
			return nil, nil, fmt.Errorf("opening the store: %w", err)
		}
		return st, master, nil
	}
	if err := os.MkdirAll(cfg.dataDir, 0o700); err != nil {
		return nil, nil, err
	}
	if master == nil {
		m, err := keyring.LoadOrCreateMasterKey(cfg.dataDir)
		if err != nil {
			return nil, nil, err
		}
		master = m
	}
	st, err := sqlite.Open(filepath.Join(cfg.dataDir, "gateway.db"))
	if err != nil {
		return nil, nil, fmt.Errorf("opening the store: %w", err)
	}
	return st, master, nil
}

// auditSink returns the audit hook of --audit-log: one JSON object a line.
func (cfg *config) auditSink(stdout io.Writer) (func(context.Context, *gateway.Record), error) {
	var w io.Writer
	switch cfg.auditLog {
	case "off":
		return nil, nil
	case "-", "":
		w = stdout
	default:
		f, err := os.OpenFile(cfg.auditLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, err
		}
		w = f
	}
	var mu sync.Mutex
	return func(_ context.Context, r *gateway.Record) {
		b, _ := json.Marshal(auditLine{Time: r.Time.UTC(), LatencyMs: float64(r.Latency) / float64(time.Millisecond), Principal: r.Principal,
			Call: r.Call, Round: r.Round, Method: r.Method, Name: r.Name, Upstream: r.Upstream, UpstreamName: r.UpstreamName,
			ClientRevision: r.ClientRevision, UpstreamRevision: r.UpstreamRevision, Outcome: r.Outcome, Asked: r.Asked, Code: r.Code})
		mu.Lock()
		defer mu.Unlock()
		_, _ = w.Write(append(b, '\n'))
	}, nil
}

// auditLine is a gateway.Record as one JSON line.
type auditLine struct {
	Time             time.Time `json:"time"`
	LatencyMs        float64   `json:"latencyMs"`
	Principal        string    `json:"principal"`
	Call             string    `json:"call,omitempty"`
	Round            int       `json:"round"`
	Method           string    `json:"method"`
	Name             string    `json:"name"`
	Upstream         string    `json:"upstream,omitempty"`
	UpstreamName     string    `json:"upstreamName,omitempty"`
	ClientRevision   string    `json:"clientRevision"`
	UpstreamRevision string    `json:"upstreamRevision,omitempty"`
	Outcome          string    `json:"outcome"`
	Asked            []string  `json:"asked,omitempty"`
	Code             int       `json:"code,omitempty"`
}

// refreshKeys re-reads the key ring every 30 seconds, so a rotation
// (elicitd keys rotate) reaches this instance.
func (b *built) refreshKeys(ctx context.Context, log *slog.Logger) {
	ctxtime.Every(ctx, 30*time.Second, func(ctx context.Context) {
		if err := b.ring.Refresh(ctx, b.sealer); err != nil {
			log.Warn("elicit-gateway: requestState keys not refreshed", "err", err)
		}
	})
}
