// Command timer-go-example uses the timer service from Go with nats.go alone, the way the published
// contract describes it: it schedules a timer, schedules and cancels a second one, sends one command
// the service must reject, reads the tenant's DueTimeReached and CommandRejected events through a
// durable pull consumer on the events stream, and asks the service for both timers with the get
// query. It exits 0 when all of that happened as the contract says, and 1 with a message saying
// what did not.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
)

type settings struct {
	url          string
	tenant       string
	prefix       string
	eventsStream string
	in           time.Duration
	timeout      time.Duration
}

// The same rule as the service's: a tenant id is a single subject token.
var tenantPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

func main() {
	s, err := readSettings()
	if err == nil {
		err = run(s)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "timer-go-example:", err)
		os.Exit(1)
	}
}

func readSettings() (settings, error) {
	s := settings{
		url:          envOr("NATS_URL", nats.DefaultURL),
		prefix:       envOr("TIMER_SUBJECT_PREFIX", "timer"),
		eventsStream: envOr("TIMER_EVENTS_STREAM", "TIMER_EVENTS"),
	}
	flag.StringVar(&s.tenant, "tenant", envOr("EXAMPLE_TENANT", "acme"), "tenant id (env EXAMPLE_TENANT)")
	flag.DurationVar(&s.in, "in", 2*time.Second, "how far ahead the timer falls due")
	flag.DurationVar(&s.timeout, "timeout", 20*time.Second, "how long to wait for the events and the queries")
	flag.Parse()
	if !tenantPattern.MatchString(s.tenant) || s.tenant == "_unknown" {
		return s, fmt.Errorf("tenant %q is not a tenant id: 1 to 64 letters, digits, '_' and '-', starting with a letter or digit", s.tenant)
	}
	if s.in < time.Second {
		return s, fmt.Errorf("-in %s: at least 1s, so that the cancel lands before the timers fall due", s.in)
	}
	if s.timeout <= s.in {
		return s, fmt.Errorf("-timeout %s: longer than -in (%s), or the timer cannot fire in time", s.timeout, s.in)
	}
	return s, nil
}

func envOr(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}

func run(s settings) error {
	nc, err := nats.Connect(s.url, nats.Name("timer-go-example"))
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", s.url, err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		return err
	}

	// The consumer is created before the first command, so it cannot miss an event; DeliverNew
	// skips the tenant's older events. nats.go deletes a consumer it created when the
	// subscription ends; one left behind by an interrupted run is used again.
	durable := "timer-go-example-" + s.tenant
	events := fmt.Sprintf("%s.events.*.%s", s.prefix, s.tenant)
	sub, err := js.PullSubscribe(events, durable, nats.BindStream(s.eventsStream), nats.DeliverNew(), nats.AckExplicit())
	if err != nil {
		return fmt.Errorf("creating the consumer %s on the stream %s (the service creates the stream when it starts: is it running?): %w",
			durable, s.eventsStream, err)
	}
	defer sub.Unsubscribe()

	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()

	runID := nuid.Next()
	timers := exampleTimers{
		fired:     "go-example-" + runID + "-fired",
		cancelled: "go-example-" + runID + "-cancelled",
		invalid:   "go-example-" + runID + "-invalid",
	}
	dueAt := time.Now().Add(s.in)
	sent, err := sendCommands(js, s, timers, dueAt, "go-example-"+runID)
	if err != nil {
		return err
	}
	if err := awaitEvents(ctx, sub, s, timers, sent); err != nil {
		return err
	}

	// The service publishes DueTimeReached first and records Reached afterwards, so a get right
	// after the event may still show Scheduled for a moment.
	for _, expect := range []struct{ id, state string }{{timers.fired, "Reached"}, {timers.cancelled, "Cancelled"}} {
		timer, err := awaitState(ctx, nc, s, expect.id, expect.state)
		if err != nil {
			return err
		}
		fmt.Printf("get %s/%s: %s, generation %d, commandTimestampMs %d\n",
			timer.TenantID, timer.ServiceCallID, timer.State, timer.Generation, timer.CommandTimestampMs)
	}
	fmt.Println("ok: the timer fired, the cancelled one did not, the invalid command was rejected")
	return nil
}

