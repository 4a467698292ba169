CREATE TABLE "timer_history" (
	"tenant_id" text COLLATE "C" NOT NULL,
	"service_call_id" text COLLATE "C" NOT NULL,
	"seq" bigint NOT NULL,
	"entry" text NOT NULL,
	CONSTRAINT "timer_history_tenant_id_service_call_id_seq_pk" PRIMARY KEY("tenant_id","service_call_id","seq")
);
