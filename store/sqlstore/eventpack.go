package sqlstore

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/webhook"
)

// A pack is the data of a webhook_events row holding several events of
// one company (events > 1): each event in turn, as
//
//	<id: 32 hex digits><subject: 32 hex digits><time: µs since the epoch> <render: 0 or 1>
//	<length of type>:<type><length of data>:<data>
//
// without the line break, numbers in decimal. It is text (the data is
// JSON Herald wrote), read without a parser: the sender reads a
// write's events as one row instead of a row each.

// appendPacked appends e, of a pack, to b.
func appendPacked(b []byte, e webhook.Event, render bool) []byte {
	b = hex.AppendEncode(b, e.ID[:])
	b = hex.AppendEncode(b, e.Subject[:])
	b = strconv.AppendInt(b, e.CreatedAt.UnixMicro(), 10)
	b = append(b, ' ')
	if render {
		b = append(b, '1')
	} else {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, int64(len(e.Type)), 10)
	b = append(b, ':')
	b = append(b, e.Type...)
	b = strconv.AppendInt(b, int64(len(e.Data)), 10)
	b = append(b, ':')
	return append(b, e.Data...)
}

// packedEvent is an event read from a pack, and whether its message is
// still to be described.
type packedEvent struct {
	e      webhook.Event
	render bool
}

var errBadPack = errors.New("webhook event pack")

// unpack returns the events of pack, of company's events, in order. Their
// data share pack's memory.
func unpack(pack []byte, company messaging.ID) ([]packedEvent, error) {
	var out []packedEvent
	for i := 0; i < len(pack); {
		var p packedEvent
		if len(pack)-i < 64 {
			return nil, fmt.Errorf("%w: %d bytes left at %d", errBadPack, len(pack)-i, i)
		}
		if _, err := hex.Decode(p.e.ID[:], pack[i:i+32]); err != nil {
			return nil, fmt.Errorf("%w: id at %d: %w", errBadPack, i, err)
		}
		if _, err := hex.Decode(p.e.Subject[:], pack[i+32:i+64]); err != nil {
			return nil, fmt.Errorf("%w: subject at %d: %w", errBadPack, i, err)
		}
		i += 64
		micros, n, ok := packNumber(pack[i:], ' ')
		if !ok || i+n >= len(pack) {
			return nil, fmt.Errorf("%w: time at %d", errBadPack, i)
		}
		i += n
		p.render = pack[i] == '1'
		i++
		typeLen, n, ok := packNumber(pack[i:], ':')
		if !ok || i+n+int(typeLen) > len(pack) {
			return nil, fmt.Errorf("%w: type at %d", errBadPack, i)
		}
		i += n
		p.e.Type = webhook.EventType(pack[i : i+int(typeLen)])
		i += int(typeLen)
		dataLen, n, ok := packNumber(pack[i:], ':')
		if !ok || i+n+int(dataLen) > len(pack) {
			return nil, fmt.Errorf("%w: data at %d", errBadPack, i)
		}
		i += n
		p.e.Data = pack[i : i+int(dataLen) : i+int(dataLen)]
		i += int(dataLen)
		p.e.CompanyID = company
		p.e.CreatedAt = time.UnixMicro(micros).UTC()
		out = append(out, p)
	}
	return out, nil
}

// packNumber reads a decimal number ended by end at the start of b, and
// returns it and the bytes it took with end.
func packNumber(b []byte, end byte) (int64, int, bool) {
	var v int64
	for i, c := range b {
		switch {
		case c == end && i > 0:
			return v, i + 1, true
		case c == '-' && i == 0:
			// a time before the epoch: not written by Herald, read anyway
			v2, n, ok := packNumber(b[1:], end)
			return -v2, n + 1, ok
		case c >= '0' && c <= '9' && i < 19:
			v = v*10 + int64(c-'0')
		default:
			return 0, 0, false
		}
	}
	return 0, 0, false
}
