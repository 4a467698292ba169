module timer-service/examples/go

go 1.19

require (
	github.com/nats-io/nats.go v1.22.1
	github.com/nats-io/nuid v1.0.1
)
