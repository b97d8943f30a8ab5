package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/heraldhq/herald/internal/secretbox"
	"github.com/heraldhq/herald/store/sqlstore"
)

// secrets runs herald secrets: new-key prints a new key; rotate encrypts
// every stored secret under HERALD_SECRET_KEY, decrypting with it or
// HERALD_SECRET_KEY_PREVIOUS.
func secrets(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: secrets needs new-key or rotate", errUsage)
	}
	switch args[0] {
	case "new-key":
		if len(args) > 1 {
			return fmt.Errorf("%w: secrets new-key: unexpected argument %q", errUsage, args[1])
		}
		k, err := secretbox.NewKey()
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, k)
		return nil
	case "rotate":
		return rotateSecrets(ctx, args[1:], getenv, stdout)
	case "-h", "--help", "help":
		return flag.ErrHelp // run prints the usage
	}
	return fmt.Errorf("%w: secrets: unknown command %q (want new-key or rotate)", errUsage, args[0])
}

// rotateSecrets runs herald secrets rotate.
func rotateSecrets(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("secrets rotate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dbURL := fs.String("database-url", "", "HERALD_DATABASE_URL")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: secrets rotate: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: secrets rotate: unexpected argument %q", errUsage, fs.Arg(0))
	}
	cfg, err := loadConfig(withDatabaseURL(getenv, *dbURL))
	if err != nil {
		return err
	}
	box, err := cfg.secretBox()
	if err != nil {
		return err
	}
	if box == nil {
		return errors.New("secrets rotate: set HERALD_SECRET_KEY to the new key, and HERALD_SECRET_KEY_PREVIOUS to the keys it replaces")
	}
	// Open encrypts the secrets stored in clear and fails when a secret
	// is under a key not given.
	store, err := sqlstore.Open(ctx, cfg.DatabaseURL, sqlstore.Config{MaxOpenConns: 2, Secrets: box, PartitionSpan: cfg.PartitionSpan})
	if err != nil {
		return fmt.Errorf("open the database: %w", err)
	}
	defer store.Close()
	n, err := store.SealSecrets(ctx, true)
	if err != nil {
		return fmt.Errorf("secrets rotate: %w", err)
	}
	count, err := store.CountSecrets(ctx)
	if err != nil {
		return fmt.Errorf("secrets rotate: %w", err)
	}
	fmt.Fprintf(stdout, "encrypted %d stored secrets again; all %d are under key %s: the previous keys are no longer needed once every process runs with this key\n",
		n, count.ByKey[box.KeyID()], box.KeyID())
	return nil
}

// demoKey is the key herald serve --demo uses without HERALD_SECRET_KEY:
// derived from a fixed text, so a restart reads what the previous run
// stored, and so no secret: the demo's data is for trying Herald.
func demoKey() secretbox.Key {
	sum := sha256.Sum256([]byte("herald serve --demo: a built-in key that protects nothing"))
	k, err := secretbox.KeyFromBytes(sum[:])
	if err != nil {
		panic(err) // 32 bytes always make a key
	}
	return k
}

// serveSecrets returns the box herald serve opens the database with: the
// configured keys, or nil. The demo without HERALD_SECRET_KEY uses its
// built-in key, and with one still reads what the built-in key sealed.
func serveSecrets(cfg config, demo bool, log *slog.Logger) (*secretbox.Box, error) {
	if demo {
		if cfg.SecretKey == nil {
			k := demoKey()
			cfg.SecretKey = &k
			log.Warn("demo: stored secrets are encrypted with the demo's built-in key, which protects nothing; set HERALD_SECRET_KEY (herald secrets new-key) for real ones", "key_id", k.ID())
		} else {
			cfg.PreviousKeys = append(cfg.PreviousKeys, demoKey())
		}
	}
	return cfg.secretBox()
}

// reportSecrets says at start how the stored secrets are kept. Without a
// key it warns that none can be stored, and that those in clear stay so;
// it fails when some are encrypted, since they could not be used.
func reportSecrets(ctx context.Context, store *sqlstore.Store, box *secretbox.Box, log *slog.Logger) error {
	count, err := store.CountSecrets(ctx)
	if err != nil {
		return err
	}
	if box == nil {
		if len(count.ByKey) > 0 {
			var keys []string
			for _, id := range slices.Sorted(maps.Keys(count.ByKey)) {
				keys = append(keys, fmt.Sprintf("%d under key %s", count.ByKey[id], id))
			}
			return fmt.Errorf("the database holds encrypted secrets (%s): set HERALD_SECRET_KEY to their key", strings.Join(keys, ", "))
		}
		log.Warn("HERALD_SECRET_KEY is not set: creating a webhook or an SMPP connector with a password is refused (503) until it is; herald secrets new-key prints a key")
		if count.Plaintext > 0 {
			log.Warn("stored secrets are kept in clear: set HERALD_SECRET_KEY and restart to encrypt them", "count", count.Plaintext)
		}
		return nil
	}
	old := 0
	for id, n := range count.ByKey {
		if id != box.KeyID() {
			old += n
		}
	}
	log.Info("stored secrets are encrypted", "key_id", box.KeyID(), "count", count.ByKey[box.KeyID()])
	if old > 0 {
		log.Info("some stored secrets are under a previous key: herald secrets rotate encrypts them under the current one", "count", old)
	}
	return nil
}
