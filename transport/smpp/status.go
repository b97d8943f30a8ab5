package smpp

import (
	"errors"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/delivery"
	"github.com/linxGnu/gosmpp/data"
)

// Errors wrapped by the transient *delivery.SendError values of Send.
var (
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("smpp: client closed")
	// ErrConnectionLost: the connection ended before the SMSC answered.
	ErrConnectionLost = errors.New("smpp: connection lost before the SMSC answered")
	// ErrSubmitTimeout: no submit_sm_resp within Config.SubmitTimeout.
	ErrSubmitTimeout = errors.New("smpp: no submit_sm_resp in time")
)

// transientStatus reports whether a submit answered with st may succeed
// when sent again: the SMSC is busy or failing, or the session was not
// bound on its side.
func transientStatus(st data.CommandStatusType) bool {
	switch st {
	case data.ESME_RTHROTTLED, data.ESME_RMSGQFUL, data.ESME_RSYSERR, data.ESME_RX_T_APPN, data.ESME_RINVBNDSTS:
		return true
	}
	return false
}

// StatusError classifies a non-zero command_status of a submit_sm_resp (or
// generic_nack) as a *delivery.SendError: Code is the status as 0x%08X,
// Details its SMPP name and meaning.
func StatusError(status uint32) *delivery.SendError {
	st := data.CommandStatusType(status)
	details := st.String()
	if strings.HasPrefix(details, "CommandStatusType(") {
		details = "unknown command_status"
	} else if desc := st.Desc(); desc != "" && desc != details {
		details += ": " + desc
	}
	return &delivery.SendError{
		Permanent: !transientStatus(st),
		Code:      fmt.Sprintf("0x%08X", status),
		Details:   details,
	}
}

// transientErr wraps a cause into a transient send failure.
func transientErr(details string, err error) *delivery.SendError {
	return &delivery.SendError{Details: details, Err: err}
}

// permanentErr is a send failure no retry can fix (an invalid request).
func permanentErr(details string) *delivery.SendError {
	return &delivery.SendError{Permanent: true, Details: details}
}
