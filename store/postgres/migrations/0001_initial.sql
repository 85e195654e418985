-- 1: flows, sealed secrets, browser sessions (session ids stored as SHA-256
-- hashes). Times are Unix nanoseconds, as in store/sqlite.
CREATE TABLE flows (
	id           TEXT PRIMARY KEY,
	principal    TEXT NOT NULL,
	purpose      TEXT NOT NULL,
	status       TEXT NOT NULL CHECK (status IN ('pending', 'complete')),
	created_at   BIGINT NOT NULL,
	expires_at   BIGINT NOT NULL,
	completed_at BIGINT
);
CREATE INDEX flows_expires_at ON flows (expires_at);
CREATE INDEX flows_principal_purpose ON flows (principal, purpose, status, created_at);
CREATE TABLE secrets (
	principal  TEXT NOT NULL,
	name       TEXT NOT NULL,
	sealed     BYTEA NOT NULL,
	updated_at BIGINT NOT NULL,
	PRIMARY KEY (principal, name)
);
CREATE TABLE sessions (
	id_hash    TEXT PRIMARY KEY,
	principal  TEXT NOT NULL,
	csrf       TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	expires_at BIGINT NOT NULL
);
CREATE INDEX sessions_expires_at ON sessions (expires_at);
