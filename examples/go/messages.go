package main

// The messages of the timer service's contract, as Go types: the JSON envelope every message
// shares, the payloads this example sends and receives, and the reply of the get query. Their
// JSON Schemas are in schemas/ at the repository's root; messages.md describes each member.

import (
	"encoding/json"
	"time"

	"github.com/nats-io/nuid"
)

// Envelope wraps every command and event.
type Envelope struct {
	ID            string          `json:"id"`
	Type          string          `json:"type"`
	TenantID      string          `json:"tenantId"`
	CorrelationID string          `json:"correlationId,omitempty"`
	TimestampMs   int64           `json:"timestampMs"`
	Payload       json.RawMessage `json:"payload"`
}

// ScheduleTimer creates, moves or re-arms the timer (TenantID, ServiceCallID).
type ScheduleTimer struct {
	TenantID      string          `json:"tenantId"`
	ServiceCallID string          `json:"serviceCallId"`
	DueAt         string          `json:"dueAt"`
	Data          json.RawMessage `json:"data,omitempty"`
}

// CancelTimer cancels a timer; it never fires afterwards.
type CancelTimer struct {
	TenantID      string `json:"tenantId"`
	ServiceCallID string `json:"serviceCallId"`
}

// DueTimeReached is published once a timer is due.
type DueTimeReached struct {
	TenantID      string          `json:"tenantId"`
	ServiceCallID string          `json:"serviceCallId"`
	DueAt         string          `json:"dueAt"`
	ReachedAt     string          `json:"reachedAt"`
	Data          json.RawMessage `json:"data,omitempty"`
	Generation    int64           `json:"generation"`
	LateMs        int64           `json:"lateMs"`
}

// CommandRejected is published once for each command that fails validation.
type CommandRejected struct {
	Code          string `json:"code"`
	Reason        string `json:"reason"`
	Subject       string `json:"subject"`
	CommandID     string `json:"commandId,omitempty"`
	ServiceCallID string `json:"serviceCallId,omitempty"`
}

// GetTimerRequest is the body of the get query.
type GetTimerRequest struct {
	ServiceCallID string `json:"serviceCallId"`
}

// GetTimerReply is its answer; Timer is nil when the service knows no such timer.
type GetTimerReply struct {
	Timer *Timer `json:"timer"`
}

// Timer is a timer as the queries show it (the members this example reads).
type Timer struct {
	TenantID           string          `json:"tenantId"`
	ServiceCallID      string          `json:"serviceCallId"`
	State              string          `json:"state"`
	DueAt              *string         `json:"dueAt"`
	Generation         int64           `json:"generation"`
	CommandTimestampMs int64           `json:"commandTimestampMs"`
	Data               json.RawMessage `json:"data,omitempty"`
	CorrelationID      string          `json:"correlationId,omitempty"`
	ReachedAt          string          `json:"reachedAt,omitempty"`
}

// QueryError is the body of a query's error reply (with the Nats-Service-Error-Code header).
type QueryError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// dueAtLayout writes UTC with milliseconds and a Z, the form the events use.
const dueAtLayout = "2006-01-02T15:04:05.000Z07:00"

// newCommand wraps a payload in an envelope with a fresh id and the sender's clock: the service
// orders the commands of one timer by timestampMs, so a re-sent or late command cannot roll it back.
func newCommand(commandType, tenantID, correlationID string, payload interface{}) (Envelope, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return Envelope{}, err
	}
	return Envelope{
		ID:            nuid.Next(),
		Type:          commandType,
		TenantID:      tenantID,
		CorrelationID: correlationID,
		TimestampMs:   time.Now().UnixMilli(),
		Payload:       body,
	}, nil
}