// exampleTimers are the serviceCallIds of one run: new ones each time, since a timer that fired
// is final and a newer ScheduleTimer for it would be rejected.
type exampleTimers struct {
	fired     string
	cancelled string
	invalid   string
}

// sentCommands are the envelope ids of the commands sent: the rejection names its command's id.
type sentCommands struct {
	valid   map[string]bool
	invalid string
}

func sendCommands(js nats.JetStreamContext, s settings, timers exampleTimers, dueAt time.Time, correlationID string) (sentCommands, error) {
	schedule := fmt.Sprintf("%s.commands.schedule.%s", s.prefix, s.tenant)
	cancel := fmt.Sprintf("%s.commands.cancel.%s", s.prefix, s.tenant)
	sent := sentCommands{valid: map[string]bool{}}
	send := func(subject, commandType string, payload interface{}) (string, error) {
		command, err := newCommand(commandType, s.tenant, correlationID, payload)
		if err != nil {
			return "", err
		}
		return command.ID, publish(js, subject, command)
	}

	// The cancelled timer falls due before the other, so had the cancel not taken, its event
	// would arrive first (each tenant's timers fire oldest dueAt first).
	commands := []struct {
		subject, commandType string
		payload              interface{}
	}{
		{schedule, "ScheduleTimer", ScheduleTimer{
			TenantID: s.tenant, ServiceCallID: timers.fired, DueAt: dueAt.UTC().Format(dueAtLayout),
			Data: json.RawMessage(`{"from":"timer-go-example"}`),
		}},
		{schedule, "ScheduleTimer", ScheduleTimer{
			TenantID: s.tenant, ServiceCallID: timers.cancelled, DueAt: dueAt.Add(-500 * time.Millisecond).UTC().Format(dueAtLayout),
		}},
		{cancel, "CancelTimer", CancelTimer{TenantID: s.tenant, ServiceCallID: timers.cancelled}},
	}
	for _, c := range commands {
		id, err := send(c.subject, c.commandType, c.payload)
		if err != nil {
			return sent, err
		}
		sent.valid[id] = true
	}

	// A dueAt without an offset is ambiguous: the service rejects it with INVALID_FIELD.
	id, err := send(schedule, "ScheduleTimer", ScheduleTimer{
		TenantID: s.tenant, ServiceCallID: timers.invalid, DueAt: dueAt.UTC().Format("2006-01-02T15:04:05"),
	})
	sent.invalid = id
	return sent, err
}

// publish sends a command with JetStream and waits for the stream's ack: once it arrives the
// command is stored and the service will apply it.
func publish(js nats.JetStreamContext, subject string, command Envelope) error {
	body, err := json.Marshal(command)
	if err != nil {
		return err
	}
	ack, err := js.Publish(subject, body)
	if errors.Is(err, nats.ErrNoStreamResponse) {
		return fmt.Errorf("publishing %s on %s: no stream stores it (the service creates TIMER_COMMANDS when it starts: is it running?)", command.Type, subject)
	}
	if err != nil {
		return fmt.Errorf("publishing %s on %s: %w", command.Type, subject, err)
	}
	fmt.Printf("sent %s %s on %s (stream %s, seq %d)\n", command.Type, command.ID, subject, ack.Stream, ack.Sequence)
	return nil
}

