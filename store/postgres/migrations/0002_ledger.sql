-- 2: the operation ledger and the records its effects write.
CREATE TABLE operations (
	id           TEXT PRIMARY KEY,
	principal    TEXT NOT NULL,
	name         TEXT NOT NULL,
	outcome      TEXT NOT NULL,
	result       BYTEA NOT NULL,
	completed_at BIGINT NOT NULL
);
CREATE TABLE records (
	kind         TEXT NOT NULL,
	id           TEXT NOT NULL,
	principal    TEXT NOT NULL,
	status       TEXT NOT NULL,
	data         BYTEA NOT NULL,
	operation_id TEXT NOT NULL,
	version      BIGINT NOT NULL,
	created_at   BIGINT NOT NULL,
	updated_at   BIGINT NOT NULL,
	PRIMARY KEY (kind, id)
);
CREATE INDEX records_owner ON records (kind, principal, created_at, id);
