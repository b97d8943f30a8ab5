package main

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/transport/smpp"
	"github.com/heraldhq/herald/webhook"
)

// config is what herald serve reads from its environment.
type config struct {
	Addr        string // HERALD_ADDR
	DatabaseURL string // HERALD_DATABASE_URL
	DBMaxConns  int    // HERALD_DATABASE_MAX_CONNS; 0: the store's default
	AdminToken  string // HERALD_ADMIN_TOKEN
	MaxPending  int    // HERALD_MAX_PENDING
	LogLevel    slog.Level
	LogFormat   string // text or json

	SMPPAddr     string  // HERALD_SMPP_ADDR; empty: no SMS is sent
	SMPPSystemID string  // HERALD_SMPP_SYSTEM_ID
	SMPPPassword string  // HERALD_SMPP_PASSWORD
	SMPPWindow   int     // HERALD_SMPP_WINDOW
	SMPPBinds    int     // HERALD_SMPP_BINDS
	SMPPMaxRate  float64 // HERALD_SMPP_MAX_RATE, submit_sm per second
	// HERALD_SMPP_SUBMIT_ID_FORMAT, HERALD_SMPP_RECEIPT_ID_FORMAT
	SMPPSubmitIDs, SMPPReceiptIDs smpp.IDFormat

	ChatURL            string // HERALD_CHAT_URL; empty: no chat message is sent
	ChatToken          string // HERALD_CHAT_TOKEN
	ChatCallbackSecret string // HERALD_CHAT_CALLBACK_SECRET

	ShutdownTimeout time.Duration // HERALD_SHUTDOWN_TIMEOUT

	Instance   string        // HERALD_INSTANCE; empty: derived by instanceName
	ClaimLease time.Duration // HERALD_CLAIM_LEASE

	SMPPValidity   time.Duration // HERALD_SMPP_VALIDITY; 0: the SMSC's default
	ReceiptTimeout time.Duration // HERALD_RECEIPT_TIMEOUT
	Retention      time.Duration // HERALD_RETENTION; 0: off
	PartitionSpan  time.Duration // HERALD_PARTITION_SPAN; 0: the store's default

	// HERALD_WEBHOOK_ALLOW: which addresses besides public ones webhooks
	// and media checks may reach (egress).
	WebhookURLs webhook.URLPolicy

	// SecretKey encrypts the secrets stored in the database
	// (HERALD_SECRET_KEY); nil: none is stored. PreviousKeys still
	// decrypt (HERALD_SECRET_KEY_PREVIOUS).
	SecretKey    *secretbox.Key
	PreviousKeys []secretbox.Key
}

// secretBox returns the box of the configured keys; nil without
// HERALD_SECRET_KEY.
func (c config) secretBox() (*secretbox.Box, error) {
	if c.SecretKey == nil {
		return nil, nil
	}
	b, err := secretbox.New(*c.SecretKey, c.PreviousKeys...)
	if err != nil {
		return nil, fmt.Errorf("secret keys: %w", err)
	}
	return b, nil
}

// envVar documents one variable for herald help and docs/configuration.md:
// its default and its meaning each fit one row of the reference's tables.
type envVar struct {
	name, def, meaning string
}