// awaitEvents reads the tenant's events until the fired timer's DueTimeReached and the invalid
// command's CommandRejected have both arrived. Each event is acked once handled; events of other
// programs of the tenant are acked and passed over.
func awaitEvents(ctx context.Context, sub *nats.Subscription, s settings, timers exampleTimers, sent sentCommands) error {
	reached, rejected := false, false
	for !reached || !rejected {
		msgs, err := sub.Fetch(1, nats.Context(ctx))
		if ctx.Err() != nil {
			return fmt.Errorf("after %s still waiting for %s (is the service running against %s?)", s.timeout, missing(reached, rejected), s.url)
		}
		if err != nil {
			return fmt.Errorf("fetching events: %w", err)
		}
		for _, msg := range msgs {
			var event Envelope
			if err := json.Unmarshal(msg.Data, &event); err != nil {
				return fmt.Errorf("the event on %s is not a JSON envelope: %w", msg.Subject, err)
			}
			switch event.Type {
			case "DueTimeReached":
				var due DueTimeReached
				if err := json.Unmarshal(event.Payload, &due); err != nil {
					return fmt.Errorf("DueTimeReached %s: %w", event.ID, err)
				}
				if due.ServiceCallID == timers.cancelled {
					return fmt.Errorf("the cancelled timer %s fired (event %s)", due.ServiceCallID, event.ID)
				}
				if due.ServiceCallID == timers.fired {
					reached = true
					fmt.Printf("DueTimeReached %s/%s: due %s, reached %s (%d ms late, generation %d, data %s, correlationId %s)\n",
						due.TenantID, due.ServiceCallID, due.DueAt, due.ReachedAt, due.LateMs, due.Generation, due.Data, event.CorrelationID)
				}
			case "CommandRejected":
				var rejection CommandRejected
				if err := json.Unmarshal(event.Payload, &rejection); err != nil {
					return fmt.Errorf("CommandRejected %s: %w", event.ID, err)
				}
				if sent.valid[rejection.CommandID] {
					return fmt.Errorf("the service rejected command %s: %s %s", rejection.CommandID, rejection.Code, rejection.Reason)
				}
				if rejection.CommandID == sent.invalid {
					if rejection.Code != "INVALID_FIELD" {
						return fmt.Errorf("the invalid command %s was rejected with %s, not INVALID_FIELD: %s", rejection.CommandID, rejection.Code, rejection.Reason)
					}
					rejected = true
					fmt.Printf("CommandRejected %s: %s for command %s (%s): %s\n",
						event.TenantID, rejection.Code, rejection.CommandID, rejection.ServiceCallID, rejection.Reason)
				}
			}
			if err := msg.Ack(); err != nil {
				return fmt.Errorf("acking event %s: %w", event.ID, err)
			}
		}
	}
	return nil
}

func missing(reached, rejected bool) string {
	switch {
	case !reached && !rejected:
		return "the DueTimeReached and the CommandRejected"
	case !reached:
		return "the DueTimeReached"
	default:
		return "the CommandRejected"
	}
}

// awaitState asks the service for a timer with the get query until it is in the state expected.
func awaitState(ctx context.Context, nc *nats.Conn, s settings, serviceCallID, state string) (*Timer, error) {
	for {
		timer, err := getTimer(ctx, nc, s, serviceCallID)
		if err != nil {
			return nil, err
		}
		if timer != nil && timer.State == state {
			return timer, nil
		}
		select {
		case <-ctx.Done():
			seen := "unknown to the service"
			if timer != nil {
				seen = timer.State
			}
			return nil, fmt.Errorf("get %s/%s: %s, not %s, after %s", s.tenant, serviceCallID, seen, state, s.timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// getTimer sends the get query over NATS request/reply; nil means the service knows no such timer.
func getTimer(ctx context.Context, nc *nats.Conn, s settings, serviceCallID string) (*Timer, error) {
	subject := fmt.Sprintf("%s.query.get.%s", s.prefix, s.tenant)
	body, err := json.Marshal(GetTimerRequest{ServiceCallID: serviceCallID})
	if err != nil {
		return nil, err
	}
	reply, err := nc.RequestWithContext(ctx, subject, body)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, fmt.Errorf("nothing answers %s: is the service running?", subject)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s on %s: %w", serviceCallID, subject, err)
	}
	if code := reply.Header.Get("Nats-Service-Error-Code"); code != "" {
		var failure QueryError
		_ = json.Unmarshal(reply.Data, &failure)
		return nil, fmt.Errorf("get %s: error %s %s: %s", serviceCallID, code, failure.Error.Code, reply.Header.Get("Nats-Service-Error"))
	}
	var answer GetTimerReply
	if err := json.Unmarshal(reply.Data, &answer); err != nil {
		return nil, fmt.Errorf("get %s: the reply is not JSON: %w", serviceCallID, err)
	}
	return answer.Timer, nil
}
