-- 7: tasks of the tasks extension (store.Task, mcpserver.TaskStore);
-- expires_at is NULL for no expiry; the maps are JSON objects.
CREATE TABLE tasks (
	id             TEXT PRIMARY KEY,
	principal      TEXT NOT NULL,
	tool           TEXT NOT NULL,
	arguments      BYTEA,
	capabilities   BYTEA,
	status         TEXT NOT NULL,
	status_message TEXT NOT NULL,
	created_at     BIGINT NOT NULL,
	updated_at     BIGINT NOT NULL,
	expires_at     BIGINT,
	operation_id   TEXT NOT NULL,
	round          INTEGER NOT NULL,
	asked          BYTEA,
	input_requests BYTEA,
	responses      BYTEA,
	result         BYTEA,
	error          BYTEA,
	lease_until    BIGINT
);
CREATE INDEX tasks_expires_at ON tasks (expires_at);