// envVars lists every variable herald serve reads.
func envVars() []envVar {
	return []envVar{
		{"HERALD_ADDR", "127.0.0.1:8080", "host:port the HTTP server listens on"},
		{"HERALD_DATABASE_URL", "sqlite://herald.db", "sqlite://path (embedded) or postgres://user:password@host:5432/db"},
		{"HERALD_DATABASE_MAX_CONNS", "4 per CPU, at least 4", "size of the Postgres pool, or of the SQLite reader pool"},
		{"HERALD_ADMIN_TOKEN", "empty: admin API off", "bearer token of the admin API under /admin/v1"},
		{"HERALD_MAX_PENDING", "50000", "each company's capacity of messages not handed to a provider yet"},
		{"HERALD_LOG_LEVEL", "info", "debug, info, warn or error"},
		{"HERALD_LOG_FORMAT", "text", "text or json, on standard error"},
		{"HERALD_SMPP_ADDR", "empty: SMS stay Pending", "host:port of the SMSC of the connector named default"},
		{"HERALD_SMPP_SYSTEM_ID", "empty", "system_id of the SMPP bind (bind_transceiver)"},
		{"HERALD_SMPP_PASSWORD", "empty", "password of the SMPP bind"},
		{"HERALD_SMPP_WINDOW", "100", "most submit_sm awaiting their response at once, on each session"},
		{"HERALD_SMPP_BINDS", "1", "SMPP sessions of the default connector, all processes together"},
		{"HERALD_SMPP_MAX_RATE", "0: no limit", "most submit_sm per second; each part of a long SMS counts"},
		{"HERALD_SMPP_VALIDITY", "empty: the SMSC's", "validity period of every submit_sm, at most 99 days"},
		{"HERALD_RECEIPT_TIMEOUT", "48h, less with a validity", "how long a Sent SMS waits for its delivery receipt"},
		{"HERALD_SMPP_SUBMIT_ID_FORMAT", "as-sent", "ids in submit_sm_resp and receipted_message_id: as-sent, decimal or hex"},
		{"HERALD_SMPP_RECEIPT_ID_FORMAT", "as-sent", "ids in the id: field of receipt texts: as-sent, decimal or hex"},
		{"HERALD_CHAT_URL", "empty", "base URL of the herald-protocol chat endpoint"},
		{"HERALD_CHAT_TOKEN", "empty", "X-Auth-Token sent to that endpoint; required with HERALD_CHAT_URL"},
		{"HERALD_CHAT_CALLBACK_SECRET", "empty", "key of its callbacks' signatures; required with HERALD_CHAT_URL"},
		{"HERALD_SHUTDOWN_TIMEOUT", "30s", "how long a stop waits for requests, preparations and sends in flight"},
		{"HERALD_INSTANCE", "host name and HERALD_ADDR", "name of this process among those sharing the database"},
		{"HERALD_CLAIM_LEASE", "10s", "how long after a process's last heartbeat the others take back its claims"},
		{"HERALD_RETENTION", "empty: kept for ever", "how long finished campaigns' messages and answers stay: 90d, 36h"},
		{"HERALD_PARTITION_SPAN", "7d", "Postgres: the creation times one partition of messages covers: 7d, 12h"},
		{"HERALD_SECRET_KEY", "empty: no secret stored", "key encrypting stored secrets: 32 random bytes in base64 or hex"},
		{"HERALD_SECRET_KEY_PREVIOUS", "empty", "earlier keys, comma-separated, that still decrypt during a rotation"},
		{"HERALD_WEBHOOK_ALLOW", "empty: public https only", "more addresses outgoing requests may reach: loopback, private"},
	}
}

// withDatabaseURL returns getenv with HERALD_DATABASE_URL replaced by
// url, a command's --database-url flag, when url is not empty.
func withDatabaseURL(getenv func(string) string, url string) func(string) string {
	return func(name string) string {
		if name == "HERALD_DATABASE_URL" && url != "" {
			return url
		}
		return getenv(name)
	}
}

