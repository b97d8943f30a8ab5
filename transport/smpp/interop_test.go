package smpp_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/template"
	"github.com/stretchr/testify/require"
)

// smscEvent is one line the interop SMSC prints.
type smscEvent struct {
	Event      string `json:"event"`
	Port       int    `json:"port"`
	Command    string `json:"command"`
	SystemID   string `json:"system_id"`
	Seq        uint32 `json:"seq"`
	ID         int    `json:"id"`
	Source     string `json:"source_addr"`
	SourceTON  int    `json:"source_addr_ton"`
	SourceNPI  int    `json:"source_addr_npi"`
	Dest       string `json:"destination_addr"`
	DestTON    int    `json:"dest_addr_ton"`
	DestNPI    int    `json:"dest_addr_npi"`
	EsmClass   int    `json:"esm_class"`
	DataCoding int    `json:"data_coding"`
	RegDlv     int    `json:"registered_delivery"`
	Concat     *struct {
		Ref, Total, Index int
	} `json:"concat"`
	To     string `json:"to"`
	Text   string `json:"text"`
	Parts  int    `json:"parts"`
	Status int    `json:"status"`
}

// TestInteropNodeSMSC runs the adapter against an independent SMSC: the
// npm package smpp in server mode (interop/smsc.js). It skips when node or
// interop/node_modules is missing, unless HERALD_TEST_SMPP_INTEROP=1.
func TestInteropNodeSMSC(t *testing.T) {
	required := os.Getenv("HERALD_TEST_SMPP_INTEROP") == "1"
	missing := func(why string) {
		if required {
			t.Fatalf("HERALD_TEST_SMPP_INTEROP=1 but %s (run npm ci in interop/)", why)
		}
		t.Skipf("interop SMSC unavailable: %s", why)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed")
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "interop"))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "smpp", "package.json")); err != nil {
		missing("interop/node_modules/smpp is not installed")
	}

	addr := freeAddr(t)
	_, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command(node, "smsc.js", port)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	events := make(chan smscEvent, 256)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var ev smscEvent
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				events <- ev
			}
		}
		close(events)
	}()
	next := func(kind string) smscEvent {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case ev, ok := <-events:
				require.True(t, ok, "the SMSC exited")
				require.NotEqual(t, "error", ev.Event, ev.Text)
				if ev.Event == kind {
					return ev
				}
			case <-timeout:
				t.Fatalf("no %s event from the SMSC", kind)
			}
		}
	}
	require.Equal(t, port, strconv.Itoa(next("listening").Port))

	rs := newSink()
	c := newClient(t, addr, rs.handle)
	bind := next("bind")
	require.Equal(t, "bind_transceiver", bind.Command)
	require.Equal(t, "herald", bind.SystemID)

	texts := []struct {
		name string
		text string
		dc   int
	}{
		{"short", "Hello from Herald: 100% ok @ £2", 0},
		{"long with extension characters", strings.Repeat("Long text {with} [brackets] and € signs. ", 9), 0},
		{"UCS-2 with emoji", strings.Repeat("Привет 😀 ", 20), 8},
	}
	for _, tt := range texts {
		t.Run(tt.name, func(t *testing.T) {
			seg := template.Segment(tt.text)
			res, err := c.Send(ctxTimeout(t, 10*time.Second), delivery.SMS{From: "Herald", To: "447700900123", Text: tt.text})
			require.NoError(t, err)
			require.Len(t, res.PartIDs, seg.Segments)

			seqs := map[uint32]bool{}
			ref := -1
			for i := range seg.Segments {
				sub := next("submit")
				require.Equal(t, "Herald", sub.Source)
				require.Equal(t, [2]int{5, 0}, [2]int{sub.SourceTON, sub.SourceNPI})
				require.Equal(t, "447700900123", sub.Dest)
				require.Equal(t, [2]int{1, 1}, [2]int{sub.DestTON, sub.DestNPI})
				require.Equal(t, tt.dc, sub.DataCoding)
				require.Equal(t, 1, sub.RegDlv)
				require.False(t, seqs[sub.Seq], "distinct sequence numbers")
				seqs[sub.Seq] = true
				require.Equal(t, strconv.Itoa(sub.ID), res.PartIDs[i], "the padded id, normalised")
				if seg.Segments > 1 {
					require.NotNil(t, sub.Concat)
					require.Equal(t, seg.Segments, sub.Concat.Total)
					require.Equal(t, i+1, sub.Concat.Index)
					if ref >= 0 {
						require.Equal(t, ref, sub.Concat.Ref)
					}
					ref = sub.Concat.Ref
				} else {
					require.Nil(t, sub.Concat)
				}
			}
			msg := next("message")
			require.Equal(t, tt.text, msg.Text, "the independent SMSC decodes and joins the text")
			require.Equal(t, seg.Segments, msg.Parts)

			for _, id := range res.PartIDs {
				r := rs.waitFor(t, id)
				require.Equal(t, "DELIVRD", r.State)
				require.Equal(t, "000", r.Err)
			}
			for range res.PartIDs {
				require.Equal(t, 0, next("receipt_ack").Status, "receipts acknowledged ESME_ROK")
			}
		})
	}
	require.NoError(t, c.Close(ctxTimeout(t, 5*time.Second)))
	next("unbind")
}
