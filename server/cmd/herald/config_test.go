package main

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLoadConfig(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

	c, err := loadConfig(env(nil))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8080", c.Addr)
	require.Equal(t, "sqlite://herald.db", c.DatabaseURL)
	require.Equal(t, 50_000, c.MaxPending)
	require.Equal(t, 100, c.SMPPWindow)
	require.Empty(t, c.AdminToken)
	require.Empty(t, c.SMPPAddr)
	require.Equal(t, slog.LevelInfo, c.LogLevel)
	require.Equal(t, 30*time.Second, c.ShutdownTimeout)

	c, err = loadConfig(env(map[string]string{
		"HERALD_ADDR": "0.0.0.0:9000", "HERALD_DATABASE_URL": "postgres://u@db:5432/herald", "HERALD_ADMIN_TOKEN": "t",
		"HERALD_MAX_PENDING": "1000", "HERALD_LOG_LEVEL": "debug", "HERALD_LOG_FORMAT": "json",
		"HERALD_SMPP_ADDR": "smsc:2775", "HERALD_SMPP_SYSTEM_ID": "id", "HERALD_SMPP_PASSWORD": "pw",
		"HERALD_SMPP_WINDOW": "20", "HERALD_SMPP_MAX_RATE": "150.5",
		"HERALD_CHAT_URL": "https://chat.example", "HERALD_CHAT_TOKEN": "ct", "HERALD_CHAT_CALLBACK_SECRET": "s",
		"HERALD_SHUTDOWN_TIMEOUT": "5s",
	}))
	require.NoError(t, err)
	require.Equal(t, config{
		Addr: "0.0.0.0:9000", DatabaseURL: "postgres://u@db:5432/herald", AdminToken: "t", MaxPending: 1000,
		LogLevel: slog.LevelDebug, LogFormat: "json",
		SMPPAddr: "smsc:2775", SMPPSystemID: "id", SMPPPassword: "pw", SMPPWindow: 20, SMPPMaxRate: 150.5,
		ChatURL: "https://chat.example", ChatToken: "ct", ChatCallbackSecret: "s", ShutdownTimeout: 5 * time.Second,
	}, c)

	bad := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"address without port", map[string]string{"HERALD_ADDR": "localhost"}, "HERALD_ADDR"},
		{"unknown database", map[string]string{"HERALD_DATABASE_URL": "mysql://x"}, "HERALD_DATABASE_URL"},
		{"max pending zero", map[string]string{"HERALD_MAX_PENDING": "0"}, "HERALD_MAX_PENDING"},
		{"max pending not a number", map[string]string{"HERALD_MAX_PENDING": "lots"}, "HERALD_MAX_PENDING"},
		{"log level", map[string]string{"HERALD_LOG_LEVEL": "loud"}, "HERALD_LOG_LEVEL"},
		{"log format", map[string]string{"HERALD_LOG_FORMAT": "xml"}, "HERALD_LOG_FORMAT"},
		{"smpp address", map[string]string{"HERALD_SMPP_ADDR": "smsc"}, "HERALD_SMPP_ADDR"},
		{"smpp window", map[string]string{"HERALD_SMPP_WINDOW": "-1"}, "HERALD_SMPP_WINDOW"},
		{"smpp rate", map[string]string{"HERALD_SMPP_MAX_RATE": "-5"}, "HERALD_SMPP_MAX_RATE"},
		{"chat url", map[string]string{"HERALD_CHAT_URL": "chat.example", "HERALD_CHAT_CALLBACK_SECRET": "s"}, "HERALD_CHAT_URL"},
		{"chat without secret", map[string]string{"HERALD_CHAT_URL": "https://chat.example"}, "HERALD_CHAT_CALLBACK_SECRET"},
		{"shutdown timeout", map[string]string{"HERALD_SHUTDOWN_TIMEOUT": "soon"}, "HERALD_SHUTDOWN_TIMEOUT"},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			_, err := loadConfig(env(b.env))
			require.ErrorContains(t, err, b.want)
		})
	}

	// Every malformed value is reported at once.
	_, err = loadConfig(env(map[string]string{"HERALD_MAX_PENDING": "x", "HERALD_LOG_LEVEL": "loud"}))
	require.ErrorContains(t, err, "HERALD_MAX_PENDING")
	require.ErrorContains(t, err, "HERALD_LOG_LEVEL")
}