// loadConfig reads the configuration through getenv; every malformed
// value is reported, not only the first.
func loadConfig(getenv func(string) string) (config, error) {
	c := config{
		Addr:            "127.0.0.1:8080",
		DatabaseURL:     "sqlite://herald.db",
		MaxPending:      50_000,
		LogLevel:        slog.LevelInfo,
		LogFormat:       "text",
		SMPPWindow:      100,
		SMPPBinds:       1,
		ShutdownTimeout: 30 * time.Second,
	}
	var errs []error
	str := func(name string, dst *string) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			*dst = v
		}
	}
	positive := func(name string, dst *int) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a positive integer", name, v))
			return
		}
		*dst = n
	}
	str("HERALD_ADDR", &c.Addr)
	if !isHostPort(c.Addr) {
		errs = append(errs, fmt.Errorf("HERALD_ADDR=%q: want host:port", c.Addr))
	}
	str("HERALD_DATABASE_URL", &c.DatabaseURL)
	if !strings.HasPrefix(c.DatabaseURL, "sqlite://") && !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		errs = append(errs, errors.New("HERALD_DATABASE_URL: want sqlite://path or postgres://..."))
	}
	positive("HERALD_DATABASE_MAX_CONNS", &c.DBMaxConns)
	c.AdminToken = getenv("HERALD_ADMIN_TOKEN")
	positive("HERALD_MAX_PENDING", &c.MaxPending)
	if v := strings.TrimSpace(getenv("HERALD_LOG_LEVEL")); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			errs = append(errs, fmt.Errorf("HERALD_LOG_LEVEL=%q: want debug, info, warn or error", v))
		}
	}
	str("HERALD_LOG_FORMAT", &c.LogFormat)
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("HERALD_LOG_FORMAT=%q: want text or json", c.LogFormat))
	}

	str("HERALD_SMPP_ADDR", &c.SMPPAddr)
	if c.SMPPAddr != "" {
		if !isHostPort(c.SMPPAddr) {
			errs = append(errs, fmt.Errorf("HERALD_SMPP_ADDR=%q: want host:port", c.SMPPAddr))
		}
	}
	c.SMPPSystemID = getenv("HERALD_SMPP_SYSTEM_ID")
	c.SMPPPassword = getenv("HERALD_SMPP_PASSWORD")
	positive("HERALD_SMPP_WINDOW", &c.SMPPWindow)
	positive("HERALD_SMPP_BINDS", &c.SMPPBinds)
	if v := strings.TrimSpace(getenv("HERALD_SMPP_MAX_RATE")); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			errs = append(errs, fmt.Errorf("HERALD_SMPP_MAX_RATE=%q: want a number of messages per second, 0 for no limit", v))
		}
		c.SMPPMaxRate = f
	}

	duration := func(name string, dst *time.Duration, least, most time.Duration) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < least || d > most {
			errs = append(errs, fmt.Errorf("%s=%q: want a duration from %v to %v", name, v, least, most))
			return
		}
		*dst = d
	}
	duration("HERALD_SMPP_VALIDITY", &c.SMPPValidity, time.Second, 99*24*time.Hour)
	duration("HERALD_RECEIPT_TIMEOUT", &c.ReceiptTimeout, time.Minute, 6*24*time.Hour)
	if c.ReceiptTimeout == 0 {
		c.ReceiptTimeout = delivery.DefaultReceiptTimeout
		if c.SMPPValidity > 0 {
			c.ReceiptTimeout = min(c.ReceiptTimeout, c.SMPPValidity+min(c.SMPPValidity, time.Hour))
		}
	}

	idFormat := func(name string, dst *smpp.IDFormat) {
		var err error
		if *dst, err = smpp.ParseIDFormat(getenv(name)); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: want as-sent, decimal or hex", name, getenv(name)))
		}
	}
	idFormat("HERALD_SMPP_SUBMIT_ID_FORMAT", &c.SMPPSubmitIDs)
	idFormat("HERALD_SMPP_RECEIPT_ID_FORMAT", &c.SMPPReceiptIDs)

	str("HERALD_CHAT_URL", &c.ChatURL)
	if c.ChatURL != "" && !strings.HasPrefix(c.ChatURL, "http://") && !strings.HasPrefix(c.ChatURL, "https://") {
		errs = append(errs, fmt.Errorf("HERALD_CHAT_URL=%q: want an http:// or https:// URL", c.ChatURL))
	}
	c.ChatToken = getenv("HERALD_CHAT_TOKEN")
	c.ChatCallbackSecret = getenv("HERALD_CHAT_CALLBACK_SECRET")
	if c.ChatURL != "" && c.ChatCallbackSecret == "" {
		errs = append(errs, errors.New("HERALD_CHAT_CALLBACK_SECRET is required with HERALD_CHAT_URL: callbacks cannot be verified without it"))
	}
	if c.ChatURL != "" && c.ChatToken == "" {
		errs = append(errs, errors.New("HERALD_CHAT_TOKEN is required with HERALD_CHAT_URL: the endpoint authenticates Herald's requests with it"))
	}
	if v := strings.TrimSpace(getenv("HERALD_SHUTDOWN_TIMEOUT")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("HERALD_SHUTDOWN_TIMEOUT=%q: want a positive duration such as 30s", v))
		}
		c.ShutdownTimeout = d
	}
	str("HERALD_INSTANCE", &c.Instance)
	if v := strings.TrimSpace(getenv("HERALD_CLAIM_LEASE")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			errs = append(errs, fmt.Errorf("HERALD_CLAIM_LEASE=%q: want a duration of at least 1s, such as 10s", v))
		}
		c.ClaimLease = d
	}
	if v := strings.TrimSpace(getenv("HERALD_RETENTION")); v != "" {
		d, err := parseRetention(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("HERALD_RETENTION=%q: %w", v, err))
		}
		c.Retention = d
	}
	if v := strings.TrimSpace(getenv("HERALD_PARTITION_SPAN")); v != "" {
		d, err := parseRetention(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("HERALD_PARTITION_SPAN=%q: %w", v, err))
		}
		c.PartitionSpan = d
	}
	for v := range strings.SplitSeq(getenv("HERALD_WEBHOOK_ALLOW"), ",") {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "":
		case "loopback":
			c.WebhookURLs.AllowLoopbackHTTP = true
		case "private":
			c.WebhookURLs.AllowPrivate = true
		default:
			errs = append(errs, fmt.Errorf("HERALD_WEBHOOK_ALLOW=%q: want loopback, private, or both separated by a comma", getenv("HERALD_WEBHOOK_ALLOW")))
		}
	}
	// The keys' values never appear in an error.
	if v := strings.TrimSpace(getenv("HERALD_SECRET_KEY")); v != "" {
		if k, err := secretbox.ParseKey(v); err != nil {
			errs = append(errs, errors.New("HERALD_SECRET_KEY: want 32 random bytes in base64 or hex (herald secrets new-key prints one)"))
		} else {
			c.SecretKey = &k
		}
	}
	if v := strings.TrimSpace(getenv("HERALD_SECRET_KEY_PREVIOUS")); v != "" {
		for i, part := range strings.Split(v, ",") {
			k, err := secretbox.ParseKey(part)
			if err != nil {
				errs = append(errs, fmt.Errorf("HERALD_SECRET_KEY_PREVIOUS: key %d: want 32 random bytes in base64 or hex", i+1))
				continue
			}
			c.PreviousKeys = append(c.PreviousKeys, k)
		}
		if c.SecretKey == nil {
			errs = append(errs, errors.New("HERALD_SECRET_KEY_PREVIOUS is set without HERALD_SECRET_KEY: set the current key too"))
		}
	}
	if len(errs) > 0 {
		return config{}, fmt.Errorf("configuration: %w", errors.Join(errs...))
	}
	return c, nil
}

// parseRetention reads a retention: a number of days ("90d") or a Go
// duration ("36h"), at least a minute (short ones serve tests and load
// runs).
func parseRetention(v string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 || n > 100*365 {
			return 0, errors.New("want a number of days such as 90d, or a duration such as 36h")
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			return 0, errors.New("want a number of days such as 90d, or a duration such as 36h")
		}
	}
	if d < time.Minute {
		return 0, errors.New("want at least 1m")
	}
	return d, nil
}

// instanceName is the dispatcher's Instance: HERALD_INSTANCE, or the host
// name and the configured listening address, which a restart on the same
// host and address finds again; "" (a random name, chosen by the
// dispatcher) when the address asks for any port, which two processes on
// one host may both do.
func (c config) instanceName(hostname func() (string, error)) string {
	if c.Instance != "" {
		return c.Instance
	}
	if _, port, err := net.SplitHostPort(c.Addr); err != nil || port == "0" {
		return ""
	}
	host, err := hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return host + "/" + c.Addr
}

// isHostPort tells whether addr is host:port with a port number.
func isHostPort(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 0 && n <= 65535
}
