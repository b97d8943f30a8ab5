package server

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// exportColumns are the columns of a campaign's CSV export, in order.
var exportColumns = []string{"id", "phoneNumber", "externalUserId", "channelType", "status", "details", "smsErrorCode",
	"fallbackFor", "messageContent", "createdAt", "sentAt", "deliveredAt", "updatedAt", "route"}

// exportMessages answers GET /campaigns/{id}/messages.csv: every message
// of the campaign, fallback SMS included, in the order they were made,
// one CSV row each after a header row. The rows are written as they are
// read, a batch at a time, so the export takes the same memory for any
// number of messages. A store failure after the first bytes went out
// aborts the response, so that a client never takes a cut file for a
// whole one.
func (s *server) exportMessages(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	rc := http.NewResponseController(w)
	var out *csv.Writer
	row := make([]string, len(exportColumns))
	err = s.campaigns.ExportMessages(r.Context(), companyOf(r), id, func(batch []messaging.Message) error {
		if out == nil {
			out = s.startCSV(w, id)
		}
		for i := range batch {
			exportRow(row, &batch[i])
			if err := out.Write(row); err != nil {
				return err
			}
		}
		out.Flush()
		if err := out.Error(); err != nil {
			return err
		}
		_ = rc.Flush()
		return nil
	})
	if err != nil && out != nil {
		s.log.ErrorContext(r.Context(), "campaign export cut short", "campaign", id, "err", err)
		panic(http.ErrAbortHandler)
	}
	if err != nil {
		return err
	}
	if out == nil { // a campaign without messages: the header alone
		out = s.startCSV(w, id)
		out.Flush()
	}
	return nil
}

// startCSV writes the headers of the export of campaign id and its header
// row, and returns the CSV writer.
func (s *server) startCSV(w http.ResponseWriter, id messaging.ID) *csv.Writer {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="campaign-%s-messages.csv"`, id))
	w.WriteHeader(http.StatusOK)
	out := csv.NewWriter(w)
	_ = out.Write(exportColumns)
	return out
}

// exportRow fills row with m's columns.
func exportRow(row []string, m *messaging.Message) {
	row[0] = m.ID.String()
	row[1] = m.Phone
	row[2] = cell(m.ExternalUserID)
	row[3] = string(m.Channel)
	row[4] = string(m.Status)
	row[5] = cell(m.Details)
	row[6] = cell(m.SMSErrorCode)
	row[7] = ""
	if !m.FallbackFor.IsZero() {
		row[7] = m.FallbackFor.String()
	}
	row[8] = cell(m.Content)
	row[9] = csvTime(&m.CreatedAt)
	row[10] = csvTime(m.SentAt)
	row[11] = csvTime(m.DeliveredAt)
	row[12] = ""
	if m.UpdatedAt.After(m.CreatedAt) {
		row[12] = csvTime(&m.UpdatedAt)
	}
	row[13] = m.Route
}

// cell guards a text taken from a caller against spreadsheet formulas: a
// value starting with =, +, -, @, a tab or a carriage return is prefixed
// with a quote, which spreadsheets show as text.
func cell(s string) string {
	if s != "" && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@' || s[0] == '\t' || s[0] == '\r') {
		return "'" + s
	}
	return s
}

// csvTime writes a time as the API does; empty when absent.
func csvTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeLayout)
}
