-- 3: the shared requestState key ring (store.KeyRing); seq orders keys by
-- addition and is never reused.
CREATE TABLE state_keys (
	seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	id         TEXT NOT NULL UNIQUE,
	sealed     BYTEA NOT NULL,
	created_at BIGINT NOT NULL
);
