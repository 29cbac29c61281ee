package lobby

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Sentinel errors. A [*StatusError] from the server matches (errors.Is) the
// one its code names.
var (
	ErrBadRequest       = errors.New("lobby: bad request")
	ErrUnauthorized     = errors.New("lobby: missing or wrong token")
	ErrForbidden        = errors.New("lobby: not allowed for this seat")
	ErrNotFound         = errors.New("lobby: no such match")
	ErrMethodNotAllowed = errors.New("lobby: method not allowed")
	ErrFull             = errors.New("lobby: the match is full")
	ErrNotFull          = errors.New("lobby: the match is not full yet")
	ErrGone             = errors.New("lobby: that seat has left the match")
	ErrTooLarge         = errors.New("lobby: request body too large")
	ErrRateLimited      = errors.New("lobby: too many requests")
	ErrQueueFull        = errors.New("lobby: the recipient's signal queue is full")
	ErrUnavailable      = errors.New("lobby: the server is at its limits")
	ErrQuota            = errors.New("lobby: this address holds as much as the server allows one address")
	ErrLocked           = errors.New("lobby: the match refuses joins for a while")
	ErrStoreDown        = errors.New("lobby: the server's store is out of reach for a moment")

	// ErrLeft is returned by a Client's methods after its Leave.
	ErrLeft = errors.New("lobby: the client has left the match")
)

var sentinels = map[string]error{
	CodeBadRequest:       ErrBadRequest,
	CodeUnauthorized:     ErrUnauthorized,
	CodeForbidden:        ErrForbidden,
	CodeNotFound:         ErrNotFound,
	CodeMethodNotAllowed: ErrMethodNotAllowed,
	CodeFull:             ErrFull,
	CodeNotFull:          ErrNotFull,
	CodeGone:             ErrGone,
	CodeTooLarge:         ErrTooLarge,
	CodeRateLimited:      ErrRateLimited,
	CodeQueueFull:        ErrQueueFull,
	CodeUnavailable:      ErrUnavailable,
	CodeQuota:            ErrQuota,
	CodeLocked:           ErrLocked,
	CodeStoreDown:        ErrStoreDown,
}

// codeOfStatus is the code of an answer that carried none (a proxy's).
var codeOfStatus = map[int]string{
	http.StatusBadRequest:            CodeBadRequest,
	http.StatusUnauthorized:          CodeUnauthorized,
	http.StatusForbidden:             CodeForbidden,
	http.StatusNotFound:              CodeNotFound,
	http.StatusMethodNotAllowed:      CodeMethodNotAllowed,
	http.StatusGone:                  CodeGone,
	http.StatusRequestEntityTooLarge: CodeTooLarge,
	http.StatusTooManyRequests:       CodeRateLimited,
	http.StatusServiceUnavailable:    CodeUnavailable,
}

// StatusError is an error answer from the server.
type StatusError struct {
	Status     int           // the HTTP status
	Code       string        // ErrorBody.Code (derived from Status when the answer had none)
	Message    string        // the server's message
	RetryAfter time.Duration // the Retry-After header, 0 if absent
}

func (e *StatusError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("lobby: server answered %d: %s", e.Status, msg)
}

// Is reports whether target is the sentinel error of e's code.
func (e *StatusError) Is(target error) bool {
	s, ok := sentinels[e.Code]
	return ok && s == target
}
