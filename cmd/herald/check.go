package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/sqlstore"
)

// errDrift is the failure of herald check when counters drifted.
var errDrift = errors.New("counters differ from the rows")

// check runs herald check: it recomputes every campaign's counters and
// each company's pending count from the message rows of the database and
// prints where the stored ones differ. It returns errDrift when any does.
// It opens an existing Herald database read-only, with no migration (a
// missing file, a database that is not Herald's or one older than this
// binary fails, naming the database), and may run beside serving
// processes.
func check(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "print the drift as a JSON array (empty when none)")
	dbURL := fs.String("database-url", "", "HERALD_DATABASE_URL")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: check: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: check: unexpected argument %q", errUsage, fs.Arg(0))
	}
	cfg, err := loadConfig(withDatabaseURL(getenv, *dbURL))
	if err != nil {
		return err
	}
	store, err := sqlstore.Open(ctx, cfg.DatabaseURL, sqlstore.Config{MaxOpenConns: 2, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("open the database: %w", err)
	}
	defer store.Close()
	drift, err := store.CheckCounters(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		out := make([]driftJSON, len(drift))
		for i, d := range drift {
			out[i] = driftJSON{CompanyID: d.CompanyID, Counter: d.Counter, Stored: d.Stored, Counted: d.Counted}
			if !d.CampaignID.IsZero() {
				id := d.CampaignID
				out[i].CampaignID = &id
			}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fmt.Errorf("write the report: %w", err)
		}
	} else {
		for _, d := range drift {
			if d.CampaignID.IsZero() {
				fmt.Fprintf(stdout, "company %s: pending count %d, rows give %d\n", d.CompanyID, d.Stored, d.Counted)
			} else {
				fmt.Fprintf(stdout, "campaign %s (company %s): %s %d, rows give %d\n", d.CampaignID, d.CompanyID, d.Counter, d.Stored, d.Counted)
			}
		}
		if len(drift) == 0 {
			fmt.Fprintln(stdout, "every campaign counter and company pending count agrees with the rows")
		}
	}
	if len(drift) > 0 {
		return fmt.Errorf("%w: %d", errDrift, len(drift))
	}
	return nil
}

// driftJSON is one line of herald check -json.
type driftJSON struct {
	CompanyID  messaging.ID  `json:"companyId"`
	CampaignID *messaging.ID `json:"campaignId"`
	Counter    string        `json:"counter"`
	Stored     int           `json:"stored"`
	Counted    int           `json:"counted"`
}
